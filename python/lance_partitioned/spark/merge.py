"""Row-level changes from Spark: :func:`merge_insert` (upsert by key) and
:func:`apply_changes` (a change feed, CDC), decided in Spark tasks and committed once.

Pipeline:

1. the driver plans the merge (:class:`lance_partitioned._native.DistributedMerge`: the
   manifest version every task reads, the commit mode, a nonce);
2. the DataFrame is shuffled so that all rows of one key meet in one task: by the exact
   partition key when the key determines the partition (``bucket(order_id)`` keyed by
   ``order_id``: each partition is then read and written by one task), by the key columns
   otherwise;
3. ``mapInArrow`` runs the merge on each task's rows in Rust: it reads the partitions that
   can hold the task's keys at the planned version, decides every row as the clauses say,
   writes the new rows as uncommitted fragments and the deletions as row addresses, and
   returns one small message;
4. the driver commits all messages at once: one Lance commit per changed partition, one
   manifest commit. When a partition a task read changed since the plan (a concurrent
   writer), nothing is visible (strong mode) and the merge runs again from step 1, up to
   ``max_attempts`` times.

Only the final successful task attempts' messages reach the driver, so retried, speculative
or lost tasks never apply a change twice; their files are left for ``cleanup()``.

A not-matched-by-source clause needs the whole source to know that a target row matched
nothing: the tasks report the target rows they matched, and the driver, at commit, reads
the partitions the clause can reach (pruned by its condition, key and condition columns
only) and deletes the rows no task matched.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lance_partitioned import _native
from lance_partitioned.exceptions import CommitConflictError, InvalidArgumentError
from lance_partitioned.lineage.run import Job, operation
from lance_partitioned.merge import (
    DEFAULT_MAX_ATTEMPTS,
    MergeClauses,
    MergeResult,
    _report,
    change_args,
    change_feed,
    write_id_arg,
)
from lance_partitioned.namespace import PartitionedNamespace
from lance_partitioned.options import (
    STAGE_CONCURRENCY,
    TASK_BUFFER_BYTES,
    StorageOptions,
    TransactionMode,
    storage_options_arg,
)
from lance_partitioned.spark.key import cluster
from lance_partitioned.spark.workers import check_workers, collect
from lance_partitioned.spec import source_fields

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger("lance_partitioned.spark")


class _StageMerge:
    """The ``mapInArrow`` body of a distributed merge (picklable)."""

    def __init__(self, dm: _native.DistributedMerge, clauses: MergeClauses, extra: Any) -> None:
        self.dm = dm
        keep_last_by, self.max_buffer_bytes = extra
        self.clauses = clauses._args(keep_last_by)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        held = [b for b in batches if b.num_rows]
        if not held:
            return
        msg = self.dm.stage(
            pa.Table.from_batches(held),
            self.clauses,
            concurrency=STAGE_CONCURRENCY,
            max_buffer_bytes=self.max_buffer_bytes,
        )
        rows = sum(b.num_rows for b in held)
        yield pa.record_batch(
            {"message": pa.array([msg], pa.binary()), "rows": pa.array([rows], pa.int64())}
        )


class SparkMergeInsert(MergeClauses):
    """The clauses of one merge into the namespace at ``uri``, run in Spark tasks by
    :meth:`execute` (see the module docs)."""

    def __init__(
        self, uri: str, on: str | Sequence[str], storage_options: StorageOptions | None = None
    ) -> None:
        super().__init__(on)
        self._uri = uri
        self._options = storage_options_arg(storage_options)

    def execute(
        self,
        df: DataFrame,
        *,
        num_tasks: int | None = None,
        transaction_mode: TransactionMode | None = None,
        concurrency: int | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        max_buffer_bytes: int = TASK_BUFFER_BYTES,
        lineage_job: Job = None,
        write_id: str | None = None,
        _keep_last_by: str | None = None,
    ) -> MergeResult:
        """Merges ``df`` and returns what the merge did (as
        :meth:`MergeInsertBuilder.execute`; ``attempts`` counts the Spark jobs run).
        Under ``write_id`` (strong mode) the merge happens once: when the manifest records
        the id already, no task runs and nothing is committed (``already_committed``).

        ``num_tasks``: tasks of the shuffle (default: as Spark's adaptive execution sizes
        it). ``concurrency``: leaf commits at once on the driver. ``max_buffer_bytes``: what a
        task's writer may buffer. Each task holds its share of ``df`` in memory while it
        runs. Two rows of ``df`` with one key raise ``DuplicateKeyError`` (from the task).
        """
        if num_tasks is not None and (isinstance(num_tasks, bool) or num_tasks < 1):
            raise InvalidArgumentError(f"num_tasks must be positive, not {num_tasks!r}")
        ns = PartitionedNamespace.open(self._uri, storage_options=self._options)
        strong, concurrency = change_args(
            ns.root, transaction_mode, concurrency, max_attempts, max_buffer_bytes
        )
        _check_keys(df, self._on)
        check_workers(df.sparkSession)
        extra = (_keep_last_by, max_buffer_bytes, write_id_arg(write_id))
        with operation("merge", lineage_job, outputs=ns._lineage_outputs) as scope:
            result = self._run(ns, df, (strong, num_tasks, concurrency, max_attempts), extra)
            _report(ns, scope, result)
        return result

    def _run(
        self,
        ns: PartitionedNamespace,
        df: DataFrame,
        limits: tuple[bool | None, int | None, int, int],
        extra: Any,
    ) -> MergeResult:
        strong, num_tasks, concurrency, max_attempts = limits
        write_id = extra[2]
        attempt = 0
        while True:
            attempt += 1
            dm = _native.DistributedMerge.plan(ns.root, strong, self._options)
            ns.refresh()
            if write_id is not None and ns._ns.snapshot().has_write(write_id):
                # A repeated merge (a replayed micro-batch): the commit of no messages
                # reports it, and checks the id's mode as any commit does.
                log.info("lance-partitioned: merge %r is already committed", write_id)
                return dm.commit(
                    [], self._args(), concurrency=concurrency, max_attempts=1, write_id=write_id
                )
            shuffled = _by_key(df, ns, dm, self._on, num_tasks)
            t0 = time.perf_counter()
            rows = collect(
                shuffled.mapInArrow(_StageMerge(dm, self, extra[:2]), "message binary, rows long")
            )
            log.info(
                "lance-partitioned: merge staged %d rows in %d tasks in %.1f s (attempt %d)",
                sum(r["rows"] for r in rows),
                len(rows),
                time.perf_counter() - t0,
                attempt,
            )
            try:
                return dm.commit(
                    [r["message"] for r in rows],
                    self._args(),
                    concurrency=concurrency,
                    max_attempts=max_attempts,
                    attempt=attempt,
                    write_id=write_id,
                )
            except CommitConflictError as e:
                # Nothing of this run is visible (a weak-mode failure after some partitions
                # committed is a PartialCommitError, never run again).
                if attempt >= max_attempts:
                    raise
                log.info("lance-partitioned: merge runs again (%s)", e)
                time.sleep(min(0.05 * 2**attempt, 2.0))


def _check_keys(df: DataFrame, on: list[str]) -> None:
    """Every key column is in ``df`` (checked on the driver, before any task runs)."""
    missing = []
    for k in on:
        try:
            df.select(df[k] if k in df.columns else k)
        except Exception:  # Spark's AnalysisException, whichever module raises it
            missing.append(k)
    if missing:
        raise InvalidArgumentError(
            f"key column(s) {missing} are not in the DataFrame ({', '.join(df.columns)})"
        )


def _key_determines_partition(ns: PartitionedNamespace, on: list[str]) -> bool:
    """Whether every field of the current spec is computed from key columns only (and there
    is at least one)."""
    fields = source_fields(ns.schema)
    key_ids = {fields[k][0] for k in on if k in fields}
    spec = ns.specs[max(ns.specs)]["fields"]
    return bool(spec) and all(sid in key_ids for f in spec for sid in f["source_ids"])


def _by_key(
    df: DataFrame,
    ns: PartitionedNamespace,
    dm: _native.DistributedMerge,
    on: list[str],
    num_tasks: int | None,
) -> DataFrame:
    """``df`` shuffled so that all rows of one key (as namespace values) meet in one task."""
    from pyspark.sql import functions as F

    from lance_partitioned.spark.source import arrow_to_spark_schema

    types = {f.name: f.dataType for f in arrow_to_spark_schema(ns.schema).fields}
    for k in on:
        if k in df.columns and k in types and df.schema[k].dataType != types[k]:
            df = df.withColumn(k, F.col(f"`{k}`").cast(types[k]))
    if _key_determines_partition(ns, on):
        log.info("lance-partitioned: the key determines the partition: merging by partition")
        return cluster(df, ns, dm, "exact", num_tasks)
    by = [F.col(f"`{k}`") if k in df.columns else F.col(k) for k in on]
    return df.repartition(num_tasks, *by) if num_tasks else df.repartition(*by)


def merge_insert(
    uri: str, on: str | Sequence[str], *, storage_options: StorageOptions | None = None
) -> SparkMergeInsert:
    """Starts a merge into the namespace at ``uri`` keyed by ``on``, run in Spark: add
    ``when_*`` clauses (those of :meth:`PartitionedNamespace.merge_insert`), then
    ``execute(df)``. See the module docs."""
    return SparkMergeInsert(uri, on, storage_options)


def apply_changes(
    df: DataFrame,
    uri: str,
    keys: str | Sequence[str],
    sequence_by: str,
    operation: str = "op",
    *,
    delete_values: Sequence[Any] = ("D",),
    storage_options: StorageOptions | None = None,
    **execute: Any,
) -> MergeResult:
    """Applies a change feed held in ``df`` (as :meth:`PartitionedNamespace.apply_changes`:
    the last change per key by ``sequence_by`` counts; ``operation`` in ``delete_values``
    deletes, anything else upserts), run in Spark. ``execute`` takes the options of
    :meth:`SparkMergeInsert.execute`."""
    builder = change_feed(
        SparkMergeInsert(uri, keys, storage_options), sequence_by, operation, delete_values
    )
    return builder.execute(df, _keep_last_by=sequence_by, **execute)


__all__ = ["SparkMergeInsert", "apply_changes", "merge_insert"]
