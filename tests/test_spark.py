"""PySpark: distributed ingest (clustered, one-pass, the Data Source API) and pruned,
snapshot-consistent reads, with task retries and failed jobs."""

from __future__ import annotations

import datetime as dt
import os
import signal
import sys
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark import TaskContext, cloudpickle
from pyspark.sql import functions as F

import lance_partitioned as lp
import lance_partitioned.spark as lps

pytestmark = pytest.mark.spark

# Hooks below run inside Spark tasks: ship this module by value (workers cannot import tests).
cloudpickle.register_pickle_by_value(sys.modules[__name__])

SPEC = lp.PartitionSpec(
    [
        lp.PartitionField("year", source="event_ts", transform=lp.Year()),
        lp.PartitionField("country", source="country", transform=lp.Identity()),
    ]
)


def events(spark: Any, n: int, start: int = 0) -> Any:
    """n synthetic events: ids start..start+n, 4 countries (and NULL), 3 years."""
    return spark.range(start, start + n).select(
        F.col("id"),
        F.when(F.col("id") % 5 == 4, F.lit(None))
        .otherwise(
            F.element_at(
                F.array(*[F.lit(c) for c in ["US", "FR", "DE", "JP"]]),
                (F.col("id") % 4 + 1).cast("int"),
            )
        )
        .alias("country"),
        (
            F.lit(dt.datetime(2023, 6, 1, tzinfo=dt.timezone.utc))
            + F.make_interval(days=(F.col("id") % 3 * 366).cast("int"))
        ).alias("event_ts"),
        (F.col("id") % 1000 / 100).cast("decimal(10,2)").alias("amount"),
        F.concat(F.lit("payload-"), F.col("id").cast("string")).alias("payload"),
    )


def ids_of(ns: lp.PartitionedNamespace) -> list[int]:
    return sorted(ns.to_table(columns=["id"])["id"].to_pylist())


def test_clustered_write_lands_every_row_in_its_partition(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "ns")
    res = lps.write(events(spark, 5000), uri, spec=SPEC, num_tasks=3)
    assert res.rows == 5000
    ns = lp.PartitionedNamespace.open(uri)
    assert ids_of(ns) == list(range(5000))
    parts = ns.partitions()
    assert parts.num_rows == 3 * 5 == res.partitions  # 3 years x (4 countries + NULL)
    # Clustered: every partition written by exactly one task, in one file.
    assert res.files == res.partitions
    t = ns.to_table(columns=["id", "country", "event_ts", "amount"])
    for r in t.to_pylist()[:500]:
        i = r["id"]
        assert r["country"] == (None if i % 5 == 4 else ["US", "FR", "DE", "JP"][i % 4])
        assert r["event_ts"].year == 2023 + (i % 3)
        assert r["amount"] == Decimal(i % 1000) / 100
    # Partition values match the rows in them.
    for leaf in parts.to_pylist():
        snap_rows = ns.to_table(
            filter=f"country = '{leaf['country']}'" if leaf["country"] else "country IS NULL",
            columns=["event_ts"],
        )
        assert leaf["year"] in {ts.year for ts in snap_rows["event_ts"].to_pylist()}
    assert ns.schema.field("event_ts").type == pa.timestamp("us", tz="UTC")


def test_one_pass_and_data_source_writes(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "ns")
    df = events(spark, 2000)
    lps.write(df, uri, spec=SPEC, clustered=False)
    df2 = events(spark, 1000, start=10_000)
    df2.write.format(lps.FORMAT).mode("append").save(uri)
    ns = lp.PartitionedNamespace.open(uri)
    assert ids_of(ns) == [*range(2000), *range(10_000, 11_000)]
    # Data Source overwrite = dynamic partition overwrite: only US rows are replaced.
    us = events(spark, 400, start=20_000).filter("country = 'US'")
    us.write.format(lps.FORMAT).mode("overwrite").save(uri)
    ns.refresh()
    got = ns.to_table(filter="country = 'US'", columns=["id"])["id"].to_pylist()
    assert sorted(got) == sorted(r["id"] for r in us.collect())
    assert ns.to_table(filter="country = 'FR'", columns=["id"]).num_rows == 600
    # A new namespace through the Data Source API, created from the DataFrame's schema.
    uri2 = str(tmp_path / "ns2")
    df.write.format(lps.FORMAT).option("spec", lps.spec_option(SPEC, df)).mode("append").save(uri2)
    assert ids_of(lp.PartitionedNamespace.open(uri2)) == list(range(2000))
    # A tiny per-task buffer budget: partitions written early, nothing lost.
    uri3 = str(tmp_path / "ns3")
    df.write.format(lps.FORMAT).option("spec", lps.spec_option(SPEC, df)).option(
        "max_buffer_bytes", "4096"
    ).mode("append").save(uri3)
    ns3 = lp.PartitionedNamespace.open(uri3)
    assert ids_of(ns3) == list(range(2000))

    def per_partition(n: lp.PartitionedNamespace) -> Counter[tuple[object, ...]]:
        p = n.partitions()
        cols = (p[c].to_pylist() for c in ("year", "country", "rows"))
        return Counter(zip(*cols, strict=True))

    assert per_partition(ns3) == per_partition(lp.PartitionedNamespace.open(uri2))
    with pytest.raises(Exception, match="max_buffer_bytes"):
        df.write.format(lps.FORMAT).option("max_buffer_bytes", "lots").mode("append").save(uri3)
    # Bad options are refused before a namespace is created.
    uri4 = tmp_path / "ns4"
    with pytest.raises(Exception, match="transaction_mode"):
        df.write.format(lps.FORMAT).option("spec", lps.spec_option(SPEC, df)).option(
            "transaction_mode", "eventual"
        ).mode("append").save(str(uri4))
    assert not uri4.exists()


def _fail_first_attempt(msg: bytes | None) -> None:
    ctx = TaskContext.get()
    if ctx is not None and ctx.partitionId() == 0 and ctx.attemptNumber() == 0:
        raise RuntimeError("injected failure after the fragments were written")


def _kill_first_attempt(msg: bytes | None) -> None:
    ctx = TaskContext.get()
    if ctx is not None and ctx.partitionId() == 1 and ctx.attemptNumber() == 0:
        os.kill(os.getpid(), signal.SIGKILL)  # the Python worker dies mid-task


def _fail_partition_1(msg: bytes | None) -> None:
    ctx = TaskContext.get()
    if ctx is not None and ctx.partitionId() == 1:
        raise RuntimeError("injected job failure")


def _after_stage(monkeypatch: pytest.MonkeyPatch, hook: Any) -> None:
    """Makes the write pass of lps.write run `hook(message)` after each task staged its rows
    (a subclass of its task body defined here, so Spark ships it to the workers by value;
    the package itself has no test hook)."""

    class Hooked(lps._Stage):
        def __call__(self, batches: Any) -> Any:
            out = list(super().__call__(batches))
            hook(out[0]["message"][0].as_py() if out else None)
            yield from out

    monkeypatch.setattr(lps, "_Stage", Hooked)


def _write_with_a_failing_attempt(
    spark: Any, tmp_path: Path, n: int, hook: Any, monkeypatch: pytest.MonkeyPatch
) -> lp.PartitionedNamespace:
    """Writes 100 rows, then n more whose write pass runs `hook` after staging; checks that
    every row is there exactly once and that the failed attempt left cleanable files."""
    uri = str(tmp_path / "ns")
    lps.write(events(spark, 100), uri, spec=SPEC)
    _after_stage(monkeypatch, hook)
    res = lps.write(events(spark, n, start=1000), uri, num_tasks=2)
    monkeypatch.undo()
    assert res.rows == n
    ns = lp.PartitionedNamespace.open(uri)
    assert ids_of(ns) == [*range(100), *range(1000, 1000 + n)]
    # The failed attempt had written its fragments: never committed, and cleanable.
    left = ns.cleanup(older_than=dt.timedelta(0), dry_run=True)
    assert left.stale_files or left.orphans
    return ns


def test_task_retry_never_duplicates_rows(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = _write_with_a_failing_attempt(spark, tmp_path, 3000, _fail_first_attempt, monkeypatch)
    ns.cleanup(older_than=dt.timedelta(0), retention_check=False)
    assert ids_of(ns) == [*range(100), *range(1000, 4000)]


def test_killed_task_is_retried_without_duplicates(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_with_a_failing_attempt(spark, tmp_path, 2000, _kill_first_attempt, monkeypatch)


def test_failed_job_leaves_namespace_unchanged(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = str(tmp_path / "ns")
    lps.write(events(spark, 100), uri, spec=SPEC)
    ns = lp.PartitionedNamespace.open(uri)
    before = ns.version
    _after_stage(monkeypatch, _fail_partition_1)
    with pytest.raises(Exception, match="injected job failure"):
        lps.write(events(spark, 3000, start=1000), uri, num_tasks=2)
    monkeypatch.undo()  # later writes run without the failing hook
    assert ns.refresh() is False
    assert ns.version == before
    assert ids_of(ns) == list(range(100))
    done = ns.cleanup(older_than=dt.timedelta(0), retention_check=False)
    assert done.files > 0
    lps.write(events(spark, 10, start=500), uri)
    ns.refresh()
    assert ids_of(ns) == [*range(100), *range(500, 510)]


# hour() alone (the hour of the day) on purpose: the hour is what the session zone could move.
@pytest.mark.filterwarnings("ignore::lance_partitioned.PartitionGranularityWarning")
def test_partition_never_depends_on_session_time_zone(spark: Any, tmp_path: Path) -> None:
    spec = lp.PartitionSpec([lp.PartitionField("h", source="event_ts", transform=lp.Hour())])
    results = []
    for tz in ["UTC", "America/Los_Angeles"]:
        spark.conf.set("spark.sql.session.timeZone", tz)
        try:
            # 2023-11-14 22:13:20 UTC onwards, every 10 minutes: hours 22, 23, 0, 1 in UTC.
            df = spark.range(0, 20).select(
                F.col("id"),
                F.timestamp_seconds(F.lit(1_700_000_000) + F.col("id") * 600).alias("event_ts"),
            )
            uri = str(tmp_path / tz.replace("/", "_"))
            res = lps.write(df, uri, spec=spec, num_tasks=3)
            # The key Spark computes (hour of day in UTC) keeps each partition in one task.
            assert res.files == res.partitions
        finally:
            spark.conf.set("spark.sql.session.timeZone", "UTC")
        ns = lp.PartitionedNamespace.open(uri)
        t = ns.partitions().select(["h", "rows"]).sort_by("h")
        results.append(t.to_pylist())
    assert results[0] == results[1]
    assert [r["h"] for r in results[0]] == [0, 1, 22, 23]
    assert [r["rows"] for r in results[0]] == [6, 3, 5, 6]


def test_read_prunes_through_the_manifest_and_matches_spark(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "ns")
    lps.write(events(spark, 3000), uri, spec=SPEC)
    ns = lp.PartitionedNamespace.open(uri)
    total_leaves = ns.partitions().num_rows
    us_leaves = ns.partitions("country = 'US'").num_rows
    assert 0 < us_leaves < total_leaves
    # The data source: DataFrame filters are pushed down and prune (one Spark partition per
    # leaf read).
    assert spark.read.format(lps.FORMAT).load(uri).rdd.getNumPartitions() == total_leaves
    pruned = spark.read.format(lps.FORMAT).load(uri).filter(F.col("country") == "US")
    assert pruned.rdd.getNumPartitions() == us_leaves
    everything = lps.read(spark, uri)
    want = sorted(r["id"] for r in everything.collect() if r["country"] == "US")
    assert sorted(r["id"] for r in pruned.select("id").collect()) == want
    # lps.read: the filter argument prunes; small leaves are packed into few tasks.
    us = lps.read(spark, uri, "country = 'US'", columns=["id"])
    assert us.columns == ["id"]
    assert us.rdd.getNumPartitions() <= us_leaves
    assert sorted(r["id"] for r in us.collect()) == want
    # A filter helper with SQL, and IN / comparison pushdown.
    got = lps.read(spark, uri, "country IN ('FR', 'DE') AND id < 100").select("id").collect()
    assert sorted(r["id"] for r in got) == [i for i in range(100) if i % 5 != 4 and i % 4 in (1, 2)]
    # Snapshot reads: as_of the version before an append sees none of it.
    v = ns.version
    lps.write(events(spark, 50, start=9000), uri)
    assert lps.read(spark, uri, as_of=v).count() == 3000
    assert lps.read(spark, uri).count() == 3050
    # Types round-trip into Spark.
    row = lps.read(spark, uri, "id = 7").collect()[0]
    assert row["amount"] == Decimal("0.07")
    assert row["payload"] == "payload-7"


def test_native_key_clusters_without_a_python_pass(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "ns")
    spec = lp.PartitionSpec(
        [
            lp.PartitionField("country", source="country", transform=lp.Identity()),
            lp.PartitionField("b", source=["payload"], transform=lp.Bucket(4)),
        ]
    )
    res = lps.write(events(spark, 4000), uri, spec=spec, key="native", num_tasks=3)
    assert res.files == res.partitions == 5 * 4  # each partition still written by one task
    assert ids_of(lp.PartitionedNamespace.open(uri)) == list(range(4000))
    # The exact key of a bucket-only spec goes through the Rust Arrow UDF.
    only_bucket = lp.PartitionSpec(
        [lp.PartitionField("b", source=["payload"], transform=lp.Bucket(7))]
    )
    res = lps.write(events(spark, 3000), str(tmp_path / "b"), spec=only_bucket, num_tasks=3)
    assert res.files == res.partitions == 7
    assert ids_of(lp.PartitionedNamespace.open(str(tmp_path / "b"))) == list(range(3000))
    with pytest.raises(lp.InvalidArgumentError, match="num_tasks"):
        lps.write(events(spark, 10), uri, clustered=False, num_tasks=2)
    with pytest.raises(lp.InvalidArgumentError, match="key"):
        lps.write(events(spark, 10), uri, key="random")  # type: ignore[arg-type]


def test_large_string_batches_land_like_plain_ones(spark: Any, tmp_path: Path) -> None:
    spark.conf.set("spark.sql.execution.arrow.useLargeVarTypes", "true")
    try:
        lps.write(events(spark, 1000), str(tmp_path / "large"), spec=SPEC)
    finally:
        spark.conf.unset("spark.sql.execution.arrow.useLargeVarTypes")
    lps.write(events(spark, 1000), str(tmp_path / "plain"), spec=SPEC)
    large = lp.PartitionedNamespace.open(str(tmp_path / "large"))
    plain = lp.PartitionedNamespace.open(str(tmp_path / "plain"))
    assert large.schema.field("country").type == pa.string()
    keys = ["year", "country", "rows"]
    assert large.partitions().select(keys).sort_by(
        [("year", "ascending"), ("country", "ascending")]
    ) == plain.partitions().select(keys).sort_by([("year", "ascending"), ("country", "ascending")])


def test_spark_reads_a_namespace_created_from_string_view(spark: Any, tmp_path: Path) -> None:
    """A namespace created from a polars-style schema (string_view, a dictionary) stores the
    plain types, so both Spark reads work (they failed on string_view) and a Spark append is
    an append (it used to rewrite every partition it touched)."""
    schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("country", pa.string_view()),
            pa.field("tag", pa.dictionary(pa.int32(), pa.string())),
        ]
    )
    spec = lp.PartitionSpec(
        [lp.PartitionField("country", source="country", transform=lp.Identity())]
    )
    uri = str(tmp_path / "ns")
    ns = lp.PartitionedNamespace.create(uri, schema, spec)
    ids = list(range(400))
    ns.write(
        pa.table(
            {
                "id": ids,
                "country": pa.array([["US", "FR"][i % 2] for i in ids], pa.string_view()),
                "tag": pa.array([f"t{i % 3}" for i in ids]).dictionary_encode(),
            },
            schema=schema,
        )
    )
    got = sorted(r["id"] for r in lps.read(spark, uri, "country = 'US'").collect())
    assert got == [i for i in ids if i % 2 == 0]
    df = spark.read.format(lps.FORMAT).load(uri)
    assert df.count() == 400
    assert sorted(r["tag"] for r in df.select("tag").distinct().collect()) == ["t0", "t1", "t2"]
    more = spark.createDataFrame(
        [(1000 + i, ["US", "FR"][i % 2], "t9") for i in range(10)],
        "id long, country string, tag string",
    )
    more.write.format(lps.FORMAT).mode("append").save(uri)
    ns.refresh()
    assert ns.to_table().num_rows == 410
    last = ns.history(limit=1).to_pylist()[0]
    assert last["operation"] == "append", last


def test_max_new_partitions_per_task_in_both_writers(spark: Any, tmp_path: Path) -> None:
    """15 partitions (3 years x 5 countries) through one task: a limit of 10 fails before
    anything is committed, in lps.write and in the Data Source writer; `none` lifts it."""
    df = events(spark, 300).coalesce(1)
    uri = str(tmp_path / "ns")
    # lps.write gives the task's error back its type on the driver.
    with pytest.raises(lp.LancePartitionedError, match="more than 10 new partitions"):
        lps.write(df, uri, spec=SPEC, clustered=False, max_new_partitions=10)
    ns = lp.PartitionedNamespace.open(uri)  # created (empty) before the tasks ran
    assert ns.partitions().num_rows == 0
    with pytest.raises(Exception, match="more than 10 new partitions"):
        df.write.format(lps.FORMAT).option("max_new_partitions", "10").mode("append").save(uri)
    with pytest.raises(Exception, match="max_new_partitions"):
        df.write.format(lps.FORMAT).option("max_new_partitions", "0").mode("append").save(uri)
    assert ns.refresh() is False
    df.write.format(lps.FORMAT).option("max_new_partitions", "none").mode("append").save(uri)
    assert ids_of(ns) == list(range(300))
    res = lps.write(
        events(spark, 300, start=300).coalesce(1), uri, clustered=False, max_new_partitions=None
    )
    assert res.created == 0
    assert ids_of(ns) == list(range(600))


def _stage_tasks(spark: Any, group: str) -> list[int]:
    """The task counts of every stage of the jobs run under ``group``."""
    tracker = spark.sparkContext.statusTracker()
    counts = []
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        for stage in info.stageIds if info else []:
            s = tracker.getStageInfo(stage)
            if s is not None:
                counts.append(s.numTasks)
    return counts


def test_schema_mistakes_fail_on_the_driver_before_any_task(spark: Any, tmp_path: Path) -> None:
    root = str(tmp_path / "ns")
    lps.write(events(spark, 50), root, spec=SPEC)
    version = lp.PartitionedNamespace.open(root).version
    sc = spark.sparkContext
    extra = events(spark, 10).withColumn("note", F.lit("x"))
    text = events(spark, 10).withColumn("amount", F.col("amount").cast("string"))
    for group, df, needle in (
        ("extra-column", extra, 'column "note" is not in the namespace schema'),
        ("text-for-decimal", text, 'column "amount" is text in the input'),
    ):
        sc.setJobGroup(group, group)
        try:
            with pytest.raises(lp.SchemaMismatchError, match=needle):
                lps.write(df, root)
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)
        assert _stage_tasks(spark, group) == [], f"{group}: a Spark job ran"
    assert lp.PartitionedNamespace.open(root).version == version


def test_the_shuffle_is_sized_from_the_data_unless_num_tasks_is_given(
    spark: Any, tmp_path: Path
) -> None:
    sc = spark.sparkContext
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "200")
    try:
        for group, num_tasks in (("sized", None), ("explicit", 8)):
            sc.setJobGroup(group, group)
            try:
                lps.write(
                    events(spark, 1000), str(tmp_path / group), spec=SPEC, num_tasks=num_tasks
                )
            finally:
                sc.setLocalProperty("spark.jobGroup.id", None)
            assert ids_of(lp.PartitionedNamespace.open(str(tmp_path / group))) == list(range(1000))
        # 1,000 rows: adaptive execution reads the shuffle in a task or two, not 200.
        assert max(_stage_tasks(spark, "sized")) <= 4, _stage_tasks(spark, "sized")
        assert 8 in _stage_tasks(spark, "explicit"), _stage_tasks(spark, "explicit")
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
