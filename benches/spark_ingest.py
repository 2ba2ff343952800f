"""Spark ingest and read benchmarks (issue 4).

One cached DataFrame (id, country ~50 values, event_ts, city ~100k values) partitioned by
country and bucket(city, 16) (~800 partitions), written in one run by:

- ours, clustered: ``lance_partitioned.spark.write`` (the exact key computed in Spark with the
  JVM bucket function, shuffle by key, one writer per partition, one commit), and the same with
  the key computed by the Rust kernel in a Python Arrow UDF (what the JVM function replaced);
- ours, one-pass: ``clustered=False`` (no shuffle);
- ours, Data Source API: ``df.write.format("lance-partitioned")`` (one pass);
- Spark Parquet: ``df.write.partitionBy("country", "city_bucket").parquet`` with Spark's
  ``pmod(hash(city), 16)`` as the bucket column;
- Spark Parquet after ``repartition(country, city_bucket)`` (one file per partition);
- bare ``mapInArrow(identity)`` into the ``noop`` sink: moving the Arrow batches through
  Python and back, the physical limit of any PySpark-side writer; the same after a
  ``repartition`` by the keys, once with the bucket column precomputed and cached (the shuffle
  alone) and once with Spark's own ``pmod(hash(city), 16)`` computed in the pass (the
  cheapest key Spark can compute, though not the spec's bucket).

Each writer is a cell (``cells.py``): a fresh process and Spark session, the input cached
before the first call, first call and best of ``--repeat``, peak RSS of the driver and its
JVM. Reads are in ``spark_read.py``.

    python benches/spark_ingest.py [--rows N] [--tasks N] [--master local|standalone]
        [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sparks
from cells import fresh_dirs, measure
from report import CELL_HEADER, cell_columns, update_section
from scratch import discard, scratch

import lance_partitioned as lp
import lance_partitioned.spark as lps
from lance_partitioned.spark import key as _spark_key

SPEC = lp.PartitionSpec(
    [
        lp.PartitionField("country", source="country", transform=lp.Identity()),
        lp.PartitionField("city_bucket", source=["city"], transform=lp.Bucket(16)),
    ]
)


def count_files(p: Path, suffix: str) -> int:
    return sum(1 for _ in p.rglob(f"*{suffix}"))


def frames(rows: int, tasks: int) -> tuple[Any, Any]:
    """The cached DataFrame, and the same with Spark's bucket column (both counted once, so
    they are in memory before anything is timed)."""
    from pyspark.sql import functions as F

    spark = sparks.session(
        **{
            "spark.sql.shuffle.partitions": str(tasks),
            "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
        }
    )
    lps.register(spark)
    df = (
        spark.range(rows, numPartitions=tasks)
        .select(
            F.col("id"),
            F.concat(F.lit("c"), (F.abs(F.hash("id", F.lit(3))) % 50).cast("string")).alias(
                "country"
            ),
            F.timestamp_seconds(F.lit(1_700_000_000) + F.col("id") % 10_000_000).alias("event_ts"),
            F.concat(
                F.lit("city-"), (F.abs(F.hash("id", F.lit(5))) % 100_000).cast("string")
            ).alias("city"),
        )
        .cache()
    )
    df.count()
    keyed = df.withColumn("city_bucket", F.expr("pmod(hash(city), 16)")).cache()
    keyed.count()
    return df, keyed


def ours(
    rows: int, tasks: int, work: str, clustered: bool, key: str = "exact", jvm: bool = True
) -> Any:
    df, _ = frames(rows, tasks)

    def run(out: Path) -> int:
        extra = {"num_tasks": tasks} if clustered else {}
        _spark_key.use_jvm = jvm
        try:
            w = lps.write(df, str(out), spec=SPEC, clustered=clustered, key=key, **extra)
        finally:
            _spark_key.use_jvm = True
        return int(w.files)

    return fresh_dirs(work, "ours"), run


def datasource(rows: int, tasks: int, work: str) -> Any:
    df, _ = frames(rows, tasks)

    def run(out: Path) -> int:
        df.write.format(lps.FORMAT).option("spec", lps.spec_option(SPEC, df)).mode("append").save(
            str(out)
        )
        return count_files(out, ".lance") - count_files(out / "__manifest", ".lance")

    return fresh_dirs(work, "ds"), run


def parquet(rows: int, tasks: int, work: str, repartition: bool) -> Any:
    _, keyed = frames(rows, tasks)

    def run(out: Path) -> int:
        d = keyed.repartition("country", "city_bucket") if repartition else keyed
        d.write.partitionBy("country", "city_bucket").mode("overwrite").parquet(str(out))
        return count_files(out, ".parquet")

    return fresh_dirs(work, "parquet"), run


def noop(rows: int, tasks: int, work: str, shuffle: str) -> Any:
    from pyspark.sql import functions as F

    df, keyed = frames(rows, tasks)

    def run(_: Path) -> int:
        if shuffle == "cached":
            d = keyed.repartition("country", "city_bucket").drop("city_bucket")
        elif shuffle == "computed":
            d = df.repartition(tasks, "country", F.expr("pmod(hash(city), 16)"))
        else:
            d = df
        d.mapInArrow(lambda it: it, df.schema).write.format("noop").mode("overwrite").save()
        return 0

    return fresh_dirs(work, "noop"), run


CASES: dict[str, Callable[..., Any]] = {
    "ours": ours,
    "datasource": datasource,
    "parquet": parquet,
    "noop": noop,
}
WRITERS: list[tuple[str, str, dict[str, Any]]] = [
    ("ours: lps.write, clustered (exact key in the JVM)", "ours", {"clustered": True}),
    (
        "ours: lps.write, clustered, exact key through Python",
        "ours",
        {"clustered": True, "jvm": False},
    ),
    (
        "ours: lps.write, clustered, key='native' (the fields Spark computes itself: country)",
        "ours",
        {"clustered": True, "key": "native", "jvm": False},
    ),
    ("ours: lps.write, one-pass", "ours", {"clustered": False}),
    ("ours: df.write.format('lance-partitioned') (one-pass)", "datasource", {}),
    ("Spark: partitionBy(...).parquet", "parquet", {"repartition": False}),
    ("Spark: repartition(keys) + partitionBy(...).parquet", "parquet", {"repartition": True}),
    ("bare mapInArrow(identity) -> noop (round-trip limit)", "noop", {"shuffle": "none"}),
    (
        "bare repartition(keys) + mapInArrow(identity) -> noop (limit with a shuffle)",
        "noop",
        {"shuffle": "cached"},
    ),
    (
        "bare repartition(country, Spark's pmod(hash(city), 16)) + mapInArrow(identity) -> "
        "noop (limit with a shuffle by a key computed in the pass)",
        "noop",
        {"shuffle": "computed"},
    ),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--tasks", type=int, default=4, help="shuffle partitions / writing tasks")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--master", choices=["local", "standalone"], default="local")
    ap.add_argument("--write", default=None)
    args = ap.parse_args()
    n = args.rows
    work = scratch("lp-spark-bench-")
    base = {"rows": n, "tasks": args.tasks, "work": str(work)}
    try:
        with sparks.standalone(work / "cluster", args.master == "standalone"):
            where = sparks.where()
            cells = [
                measure("spark_ingest", case, {**base, **extra}, args.repeat, sync=True)
                for _, case, extra in WRITERS
            ]
    finally:
        discard(work)
    by = {label: c for (label, _, _), c in zip(WRITERS, cells, strict=True)}
    pq_t = by["Spark: partitionBy(...).parquet"].best
    trip_t = cells[7].best
    shuffle_t = cells[8].best
    keyed_t = cells[9].best
    lines = [
        f"`python benches/spark_ingest.py --rows {n} --tasks {args.tasks} --repeat "
        f"{args.repeat} --master {args.master}` ({where}; each writer a fresh Spark session, "
        "its input cached before the first call; speed-up = Spark partitionBy().parquet's best "
        "/ this one's; of round trip = the bare mapInArrow round trip's best / this one's; of "
        "shuffle limit = the same for the bare repartition + mapInArrow; of keyed limit = the "
        "same with the key computed in the pass; peak RSS of the driver and its JVM, the "
        "executors' too on local[2]):",
        "",
        f"| writer | M rows/s | files | {CELL_HEADER} | vs Spark partitionBy parquet "
        "| of round trip | of shuffle limit | of keyed limit |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (label, _, _), c in zip(WRITERS, cells, strict=True):
        t = c.best
        files = c.answer if c.answer != "0" else "-"
        lines.append(
            f"| {label} | {n / t / 1e6:.2f} | {files} | {cell_columns(c)} | {pq_t / t:.2f}x "
            f"| {trip_t / t:.0%} | {shuffle_t / t:.0%} | {keyed_t / t:.0%} |"
        )
    text = "\n".join(lines)
    print(text)
    if args.write:
        name, heading = "spark", "## Spark ingest"
        if args.master == "standalone":
            name, heading = "spark-standalone", "## Spark ingest on the standalone cluster"
        update_section(Path(args.write), name, text, heading)


if __name__ == "__main__":
    main()
