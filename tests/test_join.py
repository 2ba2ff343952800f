"""Storage-partitioned join planning on real namespaces (the spec's rules, Appendix F)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lance_partitioned as lp

ORDERS = pa.schema([("order_id", pa.int64()), ("customer_id", pa.int64())])
CUSTOMERS = pa.schema([("id", pa.int64()), ("name", pa.string())])


def _ns(path: Path, schema: pa.Schema, fields: list[lp.PartitionField]) -> Any:
    return lp.PartitionedNamespace.create(str(path), schema, lp.PartitionSpec(fields))


def _values(ns: Any, field: str) -> dict[str, Any]:
    parts = ns.snapshot().partitions(with_rows=False)
    return dict(zip(parts["object_id"].to_pylist(), parts[field].to_pylist(), strict=True))


def test_appendix_f_orders_bucket_16_by_customers_bucket_8(tmp_path: Path) -> None:
    orders = _ns(
        tmp_path / "orders",
        ORDERS,
        [lp.PartitionField("customer_bucket", "customer_id", lp.Bucket(16))],
    )
    customers = _ns(
        tmp_path / "customers", CUSTOMERS, [lp.PartitionField("id_bucket", "id", lp.Bucket(8))]
    )
    ids = pa.array(range(1000), pa.int64())
    orders.write(pa.table({"order_id": ids, "customer_id": pc.multiply(ids, 7)}, schema=ORDERS))
    customers.write(
        pa.table({"id": pc.multiply(ids, 7), "name": pc.cast(ids, pa.string())}, schema=CUSTOMERS)
    )
    plan = lp.join_plan(orders, customers, on=[("customer_id", "id")])
    assert plan.compatible, plan.reason
    assert len(plan.groups) == 8
    ob, cb = _values(orders, "customer_bucket"), _values(customers, "id_bucket")
    for i, g in enumerate(plan.groups):
        assert g.key == (str(i),)
        assert sorted(ob[o] for o in g.left) == [i, i + 8]
        assert [cb[c] for c in g.right] == [i]
    text = plan.explain()
    assert "bucket(customer_id) % 8 = bucket(id) % 8" in text
    assert "groups: 8 (8 with both sides" in text


def test_an_unaligned_spec_falls_back_with_the_reason(tmp_path: Path) -> None:
    left = _ns(tmp_path / "l", ORDERS, [lp.PartitionField("cb", "customer_id", lp.Bucket(6))])
    right = _ns(tmp_path / "r", CUSTOMERS, [lp.PartitionField("ib", "id", lp.Bucket(4))])
    rows = pa.array([1, 2, 3], pa.int64())
    left.write(pa.table({"order_id": rows, "customer_id": rows}, schema=ORDERS))
    right.write(pa.table({"id": rows, "name": ["a", "b", "c"]}, schema=CUSTOMERS))
    plan = lp.join_plan(left, right, on=[("customer_id", "id")])
    assert not plan.compatible
    assert plan.groups == ()
    assert plan.reason is not None
    assert "bucket(customer_id, 6)" in plan.reason
    assert "bucket(id, 4)" in plan.reason
    assert "not possible" in plan.explain()
    with pytest.raises(lp.InvalidArgumentError, match="nope"):
        lp.join_plan(left, right, on=[("nope", "id")])
    with pytest.raises(lp.InvalidArgumentError, match="types differ"):
        lp.join_plan(left, right, on=[("customer_id", "name")])


@settings(max_examples=25, deadline=None)
@given(
    left_n=st.sampled_from([2, 4, 8, 16]),
    right_n=st.sampled_from([2, 4, 8, 16]),
    keys=st.lists(st.one_of(st.none(), st.integers(-(2**40), 2**40)), min_size=1, max_size=60),
)
def test_rows_with_equal_keys_always_share_a_group(
    tmp_path_factory: Any, left_n: int, right_n: int, keys: list[int | None]
) -> None:
    # The model: a row's leaf is the bucket of its key; rows with equal non-NULL keys on the
    # two sides must land in leaves of one group, and NULL-key leaves never meet anything.
    base = tmp_path_factory.mktemp("spj")
    left = _ns(base / "l", ORDERS, [lp.PartitionField("cb", "customer_id", lp.Bucket(left_n))])
    right = _ns(base / "r", CUSTOMERS, [lp.PartitionField("ib", "id", lp.Bucket(right_n))])
    k = pa.array(keys, pa.int64())
    left.write(
        pa.table(
            {"order_id": pa.array(range(len(keys)), pa.int64()), "customer_id": k}, schema=ORDERS
        )
    )
    right.write(pa.table({"id": k, "name": pa.array(["x"] * len(keys))}, schema=CUSTOMERS))
    plan = lp.join_plan(left, right, on=[("customer_id", "id")])
    assert plan.compatible
    group_of_left = {o: i for i, g in enumerate(plan.groups) for o in g.left}
    group_of_right = {o: i for i, g in enumerate(plan.groups) for o in g.right}
    lb, rb = _values(left, "cb"), _values(right, "ib")
    leaf_of_left = {v: o for o, v in lb.items()}
    leaf_of_right = {v: o for o, v in rb.items()}
    lbuckets = lp.kernels.bucket(k, left_n).to_pylist()
    rbuckets = lp.kernels.bucket(k, right_n).to_pylist()
    for key, a, b in zip(keys, lbuckets, rbuckets, strict=True):
        if key is None:
            g = plan.groups[group_of_left[leaf_of_left[None]]]
            assert g.right == ()
            assert g.key == (None,)
            continue
        assert group_of_left[leaf_of_left[a]] == group_of_right[leaf_of_right[b]]
    assert sorted(group_of_left) == sorted(lb)
    assert sorted(group_of_right) == sorted(rb)
