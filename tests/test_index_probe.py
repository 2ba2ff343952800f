"""Leaves ruled out by their indexes before they are scanned: a filter that requires a column
to equal a value skips every kept partition whose index on that column holds none of its
values, and never skips one that may hold a matching row.

The answers come from pyarrow's kernels over the input; which partitions hold a value, from
pylance reading each partition's Lance table at the version the manifest names.
"""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst

import lance_partitioned as lp

SCHEMA = pa.schema(
    [
        ("region", pa.string()),
        ("id", pa.int64()),
        ("code", pa.int32()),
        ("name", pa.string()),
        ("v", pa.float64()),
    ]
)
SPEC = lp.PartitionSpec([lp.PartitionField("region", "region", lp.Identity())])
REGIONS = ["eu", "us", "apac", "af", "sa"]


def rows(ids: list[int], regions: list[str] = REGIONS) -> pa.Table:
    return pa.table(
        {
            "region": [regions[(i * 7) % len(regions)] for i in ids],
            "id": ids,
            "code": [i % 977 for i in ids],
            "name": [f"n{i % 313}" if i % 11 else None for i in ids],
            "v": [float(i % 100) for i in ids],
        },
        schema=SCHEMA,
    )


def scan(ns: lp.PartitionedNamespace, sql: str) -> tuple[list[int], int, int]:
    """(ids read, leaves opened, leaves ruled out by their indexes)."""
    s = ns.snapshot()._s.scan(sql, None, None, None)
    got = pa.Table.from_batches(list(s), schema=s.schema)
    return sorted(got["id"].to_pylist()), s.leaves_opened, s.leaves_ruled_out_by_index


def kept(ns: lp.PartitionedNamespace, sql: str) -> int:
    """Partitions left to scan by pruning (partition values and column statistics), before
    any index is asked."""
    return ns.partitions(sql, with_rows=False).num_rows


def holding(ns: lp.PartitionedNamespace, mask_of: object) -> int:
    """Partitions whose Lance table (pylance, at the manifest's version) has a row `mask_of`
    keeps, deleted rows excluded."""
    n = 0
    for p in ns.partitions(with_rows=False).to_pylist():
        t = lance.dataset(f"{ns.root}/{p['location']}", version=p["read_version"]).to_table()
        n += pc.any(mask_of(t)).as_py() is True  # type: ignore[operator]
    return n


def indexed(tmp_path: Path, **props: str) -> tuple[lp.PartitionedNamespace, pa.Table]:
    ns = lp.PartitionedNamespace.create(
        str(tmp_path / "ns"), SCHEMA, SPEC, properties=props or None
    )
    table = rows(list(range(0, 4000, 3)))
    ns.write(table)
    ns.create_index("id")
    ns.create_index("code")
    ns.create_index("name", "bitmap")
    return ns, table


def test_a_point_lookup_scans_only_the_partitions_holding_the_key(tmp_path: Path) -> None:
    ns, table = indexed(tmp_path)
    for k in (1500, 2001, 1502, 0):  # present in one partition each, absent, at the edge
        sql = f"id = {k}"
        ids, opened, ruled_out = scan(ns, sql)
        assert ids == sorted(table.filter(pc.equal(table["id"], k))["id"].to_pylist())
        holders = holding(ns, lambda t, k=k: pc.equal(t["id"], k))
        assert (opened, ruled_out) == (holders, kept(ns, sql) - holders), k
    # Inside every partition's range of ids, so only the indexes tell them apart.
    assert kept(ns, "id = 1500") == len(REGIONS)
    assert scan(ns, "id = 1500")[2] == len(REGIONS) - 1


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    keys=hst.lists(hst.integers(-5, 4100), min_size=1, max_size=4),
    column=hst.sampled_from(["id", "code", "name"]),
    form=hst.sampled_from(["eq", "in", "in_null", "and"]),
)
def test_answers_equal_pyarrow_for_equalities_on_indexed_columns(
    tmp_path_factory: pytest.TempPathFactory, keys: list[int], column: str, form: str
) -> None:
    root = tmp_path_factory.mktemp("probe")
    ns, table = indexed(root)
    values = [
        f"'n{k % 313}'" if column == "name" else str(k % 977 if column == "code" else k)
        for k in keys
    ]
    literals = [v.strip("'") if column == "name" else int(v) for v in values]
    arrow_values = pa.array(literals, SCHEMA.field(column).type)
    if form == "eq":
        sql, mask = f"{column} = {values[0]}", pc.equal(table[column], arrow_values[0])
    elif form == "in":
        sql, mask = f"{column} IN ({', '.join(values)})", pc.is_in(table[column], arrow_values)
    elif form == "in_null":
        sql = f"{column} IN ({', '.join(values)}, NULL)"
        mask = pc.is_in(table[column], arrow_values)
    else:
        sql = f"{column} = {values[0]} AND v < 50"
        mask = pc.and_(pc.equal(table[column], arrow_values[0]), pc.less(table["v"], 50.0))
    ids, opened, ruled_out = scan(ns, sql)
    assert ids == sorted(table.filter(mask)["id"].to_pylist()), sql
    asked = arrow_values if form.startswith("in") else arrow_values[:1]
    holders = holding(ns, lambda t: pc.is_in(t[column], asked))
    assert (opened, ruled_out) == (holders, kept(ns, sql) - holders), sql


def test_fragments_the_index_does_not_cover_keep_their_partition(tmp_path: Path) -> None:
    """Rows appended without updating the index: the partition they went to is scanned,
    whatever its index says."""
    ns, _ = indexed(tmp_path, **{"lance_partitioned.indexes_on_write": "false"})
    extra = rows([5000, 5001, 5002], ["eu"])
    ns.write(extra)
    ids, opened, ruled_out = scan(ns, "id = 5001")
    assert ids == [5001]
    # eu scanned (its new fragment is not indexed); the others ruled out or pruned.
    assert (opened, ruled_out) == (1, kept(ns, "id = 5001") - 1)
    ids, opened, ruled_out = scan(ns, "id IN (5000, 1500)")
    assert ids == [1500, 5000]
    ns.optimize()  # indexes what the write left out
    assert scan(ns, "id = 5001") == ([5001], 1, kept(ns, "id = 5001") - 1)


def test_deleted_and_updated_rows_never_answer(tmp_path: Path) -> None:
    ns, _ = indexed(tmp_path)
    ns.delete("id = 1500")
    assert scan(ns, "id = 1500")[0] == []
    ns.merge_insert("id").when_matched_update_all().execute(
        rows([3]).set_column(4, "v", pa.array([99.5]))
    )
    ids = ns.to_table(filter="id = 3", columns=["id", "v"])
    assert ids.to_pylist() == [{"id": 3, "v": 99.5}]


def test_a_literal_outside_a_narrower_column_is_not_probed(tmp_path: Path) -> None:
    """`code` is int32: a literal it cannot hold is never asked of its index (and matches
    nothing); one it can hold is."""
    ns, table = indexed(tmp_path)
    assert scan(ns, f"code = {2**40}")[0] == []
    ids, opened, ruled_out = scan(ns, "code = 12")
    assert ids == sorted(table.filter(pc.equal(table["code"], 12))["id"].to_pylist())
    holders = holding(ns, lambda t: pc.equal(t["code"], 12))
    assert (opened, ruled_out) == (holders, kept(ns, "code = 12") - holders)
