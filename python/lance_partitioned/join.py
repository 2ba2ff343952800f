"""Storage-partitioned joins: which leaves of two namespaces join only each other.

:func:`join_plan` reads both partition specs (every version that still has partitions) and
groups the leaves so that two rows with equal join keys always fall in the same group; see
docs/join.md for the rules (same transforms, bucket counts where one divides the other, the
time hierarchy, identity against anything) and what makes a plan fall back.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lance_partitioned import _native
from lance_partitioned.exceptions import InvalidArgumentError
from lance_partitioned.namespace import PartitionedNamespace, Snapshot

if TYPE_CHECKING:
    from typing import TypeAlias

Side: TypeAlias = "PartitionedNamespace | Snapshot"
On: TypeAlias = "str | Sequence[str | tuple[str, str]]"

__all__ = ["JoinGroup", "JoinPlan", "join_plan"]


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


def _pairs(on: On) -> list[tuple[str, str]]:
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


def join_plan(left: Side, right: Side, on: On) -> JoinPlan:
    """Plans the storage-partitioned join of ``left`` and ``right`` (namespaces, read at their
    latest versions, or snapshots) on equal keys: ``on="id"``, ``on=["a", "b"]`` or
    ``on=[("customer_id", "id")]``.

    Raises ``InvalidArgumentError`` for unknown columns or key types that differ; a plan that
    cannot align the partitions is returned with ``compatible=False`` and the reason."""
    pairs = _pairs(on)
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
