"""Executing storage-partitioned joins (``lp.join``): every kind of join against pyarrow's
``Table.join`` of the same data, with NULL keys, name clashes, evolved specs, filters, empty
groups, and the fallback for partitions that do not align."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lance_partitioned as lp

HOWS = ["inner", "left", "right", "full", "semi", "anti"]
PYARROW_HOW = {
    "inner": "inner",
    "left": "left outer",
    "right": "right outer",
    "full": "full outer",
    "semi": "left semi",
    "anti": "left anti",
}
ORDERS = pa.schema([("order_id", pa.int64()), ("customer_id", pa.int64()), ("v", pa.string())])
CUSTOMERS = pa.schema([("id", pa.int64()), ("v", pa.string()), ("name", pa.string())])


def _ns(path: Path, schema: pa.Schema, *fields: lp.PartitionField) -> Any:
    return lp.PartitionedNamespace.create(str(path), schema, lp.PartitionSpec(list(fields)))


def _rows(t: pa.Table) -> list[tuple[Any, ...]]:
    """The rows of ``t`` as a sorted list (NULLs first), for comparing multisets of rows."""
    rows = list(zip(*(t[c].to_pylist() for c in t.column_names), strict=True))
    return sorted(rows, key=lambda r: [(x is not None, x) for x in r])


def _expected(
    left: pa.Table, right: pa.Table, lkey: str, rkey: str, how: str, suffix: str = "_right"
) -> pa.Table:
    return left.join(right, lkey, rkey, join_type=PYARROW_HOW[how], right_suffix=suffix)


def _orders(ids: list[int | None]) -> pa.Table:
    n = len(ids)
    return pa.table(
        {
            "order_id": pa.array(range(n), pa.int64()),
            "customer_id": pa.array(ids, pa.int64()),
            "v": [f"o{i}" for i in range(n)],
        },
        schema=ORDERS,
    )


def _customers(ids: list[int | None]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "v": [f"c{i}" for i in range(len(ids))],
            "name": [None if i % 5 == 0 else f"n{i}" for i in range(len(ids))],
        },
        schema=CUSTOMERS,
    )


@pytest.fixture
def bucketed(tmp_path: Path) -> tuple[Any, Any, pa.Table, pa.Table]:
    """Orders bucket(customer_id, 16) and customers bucket(id, 8) (Appendix F), with NULL keys,
    keys only one side has, duplicates on both sides, and a clashing column ``v``."""
    o_ids = [None, None, *[i % 37 for i in range(300)], 1000, 1001]
    c_ids = [None, *range(0, 30), 5, 5, 2000]
    orders = _ns(tmp_path / "o", ORDERS, lp.PartitionField("cb", "customer_id", lp.Bucket(16)))
    customers = _ns(tmp_path / "c", CUSTOMERS, lp.PartitionField("ib", "id", lp.Bucket(8)))
    ot, ct = _orders(o_ids), _customers(c_ids)
    orders.write(ot)
    customers.write(ct)
    return orders, customers, ot, ct


@pytest.mark.parametrize("how", HOWS)
def test_every_kind_of_join_equals_pyarrow(
    bucketed: tuple[Any, Any, pa.Table, pa.Table], how: str
) -> None:
    orders, customers, ot, ct = bucketed
    out = lp.join(orders, customers, on=[("customer_id", "id")], how=how).read_all()
    want = _expected(ot, ct, "customer_id", "id", how)
    assert out.column_names == want.column_names
    assert _rows(out) == _rows(want)
    assert len(out) > 0


@pytest.mark.parametrize("how", ["inner", "full", "right"])
def test_same_key_names_coalesce_like_pyarrow(tmp_path: Path, how: str) -> None:
    schema = pa.schema([("k", pa.int32()), ("x", pa.float64())])
    a = _ns(tmp_path / "a", schema, lp.PartitionField("kb", "k", lp.Bucket(4)))
    b = _ns(tmp_path / "b", schema, lp.PartitionField("kb", "k", lp.Bucket(2)))
    at = pa.table({"k": pa.array([1, 2, None, 4, 7], pa.int32()), "x": [1.0, 2.0, 3.0, 4.0, 5.0]})
    bt = pa.table({"k": pa.array([2, 3, None, 7, 7], pa.int32()), "x": [0.5, 0.25, 9.0, 1.0, 2.0]})
    a.write(at.cast(schema))
    b.write(bt.cast(schema))
    out = lp.join(a, b, on="k", how=how).read_all()
    want = _expected(at.cast(schema), bt.cast(schema), "k", "k", how)
    assert out.column_names == want.column_names
    assert _rows(out) == _rows(want)


def test_columns_filter_and_threads(bucketed: tuple[Any, Any, pa.Table, pa.Table]) -> None:
    orders, customers, ot, ct = bucketed
    out = lp.join(
        orders,
        customers,
        on=[("customer_id", "id")],
        columns=["order_id", "name", "v_right"],
        filter="customer_id < 10",
        threads=1,
    ).read_all()
    want = _expected(
        ot.filter(pc.less(ot["customer_id"], 10)), ct, "customer_id", "id", "inner"
    ).select(["order_id", "name", "v_right"])
    assert out.column_names == ["order_id", "name", "v_right"]
    assert _rows(out) == _rows(want)
    # A filter on one side only (the other has no such column) and a (left, right) pair.
    out = lp.join(
        orders, customers, on=[("customer_id", "id")], how="left", filter="order_id < 50"
    ).read_all()
    want = _expected(ot.filter(pc.less(ot["order_id"], 50)), ct, "customer_id", "id", "left")
    assert _rows(out) == _rows(want)
    out = lp.join(
        orders, customers, on=[("customer_id", "id")], how="full", filter=(None, "name IS NULL")
    ).read_all()
    want = _expected(ot, ct.filter(pc.is_null(ct["name"])), "customer_id", "id", "full")
    assert _rows(out) == _rows(want)


def test_bad_arguments_are_typed_errors(bucketed: tuple[Any, Any, pa.Table, pa.Table]) -> None:
    orders, customers, _, _ = bucketed
    on = [("customer_id", "id")]
    with pytest.raises(lp.InvalidArgumentError, match="sideways"):
        lp.join(orders, customers, on=on, how="sideways")
    with pytest.raises(lp.InvalidArgumentError, match="nope"):
        lp.join(orders, customers, on=on, columns=["nope"])
    with pytest.raises(lp.ExpressionError, match="neither side"):
        lp.join(orders, customers, on=on, filter="order_id = name")
    with pytest.raises(lp.InvalidArgumentError, match="two columns named"):
        lp.join(orders, customers, on=on, right_suffix="")
    with pytest.raises(lp.InvalidArgumentError, match="threads"):
        lp.join(orders, customers, on=on, threads=0)


def test_unaligned_partitions_refuse_unless_shuffle_is_allowed(tmp_path: Path) -> None:
    orders = _ns(tmp_path / "o", ORDERS, lp.PartitionField("cb", "customer_id", lp.Bucket(6)))
    customers = _ns(tmp_path / "c", CUSTOMERS, lp.PartitionField("ib", "id", lp.Bucket(4)))
    ot, ct = _orders([i % 13 for i in range(100)]), _customers(list(range(20)))
    orders.write(ot)
    customers.write(ct)
    with pytest.raises(lp.IncompatibleJoinError, match="bucket\\(customer_id, 6\\)"):
        lp.join(orders, customers, on=[("customer_id", "id")])
    for how in HOWS:
        out = lp.join(
            orders, customers, on=[("customer_id", "id")], how=how, allow_shuffle=True
        ).read_all()
        assert _rows(out) == _rows(_expected(ot, ct, "customer_id", "id", how)), how


def test_evolved_spec_joins_every_version(tmp_path: Path) -> None:
    """Left written under bucket(8), then bucket(16) after evolution; right bucket(4): both
    versions align (4 divides 8 and 16)."""
    orders = _ns(tmp_path / "o", ORDERS, lp.PartitionField("cb", "customer_id", lp.Bucket(8)))
    customers = _ns(tmp_path / "c", CUSTOMERS, lp.PartitionField("ib", "id", lp.Bucket(4)))
    first, second = _orders([i % 29 for i in range(120)]), _orders([i % 31 for i in range(80)])
    orders.write(first)
    orders.evolve(lp.PartitionSpec([lp.PartitionField("cb16", "customer_id", lp.Bucket(16))]))
    orders.write(second)
    ct = _customers([*range(40), None])
    customers.write(ct)
    assert lp.join_plan(orders, customers, on=[("customer_id", "id")]).compatible
    ot = pa.concat_tables([first, second])
    for how in HOWS:
        out = lp.join(orders, customers, on=[("customer_id", "id")], how=how).read_all()
        assert _rows(out) == _rows(_expected(ot, ct, "customer_id", "id", how)), how


def test_time_hierarchy_days_against_months(tmp_path: Path) -> None:
    schema = pa.schema([("ts", pa.timestamp("us", "UTC")), ("a", pa.int64())])
    rschema = pa.schema([("ts", pa.timestamp("us", "UTC")), ("b", pa.int64())])
    # The spec's temporal transforms are calendar parts (date_part): a day field alone holds
    # the day of the month, so days nest in months only under year and month fields.
    days = _ns(
        tmp_path / "d",
        schema,
        lp.PartitionField("y", "ts", lp.Year()),
        lp.PartitionField("m", "ts", lp.Month()),
        lp.PartitionField("d", "ts", lp.Day()),
    )
    months = _ns(
        tmp_path / "m",
        rschema,
        lp.PartitionField("y", "ts", lp.Year()),
        lp.PartitionField("m", "ts", lp.Month()),
    )
    base = dt.datetime(2024, 1, 30, tzinfo=dt.timezone.utc)
    ts = [base + dt.timedelta(hours=7 * i) for i in range(60)]
    lt = pa.table({"ts": pa.array(ts, schema.field("ts").type), "a": range(60)}, schema=schema)
    rt = pa.table(
        {"ts": pa.array([*ts[::3], None], rschema.field("ts").type), "b": range(21)},
        schema=rschema,
    )
    days.write(lt)
    months.write(rt)
    plan = lp.join_plan(days, months, on="ts")
    assert plan.compatible
    assert len([g for g in plan.groups if g.left and g.right]) == 2  # January and February
    for how in HOWS:
        out = lp.join(days, months, on="ts", how=how).read_all()
        assert _rows(out) == _rows(_expected(lt, rt, "ts", "ts", how)), how


@settings(max_examples=30, deadline=None)
@given(
    counts=st.sampled_from([(16, 8), (8, 16), (4, 4), (2, 8)]),
    lkeys=st.lists(st.one_of(st.none(), st.integers(-50, 50)), min_size=0, max_size=40),
    rkeys=st.lists(st.one_of(st.none(), st.integers(-50, 50)), min_size=0, max_size=40),
    how=st.sampled_from(HOWS),
    unique=st.sampled_from([None, "left", "right"]),
)
def test_joins_equal_pyarrow_on_random_data(
    tmp_path_factory: pytest.TempPathFactory,
    counts: tuple[int, int],
    lkeys: list[int | None],
    rkeys: list[int | None],
    how: str,
    unique: str | None,
) -> None:
    # Unique keys on one side (a foreign key against a primary key) take the join's own
    # kernel when that side is the smaller; repeated keys on both take DataFusion's.
    if unique == "left":
        lkeys = [k for i, k in enumerate(lkeys) if k is None or k not in lkeys[:i]]
    elif unique == "right":
        rkeys = [k for i, k in enumerate(rkeys) if k is None or k not in rkeys[:i]]
    d = tmp_path_factory.mktemp("j")
    orders = _ns(d / "o", ORDERS, lp.PartitionField("cb", "customer_id", lp.Bucket(counts[0])))
    customers = _ns(d / "c", CUSTOMERS, lp.PartitionField("ib", "id", lp.Bucket(counts[1])))
    ot, ct = _orders(lkeys), _customers(rkeys)
    if lkeys:
        orders.write(ot)
    if rkeys:
        customers.write(ct)
    out = lp.join(orders, customers, on=[("customer_id", "id")], how=how).read_all()
    want = _expected(ot, ct, "customer_id", "id", how)
    assert out.column_names == want.column_names
    assert _rows(out) == _rows(want)


@pytest.mark.parametrize("how", HOWS)
def test_a_key_inside_a_struct_joins_partition_by_partition(tmp_path: Path, how: str) -> None:
    # Orders bucketed by a struct child (o.cid) against customers bucketed by a column: the
    # plan aligns the buckets through the child's field id; the struct stays whole in the
    # output and the right key column stays (keys coalesce only between two columns).
    schema = pa.schema(
        [
            ("order_id", pa.int64()),
            ("o", pa.struct([("cid", pa.int64()), ("note", pa.string())])),
        ]
    )
    cids = [None, *[i % 23 for i in range(120)], 500]
    ot = pa.table(
        {
            "order_id": pa.array(range(len(cids)), pa.int64()),
            "o": pa.array(
                [None if i == 7 else {"cid": c, "note": f"n{i}"} for i, c in enumerate(cids)],
                schema.field("o").type,
            ),
        },
        schema=schema,
    )
    ct = _customers([None, *range(0, 20), 900])
    orders = _ns(tmp_path / "o", schema, lp.PartitionField("cb", "o.cid", lp.Bucket(16)))
    customers = _ns(tmp_path / "c", CUSTOMERS, lp.PartitionField("ib", "id", lp.Bucket(8)))
    orders.write(ot)
    customers.write(ct)
    plan = lp.join_plan(orders, customers, on=[("o.cid", "id")])
    assert plan.compatible, plan.reason
    # Eight bucket groups, plus each side's NULL-key partition on its own.
    assert sorted(g.key[0] is None for g in plan.groups) == [False] * 8 + [True] * 2
    out = lp.join(orders, customers, on=[("o.cid", "id")], how=how).read_all()
    assert out.column_names[:2] == ["order_id", "o"]
    # pyarrow joins no struct columns: compare flattened (a NULL struct's children are NULL).
    flat = ot.flatten()
    want = (
        flat.append_column("k", flat["o.cid"])
        .join(ct, "k", "id", join_type=PYARROW_HOW[how], coalesce_keys=False)
        .drop_columns(["k"])
    )
    assert out.flatten().column_names == want.column_names
    assert _rows(out.flatten()) == _rows(want)
    with pytest.raises(lp.InvalidArgumentError, match=r"o\.nope"):
        lp.join_plan(orders, customers, on=[("o.nope", "id")])
    assert len(out) > 0
