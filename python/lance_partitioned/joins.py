"""Storage-partitioned joins: which leaves of two namespaces join only each other, and the
join itself, group by group.

:func:`join_plan` reads both partition specs (every version that still has partitions) and
groups the leaves so that two rows with equal join keys always fall in the same group; see
docs/join.md for the rules (same transforms, bucket counts where one divides the other, the
time hierarchy, identity against anything) and what makes a plan fall back. :func:`join` runs
the groups in Rust and streams the result: a group whose smaller side has unique keys in one
integer-backed key column joins in our own kernel, any other group in DataFusion's hash join.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lance_partitioned import _native
from lance_partitioned._arguments import typed_api
from lance_partitioned.exceptions import InvalidArgumentError
from lance_partitioned.namespace import PartitionedNamespace, Snapshot

if TYPE_CHECKING:
    from typing import TypeAlias

Side: TypeAlias = "PartitionedNamespace | Snapshot"
On: TypeAlias = "str | Sequence[str | tuple[str, str]]"
JoinFilter: TypeAlias = "str | tuple[str | None, str | None] | None"

HOW = ("inner", "left", "right", "full", "semi", "anti")
JOIN_BATCH_ROWS = 65_536
"""Rows per batch of a join's reads and output by default (fewer, larger batches cross into
pyarrow than with DataFusion's 8,192)."""

__all__ = ["HOW", "JOIN_BATCH_ROWS", "JoinGroup", "JoinPlan", "join", "join_plan"]


@dataclass(frozen=True)
class JoinGroup:
    """Leaves that join only each other: ``key`` holds the shared components in their string
    form (``None`` for a NULL key: such a group has one side empty, its rows never match)."""

    key: tuple[str | None, ...]
    left: tuple[str, ...]
    right: tuple[str, ...]


@dataclass(frozen=True)
class JoinPlan:
    """The plan of a storage-partitioned join of two namespace snapshots."""

    compatible: bool
    reason: str | None
    components: tuple[str, ...]
    groups: tuple[JoinGroup, ...] = field(default=())
    left_version: int = 0
    right_version: int = 0

    def explain(self) -> str:
        """The plan in a few lines: how keys align, group counts, the largest group, skew."""
        if not self.compatible:
            return f"storage-partitioned join: not possible ({self.reason})"
        sizes = [len(g.left) + len(g.right) for g in self.groups]
        both = sum(1 for g in self.groups if g.left and g.right)
        lines = [
            f"storage-partitioned join at manifest versions {self.left_version} (left) and "
            f"{self.right_version} (right)",
            f"  aligned by: {'; '.join(self.components)}",
            f"  groups: {len(self.groups)} ({both} with both sides, "
            f"{sum(1 for g in self.groups if g.left and not g.right)} left only, "
            f"{sum(1 for g in self.groups if g.right and not g.left)} right only)",
        ]
        if sizes:
            largest = max(range(len(sizes)), key=sizes.__getitem__)
            g = self.groups[largest]
            median = statistics.median(sizes)
            lines.append(
                f"  leaves per group: max {sizes[largest]} (key {list(g.key)}: {len(g.left)} "
                f"left, {len(g.right)} right), median {median:g}, skew (max/median) "
                f"{sizes[largest] / median:.2f}"
            )
        return "\n".join(lines)


def _snapshot(side: Side, name: str) -> Snapshot:
    if isinstance(side, PartitionedNamespace):
        return side.snapshot()
    if isinstance(side, Snapshot):
        return side
    raise InvalidArgumentError(
        f"{name} must be a PartitionedNamespace or a Snapshot, not {type(side).__name__}"
    )


def key_pairs(on: On) -> list[tuple[str, str]]:
    items: Sequence[str | tuple[str, str]] = [on] if isinstance(on, str) else on
    pairs = []
    for item in items:
        if isinstance(item, str):
            pairs.append((item, item))
        elif isinstance(item, tuple) and len(item) == 2 and all(isinstance(c, str) for c in item):
            pairs.append((item[0], item[1]))
        else:
            raise InvalidArgumentError(
                f"on: expected a column name or a (left, right) pair of names, got {item!r}"
            )
    if not pairs:
        raise InvalidArgumentError("on: a join needs at least one key")
    return pairs


@typed_api
def join_plan(left: Side, right: Side, on: On) -> JoinPlan:
    """Plans the storage-partitioned join of ``left`` and ``right`` (namespaces, read at their
    latest versions, or snapshots) on equal keys: ``on="id"``, ``on=["a", "b"]`` or
    ``on=[("customer_id", "id")]``.

    Raises ``InvalidArgumentError`` for unknown columns or key types that differ; a plan that
    cannot align the partitions is returned with ``compatible=False`` and the reason."""
    pairs = key_pairs(on)
    ls, rs = _snapshot(left, "left"), _snapshot(right, "right")
    compatible, reason, components, groups = _native.join_plan(ls._s, rs._s, pairs)
    return JoinPlan(
        compatible=compatible,
        reason=reason,
        components=tuple(components),
        groups=tuple(JoinGroup(tuple(k), tuple(lg), tuple(rg)) for k, lg, rg in groups),
        left_version=ls.version,
        right_version=rs.version,
    )


def side_filters(filter: JoinFilter) -> tuple[str | None, str | None, str | None]:
    """``filter`` as (filter of every side that has its columns, left filter, right filter)."""
    if filter is None or isinstance(filter, str):
        return filter, None, None
    if (
        isinstance(filter, tuple)
        and len(filter) == 2
        and all(f is None or isinstance(f, str) for f in filter)
    ):
        return None, filter[0], filter[1]
    raise InvalidArgumentError(
        f"filter: expected SQL text or a (left, right) pair of SQL texts, got {filter!r}"
    )


def join_args(
    on: On,
    how: str = "inner",
    *,
    columns: Sequence[str] | None = None,
    filter: JoinFilter = None,
    allow_shuffle: bool = False,
    right_suffix: str = "_right",
    batch_size: int | None = JOIN_BATCH_ROWS,
) -> dict[str, Any]:
    """The checked arguments of a join, as ``_native.join_prepare`` takes them after the two
    snapshots (shared by :func:`join` and ``lance_partitioned.spark.join``, whose tasks
    prepare the same join again)."""
    if how not in HOW:
        raise InvalidArgumentError(f"how: {how!r} is not one of {', '.join(HOW)}")
    common, lf, rf = side_filters(filter)
    return {
        "on": key_pairs(on),
        "how": how,
        "columns": list(columns) if columns is not None else None,
        "filter": common,
        "left_filter": lf,
        "right_filter": rf,
        "right_suffix": right_suffix,
        "batch_size": batch_size,
        "allow_shuffle": allow_shuffle,
    }


def prepare(left: Side, right: Side, args: dict[str, Any]) -> _native.Join:
    """The prepared join of two namespaces or snapshots with :func:`join_args`."""
    ls, rs = _snapshot(left, "left"), _snapshot(right, "right")
    return _native.join_prepare(ls._s, rs._s, **args)


@typed_api
def join(
    left: Side,
    right: Side,
    on: On,
    how: str = "inner",
    *,
    columns: Sequence[str] | None = None,
    filter: JoinFilter = None,
    threads: int | None = None,
    allow_shuffle: bool = False,
    right_suffix: str = "_right",
    batch_size: int | None = JOIN_BATCH_ROWS,
) -> pa.RecordBatchReader:
    """Joins two namespaces (at their latest versions) or snapshots partition by partition
    and streams the result.

    ``how``: ``inner``, ``left``, ``right``, ``full``, ``semi`` or ``anti``. The output follows
    pyarrow's ``Table.join(..., coalesce_keys=True, right_suffix=right_suffix)``: key columns
    once (the left ones; the right ones for ``right``; merged for ``full``), then the right
    non-key columns, a name that clashes with a left column getting ``right_suffix``; ``semi``
    and ``anti`` return left columns. ``columns`` picks output columns by those names (only
    what they need is read).

    ``filter`` (SQL, DataFusion dialect) filters the rows of each side that has its columns,
    before the join, and prunes that side's partitions; ``(left_sql, right_sql)`` gives each
    side its own (either may be None).

    Each group of :func:`join_plan` is read (columns and filter pushed into Lance) and joined
    in Rust, building on its smaller side: by our own kernel when that side's keys are unique
    and there is one key of an integer-backed type (integers, dates, times, timestamps,
    durations), otherwise by DataFusion's hash join (the same rows either way). ``threads``
    groups run at once (default: twice the number of cores, so that one group's reading
    overlaps another's joining), so memory is bounded by the largest groups, not the tables.
    ``batch_size`` is the rows per batch read and produced (default :data:`JOIN_BATCH_ROWS`).
    A plan whose partitions do not align raises ``IncompatibleJoinError`` unless
    ``allow_shuffle=True``, which joins everything the filters keep as one group.
    """
    args = join_args(
        on,
        how,
        columns=columns,
        filter=filter,
        allow_shuffle=allow_shuffle,
        right_suffix=right_suffix,
        batch_size=batch_size,
    )
    if threads is not None and threads < 1:
        raise InvalidArgumentError(f"threads must be at least 1, got {threads}")
    prepared = prepare(left, right, args)
    prepared.start(threads or 2 * (os.cpu_count() or 1))
    return pa.RecordBatchReader.from_batches(prepared.schema, prepared)
