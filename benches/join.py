"""Storage-partitioned joins against the joins a user would run instead, in one run.

Data: orders (``--rows``, default 10M: order_id, customer_id, amount) bucketed by
bucket(customer_id, 16) and customers (``--rows / 10``: id, name, tier) bucketed by
bucket(id, 8) (the spec's Appendix F), joined on customer_id = id (inner).

Local (pyarrow results, every row materialised):

- ours: ``lp.join`` (8 groups, hash join per group in Rust, default threads and batches);
- DataFusion (Python package): both sides read unpartitioned from Lance tables (one dataset
  each, written by pylance), then ``SessionContext`` join with ``target_partitions`` = cores;
- pyarrow: ``Table.join`` of the same tables read unpartitioned;
- for reference, DataFusion's join alone of the two tables already in memory (no read).

Spark local[2] (``--spark``; counted with ``count()`` of the join result, which Spark cannot
skip for any of them; Spark's defaults otherwise, adaptive execution on):

- ours: ``lps.join`` (one task per group, no shuffle);
- Spark's join of both sides read from Parquet that Spark wrote, with broadcast joins
  allowed (Spark's default) and off;
- Spark's join of tables written with ``bucketBy(16).sortBy`` / ``bucketBy(8).sortBy`` (Spark
  uses its buckets), broadcast allowed and off.

Every join is a cell (``cells.py``): a fresh process (for Spark a fresh session: the first
call includes the first job of the JVM), first call and best of ``--repeat``, peak RSS of the
Python process (Spark's JVM is not counted). Every answer must equal pyarrow's join size.

    python benches/join.py [--rows N] [--spark] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import limits
import pyarrow as pa
import pyarrow.compute as pc
import sparks
from cells import Cell, measure
from report import CELL_HEADER, cell_columns, ratio, share, update_section
from scratch import discard, scratch

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


SQL = (
    "SELECT o.order_id, o.customer_id, o.amount, c.name, c.tier "
    "FROM o JOIN c ON o.customer_id = c.id"
)


def prepare_local(n: int, work: Path) -> tuple[int, int, int]:
    """Both namespaces and both unpartitioned Lance tables; the expected join size, the bytes
    a materialising join must move at least once (both inputs read, the result written) and
    the bytes of both inputs (what a counting join must read)."""
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
    joined = orders.join(customers, "customer_id", "id")
    inputs = orders.nbytes + customers.nbytes
    return joined.num_rows, inputs + joined.nbytes, inputs


def ours(work: str) -> Callable[[], int]:
    o = lp.PartitionedNamespace.open(f"{work}/orders")
    c = lp.PartitionedNamespace.open(f"{work}/customers")
    return lambda: lp.join(o, c, on=[("customer_id", "id")]).read_all().num_rows


def _context() -> Any:
    import datafusion

    # DataFusion as its users tune it: one target partition per core (its default, stated).
    config = datafusion.SessionConfig().with_target_partitions(os.cpu_count() or 1)
    return datafusion.SessionContext(config)


def datafusion_read(work: str) -> Callable[[], int]:
    def run() -> int:
        ctx = _context()
        for name, path in (("o", "orders.lance"), ("c", "customers.lance")):
            ctx.register_record_batches(
                name, [lance.dataset(f"{work}/{path}").to_table().to_batches()]
            )
        n: int = ctx.sql(SQL).to_arrow_table().num_rows
        return n

    return run


def pyarrow_join(work: str) -> Callable[[], int]:
    def run() -> int:
        lo = lance.dataset(f"{work}/orders.lance").to_table()
        rc = lance.dataset(f"{work}/customers.lance").to_table()
        n: int = lo.join(rc, "customer_id", "id").num_rows
        return n

    return run


def datafusion_in_memory(work: str) -> Callable[[], int]:
    ctx = _context()
    for name, path in (("o", "orders.lance"), ("c", "customers.lance")):
        ctx.register_record_batches(name, [lance.dataset(f"{work}/{path}").to_table().to_batches()])
    return lambda: ctx.sql(SQL).to_arrow_table().num_rows


LOCAL = {
    "ours": "ours: lp.join",
    "datafusion_read": "DataFusion join (unpartitioned Lance, target_partitions = cores)",
    "pyarrow_join": "pyarrow Table.join (unpartitioned Lance)",
    "datafusion_in_memory": "(reference: DataFusion's join alone, both tables already in memory)",
    "ours_purge_1s": "ours, `MIMALLOC_PURGE_DELAY=1000` (mimalloc's default, as DataFusion's)",
    "datafusion_purge_10s": "DataFusion, `MIMALLOC_PURGE_DELAY=10000` (both keep it 10 s)",
}


def prepare_spark(n: int, work: Path) -> None:
    """Parquet written by Spark, and the same rows written with bucketBy + sortBy."""
    spark = session(work, broadcast=False)
    try:
        orders, customers = make_data(n)
        spark.createDataFrame(orders.to_pandas()).write.parquet(str(work / "o.parquet"))
        spark.createDataFrame(customers.to_pandas()).write.parquet(str(work / "c.parquet"))
        for src, table, key, buckets in (("o", "ob", "customer_id", 16), ("c", "cb", "id", 8)):
            df = spark.read.parquet(str(work / f"{src}.parquet"))
            df.write.bucketBy(buckets, key).sortBy(key).option(
                "path", str(work / f"{table}.bucketed")
            ).saveAsTable(table)
    finally:
        spark.stop()


def session(work: Path, broadcast: bool) -> Any:
    conf = {"spark.sql.shuffle.partitions": "16", "spark.sql.warehouse.dir": str(work / "wh")}
    if not broadcast:
        conf["spark.sql.autoBroadcastJoinThreshold"] = "-1"
    return sparks.session(**conf)


def spark_join(work: str, mode: str, broadcast: bool) -> Callable[[], int]:
    """One Spark join in a fresh session (Spark's defaults: adaptive execution on)."""
    spark = session(Path(work), broadcast)
    if mode == "bucketed":
        for table, columns, key, buckets in (
            ("ob", "order_id BIGINT, customer_id BIGINT, amount DOUBLE", "customer_id", 16),
            ("cb", "id BIGINT, name STRING, tier INT", "id", 8),
        ):
            spark.sql(
                f"CREATE TABLE {table} ({columns}) USING parquet CLUSTERED BY ({key}) "
                f"SORTED BY ({key}) INTO {buckets} BUCKETS LOCATION '{work}/{table}.bucketed'"
            )

    def run() -> int:
        if mode == "ours":
            import lance_partitioned.spark as lps

            df = lps.join(spark, f"{work}/orders", f"{work}/customers", on=[("customer_id", "id")])
            n: int = df.count()
            return n
        if mode == "bucketed":
            lo, rc = spark.table("ob"), spark.table("cb")
        else:
            lo = spark.read.parquet(f"{work}/o.parquet")
            rc = spark.read.parquet(f"{work}/c.parquet")
        n = lo.join(rc, lo.customer_id == rc.id).count()
        return n

    return run


SPARK = {
    ("ours", False): "ours: lps.join (no shuffle)",
    ("parquet", False): "Spark join of Parquet Spark wrote, broadcast off",
    ("parquet", True): "Spark join of Parquet Spark wrote, broadcast allowed (default)",
    ("bucketed", False): "Spark join of bucketBy(16)/bucketBy(8) + sortBy tables, broadcast off",
    ("bucketed", True): "Spark join of bucketBy + sortBy tables, broadcast allowed (default)",
}

CASES: dict[str, Callable[..., Any]] = {
    "ours": ours,
    "datafusion_read": datafusion_read,
    "pyarrow_join": pyarrow_join,
    "datafusion_in_memory": datafusion_in_memory,
    "spark": spark_join,
}


def table(
    cells: dict[Any, Cell], labels: dict[Any, str], ours_key: Any, at_limit: float
) -> list[str]:
    return [
        f"| {labels[k]} | {cell_columns(c)} "
        f"| {share(at_limit, c.best)} | {ratio(c, cells[ours_key])} |"
        for k, c in cells.items()
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--spark", action="store_true")
    ap.add_argument("--write", type=str, default=None)
    args = ap.parse_args()
    work = scratch("lp-join-bench-")
    params = {"work": str(work)}
    spark: dict[Any, Cell] = {}
    try:
        expected, moved, inputs = prepare_local(args.rows, work)
        local = {
            name: measure("join", name, params, args.repeat) for name in CASES if name in LOCAL
        }
        # Equal allocator settings: ours with mimalloc's default purge delay (ours keeps
        # freed memory 10 s), DataFusion's mimalloc with ours (both keep it).
        local["ours_purge_1s"] = measure(
            "join", "ours", params, args.repeat, env={"MIMALLOC_PURGE_DELAY": "1000"}
        )
        local["datafusion_purge_10s"] = measure(
            "join", "datafusion_read", params, args.repeat, env={"MIMALLOC_PURGE_DELAY": "10000"}
        )
        if args.spark:
            prepare_spark(args.rows, work)
            for mode, broadcast in SPARK:
                p = {**params, "mode": mode, "broadcast": broadcast}
                spark[(mode, broadcast)] = measure("join", "spark", p, args.repeat)
    finally:
        discard(work)
    answers = {c.answer for c in [*local.values(), *spark.values()]}
    if answers != {str(expected)}:
        raise SystemExit(f"the joins disagree: {answers}, expected {expected}")
    lines = [
        f"`python benches/join.py --rows {args.rows}{' --spark' if args.spark else ''} "
        f"--repeat {args.repeat}` (orders {args.rows:,} rows bucket(customer_id, 16) x "
        f"customers {args.rows // 10:,} rows bucket(id, 8), inner join, {expected:,} rows; "
        "local: every row materialised as Arrow; Spark local[2]: `count()` of the join; "
        f"share of limit, local: the {moved / 1e6:.0f} MB of both inputs and the result moved "
        f"once at the one-core copy bandwidth; Spark: the {inputs / 1e6:.0f} MB of both inputs "
        "read once at the all-core copy bandwidth):",
        "",
        f"| join | {CELL_HEADER} | share of limit | ours vs this |",
        "|---|---:|---:|---:|---:|---:|",
        *table(local, LOCAL, "ours", moved / (limits.current()["copy_1_gbps"] * 1e9)),
    ]
    if spark:
        at_limit = inputs / (limits.current()["copy_all_gbps"] * 1e9)
        lines += table(spark, SPARK, ("ours", False), at_limit)
    text = "\n".join(lines)
    print(text)
    if args.write:
        update_section(Path(args.write), "join", text, "## Storage-partitioned joins")


if __name__ == "__main__":
    main()
