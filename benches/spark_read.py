"""Spark reads: ``lps.read`` against Spark's own Parquet read of the same rows laid out by the
same partitions (Hive directories, Spark's partition discovery), local[2], in one run.

Data: ``--rows`` (default 10M) rows of 6 columns (id, country ~50 values, event_ts, city
~100k values, amount, payload), partitioned by identity(country) and bucket(city, 16) (~800
partitions): ours written by ``PartitionedNamespace.write``, Parquet by pyarrow's
``write_to_dataset`` with the partition columns ``country`` and ``city_bucket``.

Queries (each sums a column, so that no reader can answer from metadata alone):

- one partition value: ``country = 'c7'`` (~16 of ~800 partitions), ``sum(id)``;
- full scan of 2 of 6 columns: ``sum(id), max(amount)`` over every row.

    python benches/spark_read.py [--rows N] [--repeat N] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from report import best_alternating, update_section

import lance_partitioned as lp
import lance_partitioned.spark as lps
from lance_partitioned import kernels as k

SPEC = lp.PartitionSpec(
    [
        lp.PartitionField("country", "country", lp.Identity()),
        lp.PartitionField("city_bucket", "city", lp.Bucket(16)),
    ]
)


def make_table(n: int) -> pa.Table:
    ids = pa.array(range(n), pa.int64())
    mixed = pc.bit_wise_and(pc.multiply(ids, 2654435761), 0xFFFFFFFF)
    return pa.table(
        {
            "id": ids,
            "country": pc.binary_join_element_wise(
                "c", pc.cast(pc.remainder(mixed, 50), pa.string()), ""
            ),
            "event_ts": pc.cast(
                pc.add(pc.multiply(ids, 1_000_000), 1_700_000_000_000_000),
                pa.timestamp("us", "UTC"),
            ),
            "city": pc.binary_join_element_wise(
                "city-", pc.cast(pc.remainder(pc.shift_right(mixed, 7), 100_000), pa.string()), ""
            ),
            "amount": pc.divide(pc.cast(pc.bit_wise_and(ids, 4095), pa.float64()), 3.0),
            "payload": pc.cast(pc.bit_wise_and(mixed, 0xFFFFF), pa.string()),
        }
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write", default=None)
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    work = Path(tempfile.mkdtemp(prefix="lp-spark-read-"))
    table = make_table(args.rows)
    ns = lp.PartitionedNamespace.create(str(work / "ours"), table.schema, SPEC)
    ns.write(table)
    parts = ns.partitions(with_rows=False).num_rows
    buckets = k.bucket(table["city"].combine_chunks(), 16)
    pq.write_to_dataset(
        table.append_column("city_bucket", buckets),
        str(work / "parquet"),
        partition_cols=["country", "city_bucket"],
        max_partitions=2000,
    )
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        root, pq_root = ns.root, str(work / "parquet")
        want_one = pc.sum(table.filter(pc.equal(table["country"], "c7"))["id"]).as_py()
        want_all = pc.sum(table["id"]).as_py()

        def ours_one() -> None:
            df = lps.read(spark, root, "country = 'c7'", columns=["id"])
            assert df.agg(F.sum("id")).collect()[0][0] == want_one

        def spark_one() -> None:
            df = spark.read.parquet(pq_root).filter(F.col("country") == "c7")
            assert df.agg(F.sum("id")).collect()[0][0] == want_one

        def ours_all() -> None:
            df = lps.read(spark, root, columns=["id", "amount"])
            assert df.agg(F.sum("id"), F.max("amount")).collect()[0][0] == want_all

        def spark_all() -> None:
            df = spark.read.parquet(pq_root).select("id", "amount")
            assert df.agg(F.sum("id"), F.max("amount")).collect()[0][0] == want_all

        one = best_alternating([ours_one, spark_one], args.repeat)
        full = best_alternating([ours_all, spark_all], args.repeat)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    lines = [
        f"`python benches/spark_read.py --rows {args.rows}` (local[2], {parts} partitions, "
        f"best of {args.repeat}, alternating; Parquet: the same partitions as Hive directories "
        "read by Spark's partition discovery):",
        "",
        "| query | ours: lps.read (s) | Spark read.parquet (s) | ours / Spark speed |",
        "|---|---:|---:|---:|",
        f"| country = 'c7', sum(id) | {one[0]:.2f} | {one[1]:.2f} | {one[1] / one[0]:.2f}x |",
        f"| full scan, 2 of 6 columns | {full[0]:.2f} | {full[1]:.2f} | {full[1] / full[0]:.2f}x |",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        update_section(Path(args.write), "spark_read", text, "## Spark reads")


if __name__ == "__main__":
    main()
