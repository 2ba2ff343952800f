"""The namespace as a table of datafusion-python, over DataFusion's FFI.

Expected answers come from DataFusion running the same SQL over the input held in memory
(``ctx.from_arrow``: no code of ours involved) and from pyarrow's kernels; that pruning
happened is checked against the partitions pyarrow finds holding a match.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datafusion
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_partitioned as lp

SCHEMA = pa.schema(
    [
        ("p", pa.int32()),
        ("i", pa.int64()),
        ("s", pa.string()),
        ("x", pa.float64()),
        ("ts", pa.timestamp("us", tz="UTC")),
    ]
)
SPEC = lp.PartitionSpec([lp.PartitionField("p", "p", lp.Identity())])
N = 1_000
PARTS = 8


def _input() -> pa.Table:
    """``p`` in blocks of 125 rows, so each partition holds its own range of ``i`` (the
    column statistics can rule partitions out)."""
    return pa.table(
        {
            "p": pa.array([k * PARTS // N for k in range(N)], pa.int32()),
            "i": list(range(N)),
            "s": [None if k % 13 == 0 else f"s{k % 37:02d}" for k in range(N)],
            "x": [None if k % 11 == 0 else k / 7 for k in range(N)],
            "ts": pa.array([k * 3_600_000_000 for k in range(N)], pa.timestamp("us", tz="UTC")),
        },
        schema=SCHEMA,
    )


@pytest.fixture(scope="module")
def ns(tmp_path_factory: pytest.TempPathFactory) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(str(tmp_path_factory.mktemp("df") / "ns"), SCHEMA, SPEC)
    ns.write(_input())
    return ns


def _context(table: Any) -> datafusion.SessionContext:
    ctx = datafusion.SessionContext()
    ctx.register_table("t", table)
    ctx.from_arrow(_input(), name="m")
    return ctx


def _rows(ctx: datafusion.SessionContext, sql: str) -> list[tuple[Any, ...]]:
    table = ctx.sql(sql).to_arrow_table()
    rows = [tuple(r.values()) for r in table.to_pylist()]
    return sorted(rows, key=repr)


QUERIES = [
    "SELECT i, s FROM {} WHERE p IN (2, 5) AND i >= 300",
    "SELECT p, count(*) AS n, sum(x) AS sx, min(s) AS ms FROM {} GROUP BY p",
    "SELECT count(*) AS n FROM {}",
    "SELECT count(*) AS n FROM {} WHERE s IS NULL",
    "SELECT i, x FROM {} WHERE x > 100 OR s = 's07'",
    "SELECT i FROM {} WHERE i BETWEEN 300 AND 310",
    "SELECT i, ts FROM {} WHERE ts >= TIMESTAMP '1970-01-20 00:00:00+00:00' AND p = 3",
    "SELECT s, count(*) AS n FROM {} WHERE p <> 0 AND NOT (i % 3 = 0) GROUP BY s",
    "SELECT i FROM {} WHERE p = 4 AND p = 5",
    "SELECT a.i, b.i AS j FROM {0} a JOIN {0} b ON a.i = b.i + 1 WHERE a.p = 1",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_sql_over_the_namespace_equals_sql_over_the_input_in_memory(
    ns: lp.PartitionedNamespace, sql: str
) -> None:
    ctx = _context(ns.to_datafusion())
    assert _rows(ctx, sql.format("t")) == _rows(ctx, sql.format("m"))


def _holding(mask: pa.ChunkedArray) -> int:
    """Partitions holding a row where ``mask`` is true (pyarrow)."""
    return len(pc.unique(_input().filter(mask)["p"]))


def test_projection_and_filters_are_pushed_and_prune_partitions_and_statistics(
    ns: lp.PartitionedNamespace,
) -> None:
    table = ns.to_datafusion()
    ctx = _context(table)
    t = _input()
    ctx.sql("SELECT i, s FROM t WHERE p IN (2, 5) AND s LIKE 's1%'").to_arrow_table()
    (scan,) = table.scans()
    assert set(scan["columns"]) == {"i", "s"}  # not x, ts, p: the projection was pushed
    assert scan["filter"] is not None
    assert "p" in scan["filter"]
    assert scan["leaves"] == PARTS
    p_in = pc.is_in(t["p"], pa.array([2, 5], pa.int32()))
    assert scan["kept_by_partitions"] == _holding(p_in) == 2
    ctx.sql("SELECT i FROM t WHERE i BETWEEN 300 AND 310").to_arrow_table()
    scan = table.scans()[-1]
    between = pc.and_(pc.greater_equal(t["i"], 300), pc.less_equal(t["i"], 310))
    assert scan["kept_by_partitions"] == PARTS  # i is not a partition column
    assert scan["kept"] == _holding(between) == 1  # its statistics keep one partition
    ctx.sql("SELECT i FROM t WHERE i > 5000").to_arrow_table()
    assert table.scans()[-1]["kept"] == 0


def test_a_limit_is_pushed(ns: lp.PartitionedNamespace) -> None:
    table = ns.to_datafusion()
    ctx = _context(table)  # kept: the FFI reaches the session through a weak reference
    got = ctx.sql("SELECT i, s FROM t LIMIT 7").to_arrow_table()
    assert got.num_rows == 7
    assert table.scans()[-1]["limit"] == 7


@pytest.mark.parametrize("volatility", ["immutable", "volatile"])
def test_python_udfs_in_filters_are_evaluated_by_one_side_or_the_other(
    ns: lp.PartitionedNamespace, volatility: str
) -> None:
    """An immutable UDF is taken with the filter and runs inside each leaf's scan; a volatile
    one is not pushed (DataFusion's rule and ours), so DataFusion applies it above."""
    table = ns.to_datafusion()
    ctx = _context(table)
    ctx.register_udf(
        datafusion.udf(
            lambda a: pc.equal(pc.bit_wise_and(a, 1), 1),
            [pa.int64()],
            pa.bool_(),
            volatility,  # type: ignore[arg-type]
            name="odd",
        )
    )
    got = ctx.sql("SELECT i FROM t WHERE odd(i) AND p = 6").to_arrow_table()
    t = _input()
    want = t.filter(pc.and_(pc.equal(pc.bit_wise_and(t["i"], 1), 1), pc.equal(t["p"], 6)))
    assert sorted(got["i"].to_pylist()) == sorted(want["i"].to_pylist())
    scan = table.scans()[-1]
    assert scan["filter"] is not None
    assert ("odd" in scan["filter"]) == (volatility == "immutable"), scan
    assert scan["kept"] == 1


def test_a_table_reads_its_version_and_counts_rows_after_deletes(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    ns.write(_input())
    ns.delete("p = 1 AND i % 3 = 0")
    old = ns.to_datafusion()
    ns.write(_input())
    gone = sum(1 for r in _input().to_pylist() if r["p"] == 1 and r["i"] % 3 == 0)
    before = N - gone
    count = "SELECT count(*) AS n FROM t"
    assert _rows(_context(old), count) == [(before,)]
    assert _rows(_context(ns.to_datafusion()), count) == [(before + N,)]
    assert old.version < ns.snapshot().version


def test_anything_but_a_datafusion_session_is_refused(ns: lp.PartitionedNamespace) -> None:
    with pytest.raises(TypeError, match="DataFusion session"):
        ns.to_datafusion().__datafusion_table_provider__(42)


def test_count_without_a_filter_is_answered_from_the_recorded_row_counts(
    ns: lp.PartitionedNamespace,
) -> None:
    """The manifest's recorded totals are exact row counts: DataFusion answers ``count(*)``
    from them without a scan; with a filter it scans."""
    table = ns.to_datafusion()
    ctx = _context(table)

    def plan(sql: str) -> str:
        return str(ctx.sql(f"EXPLAIN {sql}").to_arrow_table()["plan"].to_pylist()[-1])

    counted = plan("SELECT count(*) FROM t")
    assert "NamespaceExec" not in counted, counted
    assert f"{_input().num_rows} as count" in counted, counted
    assert "NamespaceExec" in plan("SELECT count(*) FROM t WHERE i > 3")


def test_hundreds_of_pushed_conjuncts_plan_and_answer(ns: lp.PartitionedNamespace) -> None:
    """DataFusion pushes each conjunct on its own; taken together they are one filter, which
    must not become a chain too deep for the filter rules."""
    terms = " AND ".join(f"i <> {3 * k}" for k in range(300))
    sql = f"SELECT i FROM {{}} WHERE {terms} AND s IS NOT NULL"
    ctx = _context(ns.to_datafusion())
    assert _rows(ctx, sql.format("t")) == _rows(ctx, sql.format("m"))
