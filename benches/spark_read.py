"""Spark reads: ``lps.read`` against Spark's own Parquet read of the same rows laid out by the
same partitions (Hive directories, Spark's partition discovery), in one run on local[2] or on
the tests' standalone cluster (``--master standalone``).

Data: ``--rows`` (default 10M) rows of 6 columns (id, country ~50 values, event_ts, city
~100k values, amount, payload), partitioned by identity(country) and bucket(city, 16) (~800
partitions): ours written by ``PartitionedNamespace.write``, Parquet by Spark
(``repartition`` by the keys, then ``partitionBy("country", "city_bucket")``: one file per
partition).

Queries (each sums a column, so that no reader can answer from metadata alone):

- one partition value: ``country = 'c7'`` (~16 of ~800 partitions), ``sum(id)``;
- full scan of 2 of 6 columns: ``sum(id), max(amount)`` over every row.

    python benches/spark_read.py [--rows N] [--repeat N] [--master local|standalone]
        [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import limits
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import sparks
from cells import measure
from report import CELL_HEADER, cell_columns, ratio, share, update_section
from scratch import discard, scratch

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


def prepare(rows: int, work: Path) -> tuple[int, int, int, dict[str, int]]:
    """Ours written by ``PartitionedNamespace.write``; the Parquet copy written by Spark
    (``partitionBy`` after a ``repartition`` by the keys: one file per partition). Returns the
    partitions, the two expected sums and the Arrow bytes each query must read."""
    table = make_table(rows)
    ns = lp.PartitionedNamespace.create(str(work / "ours"), table.schema, SPEC)
    ns.write(table)
    keyed = table.append_column("city_bucket", k.bucket(table["city"].combine_chunks(), 16))
    pq.write_table(keyed, str(work / "source.parquet"))
    spark = sparks.session()
    try:
        src = spark.read.parquet(str(work / "source.parquet"))
        src.repartition("country", "city_bucket").write.partitionBy(
            "country", "city_bucket"
        ).parquet(str(work / "parquet"))
    finally:
        spark.stop()
    want_one = pc.sum(table.filter(pc.equal(table["country"], "c7"))["id"]).as_py()
    parts: int = ns.partitions(with_rows=False).num_rows
    one = table.filter(pc.equal(table["country"], "c7"))["id"].nbytes
    touched = {"one": one, "all": table["id"].nbytes + table["amount"].nbytes}
    return parts, want_one, pc.sum(table["id"]).as_py(), touched


def query(work: str, reader: str, scope: str) -> Callable[[], int]:
    from pyspark.sql import functions as F

    spark = sparks.session()
    root, pq_root = f"{work}/ours", f"{work}/parquet"

    def run() -> int:
        if reader == "ours":
            where = "country = 'c7'" if scope == "one" else None
            df = lps.read(spark, root, where, columns=["id", "amount"])
        else:
            df = spark.read.parquet(pq_root)
            df = df.filter(F.col("country") == "c7") if scope == "one" else df
        if scope == "one":
            return int(df.agg(F.sum("id")).collect()[0][0])
        return int(df.agg(F.sum("id"), F.max("amount")).collect()[0][0])

    return run


CASES = {"query": query}
QUERIES = {"one": "country = 'c7', sum(id)", "all": "full scan, sum(id) and max(amount)"}
READERS = {"ours": "ours: lps.read", "parquet": "Spark read.parquet of Parquet Spark wrote"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--master", choices=["local", "standalone"], default="local")
    ap.add_argument("--write", default=None)
    args = ap.parse_args()
    work = scratch("lp-spark-read-")
    try:
        with sparks.standalone(work / "cluster", args.master == "standalone"):
            where = sparks.where()
            parts, want_one, want_all, touched = prepare(args.rows, work)
            cells = {
                (scope, reader): measure(
                    "spark_read",
                    "query",
                    {"work": str(work), "reader": reader, "scope": scope},
                    args.repeat,
                )
                for scope in QUERIES
                for reader in READERS
            }
    finally:
        discard(work)
    for (scope, reader), c in cells.items():
        want = want_one if scope == "one" else want_all
        if c.answer != str(want):
            raise SystemExit(f"{reader} {scope}: {c.answer}, expected {want}")
    lines = [
        f"`python benches/spark_read.py --rows {args.rows} --repeat {args.repeat} --master "
        f"{args.master}` ({where}, {parts} partitions; each query a fresh process and Spark "
        "session; Parquet: the same partitions written by Spark's partitionBy, read by its "
        "partition discovery; peak RSS of the driver and its JVM, the executors' too on "
        "local[2]; share of limit: the Arrow bytes of the columns the query must read, at the "
        "one-core copy bandwidth):",
        "",
        f"| query | reader | {CELL_HEADER} | share of limit | ours vs this |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    read_bw = limits.current()["copy_1_gbps"] / 2 * 1e9
    for scope, label in QUERIES.items():
        for reader, name in READERS.items():
            c = cells[(scope, reader)]
            at_limit = touched[scope] / read_bw
            lines.append(
                f"| {label} | {name} | {cell_columns(c)} | {share(at_limit, c.best)} "
                f"| {ratio(c, cells[(scope, 'ours')])} |"
            )
    text = "\n".join(lines)
    print(text)
    if args.write:
        name, heading = "spark_read", "## Spark reads"
        if args.master == "standalone":
            name, heading = "spark_read-standalone", "## Spark reads on the standalone cluster"
        update_section(Path(args.write), name, text, heading)


if __name__ == "__main__":
    main()
