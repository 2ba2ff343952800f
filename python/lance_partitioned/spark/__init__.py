"""PySpark integration: distributed ingest and pruned, snapshot-consistent reads.

Requires PySpark >= 4.1 (Java 17+). The workers must be able to import ``lance_partitioned``
(install it on the cluster, or run with ``PYSPARK_PYTHON`` pointing at this environment).

Write pipeline (:func:`write`):

1. each row's partition key is computed in Spark: identity, date and truncate fields with
   Spark's own functions, bucket fields with this package's JVM murmur3 functions, and what
   neither can compute (custom expressions) with the Rust kernel in an Arrow UDF
   (``clustered`` mode; see ``lance_partitioned.spark.key``);
2. ``repartition`` by that key, so each partition's rows meet in one task (few files);
3. ``mapInArrow`` routes each task's rows and writes uncommitted Lance fragments in Rust; it
   returns one small message per task;
4. the driver commits everything once (strong mode: one atomic manifest commit).

Only the results of the final successful task attempts reach the driver, so retries,
speculative attempts and lost executors never duplicate or lose rows; a failed job commits
nothing. Files of attempts that were never committed are removed by
:meth:`PartitionedNamespace.cleanup`.

``clustered=False`` (one-pass) skips steps 1-2: each task writes the partitions it sees. Use it
when the input is already clustered by the partition columns (e.g. read from a source
partitioned the same way, or sorted by them); on unclustered input every task writes a file
into every partition it sees (up to partitions x tasks files).

Row-level changes (:func:`merge_insert`, :func:`apply_changes`) run the same way: tasks
decide and stage their keys' share, the driver commits once (see
``lance_partitioned.spark.merge``).

Streaming (:func:`write_batch` in ``foreachBatch``, or
``df.writeStream.format("lance-partitioned")``) commits every micro-batch exactly once
(``lance_partitioned.spark.stream``).

``df.write.format("lance-partitioned").mode("append"|"overwrite").save(uri)`` (after
:func:`register`) is the one-pass writer through Spark's Python Data Source API: the Data
Source API hands each task the DataFrame's partitions as they are, so repartition first (or
use :func:`write`) for clustered output.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa

from lance_partitioned.distributed import DistributedWrite, TaskLimits, stage_task
from lance_partitioned.exceptions import InvalidArgumentError
from lance_partitioned.joins import JoinFilter, On
from lance_partitioned.lineage.run import Job, begin
from lance_partitioned.namespace import PartitionedNamespace, WriteResult
from lance_partitioned.options import (
    DEFAULT_MAX_NEW_PARTITIONS,
    MAX_ROWS_PER_FILE,
    SPARK_FORMAT,
    TASK_BUFFER_BYTES,
    StorageOptions,
    TransactionMode,
    WriteMode,
    columns_arg,
    storage_options_arg,
    write_args,
)
from lance_partitioned.spark.batches import (
    apply_changes_batch,
    stream_write_id,
    upsert_batch,
    write_batch,
)
from lance_partitioned.spark.key import cluster
from lance_partitioned.spark.merge import SparkMergeInsert, apply_changes, merge_insert
from lance_partitioned.spark.tasks import MAX_ROWS_PER_TASK
from lance_partitioned.spark.workers import check_workers, collect
from lance_partitioned.spec import PartitionSpec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("lance_partitioned.spark")

FORMAT = SPARK_FORMAT
"""The Spark data source name (``df.write.format(FORMAT)``)."""


def register(spark: SparkSession) -> None:
    """Registers the ``lance-partitioned`` data source with ``spark`` and turns on Python
    data source filter pushdown (``spark.sql.python.filterPushdown.enabled``), which the
    reader's partition pruning needs. Checks once per session that Spark's Python workers can
    import this package at the driver's version (one tiny task; a clear error otherwise)."""
    from lance_partitioned.spark.source import LancePartitionedDataSource

    check_workers(spark)
    spark.dataSource.register(LancePartitionedDataSource)
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")


class _Stage:
    """The ``mapInArrow`` body of the write pass (picklable)."""

    def __init__(self, dw: DistributedWrite, limits: TaskLimits) -> None:
        self.dw = dw
        self.limits = limits

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        msg, rows = stage_task(self.dw, batches, self.limits)
        if msg is not None:
            yield pa.record_batch(
                {"message": pa.array([msg], pa.binary()), "rows": pa.array([rows], pa.int64())}
            )


def write(
    df: DataFrame,
    uri: str,
    mode: WriteMode = "append",
    spec: PartitionSpec | None = None,
    *,
    clustered: bool = True,
    key: Literal["exact", "native"] = "exact",
    num_tasks: int | None = None,
    max_rows_per_file: int = MAX_ROWS_PER_FILE,
    max_buffer_bytes: int = TASK_BUFFER_BYTES,
    max_new_partitions: int | None = DEFAULT_MAX_NEW_PARTITIONS,
    transaction_mode: TransactionMode | None = None,
    properties: dict[str, str] | None = None,
    storage_options: StorageOptions | None = None,
    lineage_job: Job = None,
    write_id: str | None = None,
) -> WriteResult:
    """Writes ``df`` into the partitioned namespace at ``uri`` and returns what was
    committed. Creates the namespace from ``df.schema`` when it does not exist (``spec`` is
    then required; timestamps are stored in UTC).

    ``mode``: ``"append"``, ``"overwrite"`` (replace exactly the partitions the input
    touches) or ``"overwrite_all"``. ``clustered`` (default): shuffle by partition key into
    ``num_tasks`` tasks so each partition is written by one task (default: as many as Spark's
    adaptive execution makes of the data's size, at most ``spark.sql.shuffle.partitions``;
    without adaptive execution, that setting); ``clustered=False``: one pass, no shuffle (see
    the module docs).
    ``max_rows_per_file`` splits large partitions into several files within a task.
    ``max_buffer_bytes`` bounds a task's write buffers (the Python worker's memory, outside
    the JVM heap: size it to ``spark.executor.pyspark.memory`` / cores): a task whose rows
    exceed half of it writes its largest partitions early, so a partition may get more than
    one file per task. ``max_new_partitions`` is the most partitions one task may create
    (``None``: no limit); past it the write fails before anything is committed.

    ``key`` (clustered writes): ``"exact"`` shuffles by the exact partition key, computed in
    Spark when every partition field allows: identity, truncate of strings and integers,
    year/month/day/hour of a DATE or of a UTC TIMESTAMP (evaluated in UTC), and bucket /
    multi_bucket of integers, floats, strings, binary, dates and microsecond timestamps (JVM
    murmur3 functions shipped in this package's jar, bit-exact with the Rust kernels).
    Otherwise (custom expressions, other hashed types, the jar not loadable) a Rust Arrow UDF
    over the partition source columns computes it (one extra pass of those columns through
    Python). ``"native"`` shuffles by the fields Spark computes itself and ignores the others:
    a coarser key with no Python pass; each partition still meets in one task, but tasks only
    balance as well as those fields' values do (a spec with no such field falls back to
    ``"exact"``).

    Values are cast to the namespace schema before partitioning, so where a row lands never
    depends on Spark's session time zone or string types.

    ``storage_options`` configure the object store (see :data:`StorageOptions`); they travel
    to the tasks with the pickled write and never appear in logs.

    With lineage on, the write is one run emitted from the driver (START before the tasks,
    COMPLETE with the union of their partitions after the commit); ``lineage_job`` names it.

    ``write_id`` (strong mode) makes the write idempotent across jobs: a write whose id the
    namespace records runs no task and commits nothing (``WriteResult.already_committed``);
    :func:`write_batch` passes a stream's micro-batch id.
    """
    from lance_partitioned.spark.source import ensure_namespace

    write_args(mode, transaction_mode)  # before anything is created
    _check_shuffle(clustered, key, num_tasks)
    check_workers(df.sparkSession)
    limits = TaskLimits(max_rows_per_file, max_buffer_bytes, max_new_partitions)
    t0 = time.perf_counter()
    ns = ensure_namespace(uri, df.schema, spec, properties, storage_options_arg(storage_options))
    dw = ns.distributed_write(mode, transaction_mode=transaction_mode, lineage_job=lineage_job)
    if write_id is not None and (done := dw.committed(write_id)) is not None:
        return done
    log.info("lance-partitioned: writing to %s (%s, clustered=%s)", ns.root, dw, clustered)
    out = cluster(df, ns, dw, key, num_tasks) if clustered else df
    t1 = time.perf_counter()
    rows = collect(out.mapInArrow(_Stage(dw, limits), "message binary, rows long"))
    t2 = time.perf_counter()
    log.info("lance-partitioned: staged %d rows in %d tasks in %.1f s", *_staged(rows), t2 - t1)
    result = dw.commit([r["message"] for r in rows], write_id=write_id)
    _log_commit(result, t3=time.perf_counter(), t2=t2, t0=t0)
    return result


def _staged(rows: list[Any]) -> tuple[int, int]:
    """(rows staged, tasks) of a write's task results."""
    return sum(r["rows"] for r in rows), len(rows)


def _check_shuffle(clustered: bool, key: str, num_tasks: int | None) -> None:
    if num_tasks is not None and num_tasks < 1:
        raise InvalidArgumentError("num_tasks must be positive")
    if num_tasks is not None and not clustered:
        raise InvalidArgumentError(
            "num_tasks applies to clustered writes (one-pass never shuffles)"
        )
    if key not in ("exact", "native"):
        raise InvalidArgumentError(f"key must be 'exact' or 'native', not {key!r}")


def _log_commit(result: WriteResult, *, t3: float, t2: float, t0: float) -> None:
    log.info(
        "lance-partitioned: committed manifest version %d in %.1f s: %d rows, %d partitions "
        "(%d new), %d files, %.1f MB; total %.1f s",
        result.manifest_version,
        t3 - t2,
        result.rows,
        result.partitions,
        result.created,
        result.files,
        result.bytes / 1e6,
        t3 - t0,
    )


def read(
    spark: SparkSession,
    uri: str,
    filter: str | None = None,
    *,
    columns: Sequence[str] | None = None,
    as_of: int | str | None = None,
    storage_options: StorageOptions | None = None,
    lineage_job: Job = None,
    max_rows_per_task: int = MAX_ROWS_PER_TASK,
) -> DataFrame:
    """Reads the namespace at ``uri`` as a DataFrame: every leaf at the read version of one
    manifest version (the latest, or ``as_of``).

    ``filter`` is SQL in the dialect of :meth:`PartitionedNamespace.scan` (DataFusion): it
    prunes leaves through the manifest on every transform and is pushed into Lance inside each
    leaf. ``columns`` selects columns: only those (and the filter's) are read from the leaf
    files. Filters added to the returned DataFrame are applied by Spark after the read (use
    ``filter`` to prune, or the data source, ``spark.read.format("lance-partitioned")``,
    whose pushed filters prune).

    The read runs as ``mapInArrow`` over task descriptors: small leaves are packed into one
    task up to about ``min(max_rows_per_task, rows / cores)`` rows, big leaves are split by
    fragment into several tasks (Spark packs and splits Parquet files the same way). The
    driver opens each kept leaf once to learn its rows and fragments (metadata only).

    ``storage_options`` configure the object store (see :data:`StorageOptions`).

    With lineage on, the read is one run emitted from the driver (START and COMPLETE),
    listing the partitions ``filter`` keeps at the manifest version read; ``lineage_job``
    names it.
    """
    from lance_partitioned.spark.source import arrow_to_spark_schema
    from lance_partitioned.spark.tasks import (
        ReadTasks,
        plan_read_tasks,
        run_tasks,
        spark_arrow_schema,
    )

    check_workers(spark)
    opts = storage_options_arg(storage_options)
    snap = PartitionedNamespace.open(uri, storage_options=opts).snapshot(as_of)
    cols = columns_arg(columns)
    schema = snap.schema
    if cols is not None:
        missing = [c for c in cols if c not in schema.names]
        if missing:
            raise InvalidArgumentError(
                f"columns {missing} are not in the namespace schema ({', '.join(schema.names)})"
            )
        schema = pa.schema([schema.field(c) for c in cols])
    if max_rows_per_task < 1:
        raise InvalidArgumentError(f"max_rows_per_task must be positive, not {max_rows_per_task}")
    sizes = snap._s.leaf_sizes(filter)
    tasks = plan_read_tasks(sizes, spark.sparkContext.defaultParallelism, max_rows_per_task)
    log.info(
        "lance-partitioned: reading %d leaves at manifest version %d in %d tasks (filter: %s)",
        len(sizes),
        snap.version,
        len(tasks),
        filter,
    )
    spark_schema = arrow_to_spark_schema(schema)
    fn = ReadTasks(
        snap.root,
        snap.version,
        opts,
        filter,
        schema.names,
        tasks,
        spark_arrow_schema(spark_schema),
    )
    df = run_tasks(spark, len(tasks), fn, spark_schema)
    run = begin("spark_read", lineage_job)
    if run is not None:
        run.complete(inputs=lambda: [_lineage_input(snap, filter, run.settings)])
    return df


def join(
    spark: SparkSession,
    left_uri: str,
    right_uri: str,
    on: On,
    how: str = "inner",
    *,
    columns: Sequence[str] | None = None,
    filter: JoinFilter = None,
    as_of: tuple[int | None, int | None] = (None, None),
    storage_options: StorageOptions | None = None,
    right_storage_options: StorageOptions | None = None,
    right_suffix: str = "_right",
    allow_shuffle: bool = False,
) -> DataFrame:
    """The storage-partitioned join of the namespaces at ``left_uri`` and ``right_uri`` as a
    DataFrame: one Spark task per group of :func:`lance_partitioned.join_plan` (a
    ``spark.range`` of group numbers, one Spark partition each, and ``mapInArrow`` that reads
    both sides' leaves of its group and joins them in Rust). No row is shuffled: the physical
    plan has no Exchange.

    ``on``, ``how``, ``columns``, ``filter``, ``right_suffix`` and ``allow_shuffle`` are those
    of :func:`lance_partitioned.join` (same output columns, pyarrow's ``Table.join``
    naming). ``as_of`` pins (left, right) manifest versions; ``storage_options`` reach both
    sides unless ``right_storage_options`` is given. An incompatible plan raises
    ``IncompatibleJoinError``; with ``allow_shuffle=True`` Spark joins the two sides (read
    by :func:`read` with the same filters and columns) with its own shuffle, and the output
    has the same columns.
    """
    from lance_partitioned.joins import join_args, prepare
    from lance_partitioned.spark.source import arrow_to_spark_schema
    from lance_partitioned.spark.tasks import JoinTasks, run_tasks, spark_arrow_schema

    check_workers(spark)
    lopts = storage_options_arg(storage_options)
    ropts = storage_options_arg(right_storage_options) if right_storage_options else lopts
    lsnap = PartitionedNamespace.open(left_uri, storage_options=lopts).snapshot(as_of[0])
    rsnap = PartitionedNamespace.open(right_uri, storage_options=ropts).snapshot(as_of[1])
    args = join_args(
        on,
        how,
        columns=columns,
        filter=filter,
        allow_shuffle=allow_shuffle,
        right_suffix=right_suffix,
    )
    prepared = prepare(lsnap, rsnap, args)
    if not prepared.compatible:
        log.info("lance-partitioned: the partitions do not align; Spark joins with a shuffle")
        return _shuffle_join(spark, prepared, args, (lsnap, lopts), (rsnap, ropts))
    groups = prepared.groups()
    spark_schema = arrow_to_spark_schema(prepared.schema)
    fn = JoinTasks(
        ((lsnap.root, lsnap.version, lopts), (rsnap.root, rsnap.version, ropts)),
        args,
        groups,
        spark_arrow_schema(spark_schema),
    )
    log.info("lance-partitioned: joining %d groups, one Spark task each", len(groups))
    return run_tasks(spark, len(groups), fn, spark_schema)


_SPARK_HOW = {
    "inner": "inner",
    "left": "left",
    "right": "right",
    "full": "full",
    "semi": "left_semi",
    "anti": "left_anti",
}
"""Our join kinds (``lance_partitioned.joins.HOW``) as Spark's."""


def _shuffle_join(
    spark: SparkSession,
    prepared: Any,
    args: Mapping[str, Any],
    left: tuple[Any, dict[str, str] | None],
    right: tuple[Any, dict[str, str] | None],
) -> DataFrame:
    """Spark's own join of both sides, read with the join's filters and columns, selected as
    the partition-wise join would name its output."""
    from pyspark.sql import functions as F

    lf, rf = prepared.side_filters()
    lcols, rcols = prepared.read_columns()
    (lsnap, lopts), (rsnap, ropts) = left, right
    ldf = read(spark, lsnap.root, lf, columns=lcols, as_of=lsnap.version, storage_options=lopts)
    rdf = read(spark, rsnap.root, rf, columns=rcols, as_of=rsnap.version, storage_options=ropts)
    cond = [ldf[lk] == rdf[rk] for lk, rk in args["on"]]
    joined = ldf.join(rdf, cond, _SPARK_HOW[args["how"]])
    out = []
    for name, lc, rc in prepared.output_columns():
        if lc is not None and rc is not None:
            col = F.coalesce(ldf[lc], rdf[rc])
        else:
            col = ldf[lc] if lc is not None else rdf[rc]
        out.append(col.alias(name))
    return joined.select(*out)


def _lineage_input(snap: Any, filter: str | None, settings: Any) -> dict[str, Any]:
    from lance_partitioned.lineage.datasets import read as lineage_read

    return lineage_read(snap, filter, settings)


def spec_option(spec: PartitionSpec, df: DataFrame) -> str:
    """The ``spec`` option that lets ``df.write.format("lance-partitioned")`` create the
    namespace from ``df``'s schema."""
    from lance_partitioned.spark.source import spec_option as _spec_option

    return _spec_option(spec, df.schema)


__all__ = [
    "FORMAT",
    "SparkMergeInsert",
    "apply_changes",
    "apply_changes_batch",
    "join",
    "merge_insert",
    "read",
    "register",
    "spec_option",
    "stream_write_id",
    "upsert_batch",
    "write",
    "write_batch",
]
