"""Property and fuzz tests against simple models: schema evolution in random order against an
in-memory model of what every read must return, random filters against DataFusion over the
same rows, and random bad inputs that must raise our exception types (never another type,
never a crash)."""

from __future__ import annotations

import tempfile
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from typed import raises_typed, typed_or_nothing

import lance_partitioned as lp
from lance_partitioned import kernels

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

NAMES = ["a", "b", "c", "d"]
TYPES = {"int32": pa.int32(), "int64": pa.int64(), "string": pa.string()}


def _field_ids(schema: pa.Schema) -> dict[str, int]:
    return {f.name: int(f.metadata[b"lance:field_id"]) for f in schema}


class SchemaEvolution(RuleBasedStateMachine):
    """Adds, drops, renames and widens columns in random order between appends; every read
    must equal the model: a row has a value for a column exactly when that column's field id
    existed and was written for it; everything else is NULL."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.TemporaryDirectory()
        schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.int32())])
        spec = lp.PartitionSpec([lp.PartitionField("p", source="p", transform=lp.Identity())])
        self.ns = lp.PartitionedNamespace.create(self.dir.name + "/ns", schema, spec)
        # model: columns name -> (field id, type name); rows: id -> {field id: value}
        self.cols: dict[str, tuple[int, str]] = {}
        self.rows: dict[int, dict[int, Any]] = {}
        self.next_id = 0
        self.seen_ids = set(_field_ids(self.ns.schema).values())

    def teardown(self) -> None:
        self.dir.cleanup()

    def _sync_ids(self) -> None:
        ids = _field_ids(self.ns.schema)
        for name, (fid, _t) in list(self.cols.items()):
            assert ids[name] == fid, f"{name} changed id"
        for name in ids:
            if name not in ("id", "p") and name not in self.cols:
                raise AssertionError(f"unexpected column {name}")

    @rule(name=st.sampled_from(NAMES), t=st.sampled_from(list(TYPES)))
    def add(self, name: str, t: str) -> None:
        if name in self.cols:
            with raises_typed():
                self.ns.add_columns([pa.field(name, TYPES[t])])
            return
        self.ns.add_columns([pa.field(name, TYPES[t])])
        fid = _field_ids(self.ns.schema)[name]
        assert fid not in self.seen_ids, "a field id was reused"
        self.seen_ids.add(fid)
        self.cols[name] = (fid, t)

    @precondition(lambda self: bool(self.cols))
    @rule(data=st.data())
    def drop(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.cols)))
        self.ns.drop_columns([name])
        del self.cols[name]

    @precondition(lambda self: bool(self.cols))
    @rule(data=st.data(), new=st.sampled_from(NAMES))
    def rename(self, data: st.DataObject, new: str) -> None:
        old = data.draw(st.sampled_from(sorted(self.cols)))
        if new in self.cols and new != old:
            with raises_typed():
                self.ns.rename_column(old, new)
            return
        self.ns.rename_column(old, new)
        self.cols[new] = self.cols.pop(old)

    @precondition(lambda self: any(t == "int32" for _, t in self.cols.values()))
    @rule(data=st.data())
    def widen(self, data: st.DataObject) -> None:
        name = data.draw(
            st.sampled_from(sorted(n for n, c in self.cols.items() if c[1] == "int32"))
        )
        self.ns.alter_column(name, pa.int64())
        self.cols[name] = (self.cols[name][0], "int64")

    @rule(n=st.integers(1, 4), p=st.integers(0, 2), data=st.data())
    def append(self, n: int, p: int, data: st.DataObject) -> None:
        ids = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        table: dict[str, Any] = {
            "id": pa.array(ids, pa.int64()),
            "p": pa.array([p] * n, pa.int32()),
        }
        for name, (fid, t) in self.cols.items():
            if t == "string":
                vals: list[Any] = data.draw(
                    st.lists(st.none() | st.text(max_size=3), min_size=n, max_size=n)
                )
            else:
                vals = data.draw(
                    st.lists(st.none() | st.integers(-1000, 1000), min_size=n, max_size=n)
                )
            table[name] = pa.array(vals, TYPES[t])
            for i, v in zip(ids, vals, strict=True):
                self.rows.setdefault(i, {})[fid] = v
        for i in ids:
            self.rows.setdefault(i, {})
        self.ns.write(pa.table(table))

    @invariant()
    def reads_match_the_model(self) -> None:
        self._sync_ids()
        got = self.ns.to_table().sort_by("id")
        assert got["id"].to_pylist() == sorted(self.rows)
        for name, (fid, _t) in self.cols.items():
            want = [self.rows[i].get(fid) for i in sorted(self.rows)]
            assert got[name].to_pylist() == want, name
        assert set(got.column_names) == {"id", "p", *self.cols}


TestSchemaEvolution = SchemaEvolution.TestCase
TestSchemaEvolution.settings = settings(
    max_examples=12,
    stateful_step_count=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


# -- random filters against DataFusion over the same rows -------------------------------------

COLUMNS = ["id", "country", "n"]


def _atoms() -> st.SearchStrategy[tuple[str, str]]:
    """(filter over real names, the same over col0..col2)."""
    num = st.sampled_from(["id", "n"])
    ops = st.sampled_from(["=", "<>", "<", "<=", ">", ">="])
    cmp_num = st.tuples(num, ops, st.integers(-5, 60)).map(lambda t: f"{t[0]} {t[1]} {t[2]}")
    cmp_str = st.tuples(ops, st.sampled_from(["'US'", "'FR'", "''", "'Z'"])).map(
        lambda t: f"country {t[0]} {t[1]}"
    )
    nulls = st.tuples(st.sampled_from(COLUMNS), st.sampled_from(["IS NULL", "IS NOT NULL"])).map(
        lambda t: f"{t[0]} {t[1]}"
    )
    in_list = st.lists(st.integers(0, 50), min_size=1, max_size=6).map(
        lambda v: f"id IN ({', '.join(map(str, v))})"
    )
    return st.one_of(cmp_num, cmp_str, nulls, in_list).map(lambda s: (s, _to_cols(s)))


def _to_cols(sql: str) -> str:
    for i, c in enumerate(COLUMNS):
        sql = sql.replace(c, f"col{i}")
    return sql


def _filters() -> st.SearchStrategy[tuple[str, str]]:
    def combine(children: st.SearchStrategy[tuple[str, str]]) -> st.SearchStrategy[tuple[str, str]]:
        pair = st.tuples(children, st.sampled_from(["AND", "OR"]), children).map(
            lambda t: (f"({t[0][0]} {t[1]} {t[2][0]})", f"({t[0][1]} {t[1]} {t[2][1]})")
        )
        neg = children.map(lambda c: (f"NOT ({c[0]})", f"NOT ({c[1]})"))
        wide = st.tuples(
            st.lists(children, min_size=2, max_size=40), st.sampled_from(["AND", "OR"])
        ).map(
            lambda t: (
                f" {t[1]} ".join(f"({c[0]})" for c in t[0]),
                f" {t[1]} ".join(f"({c[1]})" for c in t[0]),
            )
        )
        return st.one_of(pair, neg, wide)

    return st.recursive(_atoms(), combine, max_leaves=60)


@pytest.fixture(scope="module")
def filter_ns(tmp_path_factory: pytest.TempPathFactory) -> tuple[lp.PartitionedNamespace, pa.Table]:
    root = str(tmp_path_factory.mktemp("filters") / "ns")
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("country", pa.string()),
            pa.field("n", pa.int64()),
        ]
    )
    spec = lp.PartitionSpec(
        [lp.PartitionField("country", source="country", transform=lp.Identity())]
    )
    ns = lp.PartitionedNamespace.create(root, schema, spec)
    countries = ["US", "FR", None, "", "DE"]
    table = pa.table(
        {
            "id": pa.array(range(60), pa.int64()),
            "country": pa.array([countries[i % 5] for i in range(60)]),
            "n": pa.array([None if i % 7 == 0 else (i * 13) % 50 for i in range(60)], pa.int64()),
        }
    )
    ns.write(table.slice(0, 30))
    ns.write(table.slice(30))
    return ns, table


@FAST
@given(f=_filters())
def test_random_filters_match_datafusion(
    filter_ns: tuple[lp.PartitionedNamespace, pa.Table], f: tuple[str, str]
) -> None:
    ns, table = filter_ns
    sql, cols_sql = f
    mask = kernels.evaluate(cols_sql, [table[c].combine_chunks() for c in COLUMNS])
    want = sorted(i for i, m in zip(table["id"].to_pylist(), mask.to_pylist(), strict=True) if m)
    got = sorted(ns.to_table(sql)["id"].to_pylist())
    assert got == want, sql
    # pruning never drops a partition holding a matching row
    kept = set(ns.partitions(sql)["country"].to_pylist())
    countries = dict(zip(table["id"].to_pylist(), table["country"].to_pylist(), strict=True))
    assert {countries[i] for i in want} <= kept, sql
    assert len(ns.explain(sql)) > 0


@FAST
@given(
    bad=st.one_of(
        st.tuples(
            st.sampled_from(COLUMNS), st.sampled_from(["=", "<"]), st.sampled_from(["5", "'x'"])
        ).map(
            lambda t: (
                f"{t[0]} {t[1]} {t[2]}" if (t[0] == "country") == (t[2] == "5") else "id + 'x' > 1"
            )
        ),
        st.integers(201, 800).map(lambda d: "id" + " + 1" * d + " > 0"),
        st.text(max_size=30),
        st.sampled_from(
            ["id IN (SELECT 1)", "sum(id) > 1", "random() < 1", "1/0 = 1", "id", "'x'"]
        ),
    )
)
def test_bad_filters_raise_our_errors(
    filter_ns: tuple[lp.PartitionedNamespace, pa.Table], bad: str
) -> None:
    ns, _ = filter_ns
    for call in (ns.to_table, ns.partitions, ns.explain):
        with typed_or_nothing():
            call(bad)


@FAST
@given(
    data=st.one_of(
        st.none(),
        st.integers(),
        st.text(max_size=5),
        st.binary(max_size=5),
        st.dictionaries(st.text(max_size=3), st.integers(), max_size=3),
        st.lists(st.integers(), max_size=3),
        st.just(pa.array([1, 2])),
        st.just(pa.table({"id": pa.array([1], pa.int64()), "zzz": [1]})),
        st.just(pa.table({"id": pa.array([None], pa.int64())})),
        st.just(pa.table({"id": pa.array(["x"])})),
    ),
    kwargs=st.dictionaries(
        st.sampled_from(
            ["mode", "concurrency", "max_rows_per_file", "route_threads", "transaction_mode"]
        ),
        st.one_of(st.integers(-3, 3), st.text(max_size=4), st.none(), st.booleans()),
        max_size=2,
    ),
)
def test_bad_writes_raise_our_errors(
    filter_ns: tuple[lp.PartitionedNamespace, pa.Table], data: Any, kwargs: dict[str, Any]
) -> None:
    ns, table = filter_ns
    before = ns.version
    with raises_typed():
        ns.write(data, **kwargs)
    ns.refresh()
    assert ns.version == before
    assert ns.to_table().num_rows == table.num_rows


@FAST
@given(
    as_of=st.one_of(st.integers(-5, 10_000), st.text(max_size=3), st.floats(), st.booleans()),
    columns=st.one_of(
        st.none(), st.text(max_size=3), st.lists(st.sampled_from([*COLUMNS, "x", ""]), max_size=3)
    ),
)
def test_bad_read_arguments_raise_our_errors(
    filter_ns: tuple[lp.PartitionedNamespace, pa.Table], as_of: Any, columns: Any
) -> None:
    ns, _ = filter_ns
    with typed_or_nothing():
        ns.to_table(columns=columns, as_of=as_of)
