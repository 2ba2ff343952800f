"""Column statistics skip leaves without changing an answer.

Every commit records, per leaf version, the bounds and NULL/NaN counts of each column; reads
skip leaves whose bounds rule the filter out. The expected rows never come from the namespace's
pruning: the namespace's whole content (read without a filter) is written as one plain Lance
dataset, and pylance evaluates the same SQL over it (the same DataFusion semantics for NaN and
signed zeros, no partitions, no statistics). The skip counts are checked against the leaves a
Python model finds holding a matching row.
"""

from __future__ import annotations

import datetime
import decimal
import json
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from races import python_child, resume, wait_for_pause
from sql_filters import Filter, combined, matching

import lance_partitioned as lp

NY = "America/New_York"
LONG = "a" * 16  # the recorded prefix length: strings that share it differ only after it

SCHEMA = pa.schema(
    [
        ("p", pa.int32()),
        ("i", pa.int64()),
        ("f", pa.float64()),
        ("s", pa.string()),
        ("ts", pa.timestamp("us", tz=NY)),
        ("d", pa.date32()),
        ("dec", pa.decimal128(10, 2)),
        ("flag", pa.bool_()),
        ("b", pa.binary()),
    ]
)
SPEC = lp.PartitionSpec([lp.PartitionField("p", "p", lp.Identity())])
EPOCH = datetime.datetime(2024, 3, 10, tzinfo=datetime.timezone.utc)


def _rows(p: int, start: int, n: int) -> pa.Table:
    """Rows of partition ``p``: each column's values in a range of their own per partition,
    with the awkward values some partitions hold (NaN, both zeros, NULLs, strings that share
    the recorded prefix)."""
    ids = list(range(p * 100 + start, p * 100 + start + n))
    f: list[float | None] = [float(p * 10 + k % 7) for k in range(n)]
    if p == 1:
        f[0] = float("nan")
    if p == 2:
        f[:2] = [-0.0, 0.0]
    if p == 3:
        f[1] = None
    s: list[str | None] = [f"k{p}-{k:03d}" for k in range(n)]
    if p == 4:
        s = [LONG + ("b" if k % 2 else "d") + "x" * k for k in range(n)]
    if p == 0:
        s[0] = None
    return pa.table(
        {
            "p": [p] * n,
            "i": ids,
            "f": f,
            "s": s,
            "ts": [EPOCH + datetime.timedelta(hours=6 * p, minutes=k) for k in range(n)],
            "d": [datetime.date(2024, 1 + p, 1 + k % 20) for k in range(n)],
            "dec": [decimal.Decimal(p * 1000 + k) / 100 for k in range(n)],
            "flag": [p % 2 == 0] * n,
            "b": [bytes([p, k % 256]) for k in range(n)],
        },
        schema=SCHEMA,
    )


@pytest.fixture(scope="module")
def evolved(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[lp.PartitionedNamespace, lance.LanceDataset]:
    """Five partitions built by every kind of commit that records statistics: creates,
    appends (bounds widened), a row delete, an overwrite, a merge and a compaction; then the
    oracle dataset of its whole content."""
    root = tmp_path_factory.mktemp("stats")
    ns = lp.PartitionedNamespace.create(str(root / "ns"), SCHEMA, SPEC)
    ns.write(pa.concat_tables([_rows(p, 0, 20) for p in range(5)]))
    ns.write(pa.concat_tables([_rows(p, 40, 10) for p in (0, 2, 4)]))
    ns.delete("i % 7 = 0")
    ns.write(_rows(3, 60, 15), mode="overwrite")
    changed = _rows(2, 5, 10).set_column(2, "f", pa.array([500.0 + k for k in range(10)]))
    ns.merge_insert(on=["i"]).when_matched_update_all().when_not_matched_insert_all().execute(
        changed
    )
    ns.optimize()
    whole = ns.to_table()
    oracle = lance.write_dataset(whole, str(root / "oracle"))
    return ns, oracle


_LITERALS: dict[str, list[str]] = {
    "i": ["-1", "0", "19", "45", "105", "199", "260", "374", "419", "1000"],
    "f": [
        "-0.0",
        "0.0",
        "1.0",
        "13.0",
        "25.5",
        "36.0",
        "505.0",
        "CAST('NaN' AS DOUBLE)",
        "-1.0e300",
    ],
    "s": [
        "'k0-003'",
        "'k2'",
        "'k3-070'",
        "'" + LONG + "'",
        "'" + LONG + "c'",
        "'" + LONG + "e'",
        "'zz'",
        "''",
    ],
    "ts": [
        "TIMESTAMP '2024-03-10T00:00:00Z'",
        "TIMESTAMP '2024-03-10T06:10:00Z'",
        "TIMESTAMP '2024-03-10T12:30:00Z'",
        "TIMESTAMP '2024-03-11T00:00:00Z'",
    ],
    "d": ["DATE '2024-01-05'", "DATE '2024-02-20'", "DATE '2024-04-01'", "DATE '2024-06-01'"],
    "dec": [f"CAST('{v}' AS DECIMAL(10, 2))" for v in ("0.50", "10.05", "20.00", "30.12", "45.00")],
}
_OPS = ["=", "<>", "<", "<=", ">", ">="]


@st.composite
def _atom(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["cmp", "cmp", "cmp", "in", "null", "between", "flag"]))
    if kind == "flag":
        return draw(st.sampled_from(["flag", "NOT flag", "flag IS NULL"]))
    col = draw(st.sampled_from(sorted(_LITERALS)))
    lits = _LITERALS[col]
    if kind == "null":
        return f"{col} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
    if kind == "in":
        picked = draw(st.lists(st.sampled_from(lits), min_size=1, max_size=3, unique=True))
        neg = draw(st.sampled_from(["", "NOT "]))
        return f"{col} {neg}IN ({', '.join(picked)})"
    if kind == "between":
        lo, hi = sorted(draw(st.lists(st.sampled_from(lits), min_size=2, max_size=2)))
        return f"{col} BETWEEN {lo} AND {hi}"
    return f"{col} {draw(st.sampled_from(_OPS))} {draw(st.sampled_from(lits))}"


_FILTER = combined(_atom(), max_leaves=4)


def _key(t: pa.Table) -> list[tuple[Any, ...]]:
    """The rows as sortable tuples (NaN made comparable by its text)."""
    cols = [t[c].to_pylist() for c in SCHEMA.names]
    rows = zip(*cols, strict=True)
    keyed = (tuple(repr(v) if isinstance(v, float) else v for v in r) for r in rows)
    return sorted(keyed, key=repr)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(flt=_FILTER)
def test_statistics_never_change_an_answer(
    evolved: tuple[lp.PartitionedNamespace, lance.LanceDataset], flt: Filter
) -> None:
    ns, oracle = evolved
    sql = str(flt)
    expected = matching(oracle, flt)
    got = ns.to_table(filter=sql)
    assert _key(got) == _key(expected), sql
    # Every partition holding an expected row is kept (the count check: never fewer).
    plan = ns.snapshot().plan(sql)
    kept = sum(p["kept"] for p in plan)
    assert kept >= len(set(expected["p"].to_pylist())), sql


def _holding(ns: lp.PartitionedNamespace, oracle: lance.LanceDataset, sql: str) -> int:
    return len(set(oracle.to_table(filter=sql, columns=["p"])["p"].to_pylist()))


@pytest.mark.parametrize(
    "sql",
    [
        "i = 106",
        "i > 400",
        "i BETWEEN 150 AND 260",
        "d >= DATE '2024-05-01'",
        "ts < TIMESTAMP '2024-03-10T05:00:00Z'",
        "dec > CAST('40.00' AS DECIMAL(10, 2))",
        "s = 'k2-005'",
        "s > '" + LONG + "c'",
        "f > 100.0",
        "i IN (1, 2, 304)",
        "s IS NULL",
        "f IS NULL",
    ],
)
def test_statistics_skip_the_leaves_without_a_matching_row(
    evolved: tuple[lp.PartitionedNamespace, lance.LanceDataset], sql: str
) -> None:
    """Each filter here is decided by one column's bounds: the leaves kept are exactly those
    with a matching row (as pylance finds them in the oracle), and explain says how many the
    statistics skipped."""
    ns, oracle = evolved
    holding = _holding(ns, oracle, sql)
    plan = ns.snapshot().plan(sql)
    kept = sum(p["kept"] for p in plan)
    skipped = sum(p["skipped_by_stats"] for p in plan)
    assert (kept, skipped) == (holding, 5 - holding), sql
    scan = ns.scan(sql)
    rows = sum(b.num_rows for b in scan)
    assert rows == oracle.count_rows(filter=sql)
    assert f"({5 - holding} more skipped by column statistics)" in ns.explain(sql) or holding == 5


def test_nan_and_long_strings_keep_what_bounds_cannot_rule_out(
    evolved: tuple[lp.PartitionedNamespace, lance.LanceDataset],
) -> None:
    """A NaN leaves the float bounds of its partition unknown (kept by any float filter); two
    strings that share the recorded prefix are told apart only after it, so the upper bound
    is the prefix incremented and a filter between them keeps their partition."""
    ns, oracle = evolved
    plan = ns.snapshot().plan("f > 1.0e300")
    assert sum(p["kept"] for p in plan) == 1  # partition 1 (NaN)
    sql = "s > '" + LONG + "b' AND s < '" + LONG + "c'"
    assert sum(p["kept"] for p in ns.snapshot().plan(sql)) == 1
    assert ns.to_table(filter=sql).num_rows == oracle.count_rows(filter=sql) > 0


def _recorded(ns: lp.PartitionedNamespace) -> dict[str, dict[str, Any]]:
    """Each leaf's recorded statistics, read with pylance from the manifest row of its read
    version, by partition value."""
    manifest = lance.dataset(ns.root + "/__manifest").to_table().to_pylist()
    by_id = {r["object_id"]: r for r in manifest}
    out = {}
    for leaf in ns.partitions(with_rows=False).to_pylist():
        row = by_id.get(f"{leaf['object_id']}${leaf['read_version']}")
        props = json.loads(row["metadata"]) if row and row["metadata"] else {}
        stats = props.get("column_stats")
        out[str(leaf["p"])] = json.loads(stats) if stats else {}
    return out


def test_the_recorded_bounds_hold_every_value(
    evolved: tuple[lp.PartitionedNamespace, lance.LanceDataset],
) -> None:
    """What the manifest records, read with pylance: for every partition the integer bounds
    contain every id it holds, and the row count covers at least its live rows."""
    ns, oracle = evolved
    field = {f.name: f.metadata[b"lance:field_id"].decode() for f in ns.schema}
    whole = oracle.to_table()
    recorded = _recorded(ns)
    assert len(recorded) == 5
    for p in range(5):
        stats = recorded[str(p)]
        pairs = zip(whole["i"].to_pylist(), whole["p"].to_pylist(), strict=True)
        ids = [v for v, q in pairs if q == p]
        col = stats["columns"][field["i"]]
        assert int(col["min"]) <= min(ids), (p, col)
        assert max(ids) <= int(col["max"]), (p, col)
        assert stats["rows"] >= len(ids)
        assert col["nulls"] == 0


def test_leaves_without_statistics_are_read(tmp_path: Path) -> None:
    """A leaf version committed without statistics (here: its recorded statistics removed
    from the manifest row by pylance, as another tool writes it) is never skipped."""
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    ns.write(pa.concat_tables([_rows(p, 0, 10) for p in range(3)]))
    assert sum(p["kept"] for p in ns.snapshot().plan("i = 205")) == 1
    manifest = lance.dataset(str(tmp_path / "ns" / "__manifest"))
    rows = manifest.to_table(filter="object_type = 'table_version'").to_pylist()
    for r in rows:
        props = json.loads(r["metadata"])
        props.pop("column_stats")
        value = json.dumps(props).replace("'", "''")
        manifest.update({"metadata": f"'{value}'"}, where=f"object_id = '{r['object_id']}'")
    fresh = lp.PartitionedNamespace.open(str(tmp_path / "ns"))
    assert _kept_skipped(fresh, "i = 205") == (3, 0)
    assert fresh.to_table(filter="i = 205")["i"].to_pylist() == [205]
    # optimize() reads them once and records theirs: later reads skip again.
    assert fresh.optimize(min_files=1000, dry_run=True).stats_recorded == 3
    assert _kept_skipped(fresh, "i = 205") == (3, 0)
    assert fresh.optimize(min_files=1000).stats_recorded == 3
    assert _kept_skipped(fresh, "i = 205") == (1, 2)
    assert fresh.to_table(filter="i = 205")["i"].to_pylist() == [205]
    assert fresh.optimize(min_files=1000).stats_recorded == 0


def _kept_skipped(ns: lp.PartitionedNamespace, sql: str) -> tuple[int, int]:
    plan = ns.snapshot().plan(sql)
    return sum(p["kept"] for p in plan), sum(p["skipped_by_stats"] for p in plan)


def test_recording_can_be_turned_off(tmp_path: Path) -> None:
    key = "lance_partitioned.column_stats"
    with pytest.raises(lp.InvalidArgumentError, match=key):
        lp.PartitionedNamespace.create(str(tmp_path / "bad"), SCHEMA, SPEC, properties={key: "1"})
    ns = lp.PartitionedNamespace.create(
        str(tmp_path / "ns"), SCHEMA, SPEC, properties={key: "false"}
    )
    ns.write(pa.concat_tables([_rows(p, 0, 10) for p in range(3)]))
    ns.write(_rows(1, 20, 5))
    assert _kept_skipped(ns, "i = 205") == (3, 0)
    assert ns.optimize(min_files=1000).stats_recorded == 0
    assert ns.to_table(filter="i = 205")["i"].to_pylist() == [205]


def test_evolved_columns_keep_pruning_by_their_field_ids(tmp_path: Path) -> None:
    """Bounds recorded under an older schema keep pruning after the column is widened
    (int32 -> int64) and renamed; a column added later has no statistics in the partitions
    written before it (they are kept), and its own in those written after."""
    schema = pa.schema([("p", pa.int32()), ("i", pa.int32()), ("s", pa.string())])
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema, SPEC)

    def rows(p: int, ids: list[int], **extra: list[Any]) -> pa.Table:
        strings = ns.schema.names[2]  # "s", renamed "s2" later
        cols = {"p": [p] * len(ids), "i": ids, strings: [f"x{v}" for v in ids], **extra}
        return pa.table(cols, schema=ns.schema)

    ns.write(pa.concat_tables([rows(0, list(range(10))), rows(1, list(range(100, 110)))]))
    ns.alter_column("i", pa.int64())
    ns.rename_column("s", "s2")
    ns.add_columns([pa.field("z", pa.float64())])
    big = 5_000_000_000  # beyond int32: only the widened type holds it
    ns.write(rows(1, [big], z=[1.5]))
    ns.write(rows(2, list(range(200, 210)), z=[float(v) for v in range(10)]))
    oracle = lance.write_dataset(ns.to_table(), str(tmp_path / "oracle"))
    cases = {
        f"i = {big}": (1, 2),
        "i = 5": (1, 2),
        "i > 150": (2, 1),
        "s2 = 'x105'": (2, 1),  # partition 0's bounds are 'x0'..'x9': kept
        "s2 < 'x1'": (1, 2),
        "z > 5.0": (2, 1),  # partition 0 never had z: kept (no statistics); 1 ruled out
        "z IS NULL": (2, 1),
    }
    for sql, expected in cases.items():
        assert _key_rows(ns.to_table(filter=sql)) == _key_rows(oracle.to_table(filter=sql)), sql
        assert _kept_skipped(ns, sql) == expected, sql


def _key_rows(t: pa.Table) -> list[str]:
    return sorted(repr(r) for r in t.to_pylist())


def test_an_append_rebased_over_a_concurrent_one_widens_the_bounds_by_both(
    tmp_path: Path,
) -> None:
    """A writer pauses before its manifest commit; another append to the same partition
    commits meanwhile; the first is rebased on top of it. The version it records must bound
    the rows of both appends (bounds taken from the version it was first written against
    would lose the other's rows to pruning)."""
    root = tmp_path / "ns"
    ns = lp.PartitionedNamespace.create(str(root), SCHEMA, SPEC)
    ns.write(_rows(0, 0, 10))
    flag = tmp_path / "paused"
    code = (
        "import sys, lance_partitioned as lp\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "from test_column_stats import _rows\n"
        "ns = lp.PartitionedNamespace.open(sys.argv[1])\n"
        "print(ns.write(_rows(0, 5000, 3)).rebased)\n"
    )
    here = str(Path(__file__).parent)
    p = python_child(["-c", code, str(root), here], f"before_manifest_commit:{flag}")
    try:
        wait_for_pause(p, flag)
        ns.write(_rows(0, 9000, 3))
        resume(p, flag)
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert out.strip() == "1"  # it was rebased
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    ns.refresh()
    for sql, n in [("i = 9001", 1), ("i = 5001", 1), ("i = 3", 1), ("i > 4000", 6)]:
        assert ns.to_table(filter=sql).num_rows == n, sql


@pytest.mark.spark
def test_spark_reads_skip_leaves_by_statistics(spark: Any, tmp_path: Path) -> None:
    """`lps.read` with a filter on a non-partition column, and the data source with a Spark
    filter pushed, plan one task per leaf the statistics keep."""
    import lance_partitioned.spark as lps

    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    table = pa.concat_tables([_rows(p, 0, 10) for p in range(5)])
    ns.write(table)
    df = lps.read(spark, ns.root, "i = 205", columns=["i"])
    assert df.rdd.getNumPartitions() == 1
    assert [r["i"] for r in df.collect()] == [205]
    pushed = spark.read.format("lance-partitioned").load(ns.root).where("i > 390")
    assert pushed.rdd.getNumPartitions() == 1
    want = sorted(v for v in table["i"].to_pylist() if v > 390)
    assert sorted(r["i"] for r in pushed.select("i").collect()) == want
