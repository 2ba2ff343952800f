"""Scalar indexes per partition: `create_index` builds Lance's B-tree, bitmap or zone map on
every leaf, writes and `optimize` keep them current, `indexes()` reports their coverage, and
scans use them through the pushed filter.

Expected answers never come from the namespace: rows from pyarrow's kernels over the input,
what each leaf carries from pylance opening the leaf at the version the manifest names, and
the coverage from the row counts of what was written.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from races import python_child, resume, wait_for_pause

import lance_partitioned as lp
from lance_partitioned.cli import main as cli_main

SCHEMA = pa.schema(
    [
        ("region", pa.string()),
        ("id", pa.int64()),
        ("country", pa.string()),
        ("v", pa.float64()),
    ]
)
SPEC = lp.PartitionSpec([lp.PartitionField("region", "region", lp.Identity())])
REGIONS = ["eu", "us", "apac"]
KINDS = {"btree": "BTree", "bitmap": "Bitmap", "zonemap": "ZoneMap"}


def rows(start: int, n: int, regions: list[str] = REGIONS) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "region": [regions[i % len(regions)] for i in ids],
            "id": ids,
            "country": [["FR", "DE", "US", "JP", None][i % 5] for i in ids],
            "v": [float(i % 1000) / 10 for i in ids],
        },
        schema=SCHEMA,
    )


def leaves(ns: lp.PartitionedNamespace) -> list[lance.LanceDataset]:
    """Every partition's Lance table at the version the latest manifest names (pylance)."""
    parts = ns.partitions(with_rows=False).to_pylist()
    return [lance.dataset(f"{ns.root}/{p['location']}", version=p["read_version"]) for p in parts]


def leaf_index(ds: lance.LanceDataset, name: str) -> dict[str, Any] | None:
    """The index ``name`` of one leaf as pylance describes it: its type and the fragments it
    covers (``None`` when the leaf has none of that name)."""
    found = [i for i in ds.describe_indices() if i.name == name]
    if not found:
        return None
    fragments = {f for s in found[0].segments for f in s.fragment_ids}
    return {"type": found[0].index_type, "fragments": fragments}


def fully_indexed(ds: lance.LanceDataset, name: str, kind: str) -> bool:
    idx = leaf_index(ds, name)
    frags = {f.fragment_id for f in ds.get_fragments()}
    return idx is not None and idx["type"] == KINDS[kind] and idx["fragments"] == frags


def expected(table: pa.Table, mask: pa.ChunkedArray) -> list[int]:
    return sorted(table.filter(mask)["id"].to_pylist())


def got(ns: lp.PartitionedNamespace, sql: str) -> list[int]:
    return sorted(ns.to_table(filter=sql, columns=["id"])["id"].to_pylist())


def make(tmp_path: Path, **props: str) -> lp.PartitionedNamespace:
    return lp.PartitionedNamespace.create(
        str(tmp_path / "ns"), SCHEMA, SPEC, properties=props or None
    )


def test_every_kind_is_built_on_every_partition_and_answers_stay_right(tmp_path: Path) -> None:
    ns = make(tmp_path)
    table = rows(0, 3000)
    ns.write(table)
    built = {
        "id_idx": ns.create_index("id"),
        "country_idx": ns.create_index("country", "bitmap"),
        "v_zone": ns.create_index("v", "zonemap", name="v_zone"),
    }
    for name, r in built.items():
        assert (r.name, r.partitions, r.indexes_built) == (name, 3, 3)
    # Each index: its declaration, then the partitions' new versions.
    assert ns.history(6)["operation"].to_pylist() == ["index"] * 6
    for ds in leaves(ns):
        assert fully_indexed(ds, "id_idx", "btree")
        assert fully_indexed(ds, "country_idx", "bitmap")
        assert fully_indexed(ds, "v_zone", "zonemap")
        # Lance plans the pushed filter through the index on each leaf.
        assert "ScalarIndexQuery" in ds.scanner(filter="id = 7").explain_plan()
    cases = {
        "id = 1234": pc.equal(table["id"], 1234),
        "id BETWEEN 100 AND 140": pc.and_(
            pc.greater_equal(table["id"], 100), pc.less_equal(table["id"], 140)
        ),
        "country IN ('JP', 'DE')": pc.is_in(table["country"], pa.array(["JP", "DE"])),
        "country IS NULL": pc.is_null(table["country"]),
        "v > 99.5": pc.greater(table["v"], 99.5),
        "region = 'eu' AND id < 30": pc.and_(
            pc.equal(table["region"], "eu"), pc.less(table["id"], 30)
        ),
    }
    for sql, mask in cases.items():
        assert got(ns, sql) == expected(table, mask), sql
    infos = {i.name: i for i in ns.indexes()}
    assert sorted(infos) == ["country_idx", "id_idx", "v_zone"]
    for i in infos.values():
        assert (i.partitions, i.partitions_indexed) == (3, 3)
        assert i.rows == i.rows_indexed == 3000
    assert (infos["v_zone"].column, infos["v_zone"].kind) == ("v", "zonemap")


def test_scans_read_through_the_index(tmp_path: Path) -> None:
    """With the index files of one partition removed, a scan whose filter the index serves
    fails on that partition, and a scan without that filter does not: the scan used it."""
    ns = make(tmp_path)
    ns.write(rows(0, 300))
    ns.create_index("id")
    ds = leaves(ns)[0]
    index_dir = Path(ds.uri) / "_indices"
    assert index_dir.is_dir()
    shutil.rmtree(index_dir)
    assert ns.to_table(filter="v >= 0").num_rows == 300
    with pytest.raises(lp.LancePartitionedError):
        ns.to_table(filter="id = 5")


def test_writes_keep_indexes_current_and_new_partitions_get_them(tmp_path: Path) -> None:
    ns = make(tmp_path)
    ns.write(rows(0, 900, ["eu", "us"]))
    ns.create_index("id")
    r = ns.write(rows(900, 600, ["us", "apac"]))  # one partition appended, one created
    assert r.indexed == 2
    assert all(fully_indexed(ds, "id_idx", "btree") for ds in leaves(ns))
    [info] = ns.indexes()
    assert (info.partitions, info.partitions_indexed, info.rows_indexed) == (3, 3, 1500)
    table = pa.concat_tables([rows(0, 900, ["eu", "us"]), rows(900, 600, ["us", "apac"])])
    assert got(ns, "id IN (5, 901, 1499)") == [5, 901, 1499]
    assert got(ns, "id >= 1400") == expected(table, pc.greater_equal(table["id"], 1400))


def segments(ds: lance.LanceDataset, name: str) -> dict[str, set[int]]:
    """The segments of the index ``name`` of one leaf (pylance): uuid -> fragments covered."""
    found = [i for i in ds.describe_indices() if i.name == name]
    return {s.uuid: set(s.fragment_ids) for s in found[0].segments} if found else {}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_appends_extend_an_index_by_their_fragments_only(tmp_path: Path, kind: str) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    written = [rows(0, 300)]
    ns.write(written[0])
    ns.create_index("id", kind=kind, name="by_id")
    (eu,) = [
        ds for ds in leaves(ns) if ds.to_table(columns=["region"])["region"][0].as_py() == "eu"
    ]
    first = segments(eu, "by_id")
    assert len(first) == 1
    seen = []
    for k in range(1, 10):
        written.append(rows(300 * k, 300))
        ns.write(written[-1])
        for ds in leaves(ns):
            assert fully_indexed(ds, "by_id", kind)
        (eu,) = [
            d for d in leaves(ns) if d.to_table(columns=["region"])["region"][0].as_py() == "eu"
        ]
        seen.append(segments(eu, "by_id"))
    # Each append added a segment over its own fragment and kept the older ones, until the
    # index held 8; the next append merged them all with its rows into one.
    for k, segs in enumerate(seen[:7], start=1):
        assert len(segs) == k + 1
        assert set(first) <= set(segs)
        assert all(len(frags) == 1 for u, frags in segs.items() if u not in first)
    assert len(seen[7]) == 1
    assert not set(first) & set(seen[7])
    assert len(seen[8]) == 2
    assert set(seen[7]) <= set(seen[8])
    table = pa.concat_tables(written)
    for sql, mask in [
        ("id = 2101", pc.equal(table["id"], 2101)),
        (
            "id >= 1490 AND id < 1530",
            pc.and_(pc.greater_equal(table["id"], 1490), pc.less(table["id"], 1530)),
        ),
        ("id IN (5, 2999, 1234)", pc.is_in(table["id"], pa.array([5, 2999, 1234]))),
    ]:
        assert got(ns, sql) == expected(table, mask)


def test_optimize_indexes_what_writes_left_unindexed(tmp_path: Path) -> None:
    ns = make(tmp_path, **{"lance_partitioned.indexes_on_write": "false"})
    ns.write(rows(0, 600))
    ns.create_index("id")
    r = ns.write(rows(600, 300, ["eu"]))
    assert r.indexed == 0
    [info] = ns.indexes()
    assert (info.partitions, info.partitions_indexed) == (3, 2)
    assert (info.rows, info.rows_indexed) == (900, 600)  # the appended 300 are not covered
    eu = [ds for ds in leaves(ns) if ds.to_table(columns=["region"])["region"][0].as_py() == "eu"]
    assert not fully_indexed(eu[0], "id_idx", "btree")
    assert got(ns, "id > 850") == list(range(851, 900))  # read without the index
    assert ns.optimize(dry_run=True).indexes_refreshed == 1
    assert ns.optimize().indexes_refreshed == 1
    assert all(fully_indexed(ds, "id_idx", "btree") for ds in leaves(ns))
    [info] = ns.indexes()
    assert (info.partitions_indexed, info.rows_indexed) == (3, 900)
    assert ns.optimize().indexes_refreshed == 0


def test_the_index_follows_a_rename_and_drop_removes_it(tmp_path: Path) -> None:
    ns = make(tmp_path)
    ns.write(rows(0, 300))
    ns.create_index("id")
    schema = ns.schema
    renamed = pa.schema([f.with_name("order_id") if f.name == "id" else f for f in schema])
    ns.update_schema(renamed)
    [info] = ns.indexes()
    assert (info.name, info.column, info.partitions_indexed) == ("id_idx", "order_id", 3)
    ids = ns.to_table(filter="order_id = 42", columns=["order_id"])["order_id"].to_pylist()
    assert ids == [42]
    dropped = ns.drop_index("id_idx")
    assert dropped.partitions == 3
    assert ns.indexes() == []
    assert all(leaf_index(ds, "id_idx") is None for ds in leaves(ns))
    with pytest.raises(lp.InvalidArgumentError, match="no index is named"):
        ns.drop_index("id_idx")


def test_bad_requests_are_typed_errors_and_change_nothing(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(
        str(tmp_path / "ns"),
        SCHEMA.append(pa.field("tags", pa.list_(pa.string()))),
        SPEC,
    )
    ns.write(rows(0, 30).append_column("tags", pa.array([["a"]] * 30)))
    before = ns.snapshot().version
    with pytest.raises(lp.InvalidArgumentError, match="not a top-level column"):
        ns.create_index("nope")
    with pytest.raises(lp.InvalidArgumentError, match="indexes take numbers"):
        ns.create_index("tags")
    with pytest.raises(lp.InvalidArgumentError, match="unknown index kind"):
        ns.create_index("id", "vector")  # type: ignore[arg-type]
    with pytest.raises(lp.InvalidArgumentError, match="must be 1 to 128"):
        ns.create_index("id", name="a.b")
    with pytest.raises(lp.ArgumentTypeError):
        ns.create_index(3)  # type: ignore[arg-type]
    assert ns.snapshot().version == before
    ns.create_index("id")
    again = ns.create_index("id")  # declared already and current: nothing to build
    assert (again.partitions, again.indexes_built) == (0, 0)
    with pytest.raises(lp.InvalidArgumentError, match="already has index"):
        ns.create_index("id", name="other")
    with pytest.raises(lp.InvalidArgumentError, match="pass replace=True"):
        ns.create_index("id", "bitmap")
    ns.create_index("id", "bitmap", replace=True)
    assert all(fully_indexed(ds, "id_idx", "bitmap") for ds in leaves(ns))
    with pytest.raises(lp.InvalidArgumentError, match="create_index"):
        lp.PartitionedNamespace.create(
            str(tmp_path / "ns2"),
            SCHEMA,
            SPEC,
            properties={"lance_partitioned.index.x": "{}"},
        )
    with pytest.raises(lp.InvalidArgumentError, match="indexes_on_write"):
        make(tmp_path / "x", **{"lance_partitioned.indexes_on_write": "sometimes"})


def test_a_build_racing_an_append_indexes_the_appended_rows_too(tmp_path: Path) -> None:
    """`create_index` pauses before its manifest commit; an append to two of the partitions
    commits meanwhile. The build is done again from those partitions' new versions, so every
    row, old and appended, is in the manifest's version and covered by its index."""
    root = tmp_path / "ns"
    ns = make(tmp_path, **{"lance_partitioned.indexes_on_write": "false"})
    ns.write(rows(0, 900))
    flag = tmp_path / "paused"
    code = (
        "import sys, lance_partitioned as lp\n"
        "ns = lp.PartitionedNamespace.open(sys.argv[1])\n"
        "print(ns.create_index('id').rebuilt)\n"
    )
    p = python_child(["-c", code, str(root)], f"index_before_manifest_commit:{flag}")
    try:
        wait_for_pause(p, flag)
        ns.write(rows(900, 100, ["eu", "us"]))
        resume(p, flag)
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    ns.refresh()
    assert ns.to_table().num_rows == 1000
    assert got(ns, "id >= 890") == list(range(890, 1000))
    assert all(fully_indexed(ds, "id_idx", "btree") for ds in leaves(ns))
    assert out.strip() == "2"  # the two appended partitions were indexed again


def test_weak_mode_builds_on_the_leaves_main_line(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC, transaction_mode="weak")
    table = rows(0, 600)
    ns.write(table)
    before = ns.snapshot().version
    r = ns.create_index("id")
    assert r.partitions == 3
    # Weak mode: the declaration is the one manifest commit; the leaves moved on their own.
    assert ns.snapshot().version == before + 1
    [info] = ns.indexes()
    assert (info.partitions_indexed, info.rows_indexed) == (3, 600)
    assert got(ns, "id < 10") == list(range(10))


def test_cli_lists_creates_and_drops(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ns = make(tmp_path)
    ns.write(rows(0, 300))
    assert cli_main(["index", ns.root, "country", "--kind", "bitmap", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["name"], doc["partitions"]) == ("country_idx", 3)
    assert cli_main(["index", ns.root, "--json"]) == 0
    [info] = json.loads(capsys.readouterr().out)["indexes"]
    assert (info["column"], info["kind"], info["rows_indexed"]) == ("country", "bitmap", 300)
    assert cli_main(["index", ns.root]) == 0
    assert "country_idx" in capsys.readouterr().out
    assert cli_main(["index", ns.root, "--drop", "country_idx"]) == 0
    assert "dropped index country_idx" in capsys.readouterr().out
    assert cli_main(["index", ns.root, "--drop", "country_idx"]) == 2
    assert cli_main(["index", ns.root, "id", "--drop", "x"]) == 2


def test_optimize_compacts_an_indexed_partition_and_builds_its_index_again(
    tmp_path: Path,
) -> None:
    ns = make(tmp_path)
    ns.write(rows(0, 300))
    ns.create_index("id")
    for start in range(300, 700, 100):
        ns.write(rows(start, 100, ["eu"]))
    [eu] = [ds for ds in leaves(ns) if len(ds.get_fragments()) == 5]
    r = ns.optimize()
    assert (r.partitions, r.skipped_indexed) == (1, 0)
    [eu] = [ds for ds in leaves(ns) if ds.uri == eu.uri]
    assert len(eu.get_fragments()) == 1
    assert fully_indexed(eu, "id_idx", "btree")
    assert "ScalarIndexQuery" in eu.scanner(filter="id = 601").explain_plan()
    table = pa.concat_tables([rows(0, 300), *(rows(s, 100, ["eu"]) for s in range(300, 700, 100))])
    assert got(ns, "id >= 550") == expected(table, pc.greater_equal(table["id"], 550))
    assert got(ns, "id = 3") == [3]


def test_merges_and_updates_keep_indexes_current(tmp_path: Path) -> None:
    ns = make(tmp_path)
    table = rows(0, 600)
    ns.write(table)
    ns.create_index("id")
    ns.create_index("country", "bitmap")
    source = rows(590, 20)  # ten updates, ten inserts
    source = source.set_column(3, "v", pa.array([-1.0] * 20))
    r = (
        ns.merge_insert(on="id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute(source)
    )
    assert (r.updated, r.inserted) == (10, 10)
    for ds in leaves(ns):
        assert fully_indexed(ds, "id_idx", "btree")
        assert fully_indexed(ds, "country_idx", "bitmap")
    ns.update({"country": "'XX'"}, where="id < 5")
    assert all(fully_indexed(ds, "country_idx", "bitmap") for ds in leaves(ns))
    assert got(ns, "country = 'XX'") == [0, 1, 2, 3, 4]
    assert got(ns, "v = -1.0") == list(range(590, 610))
    assert got(ns, "id >= 605") == list(range(605, 610))
    [info, _] = sorted(ns.indexes(), key=lambda i: i.name)
    assert (info.name, info.rows_indexed, info.partitions_indexed) == ("country_idx", info.rows, 3)


def test_an_index_declared_on_an_empty_namespace_is_built_by_the_first_write(
    tmp_path: Path,
) -> None:
    ns = make(tmp_path)
    r = ns.create_index("country", "bitmap")
    assert (r.partitions, r.indexes_built) == (0, 0)
    assert ns.write(rows(0, 90)).indexed == 3
    assert all(fully_indexed(ds, "country_idx", "bitmap") for ds in leaves(ns))
    assert got(ns, "country = 'JP'") == [i for i in range(90) if i % 5 == 3]
