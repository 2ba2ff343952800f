"""The namespace as a ``pyarrow.dataset.Dataset``: DuckDB and polars query it and push their
projections and filters into our pruned scan.

Expected answers come from pyarrow's kernels over the input table; that pruning happened is
checked by recording what each engine passed to the view's scanner and asking the namespace
which partitions that filter keeps, against the partitions pyarrow finds holding a match.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_partitioned as lp
from lance_partitioned.dataset_view import NamespaceDataset

SCHEMA = pa.schema([("p", pa.int32()), ("i", pa.int64()), ("s", pa.string()), ("x", pa.float64())])
SPEC = lp.PartitionSpec([lp.PartitionField("p", "p", lp.Identity())])
N = 1_000


def _input() -> pa.Table:
    return pa.table(
        {
            "p": pa.array([k % 8 for k in range(N)], pa.int32()),
            "i": list(range(N)),
            "s": [f"s{k % 37:02d}" for k in range(N)],
            "x": [None if k % 11 == 0 else k / 7 for k in range(N)],
        },
        schema=SCHEMA,
    )


@pytest.fixture(scope="module")
def ns(tmp_path_factory: pytest.TempPathFactory) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(str(tmp_path_factory.mktemp("view") / "ns"), SCHEMA, SPEC)
    ns.write(_input())
    return ns


@pytest.fixture
def spied(
    ns: lp.PartitionedNamespace, monkeypatch: pytest.MonkeyPatch
) -> tuple[NamespaceDataset, list[dict[str, Any]]]:
    """The view, with every scanner() call's columns and filter recorded (on the class:
    DuckDB looks the method up there)."""
    calls: list[dict[str, Any]] = []
    real = NamespaceDataset.scanner

    def scanner(self: NamespaceDataset, columns: Any = None, filter: Any = None, **kw: Any) -> Any:
        calls.append({"columns": columns, "filter": filter})
        return real(self, columns, filter, **kw)

    monkeypatch.setattr(NamespaceDataset, "scanner", scanner)
    return ns.to_pyarrow_dataset(), calls


def _kept(ns: lp.PartitionedNamespace, filter: pc.Expression) -> set[int]:
    return set(ns.partitions(filter, with_rows=False)["p"].to_pylist())


def test_duckdb_pushes_projection_and_filter_into_a_pruned_scan(
    ns: lp.PartitionedNamespace, spied: tuple[NamespaceDataset, list[dict[str, Any]]]
) -> None:
    ds, calls = spied  # noqa: RUF059 (DuckDB finds the view by its variable name)
    got = duckdb.sql("SELECT i, s FROM ds WHERE p IN (2, 5) AND i >= 500 ORDER BY i").arrow()
    t = _input()
    mask = pc.and_(pc.is_in(t["p"], pa.array([2, 5], pa.int32())), pc.greater_equal(t["i"], 500))
    want = t.filter(mask).select(["i", "s"]).sort_by("i")
    assert got.read_all().to_pylist() == want.to_pylist()
    (call,) = calls
    assert set(call["columns"]) <= {"i", "s", "p"}  # not x: the projection was pushed
    assert call["filter"] is not None
    assert _kept(ns, call["filter"]) == {2, 5}


def test_duckdb_aggregates_over_every_partition(
    ns: lp.PartitionedNamespace, spied: tuple[NamespaceDataset, list[dict[str, Any]]]
) -> None:
    ds, _ = spied  # noqa: RUF059 (DuckDB finds the view by its variable name)
    rows = duckdb.sql("SELECT p, count(*), sum(x) FROM ds GROUP BY p ORDER BY p").fetchall()
    t = _input()
    want = t.group_by("p").aggregate([("i", "count"), ("x", "sum")]).sort_by("p").to_pylist()
    assert [r[0] for r in rows] == [w["p"] for w in want]
    assert [r[1] for r in rows] == [w["i_count"] for w in want]
    assert [r[2] for r in rows] == pytest.approx([w["x_sum"] for w in want])


def test_polars_pushes_projection_and_filter_into_a_pruned_scan(
    ns: lp.PartitionedNamespace, spied: tuple[NamespaceDataset, list[dict[str, Any]]]
) -> None:
    ds, calls = spied
    got = (
        pl.scan_pyarrow_dataset(ds)
        .filter((pl.col("p") == 3) & (pl.col("s") < "s10"))
        .select("i", "s")
        .collect()
        .sort("i")
    )
    t = _input()
    mask = pc.and_(pc.equal(t["p"], 3), pc.less(t["s"], "s10"))
    want = t.filter(mask).select(["i", "s"]).sort_by("i")
    assert got.to_arrow().to_pylist() == want.to_pylist()
    call = calls[-1]
    assert set(call["columns"]) <= {"i", "s", "p"}  # not x: the projection was pushed
    assert _kept(ns, call["filter"]) == {3}


@pytest.mark.parametrize(
    "where",
    ["x IN (1.0, 2.0, 10.0)", "NOT (p IN (2, 5))", "s IN ('s01', 's02') OR x IS NULL"],
)
def test_duckdb_in_lists_keep_sql_semantics(
    ns: lp.PartitionedNamespace, spied: tuple[NamespaceDataset, list[dict[str, Any]]], where: str
) -> None:
    """DuckDB sends an IN as ``if_else(is_valid(col), is_in(col, ...), null)``; NULLs in the
    column must stay unknown (a NOT over them keeps them out), as pyarrow evaluates the
    expression DuckDB sent over the input."""
    ds, calls = spied  # noqa: RUF059 (DuckDB finds the view by its variable name)
    got = duckdb.sql(f"SELECT i FROM ds WHERE {where} ORDER BY i").fetchall()
    (call,) = calls
    want = _input().filter(call["filter"]).sort_by("i")["i"].to_pylist()
    assert [r[0] for r in got] == want


def test_if_else_filters_match_pyarrow(ns: lp.PartitionedNamespace) -> None:
    """``if_else`` with a condition that is NULL on some rows: NULL, not the else branch."""
    x, i = pc.field("x"), pc.field("i")
    for flt in [
        pc.if_else(x > 50, i < 400, i > 900),  # x is NULL on multiples of 11: not the else
        pc.if_else(i.is_valid(), i.isin([3, 4, 5]), pc.scalar(pa.scalar(None, pa.bool_()))),
        ~pc.if_else(x.is_valid(), x.isin([1.0, 2.0]), pc.scalar(pa.scalar(None, pa.bool_()))),
    ]:
        want = _input().filter(flt).sort_by("i")["i"].to_pylist()
        assert ns.to_table(filter=flt).sort_by("i")["i"].to_pylist() == want, str(flt)


def test_pyarrow_reads_through_the_view(ns: lp.PartitionedNamespace) -> None:
    ds = ns.to_pyarrow_dataset()
    t = _input()
    flt = pc.field("i") < 100
    assert ds.schema == ns.schema
    got = ds.to_table(columns=["i"], filter=flt)
    assert sorted(got["i"].to_pylist()) == list(range(100))
    assert ds.count_rows(filter=pc.field("x").is_null()) == pc.sum(pc.is_null(t["x"])).as_py()
    assert ds.count_rows() == N
    assert ds.head(5, columns=["s"]).num_rows == 5
    reader = ds.scanner(columns=["p"], filter=pc.field("p") == 1, batch_size=7).to_reader()
    assert {b.num_rows <= 7 for b in reader} == {True}
    assert ds.scanner(columns=["i", "x"]).projected_schema.names == ["i", "x"]


def test_small_batches_of_many_partitions_come_combined(ns: lp.PartitionedNamespace) -> None:
    """Every one of the 8 partitions holds a few matching rows: they arrive in batches of up
    to the asked size, not one per partition, in the same order as unbatched."""
    where = pc.field("i") < 100
    want = _input().filter(where)
    view = ns.to_pyarrow_dataset()
    plain = list(ns.scan(where, ["i"]))
    assert len(plain) == 8  # one per partition, as Lance reads them
    for size in (1, 7, 25, 1000):
        got = list(ns.scan(where, ["i"], batch_size=size))
        assert all(b.num_rows <= size for b in got)
        # Two consecutive batches hold more than `size` rows, or one of them half of it.
        assert len(got) <= 2 * -(-want.num_rows // max(size // 2, 1)) + 1
        if size >= 2 * max(b.num_rows for b in plain):
            assert len(got) == 1  # every partition's rows in one batch
        assert (
            pa.Table.from_batches(got)["i"].to_pylist()
            == pa.Table.from_batches(plain)["i"].to_pylist()
        )
    # The view combines to pyarrow's default size when the caller names none.
    batches = list(view.to_batches(columns=["i"], filter=where))
    assert len(batches) == 1
    assert sorted(batches[0]["i"].to_pylist()) == sorted(want["i"].to_pylist())


def test_a_view_reads_the_version_it_was_made_at(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    ns.write(_input())
    before = ns.to_pyarrow_dataset()
    ns.write(_input())
    assert before.count_rows() == N
    assert ns.to_pyarrow_dataset().count_rows() == 2 * N
    assert ns.to_pyarrow_dataset(as_of=before.version).count_rows() == N
    assert duckdb.sql("SELECT count(*) FROM before").fetchall() == [(N,)]


def test_what_the_view_refuses(ns: lp.PartitionedNamespace) -> None:
    ds = ns.to_pyarrow_dataset()
    with pytest.raises(lp.InvalidArgumentError, match="column names"):
        ds.scanner(columns={"j": pc.field("i") + 1})
    with pytest.raises(lp.InvalidArgumentError, match=r"pyarrow\.compute\.Expression"):
        ds.scanner(filter="i > 3")  # type: ignore[arg-type]
    with pytest.raises(lp.InvalidArgumentError, match="nope"):
        ds.scanner(columns=["nope"])
    with pytest.raises(lp.InvalidArgumentError, match="unsupported scan option"):
        ds.scanner(fragment_filter=True)
    with pytest.raises(NotImplementedError):
        ds.get_fragments()
