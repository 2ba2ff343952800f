"""Column statistics of struct children: a filter on ``loc.pos.x`` skips the partitions whose
recorded bounds of that child rule it out, as one on a top-level column does. A child is NULL
where it or any struct above it is NULL, so a NULL struct counts as a NULL child.

The expected rows come from pylance over a plain Lance dataset of the namespace's content;
which partitions hold a matching row, from the same dataset.
"""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sql_filters import Filter, combined, matching

import lance_partitioned as lp

POS = pa.struct([("x", pa.int64()), ("y", pa.float64())])
LOC = pa.struct([("city", pa.string()), ("pos", POS)])
SCHEMA = pa.schema([("p", pa.int32()), ("id", pa.int64()), ("loc", LOC)])
SPEC = lp.PartitionSpec([lp.PartitionField("p", "p", lp.Identity())])
PARTS = 5


def rows(p: int, n: int = 30) -> pa.Table:
    """Partition ``p``: ``loc.pos.x`` in ``[p * 1000, p * 1000 + n)``, cities of its own; in
    partition 1 some structs are NULL, in partition 2 some ``pos`` are, in partition 3 every
    ``city``."""
    locs = []
    for k in range(n):
        loc: dict[str, object] | None = {
            "city": None if p == 3 else f"c{p}-{k % 4}",
            "pos": None if (p == 2 and k % 3 == 0) else {"x": p * 1000 + k, "y": p + k / 10},
        }
        if p == 1 and k % 5 == 0:
            loc = None
        locs.append(loc)
    return pa.table(
        {"p": [p] * n, "id": [p * 100 + k for k in range(n)], "loc": pa.array(locs, LOC)},
        schema=SCHEMA,
    )


@pytest.fixture(scope="module")
def nested(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[lp.PartitionedNamespace, lance.LanceDataset]:
    root = tmp_path_factory.mktemp("struct")
    ns = lp.PartitionedNamespace.create(str(root / "ns"), SCHEMA, SPEC)
    ns.write(pa.concat_tables([rows(p) for p in range(PARTS)]))
    oracle = lance.write_dataset(ns.to_table(), str(root / "oracle"))
    return ns, oracle


def kept_skipped(ns: lp.PartitionedNamespace, sql: str) -> tuple[int, int]:
    plan = ns.snapshot().plan(sql)
    return sum(p["kept"] for p in plan), sum(p["skipped_by_stats"] for p in plan)


@pytest.mark.parametrize(
    "sql",
    [
        "loc.pos.x = 2005",
        "loc.pos.x >= 3000",
        "loc.pos.x < 1000",
        "loc.pos.y > 4.5",
        "loc.city = 'c4-1'",
        "loc.city IS NULL",
        "loc.pos.x IS NULL",
        "loc.city > 'c2'",
    ],
)
def test_a_struct_child_filter_skips_the_partitions_without_a_match(
    nested: tuple[lp.PartitionedNamespace, lance.LanceDataset], sql: str
) -> None:
    ns, oracle = nested
    holding = len(set(oracle.to_table(filter=sql, columns=["p"])["p"].to_pylist()))
    assert kept_skipped(ns, sql) == (holding, PARTS - holding), sql
    got = ns.to_table(filter=sql)
    assert sorted(got["id"].to_pylist()) == sorted(oracle.to_table(filter=sql)["id"].to_pylist())


def test_children_of_null_structs_count_as_null(
    nested: tuple[lp.PartitionedNamespace, lance.LanceDataset],
) -> None:
    """Partition 1's NULL structs make its ``loc.city`` NULL there: ``IS NULL`` keeps it (a
    count taken from the child's own validity alone would skip it and lose the rows)."""
    ns, oracle = nested
    sql = "loc.city IS NULL AND p = 1"
    expected = oracle.count_rows(filter=sql)
    assert expected == 6
    assert ns.to_table(filter=sql).num_rows == expected
    assert kept_skipped(ns, sql) == (1, 0)


def test_a_renamed_struct_keeps_pruning_by_its_children_field_ids(tmp_path: Path) -> None:
    """Renaming the struct keeps its children's field ids: bounds recorded before the rename
    prune filters written with the new name."""
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    ns.write(pa.concat_tables([rows(p) for p in range(PARTS)]))
    ns.rename_column("loc", "place")
    assert kept_skipped(ns, "place.pos.x >= 4000") == (1, PARTS - 1)
    assert ns.to_table(filter="place.pos.x >= 4000").num_rows == 30


_ATOMS = st.sampled_from(
    [
        "loc.pos.x > 1010",
        "loc.pos.x <= 2002",
        "loc.pos.x IN (5, 3007, 4029)",
        "loc.pos.y BETWEEN 2.0 AND 3.5",
        "loc.city = 'c1-2'",
        "loc.city < 'c3'",
        "loc.city IS NOT NULL",
        "loc.pos.x IS NULL",
        "loc IS NULL",
        "id > 250",
    ]
)
_FILTER = combined(_ATOMS, max_leaves=3)


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(flt=_FILTER)
def test_struct_statistics_never_change_an_answer(
    nested: tuple[lp.PartitionedNamespace, lance.LanceDataset], flt: Filter
) -> None:
    ns, oracle = nested
    sql = str(flt)
    got = sorted(ns.to_table(filter=sql)["id"].to_pylist())
    assert got == sorted(matching(oracle, flt)["id"].to_pylist()), sql


def test_a_partition_source_two_structs_deep_prunes(tmp_path: Path) -> None:
    """``loc.pos.x`` parses to one ``get_field(loc, 'pos', 'x')`` call: a partition field over
    that child prunes by it (bucket over the grandchild; the kept partitions are those whose
    bucket the literal hashes to, as the spec's own transform computes it)."""
    spec = lp.PartitionSpec([lp.PartitionField("xb", source="loc.pos.x", transform=lp.Bucket(8))])
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, spec)
    ns.write(pa.concat_tables([rows(p) for p in range(PARTS)]))
    whole = ns.to_table()
    sql = "loc.pos.x = 3007"
    plan = ns.snapshot().plan(sql)
    assert sum(p["kept"] + p["skipped_by_stats"] for p in plan) == 1
    got = ns.to_table(filter=sql)
    expected = [
        r["id"]
        for r in whole.to_pylist()
        if (r["loc"] or {}).get("pos") and r["loc"]["pos"]["x"] == 3007
    ]
    assert got["id"].to_pylist() == expected == [307]
