"""pyarrow filter expressions go through the native filter path (translated into the
DataFusion expression a SQL filter becomes): rows equal pyarrow's own filtering of the
written data (the oracle), pruning works on every transform as SQL's does, and what cannot
be translated fails with a typed error naming it."""

from __future__ import annotations

import datetime as dt
import functools
import math
import operator

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_partitioned as lp
from lance_partitioned import _native
from lance_partitioned.snapshot import native_filter

UTC = dt.timezone.utc
N = 400


def _data() -> pa.Table:
    countries = ["US", "FR", "JP", None, "DE"]
    floats = [1.5, math.nan, None, -2.0, 0.25, 1e9, 3.0]
    return pa.table(
        {
            "id": pa.array(range(N), pa.int64()),
            "country": pa.array([countries[i % 5] for i in range(N)], pa.string()),
            "ts": pa.array(
                [dt.datetime(2025, 1, 1, tzinfo=UTC) + dt.timedelta(hours=7 * i) for i in range(N)],
                pa.timestamp("us", tz="UTC"),
            ),
            "x": pa.array([floats[i % 7] for i in range(N)], pa.float64()),
            "flag": pa.array([None if i % 11 == 0 else i % 3 == 0 for i in range(N)], pa.bool_()),
            "name": pa.array([None if i % 13 == 0 else f"user-{i:04d}" for i in range(N)]),
        }
    )


SPEC = lp.PartitionSpec(
    [
        lp.PartitionField("country", source="country", transform=lp.Identity()),
        lp.PartitionField("month", source="ts", transform=lp.Month()),
        lp.PartitionField("year", source="ts", transform=lp.Year()),
        lp.PartitionField("b", source="id", transform=lp.Bucket(4)),
    ]
)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[lp.PartitionedNamespace, pa.Table]:
    data = _data()
    root = tmp_path_factory.mktemp("pyarrow_filters") / "ns"
    ns = lp.PartitionedNamespace.create(str(root), data.schema, SPEC)
    ns.write(data)
    return ns, data


F = pc.field
T0 = pa.scalar(dt.datetime(2025, 3, 1, tzinfo=UTC), pa.timestamp("us", tz="UTC"))
NAN = pa.scalar(math.nan, pa.float64())

EXPRESSIONS = {
    "eq": F("country") == "US",
    "ne": F("country") != "US",
    "and_kleene": (F("country") == "FR") & (F("id") > 100),
    "or_kleene": (F("country") == "FR") | F("flag"),
    "invert_isin_with_null_rows": ~F("country").isin(["US", "JP"]),
    "isin_set_with_null": F("country").isin(["US", None]),
    "isin_skip": pc.is_in(F("country"), value_set=pa.array(["US", None]), skip_nulls=True),
    "invert_isin_skip": ~pc.is_in(F("country"), value_set=pa.array(["FR", None]), skip_nulls=True),
    "is_null": F("country").is_null(),
    "is_valid": F("x").is_valid(),
    "is_null_nan": ~F("x").is_null(nan_is_null=True),
    "is_nan": F("x").is_nan(),
    "float_gt": F("x") > 1.0,
    "float_ge_not": ~(F("x") >= 0.25),
    "float_lt": F("x") < 1e10,
    "float_ne": F("x") != 3.0,
    "float_eq_nan": F("x") == NAN,
    "float_ne_nan": F("x") != NAN,
    # pc.and_/pc.or_ build calls pyarrow cannot evaluate ("and_"); the functions are "and"/"or"
    "non_kleene_and": ~pc.Expression._call("and", [F("flag"), F("country") == "US"]),
    "non_kleene_or": ~pc.Expression._call("or", [F("flag"), F("country") == "US"]),
    "xor": pc.xor(F("flag"), F("country") == "JP"),
    "ts_range": (F("ts") >= T0)
    & (F("ts") < pa.scalar(dt.datetime(2025, 5, 1, tzinfo=UTC), pa.timestamp("ms", tz="UTC"))),
    "starts_with": pc.starts_with(F("name"), "user-00"),
    "ends_with": ~pc.ends_with(F("name"), "7"),
    "match_substring": pc.match_substring(F("name"), "-01"),
    "arith": (F("id") * 3 - 7) / 2 > 100,
    "cast": F("id").cast(pa.float32()) < 50.5,
    "literal_only": pc.scalar(True),
}


@pytest.mark.parametrize("name", list(EXPRESSIONS))
def test_rows_equal_pyarrows_own_filter(
    written: tuple[lp.PartitionedNamespace, pa.Table], name: str
) -> None:
    ns, data = written
    expr = EXPRESSIONS[name]
    got = sorted(ns.to_table(expr, columns=["id"])["id"].to_pylist())
    want = sorted(data.filter(expr)["id"].to_pylist())
    assert got == want, name


@pytest.mark.parametrize(
    ("expr", "sql"),
    [
        (F("country").isin(["US", "JP"]), "country IN ('US', 'JP')"),
        (F("ts") >= T0, "ts >= TIMESTAMP '2025-03-01T00:00:00Z'"),
        ((F("id") == 7) | (F("id") == 9), "id = 7 OR id = 9"),
        ((F("country") == "FR") & (F("x") > 0.0), "country = 'FR' AND x > 0.0"),
    ],
)
def test_expressions_prune_like_sql_on_every_transform(
    written: tuple[lp.PartitionedNamespace, pa.Table], expr: pc.Expression, sql: str
) -> None:
    ns, data = written
    total = ns.partitions(with_rows=False).num_rows
    kept = set(ns.partitions(expr, with_rows=False)["object_id"].to_pylist())
    by_sql = set(ns.partitions(sql, with_rows=False)["object_id"].to_pylist())
    assert kept == by_sql
    assert 0 < len(kept) < total
    # every partition holding a matching row is kept (pruning is never wrong)
    assert len(ns.stats(expr)) == len(kept)
    assert f"total: kept {len(kept)} of {total} partitions" in ns.explain(expr)
    scan = ns.snapshot()._s.scan(native_filter(expr), ["id"], None)
    rows = sum(b.num_rows for b in scan)
    assert scan.leaves_opened <= len(kept)
    assert rows == data.filter(expr).num_rows


def test_a_5000_term_or_chain_is_balanced_and_exact(
    written: tuple[lp.PartitionedNamespace, pa.Table],
) -> None:
    # pyarrow itself crashes filtering with a 20,000-term chain (its recursion); 5,000 it can
    ns, data = written
    ids = list(range(0, 10_000, 2))
    expr = functools.reduce(operator.or_, [F("id") == i for i in ids])
    got = sorted(ns.to_table(expr, columns=["id"])["id"].to_pylist())
    assert got == [i for i in range(N) if i % 2 == 0]
    chain = functools.reduce(operator.and_, [F("id") != i for i in ids])
    assert ns.to_table(chain, columns=["id"]).num_rows == data.filter(chain).num_rows


@pytest.mark.parametrize(
    ("expr", "named"),
    [
        (pc.year(F("ts")) == 2025, "year"),
        (pc.match_substring(F("name"), "USER", ignore_case=True), "ignore_case"),
        (F("id").cast(pa.int8(), safe=False) > 1, "allow_int_overflow"),
        (F(("nested", "x")) == 1, "nested field"),
        (F("no_such_column") == 1, "no_such_column"),
        (F("country") == 1, "compare strings with strings"),
        (F("id") + 1, "must be boolean"),
    ],
)
def test_what_cannot_be_translated_fails_typed_and_named(
    written: tuple[lp.PartitionedNamespace, pa.Table], expr: pc.Expression, named: str
) -> None:
    ns, _ = written
    for call in (ns.to_table, ns.partitions, ns.stats, ns.explain):
        with pytest.raises(lp.ExpressionError, match=named):
            call(expr)


def test_corrupted_expression_bytes_fail_typed(
    written: tuple[lp.PartitionedNamespace, pa.Table],
) -> None:
    ns, _ = written
    good = native_filter((F("country") == "US") & F("id").isin([1, 2, 3]))
    assert isinstance(good, bytes)
    snap: _native.ManifestSnapshot = ns.snapshot()._s
    outcomes = set()
    for i in range(0, len(good), 7):
        for b in (0x00, 0xFF, good[i] ^ 0x55):
            bad = good[:i] + bytes([b]) + good[i + 1 :]
            try:
                snap.partitions(bad, False)
                outcomes.add("ok")
            except lp.ExpressionError:
                outcomes.add("expression")
    for bad in (b"", b"ARROW1", good[: len(good) // 2], good + b"x"):
        with pytest.raises(lp.ExpressionError):
            snap.partitions(bad, False)
    assert "expression" in outcomes
    with pytest.raises(lp.InvalidArgumentError):
        ns.to_table(42)  # type: ignore[arg-type]
