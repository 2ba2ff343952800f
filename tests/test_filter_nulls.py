"""Filters mean what SQL says where columns are NULL, whatever their shape: scans return, and
deletes remove, exactly the rows a filter is TRUE on.

DataFusion's simplifier (and Lance's, over filters pushed into it) folds two ``IN`` lists of
one column to a constant: ``s IN ('a') AND s IN ('b')`` to FALSE, ``s NOT IN ('a') OR s NOT
IN ('b')`` to TRUE, where SQL has NULL for a NULL ``s``; a scan returned, and a delete
removed, the NULL rows. The oracle is ``sql_filters.matching``: each atom evaluated alone by
pylance, combined by Kleene's logic in pyarrow; for deletes, the rows left must be those the
filter is not TRUE on.
"""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sql_filters import Filter, atom, combined, matching

import lance_partitioned as lp

SCHEMA = pa.schema([("p", pa.int32()), ("s", pa.string()), ("x", pa.int64())])
SPEC = lp.PartitionSpec([lp.PartitionField("p", "p", lp.Identity())])
STRINGS = ["'a'", "'b'", "'c'"]
INTS = ["1", "2", "3"]


def content() -> pa.Table:
    """Every combination of ``s`` in a, b, c or NULL and ``x`` in 1, 2, 3 or NULL, in two
    partitions (one holding only NULL ``s``, which a wrong delete drops whole)."""
    rows = []
    for s in ["a", "b", "c", None]:
        for x in [1, 2, 3, None]:
            rows.append({"p": 0 if s is not None else 1, "s": s, "x": x})
    rows += [{"p": 0, "s": None, "x": 2}]
    return pa.Table.from_pylist(rows, schema=SCHEMA)


@st.composite
def _atom(draw: st.DrawFn) -> str:
    col, lits = draw(st.sampled_from([("s", STRINGS), ("x", INTS)]))
    kind = draw(st.sampled_from(["in", "in", "not in", "=", "<>"]))
    if kind in ("=", "<>"):
        return f"{col} {kind} {draw(st.sampled_from(lits))}"
    picked = draw(st.lists(st.sampled_from([*lits, "NULL"]), min_size=1, max_size=3, unique=True))
    return f"{col} {kind.upper()} ({', '.join(picked)})"


_FILTER = combined(_atom(), max_leaves=4)


def rows_of(t: pa.Table) -> list[str]:
    return sorted(repr(r) for r in t.select(SCHEMA.names).to_pylist())


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> lance.LanceDataset:
    return lance.write_dataset(content(), str(tmp_path_factory.mktemp("oracle") / "plain"))


@pytest.fixture(scope="module")
def ns(tmp_path_factory: pytest.TempPathFactory) -> lp.PartitionedNamespace:
    n = lp.PartitionedNamespace.create(str(tmp_path_factory.mktemp("nulls") / "ns"), SCHEMA, SPEC)
    n.write(content())
    return n


def _not(f: Filter) -> Filter:
    return Filter("NOT", (f,))


def _and(a: Filter, b: Filter) -> Filter:
    return Filter("AND", (a, b))


def _or(a: Filter, b: Filter) -> Filter:
    return Filter("OR", (a, b))


# Built as trees of atoms, so that the oracle evaluates each atom alone: pylance, given the
# whole filter, folds it as wrongly as DataFusion does.
REGRESSIONS = [
    _or(_not(atom("s IN ('a')")), _not(atom("s IN ('b')"))),
    _or(atom("s NOT IN ('a')"), atom("s NOT IN ('b')")),
    _not(_and(atom("s IN ('a')"), atom("s IN ('b')"))),
    _not(_and(_or(atom("s = 'a'"), atom("s = 'c'")), atom("s = 'b'"))),
    _not(_and(atom("s IN ('a')"), atom("s NOT IN ('a', 'b')"))),
    _not(_and(atom("x IN (1, NULL)"), atom("x IN (2)"))),
    _or(atom("x NOT IN (1, NULL)"), atom("x NOT IN (2)")),
]


@pytest.mark.parametrize("flt", REGRESSIONS, ids=str)
def test_pairs_of_lists_are_null_where_their_column_is(
    ns: lp.PartitionedNamespace, oracle: lance.LanceDataset, flt: Filter
) -> None:
    sql = str(flt)
    assert rows_of(ns.to_table(filter=sql)) == rows_of(matching(oracle, flt)), sql


@pytest.mark.parametrize("flt", REGRESSIONS, ids=str)
def test_a_delete_removes_only_the_rows_a_pair_of_lists_is_true_on(
    tmp_path: Path, oracle: lance.LanceDataset, flt: Filter
) -> None:
    sql = str(flt)
    n = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    n.write(content())
    removed = rows_of(matching(oracle, flt))
    left = sorted(r for r in rows_of(content()) if r not in removed)
    n.delete(sql)
    assert rows_of(n.to_table()) == left, sql


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(flt=_FILTER)
@example(flt=Filter("OR", (atom("s NOT IN ('a')"), atom("s NOT IN ('b')"))))
def test_scans_agree_with_three_valued_logic(
    ns: lp.PartitionedNamespace, oracle: lance.LanceDataset, flt: Filter
) -> None:
    sql = str(flt)
    assert rows_of(ns.to_table(filter=sql)) == rows_of(matching(oracle, flt)), sql
