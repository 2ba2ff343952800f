"""Pruning is exact at period boundaries: a strict bound that falls on the first (last) value
of a year/month/day/hour or truncate period excludes that period, and filters that are never
TRUE keep no partition. Each partition holds the first and the last value of its period, so the
partitions with a matching row are exactly those whose period meets the filter: the kept set
must equal them (never fewer, which would lose rows; never more).

The expected partitions never come from the namespace: the input rows are filtered with
pyarrow's comparison kernels and mapped to partition values by a Python model of each
transform (calendar fields in the column's zone via zoneinfo, truncation toward zero)."""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lance_partitioned as lp

UTC = datetime.timezone.utc
US = datetime.timedelta(microseconds=1)


_COMPARE = {"<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal}


def _expected(
    table: pa.Table, column: str, op: str, value: Any, model: Callable[[Any], Any]
) -> set:
    """The partition values (by ``model``) of the input rows where ``column op value``."""
    literal = pa.scalar(value, table.schema.field(column).type)
    rows = table.filter(_COMPARE[op](table[column], literal))[column].to_pylist()
    return {model(v) for v in rows}


def _kept(ns: lp.PartitionedNamespace, sql: str, fields: list[str]) -> set:
    t = ns.partitions(sql, with_rows=False).select(fields)
    return set(zip(*(t[f].to_pylist() for f in fields), strict=True))


def _truncate_int(x: int, width: int) -> int:
    """Truncation toward zero (the spec's ``x - x % W`` with a remainder of x's sign)."""
    return x - int(math.fmod(x, width))


@pytest.fixture(scope="module")
def years(tmp_path_factory: pytest.TempPathFactory) -> tuple[lp.PartitionedNamespace, pa.Table]:
    schema = pa.schema([("ts", pa.timestamp("us", tz="UTC"))])
    spec = lp.PartitionSpec([lp.PartitionField("y", "ts", lp.Year())])
    ns = lp.PartitionedNamespace.create(str(tmp_path_factory.mktemp("y") / "ns"), schema, spec)
    rows = []
    for y in range(2018, 2023):
        start = datetime.datetime(y, 1, 1, tzinfo=UTC)
        rows += [start, datetime.datetime(y + 1, 1, 1, tzinfo=UTC) - US]
    table = pa.table({"ts": rows}, schema=schema)
    ns.write(table)
    return ns, table


def _ts(t: datetime.datetime) -> str:
    return f"TIMESTAMP '{t.strftime('%Y-%m-%dT%H:%M:%S.%f')}Z'"


_POINTS = [
    datetime.datetime(y, 1, 1, tzinfo=UTC) + d
    for y in range(2017, 2024)
    for d in (-US, datetime.timedelta(0), US, datetime.timedelta(days=100))
]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(t=st.sampled_from(_POINTS), op=st.sampled_from(["<", "<=", ">", ">="]))
def test_year_bounds_are_exact(
    years: tuple[lp.PartitionedNamespace, pa.Table], t: datetime.datetime, op: str
) -> None:
    ns, table = years
    want = _expected(table, "ts", op, t, lambda v: (v.astimezone(UTC).year,))
    assert _kept(ns, f"ts {op} {_ts(t)}", ["y"]) == want


def test_the_common_time_range_reads_one_year(
    years: tuple[lp.PartitionedNamespace, pa.Table],
) -> None:
    ns, _ = years
    sql = f"ts >= {_ts(datetime.datetime(2020, 1, 1, tzinfo=UTC))} AND ts < " + _ts(
        datetime.datetime(2021, 1, 1, tzinfo=UTC)
    )
    assert ns.partitions(sql, with_rows=False)["y"].to_pylist() == [2020]
    assert "partition_field_y < 2021" in ns.explain(sql)


@pytest.fixture(scope="module")
def days(tmp_path_factory: pytest.TempPathFactory) -> tuple[lp.PartitionedNamespace, pa.Table]:
    """Dates (including before 1970 and a leap day) by year/month/day."""
    schema = pa.schema([("d", pa.date32())])
    spec = lp.PartitionSpec(
        [
            lp.PartitionField("y", "d", lp.Year()),
            lp.PartitionField("m", "d", lp.Month()),
            lp.PartitionField("dd", "d", lp.Day()),
        ]
    )
    ns = lp.PartitionedNamespace.create(str(tmp_path_factory.mktemp("d") / "ns"), schema, spec)
    start = datetime.date(1969, 12, 25)
    dates = [start + datetime.timedelta(days=i) for i in range(12)]
    dates += [datetime.date(2024, 2, 28), datetime.date(2024, 2, 29), datetime.date(2024, 3, 1)]
    table = pa.table({"d": dates}, schema=schema)
    ns.write(table)
    return ns, table


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    d=st.sampled_from(
        [
            datetime.date(1969, 12, 31),
            datetime.date(1970, 1, 1),
            datetime.date(2024, 2, 29),
            datetime.date(2024, 3, 1),
            datetime.date(1969, 12, 26),
        ]
    ),
    op=st.sampled_from(["<", "<=", ">", ">="]),
)
def test_day_bounds_are_exact(
    days: tuple[lp.PartitionedNamespace, pa.Table], d: datetime.date, op: str
) -> None:
    ns, table = days
    want = _expected(table, "d", op, d, lambda x: (x.year, x.month, x.day))
    assert _kept(ns, f"d {op} DATE '{d.isoformat()}'", ["y", "m", "dd"]) == want


def test_truncate_bounds_are_exact(tmp_path: Path) -> None:
    schema = pa.schema([("x", pa.int64()), ("s", pa.string())])
    spec = lp.PartitionSpec(
        [
            lp.PartitionField("xt", "x", lp.Truncate(10)),
            lp.PartitionField("st", "s", lp.Truncate(2)),
        ]
    )
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema, spec)
    table = pa.table(
        {
            # Both ends of every bucket: truncation goes toward zero (`x - x % W`, the
            # spec's definition), so bucket 0 holds -9..9.
            "x": [-29, -20, -19, -10, -9, 9, 10, 19, 20, 29],
            "s": ["a", "ab", "abz", "b", "ba", "c", "", "zz", "zz", "zz"],
        },
        schema=schema,
    )
    ns.write(table)
    for bound in (-30, -29, -20, -19, -11, -10, -9, -1, 0, 1, 9, 10, 11, 19, 20, 29, 30):
        for op in ("<", "<=", ">", ">="):
            want = _expected(table, "x", op, bound, lambda x: (_truncate_int(x, 10),))
            assert _kept(ns, f"x {op} {bound}", ["xt"]) == want, (op, bound)
    for bound in ("", "a", "ab", "abz", "b", "ba", "bz", "c", "zz", "zzz"):
        for op in ("<", "<=", ">", ">="):
            want = _expected(table, "s", op, bound, lambda v: (v[:2],))
            # Pruning treats a string partition as every value with its prefix, so it keeps
            # at least the partitions with a matching row (a prefix shorter than the width,
            # which holds only itself, may be kept in excess).
            assert want <= _kept(ns, f"s {op} '{bound}'", ["st"]), (op, bound)
    # Exact where the prefix decides: `s < 'ab'` excludes 'ab' (all of its values start
    # with 'ab'), `s >= 'b'` excludes 'ab' and 'a'.
    assert _kept(ns, "s < 'ab'", ["st"]) == {("a",), ("",)}
    assert _kept(ns, "s >= 'b'", ["st"]) == {("b",), ("ba",), ("c",), ("zz",)}


@pytest.mark.parametrize(
    "sql",
    ["FALSE", "NOT TRUE", "x = NULL", "CAST(NULL AS BOOLEAN)", "x > 1 AND FALSE"],
)
def test_never_true_filters_keep_nothing(tmp_path: Path, sql: str) -> None:
    schema = pa.schema([("x", pa.int64())])
    ns = lp.PartitionedNamespace.create(
        str(tmp_path / "ns"), schema, lp.PartitionSpec([lp.PartitionField("x", "x", lp.Identity())])
    )
    ns.write(pa.table({"x": [1, 2, 3]}, schema=schema))
    assert ns.partitions(sql, with_rows=False).num_rows == 0
    assert "kept 0 of 3" in ns.explain(sql)
    assert "FALSE" in ns.explain(sql)
    assert ns.to_table(sql).num_rows == 0
    # and the opposite still keeps everything
    assert ns.partitions(f"NOT ({sql})" if "NULL" not in sql else "TRUE").num_rows == 3
    assert pc.sum(ns.to_table()["x"]).as_py() == 6


@pytest.fixture(scope="module")
def xys(tmp_path_factory: pytest.TempPathFactory) -> tuple[lp.PartitionedNamespace, pa.Table]:
    """Partitioned by identity on ``x``; ``y`` and ``s`` are not partition sources."""
    schema = pa.schema([("x", pa.int64()), ("y", pa.int64()), ("s", pa.string())])
    spec = lp.PartitionSpec([lp.PartitionField("x", "x", lp.Identity())])
    ns = lp.PartitionedNamespace.create(str(tmp_path_factory.mktemp("xy") / "ns"), schema, spec)
    table = pa.table(
        {
            "x": [i % 4 for i in range(40)],
            "y": [i - 20 if i % 7 else None for i in range(40)],
            "s": [chr(ord("a") + i % 5) * (1 + i % 3) for i in range(40)],
        },
        schema=schema,
    )
    ns.write(table)
    return ns, table


@pytest.mark.parametrize(
    "sql",
    [
        "x IN (NULL)",
        "y IN (NULL)",
        "y IN (NULL, NULL) OR x IN (CAST(NULL AS BIGINT))",
        "y > 5 AND y < 3",
        "y >= 3 AND y < 3",
        "3 < y AND y <= 3",
        "y = 1 AND y = 2",
        "x = 1 AND y > 0 AND y < 10 AND y >= 10",
        "s > 'b' AND s < 'a'",
        "s = 'a' AND s = 'b'",
    ],
)
def test_filters_never_true_on_any_column_keep_no_partition(
    xys: tuple[lp.PartitionedNamespace, pa.Table], sql: str
) -> None:
    ns, _ = xys
    assert ns.partitions(sql, with_rows=False).num_rows == 0
    assert "kept 0 of 4" in ns.explain(sql)
    assert ns.to_table(sql).num_rows == 0


def test_nulls_in_an_in_list_are_dropped_not_kept(
    xys: tuple[lp.PartitionedNamespace, pa.Table],
) -> None:
    ns, table = xys
    assert _kept(ns, "x IN (1, NULL)", ["x"]) == {(1,)}
    got = ns.to_table("x IN (1, NULL) AND y IN (NULL, -19, 5)")
    want = table.filter(pc.field("x").isin([1]) & pc.field("y").isin([-19, 5]))
    assert sorted(got["y"].to_pylist()) == sorted(want["y"].to_pylist()) == [-19, 5]
    # Not a comparison: TRUE where y is NULL.
    got = ns.to_table("y IS NOT DISTINCT FROM NULL")
    assert got.num_rows == pc.sum(pc.is_null(table["y"])).as_py() > 0


_BOUND = st.tuples(st.sampled_from(["<", "<=", ">", ">=", "="]), st.integers(-25, 25))


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(bounds=st.lists(_BOUND, min_size=1, max_size=4), on_x=st.booleans())
def test_bounds_on_any_column_never_change_an_answer(
    xys: tuple[lp.PartitionedNamespace, pa.Table], bounds: list[tuple[str, int]], on_x: bool
) -> None:
    """Random conjunctions of bounds (satisfiable or not) read exactly the rows pyarrow's
    kernels keep, on a partition source and on another column."""
    ns, table = xys
    column = "x" if on_x else "y"
    ops = {**_COMPARE, "=": pc.equal}
    mask = None
    for op, v in bounds:
        m = ops[op](table[column], pa.scalar(v, pa.int64()))
        mask = m if mask is None else pc.and_kleene(mask, m)
    want = sorted(table.filter(mask)["y"].to_pylist(), key=str)
    sql = " AND ".join(f"{column} {op} {v}" for op, v in bounds)
    assert sorted(ns.to_table(sql)["y"].to_pylist(), key=str) == want, sql


def test_date_part_prunes_on_the_field_it_equals(tmp_path: Path) -> None:
    schema = pa.schema([("ts", pa.timestamp("us", tz="UTC"))])
    spec = lp.PartitionSpec(
        [lp.PartitionField("y", "ts", lp.Year()), lp.PartitionField("m", "ts", lp.Month())]
    )
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema, spec)
    stamps = [datetime.datetime(y, m, 1, tzinfo=UTC) for y in (2019, 2020, 2021) for m in (1, 6)]
    ns.write(pa.table({"ts": stamps}, schema=schema))

    def kept(sql: str) -> set[tuple[int, int]]:
        t = ns.partitions(sql, with_rows=False)
        return set(zip(t["y"].to_pylist(), t["m"].to_pylist(), strict=True))

    assert kept("date_part('year', ts) = 2020") == {(2020, 1), (2020, 6)}
    assert kept("extract(year from ts) >= 2021") == {(2021, 1), (2021, 6)}
    assert kept("date_part('month', ts) < 3") == {(2019, 1), (2020, 1), (2021, 1)}
    assert kept("date_part('YEAR', ts) = 2020 AND date_part('month', ts) = 6") == {(2020, 6)}
    for sql in ("date_part('month', ts) < 3", "date_part('year', ts) = 2020"):
        assert ns.to_table(sql).num_rows == len(kept(sql))


_NY_DAYS = [datetime.date(2024, 3, d) for d in (9, 10, 11)] + [
    datetime.date(2024, 11, d) for d in (2, 3, 4)
]
_NY_FIELDS = ["y", "m", "d", "h"]


@pytest.fixture(scope="module")
def new_york(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[lp.PartitionedNamespace, pa.Table]:
    """Timestamps in America/New_York by local year, month, day and hour, on the days around
    both DST changes of 2024 (March 10: 02:00 -> 03:00; November 3: 02:00 -> 01:00), with the
    first and the last microsecond of every hour (so every partition holds both ends of its
    period; the repeated hour's partition holds both of its hours)."""
    from zoneinfo import ZoneInfo

    ny = ZoneInfo("America/New_York")
    schema = pa.schema([("ts", pa.timestamp("us", tz="America/New_York"))])
    spec = lp.PartitionSpec(
        [
            lp.PartitionField("y", "ts", lp.Year()),
            lp.PartitionField("m", "ts", lp.Month()),
            lp.PartitionField("d", "ts", lp.Day()),
            lp.PartitionField("h", "ts", lp.Hour()),
        ]
    )
    ns = lp.PartitionedNamespace.create(str(tmp_path_factory.mktemp("ny") / "ns"), schema, spec)
    rows = []
    for first in (_NY_DAYS[0], _NY_DAYS[3]):
        start = datetime.datetime.combine(first, datetime.time(), ny).astimezone(UTC)
        for h in range(72 + 2):
            hour = start + datetime.timedelta(hours=h)
            rows += [hour, hour + datetime.timedelta(hours=1) - US]
    table = pa.table({"ts": rows}, schema=schema)
    ns.write(table)
    return ns, table


def _ny_points() -> list[datetime.datetime]:
    from zoneinfo import ZoneInfo

    ny = ZoneInfo("America/New_York")
    out = []
    for day in _NY_DAYS:
        for hour in (0, 1, 2, 3, 12, 23):
            local = datetime.datetime.combine(day, datetime.time(hour), ny)
            for fold in (0, 1):
                t = local.replace(fold=fold).astimezone(UTC)
                out += [t - US, t, t + US]
    return sorted(set(out))


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(t=st.sampled_from(_ny_points()), op=st.sampled_from(["<", "<=", ">", ">="]))
def test_bounds_are_exact_across_dst_changes_in_a_named_zone(
    new_york: tuple[lp.PartitionedNamespace, pa.Table], t: datetime.datetime, op: str
) -> None:
    """Local hours of America/New_York across both DST changes: the kept partitions are
    exactly those holding a matching row, for bounds at the first and last microsecond of
    local hours and days (including the skipped and the repeated hour)."""
    from zoneinfo import ZoneInfo

    ny = ZoneInfo("America/New_York")
    ns, table = new_york

    def local(v: datetime.datetime) -> tuple[int, int, int, int]:
        x = v.astimezone(ny)
        return (x.year, x.month, x.day, x.hour)

    want = _expected(table, "ts", op, t, local)
    # A string literal ending in Z is an instant to DataFusion (the scan's engine), as to
    # pyarrow. (`TIMESTAMP '...Z'` is a naive timestamp there, read in the column's zone.)
    kept = _kept(ns, f"ts {op} '{t.strftime('%Y-%m-%dT%H:%M:%S.%f')}Z'", _NY_FIELDS)
    assert want <= kept, "pruning lost rows"
    assert kept == want


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(t=st.sampled_from(_ny_points()), op=st.sampled_from(["<", "<=", ">", ">="]))
def test_a_naive_timestamp_literal_prunes_as_datafusion_reads_it(
    new_york: tuple[lp.PartitionedNamespace, pa.Table], t: datetime.datetime, op: str
) -> None:
    """`TIMESTAMP '<local time>'` has no zone: DataFusion (the scan's engine) reads it in the
    column's zone, and refuses a local time of the repeated hour (ambiguous), as our filters
    then do (ExpressionError). The rows it matches come from DataFusion evaluating the filter
    over the unpruned input; pruning keeps exactly their partitions."""
    from zoneinfo import ZoneInfo

    ny = ZoneInfo("America/New_York")
    ns, table = new_york
    text = t.astimezone(ny).strftime("%Y-%m-%dT%H:%M:%S.%f")
    column = table["ts"].combine_chunks()
    sql = f"ts {op} TIMESTAMP '{text}'"
    try:
        mask = lp.kernels.evaluate(f"col0 {op} TIMESTAMP '{text}'", [column])
    except lp.ExpressionError:
        naive = t.astimezone(ny).replace(tzinfo=None)
        offsets = {naive.replace(tzinfo=ny, fold=f).utcoffset() for f in (0, 1)}
        assert len(offsets) == 2, f"{text} is not ambiguous, yet DataFusion refused it"
        with pytest.raises(lp.ExpressionError, match="bad filter"):
            ns.partitions(sql)
        return
    matched = table.filter(mask)["ts"].to_pylist()
    want = {(x.year, x.month, x.day, x.hour) for x in (v.astimezone(ny) for v in matched)}
    assert _kept(ns, sql, _NY_FIELDS) == want
