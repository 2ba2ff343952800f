"""One write made of parts staged independently (in Spark tasks, other processes or machines)
and committed once."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lance_partitioned import _native
from lance_partitioned._arguments import typed_class
from lance_partitioned._input import arrow_stream, peek
from lance_partitioned.exceptions import InvalidArgumentError
from lance_partitioned.lineage.run import Job, LineageRun, begin, resume
from lance_partitioned.options import (
    DEFAULT_MAX_NEW_PARTITIONS,
    MAX_ROWS_PER_FILE,
    STAGE_CONCURRENCY,
    TASK_BUFFER_BYTES,
    StorageOptions,
    TransactionMode,
    WriteMode,
    check_limit,
    check_sizes,
    namespace_uri,
    storage_options_arg,
    write_args,
    write_concurrency,
)

WriteResult = _native.WriteResult
log = logging.getLogger("lance_partitioned")


@typed_class
class DistributedWrite:
    """One write made of parts staged independently and committed once.

    Created on the driver, it fixes what every part plans against: the manifest version, the
    transaction mode and a random nonce (so that parts creating the same new partition write
    into the same leaf table). The object is small and picklable: ship it to the workers, call
    :meth:`stage` there (it writes uncommitted Lance fragments and returns a message of a few
    hundred bytes per partition), bring the messages of the successful attempts back and call
    :meth:`commit` once. Nothing is visible before the commit; parts that are never committed
    (failed or duplicate attempts) leave files that :meth:`PartitionedNamespace.cleanup`
    removes. The storage options travel with the pickled object (the tasks need them); its
    ``repr`` shows no secret.

    With lineage on, the write is one run emitted from where it is planned and committed:
    START here, COMPLETE (or FAIL) from :meth:`commit` with the union of the parts'
    partitions (a commit in another process continues the same run: its id travels with the
    pickled object).
    """

    def __init__(
        self,
        root: str,
        mode: WriteMode = "append",
        *,
        transaction_mode: TransactionMode | None = None,
        storage_options: StorageOptions | None = None,
        lineage_job: Job = None,
    ) -> None:
        strong = write_args(mode, transaction_mode)
        self._w = _native.DistributedWrite.plan(
            namespace_uri(root), mode, strong, storage_options_arg(storage_options)
        )
        self._lineage_job = lineage_job
        self._lineage: LineageRun | None = begin(
            "write", lineage_job, outputs=self._lineage_outputs
        )

    @classmethod
    def shared(
        cls,
        root: str,
        mode: WriteMode,
        key: str,
        *,
        storage_options: StorageOptions | None = None,
        lineage_job: Job = None,
    ) -> DistributedWrite:
        """The write the tasks of one micro-batch run share under ``key`` when no driver
        step plans it before they run (a Spark streaming sink): the first task to ask plans it
        and publishes the plan in the namespace (``_lance_partitioned/plans/<key>``, a
        create-only put), the others and the committer read it. Keys: 1 to 200 ASCII
        letters, digits, ``-``, ``_``, ``.``. :meth:`remove_shared_plan` removes the plan
        after the commit; ``cleanup()`` removes those of runs that never committed."""
        write_args(mode, None)
        self = cls.__new__(cls)
        self._w = _native.DistributedWrite.shared(
            namespace_uri(root), mode, key, None, storage_options_arg(storage_options)
        )
        self._lineage_job = lineage_job
        self._lineage = None
        return self

    def remove_shared_plan(self, key: str) -> None:
        """Removes the shared plan ``key`` (see :meth:`shared`; best effort)."""
        self._w.remove_shared_plan(key)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        # The run's events are emitted where it was begun and where it is committed: a commit
        # in another process continues it by its id.
        run = state.pop("_lineage", None)
        state["_lineage"] = None
        state["_lineage_run_id"] = run.run_id if run is not None else None
        return state

    def _snapshot(self) -> Any:
        from lance_partitioned.snapshot import Snapshot

        return Snapshot(_native.Namespace(self.root, self.storage_options).snapshot())

    def _lineage_outputs(self) -> list[dict[str, Any]]:
        from lance_partitioned.lineage.datasets import namespace_dataset

        return [namespace_dataset(self._snapshot())]

    @property
    def root(self) -> str:
        """The namespace root."""
        return self._w.root

    @property
    def storage_options(self) -> dict[str, str]:
        """The storage options every part and the commit use."""
        return self._w.storage_options

    @property
    def mode(self) -> WriteMode:
        """``append``, ``overwrite`` or ``overwrite_all``."""
        return self._w.mode  # type: ignore[return-value]

    @property
    def manifest_version(self) -> int:
        """The manifest version every part is written against."""
        return self._w.manifest_version

    @property
    def strong(self) -> bool:
        """Strong (one atomic manifest commit) or weak commits."""
        return self._w.strong

    @property
    def nonce(self) -> str:
        """The write's random id (recorded with its commit, so a second commit is a no-op)."""
        return self._w.nonce

    def stage(
        self,
        data: Any,
        *,
        max_rows_per_file: int = MAX_ROWS_PER_FILE,
        concurrency: int = STAGE_CONCURRENCY,
        max_buffer_bytes: int = TASK_BUFFER_BYTES,
        max_new_partitions: int | None = DEFAULT_MAX_NEW_PARTITIONS,
    ) -> bytes:
        """Writes ``data`` (any Arrow stream) as uncommitted fragments; returns the message
        :meth:`commit` needs. Safe to call concurrently and in other processes. Memory stays
        near ``max_buffer_bytes`` (as in :meth:`PartitionedNamespace.write`)."""
        check_sizes(
            max_rows_per_file=max_rows_per_file,
            max_buffer_bytes=max_buffer_bytes,
            concurrency=concurrency,
        )
        check_limit(max_new_partitions)
        return self._w.stage(
            arrow_stream(data),
            max_rows_per_file=max_rows_per_file,
            concurrency=concurrency,
            max_buffer_bytes=max_buffer_bytes,
            max_new_partitions=max_new_partitions,
        )

    def commit(
        self,
        messages: Iterable[bytes],
        *,
        concurrency: int | None = None,
        write_id: str | None = None,
    ) -> WriteResult:
        """Commits the staged parts once (all leaf tables, then one manifest commit).
        Conflicts with concurrent writers are resolved as for
        :meth:`PartitionedNamespace.write`.

        Idempotent per write: a message passed twice counts once, and committing a write that
        was already committed does nothing (``WriteResult.already_committed``; strong mode
        records the write's id on its manifest rows, weak mode finds its data files in the
        leaves). A staged data file that no longer exists (removed by ``cleanup()`` with a
        grace period shorter than the write) fails the commit with ``CommitConflictError``
        before anything is committed. ``concurrency``: leaf commits at once (default: 8 on a
        local disk, 64 on object storage).

        ``write_id`` (strong mode only) names the write instead of its nonce: a commit whose
        id the manifest already records commits nothing, even with other staged parts. A
        stream passes the id of its micro-batch, so a batch replayed after a crash (staged
        again, by new tasks) lands once (see :func:`lance_partitioned.spark.write_batch`)."""
        concurrency = write_concurrency(self.root, concurrency)
        check_sizes(concurrency=concurrency)
        msgs = _messages(messages)
        job = self.__dict__.get("_lineage_job")
        run_id = self.__dict__.get("_lineage_run_id")
        run = self._lineage or (
            resume("write", job, run_id)
            if run_id
            else begin("write", job, outputs=self._lineage_outputs)
        )
        try:
            result = self._commit(msgs, concurrency, write_id)
        except Exception as e:
            if run is not None:
                run.fail(e, self._lineage_outputs)
            raise
        if run is not None:
            from lance_partitioned.lineage.datasets import written

            settings = run.settings
            run.complete(outputs=lambda: [written(self._snapshot(), result, self.mode, settings)])
        return result

    def committed(self, write_id: str) -> WriteResult | None:
        """What an earlier commit under ``write_id`` left (``already_committed`` set), or
        ``None`` when no commit recorded it: a job checks this before it runs, so a
        repeated write runs no task. Write ids need strong mode and 1 to 512 bytes
        (``InvalidArgumentError`` otherwise)."""
        if not self.strong:
            raise InvalidArgumentError(
                "a write id needs strong mode: weak-mode commits are not atomic, so a repeated "
                'write cannot be recognised as a whole (use transaction_mode="strong")'
            )
        snap = _native.Namespace(self.root, self.storage_options).snapshot()
        if not snap.has_write(write_id):
            return None
        log.info("lance-partitioned: write %r is already committed; nothing to do", write_id)
        return _nothing_written(snap.version, already_committed=True)

    def _commit(self, msgs: list[bytes], concurrency: int, write_id: str | None) -> WriteResult:
        if not msgs and self.mode != "overwrite_all":
            return _nothing_written(self.manifest_version, already_committed=False)
        if not msgs:
            # No task saw a row: the namespace becomes empty.
            msgs = [self.stage(self._snapshot().schema.empty_table())]
        return self._w.commit(msgs, concurrency=concurrency, write_id=write_id)

    def key_hasher(self) -> _native.KeyHasher:
        """The partition-key hasher of this write's spec (for repartitioning by partition)."""
        return self._w.key_hasher()

    def __repr__(self) -> str:
        return repr(self._w)


def _nothing_written(manifest_version: int, *, already_committed: bool) -> WriteResult:
    """The result of a commit that wrote nothing (no staged parts, or committed before)."""
    return WriteResult(
        rows=0,
        partitions=0,
        created=0,
        dropped=0,
        files=0,
        bytes=0,
        manifest_version=manifest_version,
        attempts=0,
        already_committed=already_committed,
    )


def _messages(messages: Any) -> list[bytes]:
    if isinstance(messages, (bytes, str)) or not isinstance(messages, Iterable):
        raise InvalidArgumentError(
            "messages must be an iterable of the bytes stage() returned, "
            f"not {type(messages).__name__}"
        )
    out = []
    for m in messages:
        if not isinstance(m, (bytes, bytearray, memoryview)):
            raise InvalidArgumentError(
                f"each message must be the bytes stage() returned, not {type(m).__name__}"
            )
        out.append(bytes(m))
    return out


@dataclass(frozen=True)
class TaskLimits:
    """What one task of a distributed write may use and create while staging (checked where
    the write is planned, before any task runs)."""

    max_rows_per_file: int = MAX_ROWS_PER_FILE
    max_buffer_bytes: int = TASK_BUFFER_BYTES
    max_new_partitions: int | None = DEFAULT_MAX_NEW_PARTITIONS

    def __post_init__(self) -> None:
        check_sizes(
            max_rows_per_file=self.max_rows_per_file, max_buffer_bytes=self.max_buffer_bytes
        )
        check_limit(self.max_new_partitions)


def stage_task(
    dw: DistributedWrite, batches: Iterator[pa.RecordBatch], limits: TaskLimits
) -> tuple[bytes | None, int]:
    """Stages one task's batches (the one staging entry point of every Spark writer): the
    message (None when the task saw no rows) and the rows staged."""
    rows = 0

    def counted() -> Iterator[pa.RecordBatch]:
        nonlocal rows
        for b in batches:
            if b.num_rows:
                rows += b.num_rows
                yield b

    first, all_batches = peek(counted())
    if first is None:
        return None, 0
    reader = pa.RecordBatchReader.from_batches(first.schema, all_batches)
    msg = dw.stage(
        reader,
        max_rows_per_file=limits.max_rows_per_file,
        max_buffer_bytes=limits.max_buffer_bytes,
        max_new_partitions=limits.max_new_partitions,
    )
    return msg, rows
