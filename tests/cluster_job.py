"""The driver of the cluster test: an ingest pipeline on a Spark standalone cluster writing to
the S3 server. Run as its own process (one SparkContext per process; the test session already
has a local one):

    python cluster_job.py MASTER WORKER_PYTHON S3_OPTIONS_JSON BUCKET

It prints one line ``RESULT <json>`` with what each step saw; the test checks it. The driver
writes nothing to a local disk: data, manifests and staging all live in the bucket."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import lance_partitioned as lp
import lance_partitioned.spark as lps
from lance_partitioned.spark import key as _spark_key

COUNTRIES = ["US", "FR", "DE", "IN", "BR"]
SPEC = lp.PartitionSpec(
    [
        lp.PartitionField("country", source="country", transform=lp.Identity()),
        lp.PartitionField("user_bucket", source="user_id", transform=lp.Bucket(4)),
    ]
)


def events(
    spark: SparkSession, start: int, n: int, tasks: int, slow_ms: int = 0, only_first: bool = False
) -> DataFrame:
    """n rows over ``tasks`` Spark partitions; with ``slow_ms`` each task (or only the first,
    with ``only_first``) sleeps that long in the JVM half-way through its rows (so a write can
    be interrupted while its tasks run, after they staged their first files)."""
    df = spark.range(start, start + n, 1, tasks)
    if slow_ms:
        every = max(n // tasks, 1)
        offset = f"id - {start}" if only_first else f"(id - {start}) % {every}"
        df = df.filter(
            F.expr(
                f"{offset} != {every // 2} OR coalesce(reflect('java.lang.Thread', "
                f"'sleep', cast({slow_ms} as bigint)), 'slept') IS NOT NULL"
            )
        )
    country = F.element_at(
        F.array(*[F.lit(c) for c in COUNTRIES]), (F.col("id") % 5 + 1).cast("int")
    )
    return df.select(
        F.col("id"),
        country.alias("country"),
        (F.col("id") * 7919 % 1000).alias("user_id"),
        F.concat(F.lit("payload-"), F.col("id").cast("string")).alias("payload"),
    )


def check(uri: str, options: dict[str, str], start: int, n: int) -> dict[str, Any]:
    """Every row of ``[start, start + n)`` exactly once, read back with pyarrow on the driver."""
    ns = lp.PartitionedNamespace.open(uri, storage_options=options)
    ids = ns.to_table(columns=["id"])["id"]
    unique = pc.count_distinct(ids).as_py()
    return {
        "rows": len(ids),
        "unique": unique,
        "min": pc.min(ids).as_py(),
        "max": pc.max(ids).as_py(),
        "expected": [start, start + n - 1, n],
        "partitions": ns.partitions(with_rows=False).num_rows,
    }


def executors(app_id: str) -> list[int]:
    """The pids of this application's executor JVMs (on this machine: the test cluster)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in cmd and (
                app_id.encode() in cmd
            ):
                pids.append(int(entry))
    return sorted(pids)


def _objects(options: dict[str, str], bucket: str, prefix: str) -> int:
    import boto3

    s3 = boto3.client(
        "s3",
        endpoint_url=options["aws_endpoint"],
        region_name=options["aws_region"],
        aws_access_key_id=options["aws_access_key_id"],
        aws_secret_access_key=options["aws_secret_access_key"],
    )
    n = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        n += len(page.get("Contents", []))
    return n


def kill_an_executor_while_tasks_run(
    spark: SparkSession, options: dict[str, str], bucket: str, prefix: str, killed: list[int]
) -> None:
    """Waits until the running write has staged files in the bucket (its tasks flushed their
    first rows and sleep half-way), then SIGKILLs one executor JVM: its task dies with files
    staged but never committed, and Spark runs it again on the other worker."""
    base = _objects(options, bucket, prefix)
    deadline = time.monotonic() + 120
    first = None
    while time.monotonic() < deadline:
        grown = _objects(options, bucket, prefix) - base
        if grown > 0 and first is None:
            first = time.monotonic()
        # Both executors' first tasks flush at about the same time: wait for both (each
        # flush writes a file per partition it holds) or half a second after the first file.
        if first is not None and (grown >= 30 or time.monotonic() - first > 0.5):
            pids = executors(spark.sparkContext.applicationId)
            if pids:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
            return
        time.sleep(0.05)


def kill_an_executor_after(spark: SparkSession, seconds: float, killed: list[int]) -> None:
    """SIGKILLs one executor JVM of this application ``seconds`` from now (while a job's
    tasks sleep half-way through their rows)."""
    time.sleep(seconds)
    pids = executors(spark.sparkContext.applicationId)
    if pids:
        os.kill(pids[0], signal.SIGKILL)
        killed.append(pids[0])


def stream_with_an_executor_killed(
    spark: SparkSession, options: dict[str, str], uri: str
) -> dict[str, Any]:
    """The data source's stream writer taking the rate source's numbers (a micro-batch a
    second) while one executor is SIGKILLed after the second batch: Spark runs the lost
    tasks again and the master starts a new executor. Every number of the committed batches
    lands once (the rate source's batches are deterministic, so they are ``0 .. max``)."""
    import pyarrow as pa

    schema = pa.schema([pa.field("id", pa.int64()), pa.field("k", pa.int64())])
    spec = lp.PartitionSpec([lp.PartitionField("k", source="k", transform=lp.Identity())])
    lp.PartitionedNamespace.create(uri, schema, spec, storage_options=options)
    checkpoint = tempfile.mkdtemp(prefix="lp-cluster-stream-")
    q = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 2000)
        .option("numPartitions", 2)
        .load()
        .select(F.col("value").alias("id"), (F.col("value") % 5).alias("k"))
        .writeStream.format(lps.FORMAT)
        .option("checkpointLocation", checkpoint)
        .option("storage_options", json.dumps(options))
        .trigger(processingTime="1 second")
        .start(uri)
    )
    killed: list[int] = []
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(q.recentProgress) < 2:
        time.sleep(0.2)
    pids = executors(spark.sparkContext.applicationId)
    if pids:
        os.kill(pids[0], signal.SIGKILL)
        killed.append(pids[0])
    after = len(q.recentProgress)
    while time.monotonic() < deadline and len(q.recentProgress) < after + 4:
        time.sleep(0.2)
    q.stop()
    batches = [p["batchId"] for p in q.recentProgress]
    shutil.rmtree(checkpoint, ignore_errors=True)
    got = check(uri, options, 0, 0)
    return {"pids": killed, "batches": len(set(batches)), **got}


def main() -> None:
    master, worker_python, options_json, bucket = sys.argv[1:5]
    options: dict[str, str] = json.loads(options_json)
    # PySpark starts the executors' Python workers from PYSPARK_PYTHON as it was when the
    # context started (the spark.pyspark.python configuration counts only with spark-submit).
    os.environ["PYSPARK_PYTHON"] = worker_python
    spark = (
        SparkSession.builder.master(master)
        .appName("lance-partitioned-cluster-test")
        .config("spark.executor.memory", "1g")
        .config("spark.executor.cores", "1")
        .config("spark.cores.max", "2")
        .config("spark.task.maxFailures", "4")
        # Speculation on: a task much slower than the median gets a second attempt on the
        # other worker (step 6 makes one); every step must still write each row once.
        .config("spark.speculation", "true")
        .config("spark.speculation.interval", "100ms")
        .config("spark.speculation.quantile", "0.5")
        .config("spark.speculation.multiplier", "1.5")
        .config("spark.speculation.minTaskRuntime", "500ms")
        .config("spark.speculation.efficiency.enabled", "false")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "1000")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    lps.register(spark)
    out: dict[str, Any] = {"app": spark.sparkContext.applicationId}
    n = 40_000

    # 1. Clustered write (the default), creating the namespace.
    uri = f"s3://{bucket}/clustered"
    r = lps.write(events(spark, 0, n, 4), uri, spec=SPEC, storage_options=options)
    out["clustered"] = {"written": r.rows, **check(uri, options, 0, n)}
    # The bucket key ran in the executors' JVMs (the jar shipped by ADD JAR): one file per
    # partition, and no Python key function in the plan.
    ns = lp.PartitionedNamespace.open(uri, storage_options=options)
    plan = _spark_key.cluster(
        events(spark, 0, 10, 4), ns, ns.distributed_write("append"), "exact", 4
    )
    out["clustered"]["jvm_key"] = "ArrowEvalPython" not in plan._jdf.queryExecution().toString()
    out["clustered"]["files_per_partition"] = r.files / r.partitions

    # 2. One-pass write into its own namespace.
    uri2 = f"s3://{bucket}/one-pass"
    r = lps.write(events(spark, 0, n, 4), uri2, spec=SPEC, clustered=False, storage_options=options)
    out["one_pass"] = {"written": r.rows, **check(uri2, options, 0, n)}

    # 3. The Data Source writer, storage options as single keys.
    uri3 = f"s3://{bucket}/data-source"
    df = events(spark, 0, n, 4)
    w = df.write.format(lps.FORMAT).option("spec", lps.spec_option(SPEC, df))
    for k, v in options.items():
        w = w.option(k, v)
    w.mode("append").save(uri3)
    out["data_source"] = check(uri3, options, 0, n)

    # 4. Pruned reads on the executors, with the options as a JSON option.
    fr = lps.read(spark, uri, "country = 'FR'", storage_options=options)
    out["pruned_read"] = {
        "rows": fr.count(),
        "leaves": lp.PartitionedNamespace.open(uri, storage_options=options)
        .partitions("country = 'FR'", with_rows=False)
        .num_rows,
        "tasks": fr.rdd.getNumPartitions(),
        "countries": sorted(r[0] for r in fr.select("country").distinct().collect()),
    }
    via_source = (
        spark.read.format(lps.FORMAT)
        .option("storage_options", json.dumps(options))
        .load(uri)
        .filter(F.col("country") == "DE")
    )
    out["source_read"] = {"rows": via_source.count(), "leaves": via_source.rdd.getNumPartitions()}

    # 5. An executor killed mid-write: the job finishes on the other worker, rows exactly once.
    killed: list[int] = []
    killer = threading.Thread(
        target=kill_an_executor_while_tasks_run, args=(spark, options, bucket, "clustered/", killed)
    )
    killer.start()
    r = lps.write(
        events(spark, n, n, 8, slow_ms=1500),
        uri,
        clustered=False,
        max_buffer_bytes=1 << 16,
        storage_options=options,
    )
    killer.join()
    out["killed"] = {"pids": killed, "written": r.rows, **check(uri, options, 0, 2 * n)}
    ns = lp.PartitionedNamespace.open(uri, storage_options=options)
    cleaned = ns.cleanup(older_than=datetime.timedelta(0), retention_check=False)
    out["cleanup"] = {"stale_files": cleaned.stale_files, "orphans": cleaned.orphans}
    out["after_cleanup"] = check(uri, options, 0, 2 * n)

    # 6. Speculative execution: the first task sleeps 4 s half-way, so Spark starts a copy of
    # it on the other worker; one attempt's output is committed, the other is interrupted.
    uri4 = f"s3://{bucket}/speculative"
    r = lps.write(
        events(spark, 0, n, 4, slow_ms=4000, only_first=True),
        uri4,
        spec=SPEC,
        clustered=False,
        max_buffer_bytes=1 << 16,
        storage_options=options,
    )
    out["speculative"] = {"written": r.rows, **check(uri4, options, 0, n)}

    # 7. A merge keyed by id (which does not determine the partition: shuffled by key), with
    # an executor SIGKILLed while its map tasks run: every key changed once, no row twice.
    killed = []
    killer = threading.Thread(target=kill_an_executor_after, args=(spark, 2.0, killed))
    killer.start()
    changes = events(spark, 0, n + 1000, 8, slow_ms=1500).filter(
        (F.col("id") % 4 == 0) | (F.col("id") >= n)
    )
    changes = changes.withColumn("payload", F.concat(F.lit("merged-"), F.col("id").cast("string")))
    m = (
        lps.merge_insert(uri4, "id", storage_options=options)
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute(changes)
    )
    killer.join()
    merged = lp.PartitionedNamespace.open(uri4, storage_options=options).to_table()
    out["merge"] = {
        "pids": killed,
        "inserted": m.inserted,
        "updated": m.updated,
        **check(uri4, options, 0, n + 1000),
        "merged": pc.sum(pc.starts_with(merged["payload"], "merged-")).as_py(),
        "right": pc.sum(
            pc.equal(
                merged["payload"],
                pc.binary_join_element_wise("merged-", pc.cast(merged["id"], "string"), ""),
            )
        ).as_py(),
    }

    # 8. A stream from the rate source into the bucket, an executor SIGKILLed mid-stream.
    out["stream"] = stream_with_an_executor_killed(spark, options, f"s3://{bucket}/stream")

    print("RESULT " + json.dumps(out), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
