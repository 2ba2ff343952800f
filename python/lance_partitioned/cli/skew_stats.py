"""Skew statistics of partition sizes (pure functions, no I/O): the Gini coefficient, the
max/median ratio, and a summary of rows and bytes per partition."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["Summary", "gini", "max_median_ratio", "summarize"]


def gini(values: Sequence[float]) -> float:
    """The Gini coefficient of non-negative ``values``: 0 when all are equal, ``(n-1)/n`` when
    one holds everything (the most unequal ``n`` values can be); 0 for no values or a zero
    total. Computed on the sorted values: ``2 * sum(i * x_i) / (n * sum(x)) - (n + 1) / n``
    with ``i`` from 1."""
    n = len(values)
    if n == 0:
        return 0.0
    xs = sorted(float(v) for v in values)
    if xs[0] < 0:
        raise ValueError("gini needs non-negative values")
    total = sum(xs)
    if total == 0:
        return 0.0
    weighted = sum(i * x for i, x in enumerate(xs, start=1))
    return max(0.0, 2.0 * weighted / (n * total) - (n + 1) / n)


def max_median_ratio(values: Sequence[float]) -> float | None:
    """``max / median`` (1 when all are equal); None for no values or a zero median."""
    if not values:
        return None
    median = statistics.median(values)
    if median == 0:
        return None
    return float(max(values)) / float(median)


@dataclass(frozen=True)
class Summary:
    """Sizes of a set of partitions."""

    count: int
    total: float
    min: float
    median: float
    mean: float
    max: float
    max_median: float | None
    gini: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize(values: Sequence[float]) -> Summary:
    """The :class:`Summary` of ``values`` (all zero for none)."""
    if not values:
        return Summary(0, 0, 0, 0, 0, 0, None, 0.0)
    return Summary(
        count=len(values),
        total=sum(values),
        min=min(values),
        median=statistics.median(values),
        mean=statistics.fmean(values),
        max=max(values),
        max_median=max_median_ratio(values),
        gini=gini(values),
    )
