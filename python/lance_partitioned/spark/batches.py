"""Exactly-once micro-batches of Structured Streaming without the data source: the write id
of a batch, and for ``foreachBatch`` :func:`write_batch` (appends, overwrites),
:func:`upsert_batch` (update output mode: rows by a merge key) and :func:`apply_changes_batch`
(a change feed, CDC). See ``lance_partitioned.spark.stream`` for the data source's stream
writer. Imports nothing of PySpark at module level.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lance_partitioned.exceptions import InvalidArgumentError
from lance_partitioned.merge import MergeResult
from lance_partitioned.namespace import WriteResult
from lance_partitioned.options import StorageOptions, WriteMode

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

    write_id = stream_write_id(_stream_id(batch_df, stream_id), epoch_id)
    return write(batch_df, uri, mode, write_id=write_id, **write_options)


def upsert_batch(
    batch_df: DataFrame,
    epoch_id: int,
    uri: str,
    on: str | Sequence[str],
    *,
    stream_id: str | None = None,
    storage_options: StorageOptions | None = None,
    **execute: Any,
) -> MergeResult:
    """Upserts one micro-batch of a ``foreachBatch`` stream exactly once (``update`` output
    mode): a row whose key ``on`` exists replaces it, any other is inserted, in one atomic
    commit under the write id of (``stream_id``, ``epoch_id``), run in Spark as
    :func:`lance_partitioned.spark.merge_insert` (``execute`` takes its options). A batch Spark
    runs again after a restart runs no task and changes nothing
    (``MergeResult.already_committed``). Two rows of one batch with one key raise
    ``DuplicateKeyError``: deduplicate first, or use :func:`apply_changes_batch`."""
    from lance_partitioned.spark.merge import merge_insert

    write_id = stream_write_id(_stream_id(batch_df, stream_id), epoch_id)
    builder = merge_insert(uri, on, storage_options=storage_options)
    builder.when_matched_update_all().when_not_matched_insert_all()
    return builder.execute(batch_df, write_id=write_id, **execute)


def apply_changes_batch(
    batch_df: DataFrame,
    epoch_id: int,
    uri: str,
    keys: str | Sequence[str],
    sequence_by: str,
    operation: str = "op",
    *,
    stream_id: str | None = None,
    **options: Any,
) -> MergeResult:
    """Applies one micro-batch of a change feed exactly once: as
    :func:`lance_partitioned.spark.apply_changes` (same options; the last change per key by
    ``sequence_by`` counts) under the write id of (``stream_id``, ``epoch_id``). A replayed
    batch changes nothing (``MergeResult.already_committed``)."""
    from lance_partitioned.spark.merge import apply_changes

    write_id = stream_write_id(_stream_id(batch_df, stream_id), epoch_id)
    return apply_changes(batch_df, uri, keys, sequence_by, operation, write_id=write_id, **options)


def _stream_id(batch_df: DataFrame, stream_id: str | None) -> str:
    return stream_id if stream_id is not None else _query_id(batch_df)


def _query_id(batch_df: DataFrame) -> str:
    qid = batch_df.sparkSession.sparkContext.getLocalProperty(QUERY_ID)
    if not qid:
        raise InvalidArgumentError(
            "found no streaming query id (is this called from foreachBatch?); pass stream_id="
        )
    return str(qid)
