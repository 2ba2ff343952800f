"""The row-level changes of a namespace handle: ``merge_insert``, ``update`` and
``apply_changes`` (mixed into :class:`~lance_partitioned.PartitionedNamespace`; the builder
and the calls into Rust are in :mod:`lance_partitioned.merge`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lance_partitioned import _native, merge
from lance_partitioned.lineage.run import Job
from lance_partitioned.merge import DEFAULT_MAX_ATTEMPTS, MergeInsertBuilder, MergeResult
from lance_partitioned.options import TransactionMode


class RowChanges:
    """Changing rows in place, by key (``merge_insert``, ``apply_changes``) or by filter
    (``update``); each one atomic commit across partitions."""

    _ns: _native.Namespace
    _lineage_outputs: Callable[[], Any]

    @property
    def root(self) -> str:
        raise NotImplementedError

    def refresh(self) -> bool:
        """Reloads the manifest if another writer moved it (the handle's own)."""
        raise NotImplementedError

    def snapshot(self, version: int | None = None) -> Any:
        raise NotImplementedError

    def merge_insert(self, on: str | Sequence[str]) -> MergeInsertBuilder:
        """Starts a merge keyed by ``on`` (a column, a list of columns, ``"s.child"`` for a
        struct's child): add ``when_*`` clauses, then ``execute(source)``. See
        :mod:`lance_partitioned.merge`."""
        return MergeInsertBuilder(self, on)

    def update(
        self,
        set: Mapping[str, str],
        where: str | None = None,
        *,
        transaction_mode: TransactionMode | None = None,
        concurrency: int | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        lineage_job: Job = None,
        write_id: str | None = None,
    ) -> MergeResult:
        """Sets ``set``'s columns to SQL values over each row's columns on the rows matching
        ``where`` (every row without it), e.g. ``ns.update({"status": "'shipped'"},
        where="order_id IN (1, 2, 3)")``. A row whose partition columns change moves to its
        new partition; one atomic commit, run again when a concurrent commit changed a
        partition it read (up to ``max_attempts`` runs)."""
        return merge.update(
            self,
            set,
            where,
            transaction_mode=transaction_mode,
            concurrency=concurrency,
            max_attempts=max_attempts,
            lineage_job=lineage_job,
            write_id=write_id,
        )

    def apply_changes(
        self,
        changes: Any,
        keys: str | Sequence[str],
        sequence_by: str,
        operation: str = "op",
        *,
        delete_values: Sequence[Any] = ("D",),
        transaction_mode: TransactionMode | None = None,
        concurrency: int | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        lineage_job: Job = None,
        write_id: str | None = None,
    ) -> MergeResult:
        """Applies a change feed (CDC): of the changes to one key only the last by
        ``sequence_by`` counts; a change whose ``operation`` column is in ``delete_values``
        deletes the key's row, any other inserts or replaces it (a NULL operation is not
        applied). ``operation`` and ``sequence_by`` are read, never written; one atomic
        commit. ``write_id``: applied once (see ``MergeInsertBuilder.execute``)."""
        return merge.apply_changes(
            self,
            changes,
            keys,
            sequence_by,
            operation,
            delete_values,
            transaction_mode=transaction_mode,
            concurrency=concurrency,
            max_attempts=max_attempts,
            lineage_job=lineage_job,
            write_id=write_id,
        )
