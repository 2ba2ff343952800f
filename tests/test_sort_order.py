"""The namespace's sort order: every writer gives the rows of each file it writes within a
partition that order, and `optimize()` the files it compacts.

Each file is read back with pylance (fragment by fragment, at the version the manifest names)
and checked against pyarrow's own sort of the same rows; the namespace's content is checked
against the input with pyarrow.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from leaf_files import content, files, shuffled

import lance_partitioned as lp

SCHEMA = pa.schema(
    [
        ("region", pa.string()),
        ("id", pa.int64()),
        ("country", pa.string()),
        ("v", pa.float64()),
    ]
)
SPEC = lp.PartitionSpec([lp.PartitionField("region", "region", lp.Identity())])


def rows(ids: list[int]) -> pa.Table:
    return pa.table(
        {
            "region": [["eu", "us"][i % 2] for i in ids],
            "id": ids,
            "country": [[None, "FR", "DE", "JP"][i % 4] for i in ids],
            "v": [float((i * 7919) % 101) for i in ids],
        },
        schema=SCHEMA,
    )


def in_order(t: pa.Table, keys: list[tuple[str, str]], nulls: str) -> bool:
    """Whether ``t``'s sort columns are as pyarrow sorts them (ties in any order)."""
    want = t.sort_by([(k, order, nulls) for k, order in keys])
    return all(t[k].equals(want[k]) for k, _ in keys)


def make(tmp_path: Path) -> lp.PartitionedNamespace:
    return lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)


def test_every_file_a_write_makes_is_in_the_order(tmp_path: Path) -> None:
    ns = make(tmp_path)
    assert ns.sort_order == []
    ns.set_sort_order(["id DESC"])
    assert ns.sort_order == ["id DESC NULLS FIRST"]
    ns.write(rows(shuffled(0, 2000)))
    ns.write(rows(shuffled(2000, 500, seed=2)))
    assert len(files(ns)) == 4
    assert all(in_order(f, [("id", "descending")], "at_start") for f in files(ns))
    assert content(ns) == list(range(2500))


def test_several_columns_with_nulls(tmp_path: Path) -> None:
    ns = make(tmp_path)
    ns.set_sort_order(["country ASC NULLS FIRST", "v desc"])
    assert ns.sort_order == ["country ASC NULLS FIRST", "v DESC NULLS FIRST"]
    ns.write(rows(shuffled(0, 1000)))
    keys = [("country", "ascending"), ("v", "descending")]
    assert all(in_order(f, keys, "at_start") for f in files(ns))
    ns.set_sort_order(["country"])  # ASC NULLS LAST
    ns.write(rows(shuffled(1000, 400)))
    newest = [f for f in files(ns) if pa.compute.min(f["id"]).as_py() >= 1000]
    assert len(newest) == 2
    assert all(in_order(f, [("country", "ascending")], "at_end") for f in newest)
    assert content(ns) == list(range(1400))


def test_optimize_sorts_the_files_it_compacts(tmp_path: Path) -> None:
    ns = make(tmp_path)
    for k in range(4):  # four unsorted files per partition
        ns.write(rows(shuffled(k * 100, 100, seed=k)))
    assert not all(in_order(f, [("id", "ascending")], "at_end") for f in files(ns))
    ns.set_sort_order(["id"])
    r = ns.optimize()
    assert r.partitions == 2
    assert len(files(ns)) == 2
    assert all(in_order(f, [("id", "ascending")], "at_end") for f in files(ns))
    assert content(ns) == list(range(400))
    ns.delete("id % 3 = 0 AND region = 'eu'")
    ns.write(rows(shuffled(400, 50)))
    ns.optimize()  # the deleted rows are dropped, the new ones merged in order
    assert all(in_order(f, [("id", "ascending")], "at_end") for f in files(ns))
    want = [i for i in range(450) if not (i < 400 and i % 6 == 0)]  # deleted before 400-449
    assert content(ns) == want


def test_optimize_sorts_large_files_written_before_the_order(tmp_path: Path) -> None:
    ns = make(tmp_path)
    ns.write(rows(shuffled(0, 2000)))  # one unsorted file of 1,000 rows per partition
    ns.set_sort_order(["id"])
    ns.write(rows(shuffled(2000, 400, seed=3)))  # sorted files, written under the order
    ns.delete("id % 50 = 1")  # 4% of each 'us' file: not enough for Lance to compact it
    before = files(ns)
    unsorted = [f for f in before if not in_order(f, [("id", "ascending")], "at_end")]
    assert len(unsorted) == 2  # pyarrow's judgment, not ours
    # Files of at least the target are not compacted: only the order brings them in.
    plan = ns.optimize(target_rows_per_file=100, dry_run=True)
    assert (plan.resorted, plan.partitions, plan.files_before) == (2, 2, 2)
    assert files(ns) == before
    done = ns.optimize(target_rows_per_file=100)
    assert (done.resorted, done.partitions, done.files_before) == (2, 2, 2)
    assert len(files(ns)) == 4
    assert all(in_order(f, [("id", "ascending")], "at_end") for f in files(ns))
    want = [i for i in range(2400) if i % 50 != 1]
    assert content(ns) == want
    assert ns.optimize(target_rows_per_file=100).resorted == 0  # nothing left out of order
    # Sorted on the first column only: the second one's order is checked too.
    ns.set_sort_order(["region", "v DESC"])
    assert ns.optimize(target_rows_per_file=100).resorted == 4
    keys = [("region", "ascending"), ("v", "descending")]
    assert all(in_order(f, keys, "at_end") for f in files(ns))
    assert content(ns) == want


def test_merges_write_their_new_rows_in_the_order(tmp_path: Path) -> None:
    ns = make(tmp_path)
    ns.set_sort_order(["v", "id"])
    ns.write(rows(shuffled(0, 300)))
    source = rows(shuffled(250, 200))
    r = ns.merge_insert(on="id").when_matched_update_all().when_not_matched_insert_all()
    done = r.execute(source)
    assert (done.updated, done.inserted) == (50, 150)
    keys = [("v", "ascending"), ("id", "ascending")]
    assert all(in_order(f, keys, "at_end") for f in files(ns))
    assert content(ns) == list(range(450))


def test_the_order_follows_a_rename_and_bad_orders_are_refused(tmp_path: Path) -> None:
    ns = make(tmp_path)
    ns.set_sort_order(["id DESC", "country NULLS FIRST"])
    schema = pa.schema([f.with_name("key") if f.name == "id" else f for f in ns.schema])
    ns.update_schema(schema)
    assert ns.sort_order == ["key DESC NULLS FIRST", "country ASC NULLS FIRST"]
    ns.write(rows(shuffled(0, 200)).rename_columns(["region", "key", "country", "v"]))
    assert all(in_order(f, [("key", "descending")], "at_start") for f in files(ns))
    before = ns.snapshot().version
    assert ns.set_sort_order(["key DESC", "country NULLS FIRST"]) == before  # unchanged
    for bad, match in [
        (["nope"], "not a top-level column"),
        (["key sideways"], "expected"),
        (["key", "key DESC"], "twice"),
        (["country NULLS MAYBE"], "expected"),
    ]:
        with pytest.raises(lp.InvalidArgumentError, match=match):
            ns.set_sort_order(bad)
    with pytest.raises(lp.ArgumentTypeError):
        ns.set_sort_order("key")
    assert ns.snapshot().version == before
    ns.set_sort_order([])
    assert ns.sort_order == []
    assert ns.snapshot().version == before + 1


def test_a_list_column_has_no_order(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(
        str(tmp_path / "ns"), SCHEMA.append(pa.field("tags", pa.list_(pa.string()))), SPEC
    )
    with pytest.raises(lp.InvalidArgumentError, match="has no order"):
        ns.set_sort_order(["tags"])
