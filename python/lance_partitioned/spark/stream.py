"""Structured Streaming into a namespace, exactly once.

Two ways in:

- ``df.writeStream.format("lance-partitioned").option("checkpointLocation", ...).start(uri)``:
  the data source's stream writer (:class:`LancePartitionedStreamWriter`);
- ``df.writeStream.foreachBatch(lambda batch, epoch: lps.write_batch(batch, epoch, uri))``:
  ``lance_partitioned.spark.batches.write_batch``, for pipelines that combine the write
  with their own logic.

Each micro-batch commits once, atomically across its partitions, under the write id
``stream:<stream id>:<batch id>`` (:func:`stream_write_id`); the stream id is the query's id,
which Spark keeps in the checkpoint, so a query restarted from its checkpoint keeps it. Spark
runs a batch again when the driver died between the batch's commit and Spark's own record of
it: that second run commits nothing (the manifest records the id; the lookup is one hash
probe in the snapshot every commit loads anyway). Write ids need strong mode.

The stream writer's tasks run a writer Spark created once for the whole query, so no driver
step plans a batch before its tasks: the tasks of one batch run share the plan the first of
them publishes (:meth:`DistributedWrite.shared`, keyed by the query run and the batch).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage

from lance_partitioned.distributed import DistributedWrite, TaskLimits, stage_task
from lance_partitioned.exceptions import InvalidArgumentError
from lance_partitioned.lineage.run import Job
from lance_partitioned.options import WriteMode
from lance_partitioned.spark.batches import BATCH_ID, QUERY_ID, RUN_ID, stream_write_id

log = logging.getLogger("lance_partitioned.spark")


@dataclass
class StreamMessage(WriterCommitMessage):
    """One task's share of a micro-batch: its staged message (empty when it saw no rows), the
    rows, the shared plan's key and the query's id."""

    payload: bytes
    rows: int
    plan_key: str
    stream_id: str


class LancePartitionedStreamWriter(DataSourceStreamArrowWriter):
    """The data source's stream writer (see the module docs)."""

    def __init__(
        self,
        root: str,
        mode: WriteMode,
        limits: TaskLimits,
        storage_options: dict[str, str] | None,
        stream_id: str | None,
        lineage_job: Job = None,
    ) -> None:
        self.root = root
        self.mode = mode
        self.limits = limits
        self.storage_options = storage_options
        self.stream_id = stream_id
        self.lineage_job = lineage_job

    def _shared(self, key: str) -> DistributedWrite:
        return DistributedWrite.shared(
            self.root,
            self.mode,
            key,
            storage_options=self.storage_options,
            lineage_job=self.lineage_job,
        )

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StreamMessage:  # type: ignore[override]
        from pyspark import TaskContext

        ctx = TaskContext.get()
        props = {
            p: ctx.getLocalProperty(p) if ctx is not None else None
            for p in (QUERY_ID, RUN_ID, BATCH_ID)
        }
        if not all(props.values()):
            raise InvalidArgumentError(
                f"the lance-partitioned stream writer runs in streaming queries only (task "
                f"properties: {props})"
            )
        key = f"{props[RUN_ID]}-{props[BATCH_ID]}"
        msg, rows = stage_task(self._shared(key), iterator, self.limits)
        return StreamMessage(msg or b"", rows, key, self.stream_id or str(props[QUERY_ID]))

    def commit(self, messages: list[StreamMessage | None], batchId: int) -> None:  # type: ignore[override]
        done = [m for m in messages if m is not None]
        keys = {m.plan_key for m in done}
        payloads = [m.payload for m in done if m.payload]
        if len(keys) > 1 or len({m.stream_id for m in done}) > 1:
            raise InvalidArgumentError(
                f"the tasks of batch {batchId} planned apart ({sorted(keys)}); nothing committed"
            )
        if not done:
            return
        dw = self._shared(done[0].plan_key)
        # Complete mode commits an empty result too: the namespace holds it, empty.
        if payloads or self.mode == "overwrite_all":
            res = dw.commit(payloads, write_id=stream_write_id(done[0].stream_id, batchId))
            log.info("lance-partitioned: batch %d committed: %s", batchId, res)
        dw.remove_shared_plan(done[0].plan_key)

    def abort(self, messages: list[StreamMessage | None], batchId: int) -> None:  # type: ignore[override]
        # Nothing was committed: staged fragments are invisible; cleanup() removes them and
        # the batch's shared plan.
        log.warning(
            "lance-partitioned: batch %d to %s aborted; nothing committed", batchId, self.root
        )
