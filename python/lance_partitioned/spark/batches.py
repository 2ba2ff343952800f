"""Exactly-once micro-batches of Structured Streaming without the data source: the write id
of a batch and :func:`write_batch` for ``foreachBatch`` (see ``lance_partitioned.spark.stream``
for the data source's stream writer). Imports nothing of PySpark at module level.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lance_partitioned.exceptions import InvalidArgumentError
from lance_partitioned.namespace import WriteResult
from lance_partitioned.options import WriteMode

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# Local properties Spark's micro-batch execution sets on every job of a batch (and so on every
# task): the query's id (kept in the checkpoint), the run's id (new at every start) as the
# job group, and the batch id.
QUERY_ID = "sql.streaming.queryId"
RUN_ID = "spark.jobGroup.id"
BATCH_ID = "streaming.sql.batchId"


def stream_write_id(stream_id: str, batch_id: int) -> str:
    """The write id a stream's micro-batch commits under."""
    if not stream_id:
        raise InvalidArgumentError("a stream id must not be empty")
    if isinstance(batch_id, bool) or not isinstance(batch_id, int) or batch_id < 0:
        raise InvalidArgumentError(f"a batch id is a non-negative integer, not {batch_id!r}")
    return f"stream:{stream_id}:{batch_id}"


def write_batch(
    batch_df: DataFrame,
    epoch_id: int,
    uri: str,
    mode: WriteMode = "append",
    *,
    stream_id: str | None = None,
    **write_options: Any,
) -> WriteResult:
    """Writes one micro-batch of a ``foreachBatch`` stream exactly once: as
    :func:`lance_partitioned.spark.write` (same options) under the write id of
    (``stream_id``, ``epoch_id``). A batch Spark runs again after a restart (it had committed
    here, but the driver died before Spark recorded it) runs no task and commits nothing
    (``WriteResult.already_committed``).

    ``stream_id`` defaults to the streaming query's id (Spark keeps it in the checkpoint, so a
    restarted query keeps it); pass one to share the exactly-once record between queries, or
    when calling this outside ``foreachBatch``. ``mode``: ``append``, ``overwrite`` or
    ``overwrite_all`` (what ``complete`` output mode needs). The namespace must commit in
    strong mode.
    """
    from lance_partitioned.spark import write

    sid = stream_id if stream_id is not None else _query_id(batch_df)
    return write(batch_df, uri, mode, write_id=stream_write_id(sid, epoch_id), **write_options)


def _query_id(batch_df: DataFrame) -> str:
    qid = batch_df.sparkSession.sparkContext.getLocalProperty(QUERY_ID)
    if not qid:
        raise InvalidArgumentError(
            "write_batch found no streaming query id (is it called from foreachBatch?); "
            "pass stream_id="
        )
    return str(qid)
