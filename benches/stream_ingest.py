"""Streaming throughput at 1-second triggers (issue 35): our stream sinks against Spark's own
Parquet file sink, on the same stream and the same partitioning.

The stream is Spark's ``rate-micro-batch`` source (``--rows`` rows per micro-batch, ``--tasks``
input partitions), its ``value`` as ``id``, a ``country`` of ``--partitions`` values
(``'c' || pmod(hash(value, 7), partitions)``: every task sees every partition) and an
``amount``, started with ``trigger(processingTime="1 second")`` and stopped after
``--batches`` micro-batches. Throughput is the batches' rows over the time Spark reports for
their triggers, so a writer that finishes a batch early is not charged for the wait until the
next trigger. Each writer is a cell (``cells.py``): a fresh process and Spark session, a
first query (Spark's cold start included in it) and the best of ``--repeat`` more, each into a
new directory with a new checkpoint. Writers:

- ours, the data source's stream writer: ``writeStream.format("lance-partitioned")`` into a
  namespace partitioned by identity on ``country`` (every batch one atomic commit under its
  stream write id; the namespace's fragment policy compacts a partition's micro-batch
  fragments inline once it holds more than ``--max-extra`` extra ones);
- ours, ``foreachBatch`` with ``lps.write_batch`` (clustered: a shuffle by the key, one file per
  partition and batch);
- Spark: ``writeStream.partitionBy("country").parquet`` (Spark's file sink with its
  ``_spark_metadata`` log), and the same after ``repartition("country")`` (one file per
  partition and batch, what an expert does to keep the file count down);
- the limits: Spark's ``noop`` stream sink (reading the source, no writer); a
  ``mapInArrow(identity)`` into ``noop`` (the Arrow round trip through a Python worker); a
  Python data source stream sink that drops the Arrow batches it gets (the trip into a Python
  sink that every PySpark-side sink makes: the "Python limit" the shares are of).

Reported per writer: rows per second of processing (the rows of the batches over the sum of
their trigger durations, from Spark's own progress reports; the last query, a warm one), the
query's wall time first call / best, peak RSS of the driver and its JVM, the files a partition
holds at the end (most, and in all), and the ratio to Spark's Parquet sink.

    python benches/stream_ingest.py [--rows 500000] [--batches 20] [--partitions 20 200]
        [--tasks 2] [--max-extra 8] [--repeat 1] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from cells import fresh_dirs, measure
from report import seconds, update_section
from scratch import discard, scratch

import lance_partitioned as lp

SCHEMA = pa.schema([("id", pa.int64()), ("country", pa.string()), ("amount", pa.float64())])
SPEC = lp.PartitionSpec([lp.PartitionField("country", source="country", transform=lp.Identity())])


def _stream(rows: int, tasks: int, partitions: int) -> Any:
    import sparks
    from pyspark.sql import functions as F

    import lance_partitioned.spark as lps

    spark = sparks.session(
        **{
            "spark.sql.shuffle.partitions": str(tasks),
            "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
        }
    )
    lps.register(spark)
    return (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", rows)
        .option("numPartitions", tasks)
        .load()
        .select(
            F.col("value").alias("id"),
            F.concat(
                F.lit("c"), F.pmod(F.hash("value", F.lit(7)), F.lit(partitions)).cast("string")
            ).alias("country"),
            (F.col("value") % 1000 / 4).cast("double").alias("amount"),
        )
    )


def _run(start: Callable[[Path], Any], batches: int) -> dict[str, Any]:
    """Starts a query into a new directory, waits for ``batches`` micro-batches, stops it."""

    def run(target: Path) -> dict[str, Any]:
        q = start(target)
        t0 = time.perf_counter()
        try:
            while True:
                if q.exception() is not None:
                    raise SystemExit(f"stream failed: {q.exception()}")
                done = [p for p in q.recentProgress if p["numInputRows"] > 0]
                if len(done) >= batches:
                    break
                time.sleep(0.05)
            wall = time.perf_counter() - t0
        finally:
            q.stop()
        done = done[:batches]
        return {
            "target": str(target),
            "wall": wall,
            "rows": sum(p["numInputRows"] for p in done),
            "busy": sum(p["durationMs"]["triggerExecution"] for p in done) / 1000,
        }

    return run


def _files(kind: str, target: Path) -> dict[str, int]:
    if kind == "none":
        return {}
    if kind == "parquet":
        per = {d.name: sum(1 for _ in d.glob("*.parquet")) for d in target.glob("country=*")}
    else:
        stats = lp.PartitionedNamespace.open(str(target)).stats()
        per = dict(enumerate(stats["files"].to_pylist()))
    return {"files_max": max(per.values(), default=0), "files": sum(per.values())}


def _rows_in(kind: str, target: Path) -> int:
    if kind == "parquet":
        import pyarrow.dataset as ds

        return int(ds.dataset(str(target), format="parquet", partitioning="hive").count_rows())
    if kind == "lance":
        return int(pc.sum(lp.PartitionedNamespace.open(str(target)).stats()["rows"]).as_py())
    return -1


def _null_sink() -> Any:
    """A Python data source whose stream writer takes the Arrow batches and drops them: the
    cost of the trip from the JVM into a Python sink, what any such sink pays. Defined in a
    function so that Spark's workers get it by value."""
    from pyspark.sql.datasource import (
        DataSource,
        DataSourceStreamArrowWriter,
        WriterCommitMessage,
    )

    class NullWriter(DataSourceStreamArrowWriter):
        def write(self, iterator: Any) -> WriterCommitMessage:
            for _ in iterator:
                pass
            return WriterCommitMessage()

        def commit(self, messages: Any, batchId: int) -> None:
            pass

        def abort(self, messages: Any, batchId: int) -> None:
            pass

    class NullSink(DataSource):
        @classmethod
        def name(cls) -> str:
            return "lp-bench-null"

        def streamWriter(self, schema: Any, overwrite: bool) -> NullWriter:
            return NullWriter()

    return NullSink


def _case(
    writer: str, rows: int, batches: int, partitions: int, tasks: int, max_extra: int, work: str
) -> tuple[Callable[[], Path], Callable[[Path], Any], Callable[[Any], str]]:
    import lance_partitioned.spark as lps

    df = _stream(rows, tasks, partitions)
    kind = {"parquet": "parquet", "parquet_repartition": "parquet"}.get(writer, "lance")
    if writer.startswith(("noop", "null")):
        kind = "none"
    if writer == "null_sink":
        df.sparkSession.dataSource.register(_null_sink())
    props = {"lance_partitioned.partition.max_extra_fragments": str(max_extra)}
    prepare = fresh_dirs(work, writer)

    def start(target: Path) -> Any:
        cp = str(target) + "-checkpoint"
        w: Any
        if kind == "lance":
            lp.PartitionedNamespace.create(str(target), SCHEMA, SPEC, properties=props)
        if writer == "ours_sink":
            w = df.writeStream.format(lps.FORMAT)
        elif writer == "ours_foreach":
            uri = str(target)
            w = df.writeStream.foreachBatch(lambda b, e: lps.write_batch(b, e, uri))
        elif writer == "parquet":
            w = df.writeStream.format("parquet").partitionBy("country")
        elif writer == "parquet_repartition":
            w = df.repartition("country").writeStream.format("parquet").partitionBy("country")
        elif writer == "noop":
            w = df.writeStream.format("noop")
        elif writer == "null_sink":
            w = df.writeStream.format("lp-bench-null")
        else:
            w = df.mapInArrow(lambda it: it, df.schema).writeStream.format("noop")
        w = w.option("checkpointLocation", cp).trigger(processingTime="1 second")
        return (
            w.start()
            if writer.startswith(("ours_foreach", "noop", "null"))
            else w.start(str(target))
        )

    def answer(got: dict[str, Any]) -> str:
        target = Path(got.pop("target"))
        got.update(_files(kind, target))
        got["stored"] = _rows_in(kind, target)
        return json.dumps(got)

    return prepare, _run(start, batches), answer


CASES = {"stream": _case}

WRITERS = [
    ("ours_sink", "ours: writeStream.format('lance-partitioned')"),
    ("ours_foreach", "ours: foreachBatch(lps.write_batch), clustered"),
    ("parquet", "Spark: writeStream.partitionBy('country').parquet"),
    ("parquet_repartition", "Spark: repartition('country') + partitionBy parquet"),
    ("noop", "limit: source -> noop sink"),
    ("noop_arrow", "limit: mapInArrow(identity) -> noop sink"),
    ("null_sink", "limit: a Python data source sink that drops the batches"),
]


LIMITS = ("noop", "noop_arrow", "null_sink")


def _cells(a: argparse.Namespace, partitions: int, writers: list[str], work: Path) -> list[Any]:
    out = []
    for writer in writers:
        params = dict(
            writer=writer,
            rows=a.rows,
            batches=a.batches,
            partitions=partitions,
            tasks=a.tasks,
            max_extra=a.max_extra,
            work=str(work),
        )
        cell = measure("stream_ingest", "stream", params, repeat=a.repeat)
        got = json.loads(cell.answer)
        if got["stored"] != -1 and got["stored"] < a.rows * a.batches:
            raise SystemExit(f"{writer}: {got['stored']} rows stored, want {a.rows * a.batches}")
        print(f"    {writer}, {partitions} partitions: {got}", flush=True)
        out.append((partitions, writer, cell, got))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--partitions", type=int, nargs="+", default=[20, 200])
    ap.add_argument("--tasks", type=int, default=2)
    ap.add_argument("--max-extra", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--write", type=Path)
    a = ap.parse_args()
    work = scratch("stream-ingest")
    writers = [w for w, _ in WRITERS if w not in LIMITS]
    try:
        # The limits do not depend on the partitioning: measured once, on the first.
        limits = _cells(a, a.partitions[0], list(LIMITS), work)
        results = [r for p in a.partitions for r in _cells(a, p, writers, work)]
    finally:
        discard(work)
    python_limit = limits[2][3]["busy"]
    parts = " and ".join(str(p) for p in a.partitions)
    lines = [
        f"`python benches/stream_ingest.py --rows {a.rows} --batches {a.batches} "
        f"--partitions {' '.join(map(str, a.partitions))} --tasks {a.tasks} "
        f"--max-extra {a.max_extra} --repeat {a.repeat}` (local[2]; a rate-micro-batch stream "
        f"of {a.rows:,} rows per batch in {a.tasks} tasks at 1-second triggers, partitioned by "
        f"`country` ({parts} values), stopped after {a.batches} batches; each writer a fresh "
        "process and Spark session; M rows/s = the batches' rows over the sum of their trigger "
        "durations (Spark's progress reports), of the last query (warm); of the Python limit = "
        "this row's share of the M rows/s of a Python data source sink that drops what it gets; "
        "wall = the query until its last batch, "
        "first call / best; files per partition at the end, most and in all (ours compacts a "
        f"partition above {a.max_extra} extra fragments); peak RSS of the driver and its JVM):",
        "",
        "| partitions | writer | M rows/s | vs Spark parquet sink | of Python limit "
        "| wall first s | wall best s | peak RSS MiB | files per partition, most | files |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    labels = dict(WRITERS)
    for partitions, writer, cell, got in [*limits, *results]:
        parquet = next((g for p, w, _, g in results if w == "parquet" and p == partitions), None)
        shown = "-" if writer in LIMITS else str(partitions)
        vs = f"{parquet['busy'] / got['busy']:.2f}x" if parquet else "-"
        lines.append(
            f"| {shown} | {labels[writer]} | {got['rows'] / got['busy'] / 1e6:.2f} | {vs} | "
            f"{100 * python_limit / got['busy']:.0f}% | {seconds(cell.first)} | "
            f"{seconds(cell.best)} | {cell.peak_mib:.0f} | {got.get('files_max', '-')} | "
            f"{got.get('files', '-')} |"
        )
    text = "\n".join(lines)
    print(text)
    if a.write:
        update_section(a.write, "stream-ingest", text, "## Streaming throughput")


if __name__ == "__main__":
    main()
