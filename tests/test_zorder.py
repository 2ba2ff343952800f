"""A Z-order as the namespace's sort order: every file a writer or ``optimize()`` makes holds
its rows along the Z-curve of the sort columns.

The oracle is written here from the definition, with pyarrow's ``rank`` (ties take the first
rank, NULLs last) and Python integers for the bit interleaving; each file is read back with
pylance, fragment by fragment, at the version the manifest names.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from leaf_files import content, files, shuffled

import lance_partitioned as lp

SCHEMA = pa.schema(
    [
        ("region", pa.string()),
        ("id", pa.int64()),
        ("x", pa.int64()),
        ("s", pa.string()),
    ]
)
SPEC = lp.PartitionSpec([lp.PartitionField("region", "region", lp.Identity())])


def rows(ids: list[int], seed: int = 0) -> pa.Table:
    rng = random.Random(seed)
    return pa.table(
        {
            "region": [["eu", "us"][i % 2] for i in ids],
            "id": ids,
            "x": [None if i % 17 == 0 else rng.randrange(50) for i in ids],
            "s": [None if i % 13 == 0 else f"k{rng.randrange(1000):04d}" for i in ids],
        },
        schema=SCHEMA,
    )


def z_values(t: pa.Table, columns: list[str]) -> list[int]:
    """Each row's Z-value over ``t``'s own rows, from the definition."""
    n = t.num_rows
    scaled = []
    for c in columns:
        options = pc.RankOptions(sort_keys=[("", "ascending", "at_end")], tiebreaker="min")
        first = pc.rank(t[c].combine_chunks(), options=options)
        scaled.append([((r - 1) << 32) // n for r in first.to_pylist()])
    out = []
    for coords in zip(*scaled, strict=True):
        z = 0
        for b in range(31, -1, -1):
            for c in coords:
                z = (z << 1) | ((c >> b) & 1)
        out.append(z)
    return out


def z_ordered(t: pa.Table, columns: list[str]) -> bool:
    z = z_values(t, columns)
    return all(a <= b for a, b in itertools.pairwise(z))


def make(tmp_path: Path) -> lp.PartitionedNamespace:
    return lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)


def test_the_oracle_tells_a_z_order_from_a_lexicographic_one() -> None:
    t = rows(shuffled(0, 500, seed=1))
    lexicographic = t.sort_by([("x", "ascending"), ("s", "ascending")])
    assert not z_ordered(lexicographic, ["x", "s"])
    z = z_values(t, ["x", "s"])
    along = t.take(sorted(range(t.num_rows), key=lambda i: z[i]))
    assert z_ordered(along, ["x", "s"])


def test_every_file_a_write_makes_is_in_z_order(tmp_path: Path) -> None:
    ns = make(tmp_path)
    ns.set_sort_order(["zorder(x, s)"])
    assert ns.sort_order == ["zorder(x, s)"]
    ns.write(rows(shuffled(0, 2000, seed=1), seed=1))
    ns.write(rows(shuffled(2000, 600, seed=2), seed=2))
    written = files(ns)
    assert len(written) == 4
    assert all(z_ordered(f, ["x", "s"]) for f in written)
    assert not any(z_ordered(f, ["s", "x"]) for f in written)  # the first column is highest
    assert content(ns) == list(range(2600))


def test_optimize_cuts_a_task_along_the_curve_and_stays_put(tmp_path: Path) -> None:
    ns = make(tmp_path)
    for k in range(6):  # six files of 200 rows per partition, written with no order
        ns.write(rows(shuffled(k * 400, 400, seed=k), seed=k))
    assert not any(z_ordered(f, ["x", "s"]) for f in files(ns))
    ns.set_sort_order(["zorder(x, s)"])
    # One compaction task per partition (Lance splits a task only when both sides would
    # reach the target), its 1,200 rows cut into files of 700 and 500.
    done = ns.optimize(target_rows_per_file=700)
    assert done.partitions == 2
    after = files(ns)
    assert sorted(f.num_rows for f in after) == [500, 500, 700, 700]
    assert all(z_ordered(f, ["x", "s"]) for f in after)
    assert content(ns) == list(range(2400))
    # The files of the task are consecutive stretches of its curve: their Z-values over the
    # whole partition do not overlap.
    for region in ["eu", "us"]:
        part = ns.to_table(f"region = '{region}'", columns=["id", "x", "s"])
        z = dict(zip(part["id"].to_pylist(), z_values(part, ["x", "s"]), strict=True))
        spans = sorted(
            (min(z[i] for i in ids), max(z[i] for i in ids))
            for f in after
            if f["region"][0].as_py() == region
            for ids in [f["id"].to_pylist()]
        )
        assert len(spans) == 2
        assert spans[0][1] <= spans[1][0]
    again = ns.optimize(target_rows_per_file=700)
    assert (again.resorted, again.files_before, again.files_after) == (0, 0, 0)
    assert files(ns) == after


def test_a_lexicographic_file_is_rewritten_into_the_z_order(tmp_path: Path) -> None:
    ns = make(tmp_path)
    ns.set_sort_order(["x", "s"])
    ns.write(rows(shuffled(0, 2000, seed=3), seed=3))
    assert not any(z_ordered(f, ["x", "s"]) for f in files(ns))
    ns.set_sort_order(["zorder(x, s)"])
    done = ns.optimize(target_rows_per_file=100)
    assert done.resorted == 2
    assert all(z_ordered(f, ["x", "s"]) for f in files(ns))
    assert content(ns) == list(range(2000))


def test_bad_z_orders_are_refused(tmp_path: Path) -> None:
    ns = make(tmp_path)
    before = ns.snapshot().version
    for bad, match in [
        (["zorder(x)"], "2 to 4 columns"),
        (["zorder(x, x)"], "twice"),
        (["zorder(x, nope)"], "not a top-level column"),
        (["zorder(x, s)", "id"], "whole sort order"),
        (["zorder(x, s, id, region, x)"], "2 to 4 columns"),
    ]:
        with pytest.raises(lp.InvalidArgumentError, match=match):
            ns.set_sort_order(bad)
    assert ns.snapshot().version == before
    ns.set_sort_order(["ZORDER(s, x)"])
    assert ns.sort_order == ["zorder(s, x)"]
    assert ns.set_sort_order(["zorder(s, x)"]) == before + 1  # unchanged: no commit
    ns.set_sort_order(["s", "x"])  # the same columns, lexicographic: another order
    assert ns.sort_order == ["s ASC NULLS LAST", "x ASC NULLS LAST"]
