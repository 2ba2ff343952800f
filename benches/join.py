"""Storage-partitioned joins against the joins a user would run instead, in one run.

Data: orders (``--rows``, default 10M: order_id, customer_id, amount) bucketed by
bucket(customer_id, 16) and customers (``--rows / 10``: id, name, tier) bucketed by
bucket(id, 8) (the spec's Appendix F), joined on customer_id = id (inner).

Local (pyarrow results, every row materialised):

- ours: ``lp.join`` (8 groups, hash join per group in Rust, default threads and batches);
- DataFusion (Python package): both sides read unpartitioned from Lance tables (one dataset
  each, written by pylance), then ``SessionContext`` join;
- pyarrow: ``Table.join`` of the same tables read unpartitioned;
- for reference, DataFusion's join alone of the two tables already in memory (no read).

Spark local[2] (``--spark``; counted with ``count()`` of the join result, which Spark cannot
skip for any of them):

- ours: ``lps.join`` (one task per group, no shuffle);
- Spark sort-merge join of both sides read from Parquet (shuffle included);
- Spark join of tables written with ``bucketBy(16)`` / ``bucketBy(8)`` (Spark uses its
  buckets: one side is not shuffled).

    python benches/join.py [--rows N] [--spark] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import lance
import pyarrow as pa
import pyarrow.compute as pc
from report import best_alternating, update_section

import lance_partitioned as lp

ORDERS = pa.schema(
    [("order_id", pa.int64()), ("customer_id", pa.int64()), ("amount", pa.float64())]
)
CUSTOMERS = pa.schema([("id", pa.int64()), ("name", pa.string()), ("tier", pa.int32())])


def make_data(n: int) -> tuple[pa.Table, pa.Table]:
    customers = max(n // 10, 1)
    ids = pa.array(range(n), pa.int64())
    cust = pc.cast(
        pc.multiply(pc.bit_wise_and(pc.multiply(ids, 2654435761), 0xFFFFFFFF), customers),
        pa.float64(),
    )
    orders = pa.table(
        {
            "order_id": ids,
            "customer_id": pc.cast(pc.floor(pc.divide(cust, 2**32)), pa.int64()),
            "amount": pc.divide(pc.cast(pc.bit_wise_and(ids, 1023), pa.float64()), 7.0),
        },
        schema=ORDERS,
    )
    cids = pa.array(range(customers), pa.int64())
    cust_t = pa.table(
        {
            "id": cids,
            "name": pc.binary_join_element_wise("customer-", pc.cast(cids, pa.string()), ""),
            "tier": pc.cast(pc.bit_wise_and(cids, 3), pa.int32()),
        },
        schema=CUSTOMERS,
    )
    return orders, cust_t


def local(n: int, work: Path, repeat: int) -> list[tuple[str, float]]:
    import datafusion

    orders, customers = make_data(n)
    o = lp.PartitionedNamespace.create(
        str(work / "orders"),
        ORDERS,
        lp.PartitionSpec([lp.PartitionField("cb", "customer_id", lp.Bucket(16))]),
    )
    c = lp.PartitionedNamespace.create(
        str(work / "customers"),
        CUSTOMERS,
        lp.PartitionSpec([lp.PartitionField("ib", "id", lp.Bucket(8))]),
    )
    o.write(orders)
    c.write(customers)
    lance.write_dataset(orders, str(work / "orders.lance"))
    lance.write_dataset(customers, str(work / "customers.lance"))
    expected = orders.join(customers, "customer_id", "id").num_rows

    def ours() -> None:
        t = lp.join(o, c, on=[("customer_id", "id")]).read_all()
        assert t.num_rows == expected

    def df() -> None:
        ctx = datafusion.SessionContext()
        ctx.register_record_batches(
            "o", [lance.dataset(str(work / "orders.lance")).to_table().to_batches()]
        )
        ctx.register_record_batches(
            "c", [lance.dataset(str(work / "customers.lance")).to_table().to_batches()]
        )
        t = ctx.sql(
            "SELECT o.order_id, o.customer_id, o.amount, c.name, c.tier "
            "FROM o JOIN c ON o.customer_id = c.id"
        ).to_arrow_table()
        assert t.num_rows == expected

    def pyarrow_join() -> None:
        lo = lance.dataset(str(work / "orders.lance")).to_table()
        rc = lance.dataset(str(work / "customers.lance")).to_table()
        assert lo.join(rc, "customer_id", "id").num_rows == expected

    in_memory = datafusion.SessionContext()
    for name, path in (("o", "orders.lance"), ("c", "customers.lance")):
        # The batches exactly as the DataFusion row reads them, read once.
        in_memory.register_record_batches(
            name, [lance.dataset(str(work / path)).to_table().to_batches()]
        )

    def df_join_only() -> None:
        t = in_memory.sql(
            "SELECT o.order_id, o.customer_id, o.amount, c.name, c.tier "
            "FROM o JOIN c ON o.customer_id = c.id"
        ).to_arrow_table()
        assert t.num_rows == expected

    times = best_alternating([ours, df, pyarrow_join, df_join_only], repeat)
    return list(
        zip(
            [
                "ours: lp.join",
                "DataFusion join (unpartitioned Lance)",
                "pyarrow Table.join (unpartitioned Lance)",
                "(reference: DataFusion's join alone, both tables already in memory)",
            ],
            times,
            strict=True,
        )
    )


def spark_runs(n: int, work: Path, repeat: int) -> list[tuple[str, float]]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import lance_partitioned.spark as lps

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.sql.shuffle.partitions", "16")
        .config("spark.sql.autoBroadcastJoinThreshold", "-1")
        .config("spark.sql.warehouse.dir", str(work / "warehouse"))
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        orders, customers = make_data(n)
        o_root, c_root = str(work / "orders"), str(work / "customers")
        spark.createDataFrame(orders.to_pandas()).write.parquet(str(work / "o.parquet"))
        spark.createDataFrame(customers.to_pandas()).write.parquet(str(work / "c.parquet"))
        spark.read.parquet(str(work / "o.parquet")).write.bucketBy(16, "customer_id").saveAsTable(
            "ob"
        )
        spark.read.parquet(str(work / "c.parquet")).write.bucketBy(8, "id").saveAsTable("cb")
        expected = orders.join(customers, "customer_id", "id").num_rows

        def ours() -> None:
            df = lps.join(spark, o_root, c_root, on=[("customer_id", "id")])
            assert df.count() == expected

        def smj() -> None:
            lo = spark.read.parquet(str(work / "o.parquet"))
            rc = spark.read.parquet(str(work / "c.parquet"))
            assert lo.join(rc, lo.customer_id == rc.id).count() == expected

        def bucketed() -> None:
            lo, rc = spark.table("ob"), spark.table("cb")
            assert lo.join(rc, lo.customer_id == rc.id).count() == expected

        times = best_alternating([ours, smj, bucketed], repeat)
    finally:
        spark.stop()
    return list(
        zip(
            [
                "ours: lps.join",
                "Spark sort-merge join of Parquet",
                "Spark join of bucketBy(16)/bucketBy(8) tables",
            ],
            times,
            strict=True,
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--spark", action="store_true")
    ap.add_argument("--write", type=str, default=None)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lp-join-bench-"))
    try:
        res = local(args.rows, work, args.repeat)
        sres = spark_runs(args.rows, work, args.repeat) if args.spark else []
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lines = [
        f"`python benches/join.py --rows {args.rows}{' --spark' if args.spark else ''}` "
        f"(orders {args.rows:,} rows bucket(customer_id, 16) x customers {args.rows // 10:,} "
        f"rows bucket(id, 8), inner join; best of {args.repeat}, alternating):",
        "",
        "| join | s | ours is faster by |",
        "|---|---:|---:|",
    ]
    for group in (res, sres):
        if not group:
            continue
        ours = group[0][1]
        for name, t in group:
            lines.append(f"| {name} | {t:.2f} | {'(ours)' if t == ours else f'{t / ours:.2f}x'} |")
    text = "\n".join(lines)
    print(text)
    if args.write:
        update_section(Path(args.write), "join", text, "## Storage-partitioned joins")


if __name__ == "__main__":
    main()
