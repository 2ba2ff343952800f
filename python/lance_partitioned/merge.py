"""Row-level changes by key: ``PartitionedNamespace.merge_insert(on=...)`` returns a
:class:`MergeInsertBuilder`, whose clauses follow Lance's ``merge_insert`` builder::

    (ns.merge_insert(on=["order_id"])
       .when_matched_update_all(condition="source.updated_at > target.updated_at")
       .when_not_matched_insert_all()
       .when_not_matched_by_source_delete("order_date >= DATE '2025-01-01'")
       .execute(source))

Conditions are SQL over ``source.<column>`` and ``target.<column>``; a not-matched-by-source
condition reads the target's columns (plain names work). Within each kind of clause the first
whose condition holds decides. The merge reads only the partitions that can hold the source's
keys when the key determines the partition, and commits atomically across partitions; the
matching, deciding and writing run in Rust.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from lance_partitioned import _native
from lance_partitioned._input import arrow_stream
from lance_partitioned.exceptions import ArgumentTypeError, InvalidArgumentError
from lance_partitioned.lineage import datasets as lineage_datasets
from lance_partitioned.lineage.run import Job, operation
from lance_partitioned.options import (
    WRITE_BUFFER_BYTES,
    TransactionMode,
    check_sizes,
    write_args,
    write_concurrency,
)

if TYPE_CHECKING:
    from lance_partitioned.changes import RowChanges as PartitionedNamespace

__all__ = ["MergeClauses", "MergeInsertBuilder", "MergePlan", "MergeResult", "MergedPartition"]

MergeResult = _native.MergeResult
MergePlan = _native.MergePlan
MergedPartition = _native.MergedPartitionResult

#: Runs of a merge when concurrent commits keep changing the partitions it reads.
DEFAULT_MAX_ATTEMPTS = 10


def _condition(value: str | None, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ArgumentTypeError(f"{what} must be a non-empty SQL string or None, got {value!r}")
    return value


def set_pairs(values: Mapping[str, str]) -> list[tuple[str, str]]:
    """An update's ``set`` mapping as (column, SQL value) pairs."""
    if not isinstance(values, Mapping) or not values:
        raise ArgumentTypeError(
            f"set takes a non-empty mapping of column to SQL value, got {values!r}"
        )
    pairs = []
    for col, sql in values.items():
        if not isinstance(col, str) or not isinstance(sql, str) or not sql.strip():
            raise ArgumentTypeError(f"set maps column names to SQL strings, got {col!r}: {sql!r}")
        pairs.append((col, sql))
    return pairs


def key_columns(on: str | Sequence[str]) -> list[str]:
    """The key columns as a list (one name or several)."""
    keys = [on] if isinstance(on, str) else list(on)
    if not keys or not all(isinstance(k, str) and k for k in keys):
        raise InvalidArgumentError(f"on= takes a column name or a list of column names, got {on!r}")
    return keys


def write_id_arg(write_id: object) -> str | None:
    """A write id argument: ``None`` or a string (its length and mode are checked where it
    is recorded)."""
    if write_id is None or isinstance(write_id, str):
        return write_id
    raise ArgumentTypeError(f"write_id takes a string, got {write_id!r}")


def change_args(
    root: str,
    transaction_mode: TransactionMode | None,
    concurrency: int | None,
    max_attempts: int,
    max_buffer_bytes: int,
) -> tuple[bool | None, int]:
    """Validates a row-level change's options; returns the strong flag and the concurrency."""
    strong = write_args("append", transaction_mode)
    concurrency = write_concurrency(root, concurrency)
    check_sizes(
        concurrency=concurrency, max_buffer_bytes=max_buffer_bytes, max_attempts=max_attempts
    )
    return strong, concurrency


def update(
    ns: PartitionedNamespace,
    set: Mapping[str, str],
    where: str | None,
    *,
    transaction_mode: TransactionMode | None,
    concurrency: int | None,
    max_attempts: int,
    lineage_job: Job,
    write_id: str | None = None,
) -> MergeResult:
    """``PartitionedNamespace.update``."""
    if not isinstance(set, Mapping) or not set:
        raise ArgumentTypeError(
            f"set takes a non-empty mapping of column to SQL value, got {set!r}"
        )
    pairs = []
    for col, sql in set.items():
        if not isinstance(col, str) or not isinstance(sql, str) or not sql.strip():
            raise ArgumentTypeError(f"set maps column names to SQL strings, got {col!r}: {sql!r}")
        pairs.append((col, sql))
    where = _condition(where, "where")
    strong, concurrency = change_args(
        ns.root, transaction_mode, concurrency, max_attempts, WRITE_BUFFER_BYTES
    )
    with operation("update", lineage_job, outputs=ns._lineage_outputs) as scope:
        result = ns._ns.update(
            pairs,
            where,
            strong=strong,
            concurrency=concurrency,
            max_attempts=max_attempts,
            max_buffer_bytes=WRITE_BUFFER_BYTES,
            write_id=write_id_arg(write_id),
        )
        _report(ns, scope, result)
    return result


def _report(ns: PartitionedNamespace, scope: Any, result: MergeResult) -> None:
    """Refreshes the handle; the lineage run's output is the namespace as the change left it."""
    ns.refresh()
    if scope.run is not None:
        snap, settings = ns.snapshot(), scope.run.settings
        scope.outputs = lambda: [lineage_datasets.merged(snap, result, settings)]


def _sql_literal(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentTypeError(f"delete_values holds strings or ints, got {value!r}")
    return str(value)


C = TypeVar("C", bound="MergeClauses")


def change_feed(builder: C, sequence_by: str, operation: str, delete_values: Sequence[Any]) -> C:
    """``builder`` with the clauses of a change feed (``apply_changes``): a change whose
    ``operation`` is in ``delete_values`` deletes its key's row, any other (not NULL) inserts
    or replaces it."""
    for name, value in (("sequence_by", sequence_by), ("operation", operation)):
        if not isinstance(value, str) or not value:
            raise ArgumentTypeError(f"{name} must be a column name, got {value!r}")
    if isinstance(delete_values, (str, bytes)) or not delete_values:
        raise ArgumentTypeError(
            f"delete_values takes a non-empty list of values, got {delete_values!r}"
        )
    op = '"' + operation.replace('"', '""') + '"'
    deletes = ", ".join(_sql_literal(v) for v in delete_values)
    is_delete = f"source.{op} IN ({deletes})"
    upsert = f"source.{op} IS NOT NULL AND source.{op} NOT IN ({deletes})"
    builder.when_matched_delete(is_delete)
    builder.when_matched_update_all(upsert)
    builder.when_not_matched_insert_all(upsert)
    return builder


def apply_changes(
    ns: PartitionedNamespace,
    changes: Any,
    keys: str | Sequence[str],
    sequence_by: str,
    operation: str,
    delete_values: Sequence[Any],
    **execute: Any,
) -> MergeResult:
    """``PartitionedNamespace.apply_changes``."""
    builder = change_feed(MergeInsertBuilder(ns, keys), sequence_by, operation, delete_values)
    return builder.execute(changes, _keep_last_by=sequence_by, **execute)


class MergeClauses:
    """The clauses of one merge keyed by ``on``; each ``when_*`` method returns the builder.
    (:class:`MergeInsertBuilder` runs them in this process,
    ``lance_partitioned.spark.merge_insert`` in Spark tasks.)"""

    def __init__(self, on: str | Sequence[str]) -> None:
        self._on = key_columns(on)
        self._matched: list[tuple[str, str | None, list[tuple[str, str]] | None]] = []
        self._not_matched: list[str | None] = []
        self._by_source: list[str | None] = []

    def when_matched_update_all(self: C, condition: str | None = None) -> C:
        """Matched target rows take the source row's columns (those the source has)."""
        self._matched.append(("update_all", _condition(condition, "condition"), None))
        return self

    def when_matched_update(self: C, set: Mapping[str, str], condition: str | None = None) -> C:
        """Matched target rows get ``set``'s columns as SQL values over ``source.`` and
        ``target.`` columns; the others keep theirs."""
        self._matched.append(("update", _condition(condition, "condition"), set_pairs(set)))
        return self

    def when_matched_delete(self: C, condition: str | None = None) -> C:
        """Matched target rows are deleted."""
        self._matched.append(("delete", _condition(condition, "condition"), None))
        return self

    def when_not_matched_insert_all(self: C, condition: str | None = None) -> C:
        """Source rows that match no target row are inserted (when ``condition`` over
        ``source.`` columns holds)."""
        self._not_matched.append(_condition(condition, "condition"))
        return self

    def when_not_matched_by_source_delete(self: C, condition: str | None = None) -> C:
        """Target rows no source row matches are deleted (when ``condition`` over the target's
        columns holds; it also prunes the partitions read)."""
        self._by_source.append(_condition(condition, "condition"))
        return self

    def _args(self, keep_last_by: str | None = None) -> _native._Clauses:
        """The clauses as the extension takes them."""
        return (self._on, self._matched, self._not_matched, self._by_source, keep_last_by)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(on={self._on!r}, matched={len(self._matched)}, "
            f"not_matched={len(self._not_matched)}, by_source={len(self._by_source)})"
        )


class MergeInsertBuilder(MergeClauses):
    """The clauses of one merge, run in this process by :meth:`execute`."""

    def __init__(self, ns: PartitionedNamespace, on: str | Sequence[str]) -> None:
        super().__init__(on)
        self._ns = ns

    def explain(self, source: Any) -> MergePlan:
        """What :meth:`execute` with ``source`` would read on the latest version, and why,
        without reading a partition or writing anything: the partitions it would read
        (``read``), how many pruning skips (``skipped``) and, per spec version, how they
        were chosen (``matching``). The source and clauses are checked as ``execute`` checks
        them (a duplicate key raises ``DuplicateKeyError`` here too)."""
        return self._ns._ns.explain_merge(arrow_stream(source), self._args())

    def execute(
        self,
        source: Any,
        *,
        transaction_mode: TransactionMode | None = None,
        concurrency: int | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        max_buffer_bytes: int = WRITE_BUFFER_BYTES,
        lineage_job: Job = None,
        write_id: str | None = None,
        _keep_last_by: str | None = None,
    ) -> MergeResult:
        """Runs the merge with ``source`` (any Arrow data or stream, or an iterable of
        RecordBatches; held in memory while the merge runs) and returns what it did.

        In strong mode (the default) nothing is visible until one atomic manifest commit;
        when a concurrent commit changes a partition the merge read, the merge runs again on
        the new versions (up to ``max_attempts`` runs, then ``CommitConflictError``). Two
        source rows with one key raise ``DuplicateKeyError``. ``write_id`` (strong mode)
        makes the merge happen once: a merge under an id the manifest records already
        changes nothing (``already_committed``), as a stream's replayed micro-batch must.
        """
        ns = self._ns
        strong, concurrency = change_args(
            ns.root, transaction_mode, concurrency, max_attempts, max_buffer_bytes
        )
        with operation("merge", lineage_job, outputs=ns._lineage_outputs) as scope:
            result = ns._ns.merge_insert(
                arrow_stream(source),
                self._args(_keep_last_by),
                strong=strong,
                concurrency=concurrency,
                max_attempts=max_attempts,
                max_buffer_bytes=max_buffer_bytes,
                write_id=write_id_arg(write_id),
            )
            _report(ns, scope, result)
        return result
