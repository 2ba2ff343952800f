"""Spark reads and storage-partitioned joins as ``mapInArrow`` tasks (``lps.read``,
``lps.join``): same rows as Spark's own read and join, column pruning, big leaves split by
fragment, and no shuffle in the join's physical plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

import lance_partitioned as lp
import lance_partitioned.spark as lps
from lance_partitioned.spark.tasks import plan_read_tasks

ORDERS = pa.schema([("order_id", pa.int64()), ("customer_id", pa.int64()), ("v", pa.string())])
CUSTOMERS = pa.schema([("id", pa.int64()), ("v", pa.string()), ("name", pa.string())])


def _rows(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted(rows, key=lambda r: [(x is not None, x) for x in r])


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(
        st.tuples(st.integers(0, 5_000_000), st.integers(1, 40)), min_size=0, max_size=60
    ),
    parallelism=st.integers(1, 16),
    max_rows=st.integers(1, 10_000_000),
)
def test_read_tasks_cover_every_fragment_once(
    sizes: list[tuple[int, int]], parallelism: int, max_rows: int
) -> None:
    leaves = [(f"leaf{i}", rows, frags) for i, (rows, frags) in enumerate(sizes)]
    tasks = plan_read_tasks(leaves, parallelism, max_rows)
    read: dict[str, list[int]] = {}
    for task in tasks:
        assert task, "no empty task"
        for oid, k, parts in task:
            frags = next(f for o, _, f in leaves if o == oid)
            assert 0 <= k < parts <= max(frags, 1)
            read.setdefault(oid, []).extend(range(k, frags, parts))
    assert sorted(read) == sorted(o for o, _, _ in leaves)
    for oid, _, frags in leaves:
        assert sorted(read[oid]) == list(range(frags)), oid


def _ns(path: Path, schema: pa.Schema, field: lp.PartitionField) -> Any:
    return lp.PartitionedNamespace.create(str(path), schema, lp.PartitionSpec([field]))


@pytest.mark.spark
def test_read_prunes_columns_and_splits_big_leaves(spark: Any, tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("k", pa.string()), ("payload", pa.string())])
    ns = _ns(tmp_path / "ns", schema, lp.PartitionField("k", "k", lp.Identity()))
    n = 60_000
    ids = pa.array(range(n), pa.int64())
    table = pa.table(
        {
            "id": ids,
            "k": pc.if_else(
                pc.less(ids, 50_000), "big", pc.cast(pc.bit_wise_and(ids, 7), pa.string())
            ),
            "payload": pc.cast(ids, pa.string()),
        },
        schema=schema,
    )
    for start in range(0, n, 5_000):  # "big": 10 appends, 10 fragments
        ns.write(table.slice(start, 5_000))
    sizes = {oid: (rows, frags) for oid, rows, frags in ns.snapshot()._s.leaf_sizes(None)}
    assert max(f for _, f in sizes.values()) == 10
    df = lps.read(spark, ns.root, columns=["id"], max_rows_per_task=12_000)
    assert df.columns == ["id"]
    # The big leaf alone is split into ceil((50,000 + open cost) / 12,000) tasks.
    assert df.rdd.getNumPartitions() >= 5
    assert sorted(r["id"] for r in df.collect()) == list(range(n))
    # The filter is pushed into each leaf (rows of kept partitions are filtered too).
    got = lps.read(spark, ns.root, "k = 'big' AND id % 1000 = 0", columns=["id", "k"])
    assert sorted(r["id"] for r in got.collect()) == list(range(0, 50_000, 1000))
    # Spark's own read of the same data agrees.
    pq = str(tmp_path / "pq")
    spark.createDataFrame(table.to_pandas()).write.parquet(pq)
    want = spark.read.parquet(pq).filter(F.col("k") == "3").select("id", "payload")
    got = lps.read(spark, ns.root, "k = '3'", columns=["id", "payload"])
    assert sorted(got.collect()) == sorted(want.collect())
    with pytest.raises(lp.InvalidArgumentError, match="nope"):
        lps.read(spark, ns.root, columns=["nope"])


@pytest.fixture
def orders_customers(tmp_path: Path) -> tuple[str, str, pa.Table, pa.Table]:
    orders = _ns(tmp_path / "o", ORDERS, lp.PartitionField("cb", "customer_id", lp.Bucket(16)))
    customers = _ns(tmp_path / "c", CUSTOMERS, lp.PartitionField("ib", "id", lp.Bucket(8)))
    o_ids = [None, *[i % 53 for i in range(2000)], 7777]
    c_ids = [None, *range(45), 3, 3, 9999]
    ot = pa.table(
        {
            "order_id": pa.array(range(len(o_ids)), pa.int64()),
            "customer_id": pa.array(o_ids, pa.int64()),
            "v": [f"o{i}" for i in range(len(o_ids))],
        },
        schema=ORDERS,
    )
    ct = pa.table(
        {
            "id": pa.array(c_ids, pa.int64()),
            "v": [f"c{i}" for i in range(len(c_ids))],
            "name": [None if i % 4 == 0 else f"n{i}" for i in range(len(c_ids))],
        },
        schema=CUSTOMERS,
    )
    orders.write(ot)
    customers.write(ct)
    return orders.root, customers.root, ot, ct


SPARK_HOW = {
    "inner": "inner",
    "left": "left",
    "right": "right",
    "full": "full",
    "semi": "left_semi",
    "anti": "left_anti",
}


@pytest.mark.spark
@pytest.mark.parametrize("how", list(SPARK_HOW))
def test_join_equals_spark_join_without_a_shuffle(
    spark: Any, orders_customers: tuple[str, str, pa.Table, pa.Table], how: str
) -> None:
    left_uri, right_uri, ot, ct = orders_customers
    df = lps.join(spark, left_uri, right_uri, on=[("customer_id", "id")], how=how)
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "Exchange" not in plan, plan
    groups = lp.joins.prepare(
        lp.PartitionedNamespace.open(left_uri),
        lp.PartitionedNamespace.open(right_uri),
        lp.joins.join_args([("customer_id", "id")], how),
    ).groups()
    assert df.rdd.getNumPartitions() == len(groups) >= 8  # one task per group
    # Spark's own join of the same data, with the same output columns as pyarrow names them.
    lo = spark.createDataFrame(ot.to_pandas()).alias("l")
    ro = spark.createDataFrame(ct.to_pandas()).alias("r")
    cond = F.col("l.customer_id") == F.col("r.id")
    joined = lo.join(ro, cond, SPARK_HOW[how])
    if how in ("semi", "anti"):
        want = joined.select("l.order_id", "l.customer_id", "l.v")
    elif how == "right":
        want = joined.select("l.order_id", "l.v", "r.id", F.col("r.v").alias("v_right"), "r.name")
    else:
        key = F.coalesce("l.customer_id", "r.id") if how == "full" else F.col("l.customer_id")
        want = joined.select(
            "l.order_id", key.alias("customer_id"), "l.v", F.col("r.v").alias("v_right"), "r.name"
        )
    assert df.columns == want.columns
    assert _rows([tuple(r) for r in df.collect()]) == _rows([tuple(r) for r in want.collect()])


@pytest.mark.spark
def test_join_filters_columns_and_refusal(
    spark: Any, orders_customers: tuple[str, str, pa.Table, pa.Table], tmp_path: Path
) -> None:
    left_uri, right_uri, ot, ct = orders_customers
    df = lps.join(
        spark,
        left_uri,
        right_uri,
        on=[("customer_id", "id")],
        columns=["order_id", "name"],
        filter="customer_id < 5",
    )
    want = (
        ot.filter(pc.less(ot["customer_id"], 5))
        .join(ct, "customer_id", "id", right_suffix="_right")
        .select(["order_id", "name"])
    )
    got = [tuple(r) for r in df.collect()]
    assert _rows(got) == _rows(list(zip(*want.to_pydict().values(), strict=True)))
    other = _ns(tmp_path / "x", CUSTOMERS, lp.PartitionField("ib", "id", lp.Bucket(6)))
    other.write(ct)
    with pytest.raises(lp.IncompatibleJoinError):
        lps.join(spark, left_uri, other.root, on=[("customer_id", "id")])
    shuffled = lps.join(spark, left_uri, other.root, on=[("customer_id", "id")], allow_shuffle=True)
    want_all = ot.join(ct, "customer_id", "id", join_type="inner")
    assert shuffled.count() == want_all.num_rows


@pytest.mark.spark
@pytest.mark.parametrize("how", list(SPARK_HOW))
def test_shuffle_fallback_equals_the_local_join(
    spark: Any, orders_customers: tuple[str, str, pa.Table, pa.Table], tmp_path: Path, how: str
) -> None:
    """Namespaces whose partitions do not align: with allow_shuffle, Spark joins the two
    sides itself, and the output (columns, names, rows) equals lp.join's."""
    left_uri, _, _, ct = orders_customers
    other = _ns(tmp_path / "x", CUSTOMERS, lp.PartitionField("ib", "id", lp.Bucket(6)))
    other.write(ct)
    args: dict[str, Any] = {"on": [("customer_id", "id")], "how": how, "allow_shuffle": True}
    if how == "full":
        args["filter"] = ("customer_id < 40", "name IS NOT NULL")
    df = lps.join(spark, left_uri, other.root, **args)
    local = lp.join(lp.PartitionedNamespace.open(left_uri), other, **args).read_all()
    assert df.columns == local.column_names
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "Join" in plan, plan
    assert "MapInArrow" in plan, plan
    got = [tuple(r) for r in df.collect()]
    assert _rows(got) == _rows(list(zip(*local.to_pydict().values(), strict=True)))


@pytest.mark.spark
@pytest.mark.parametrize("how", ["inner", "left", "full"])
def test_a_key_inside_a_struct_joins_on_spark(spark: Any, tmp_path: Path, how: str) -> None:
    """A key inside a struct (``o.cid``): partition by partition, and through Spark's own
    join when the buckets do not align; both equal the local join."""
    struct = pa.struct([("cid", pa.int64()), ("note", pa.string())])
    schema = pa.schema([("order_id", pa.int64()), ("o", struct)])
    cids = [None, *[i % 29 for i in range(400)], 4321]
    ot = pa.table(
        {
            "order_id": pa.array(range(len(cids)), pa.int64()),
            "o": pa.array(
                [None if i == 3 else {"cid": c, "note": f"n{i}"} for i, c in enumerate(cids)],
                struct,
            ),
        },
        schema=schema,
    )
    ct = pa.table(
        {
            "id": pa.array([None, *range(25), 8888], pa.int64()),
            "v": [f"c{i}" for i in range(27)],
            "name": [f"n{i}" for i in range(27)],
        },
        schema=CUSTOMERS,
    )
    orders = _ns(tmp_path / "o", schema, lp.PartitionField("cb", "o.cid", lp.Bucket(16)))
    aligned = _ns(tmp_path / "c", CUSTOMERS, lp.PartitionField("ib", "id", lp.Bucket(8)))
    unaligned = _ns(tmp_path / "u", CUSTOMERS, lp.PartitionField("ib", "id", lp.Bucket(6)))
    orders.write(ot)
    aligned.write(ct)
    unaligned.write(ct)
    on = [("o.cid", "id")]
    local = lp.join(orders, aligned, on=on, how=how).read_all().flatten()
    want = _rows(list(zip(*local.to_pydict().values(), strict=True)))
    assert len(want) > 0
    for right, shuffle in ((aligned, False), (unaligned, True)):
        df = lps.join(spark, orders.root, right.root, on=on, how=how, allow_shuffle=shuffle)
        flat = df.select("order_id", "o.cid", "o.note", "id", "v", "name")
        assert _rows([tuple(r) for r in flat.collect()]) == want, shuffle
