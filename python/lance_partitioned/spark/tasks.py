"""Reads and joins as Spark tasks: a ``spark.range`` with one row per task (no shuffle, one
Spark partition each) and ``mapInArrow`` whose function holds every task's descriptor and runs
it in Rust. Used by :func:`lance_partitioned.spark.read` and :func:`lance_partitioned.spark.join`.

Descriptors:

- a read task is a list of ``(object id, part, parts)``: leaf ``object id``'s fragments at
  positions ``part, part + parts, ...`` (``(oid, 0, 1)`` is the whole leaf). Small leaves are
  packed into one task up to a number of rows, big ones split by fragment (as Spark packs and
  splits files);
- a join task is one group of the join plan: (left object ids, right object ids).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lance_partitioned import _native

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

ReadTask = list[tuple[str, int, int]]

# Rows counted for opening a leaf when packing small leaves into tasks (Spark counts 4 MB per
# file for the same reason).
OPEN_COST_ROWS = 32_768
# The most rows one read task takes (Spark's 128 MB per partition, in rows of a few columns).
MAX_ROWS_PER_TASK = 4 * 1024 * 1024


def plan_read_tasks(
    sizes: Sequence[tuple[str, int, int]], parallelism: int, max_rows: int = MAX_ROWS_PER_TASK
) -> list[ReadTask]:
    """Packs leaves ``(object id, rows, fragments)`` into read tasks of about
    ``min(max_rows, total / parallelism)`` rows (counting :data:`OPEN_COST_ROWS` per leaf):
    a leaf bigger than that is split by fragment into several tasks, smaller ones share tasks
    (largest first, next fit). Every leaf's every fragment is read by exactly one task."""
    if not sizes:
        return []
    total = sum(rows + OPEN_COST_ROWS for _, rows, _ in sizes)
    target = max(OPEN_COST_ROWS, min(max_rows, math.ceil(total / max(parallelism, 1))))
    tasks: list[ReadTask] = []
    current: ReadTask = []
    current_rows = 0
    for oid, rows, fragments in sorted(sizes, key=lambda s: (-s[1], s[0])):
        cost = rows + OPEN_COST_ROWS
        if cost > target and fragments > 1:
            parts = min(fragments, math.ceil(cost / target))
            tasks.extend([(oid, k, parts)] for k in range(parts))
            continue
        if current and current_rows + cost > target:
            tasks.append(current)
            current, current_rows = [], 0
        current.append((oid, 0, 1))
        current_rows += cost
    if current:
        tasks.append(current)
    return tasks


def spark_arrow_schema(spark_schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects back from ``mapInArrow`` for ``spark_schema``."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(spark_schema, timezone="UTC")


def conform(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` with ``target``'s types (a cast only where they differ)."""
    if batch.schema.equals(target):
        return batch
    return pa.Table.from_batches([batch]).cast(target).combine_chunks().to_batches()[0]


def snapshot(root: str, version: int, options: dict[str, str] | None) -> _native.ManifestSnapshot:
    """The manifest snapshot at ``version``, loaded once per worker process."""
    key = (root, version, tuple(sorted((options or {}).items())))
    snap = _SNAPSHOTS.get(key)
    if snap is None:
        snap = _native.Namespace(root, options).snapshot(version)
        if len(_SNAPSHOTS) >= 8:
            _SNAPSHOTS.clear()
        _SNAPSHOTS[key] = snap
    return snap


def task_numbers(batch: pa.RecordBatch) -> list[int]:
    """The task numbers of a batch of ``spark.range`` rows."""
    return [int(i) for i in batch.column(0).to_pylist() if i is not None]


_SNAPSHOTS: dict[tuple[str, int, tuple[tuple[str, str], ...]], _native.ManifestSnapshot] = {}


class ReadTasks:
    """The ``mapInArrow`` function of a read: runs the read tasks whose numbers arrive."""

    def __init__(
        self,
        root: str,
        version: int,
        options: dict[str, str] | None,
        filter: str | None,
        columns: list[str],
        tasks: list[ReadTask],
        target: pa.Schema,
    ) -> None:
        self.root, self.version, self.options = root, version, options
        self.filter, self.columns, self.tasks, self.target = filter, columns, tasks, target

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        snap = snapshot(self.root, self.version, self.options)
        for b in batches:
            for i in task_numbers(b):
                task = self.tasks[i]
                whole = [oid for oid, _, parts in task if parts == 1]
                scans = [snap.scan(self.filter, self.columns, None, whole)] if whole else []
                scans += [
                    snap.scan(self.filter, self.columns, None, [oid], (k, parts))
                    for oid, k, parts in task
                    if parts > 1
                ]
                for scan in scans:
                    for batch in scan:
                        if batch.num_rows:
                            yield conform(batch, self.target)


class JoinTasks:
    """The ``mapInArrow`` function of a join: joins the groups whose numbers arrive."""

    def __init__(
        self,
        sides: tuple[
            tuple[str, int, dict[str, str] | None], tuple[str, int, dict[str, str] | None]
        ],
        args: dict[str, Any],
        groups: list[tuple[list[str], list[str]]],
        target: pa.Schema,
    ) -> None:
        self.sides, self.args, self.groups, self.target = sides, args, groups, target

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        (lroot, lversion, lopts), (rroot, rversion, ropts) = self.sides
        left = snapshot(lroot, lversion, lopts)
        right = snapshot(rroot, rversion, ropts)
        prepared = _native.join_prepare(left, right, **self.args)
        for b in batches:
            for i in task_numbers(b):
                lids, rids = self.groups[i]
                for batch in prepared.run(lids, rids):
                    if batch.num_rows:
                        yield conform(batch, self.target)


def run_tasks(spark: SparkSession, count: int, fn: Any, spark_schema: StructType) -> DataFrame:
    """A DataFrame of ``count`` tasks (one Spark partition each, no shuffle) running ``fn``."""
    if count == 0:
        return spark.createDataFrame([], spark_schema)
    tasks = spark.range(0, count, 1, numPartitions=count)
    return tasks.mapInArrow(fn, spark_schema)
