"""Shared by the benches: replace a marked section of BENCHMARKS.md with fresh results."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cells import Cell

# Where one run of the benches keeps what later benches of the run read (the measured limits).
RESULTS = Path(
    os.environ.get("LP_BENCH_RESULTS", Path.home() / ".cache" / "lance-partitioned" / "bench")
)

CELL_HEADER = "first call s | best s | peak RSS MiB"


def cell_columns(cell: Cell) -> str:
    """The columns every measured row shows: first call of a fresh process, best of the
    repeats, peak resident memory during the calls."""
    return f"{seconds(cell.first)} | {seconds(cell.best)} | {cell.peak_mib:.0f}"


def seconds(t: float) -> str:
    """Three significant digits, no exponent."""
    return f"{t:.3g}" if t >= 0.001 else f"{t:.6f}".rstrip("0")


def ratio(cell: Cell, ours: Cell) -> str:
    """Their best time over ours: above 1 means we are faster."""
    return "(ours)" if cell is ours else f"{cell.best / ours.best:.2f}x"


def share(seconds_at_limit: float, took: float) -> str:
    """How close an operation runs to the physical limit that bounds it: the time the limit
    allows for its bytes over the time it took."""
    pct = 100 * seconds_at_limit / took
    return f"{pct:.2g}%" if pct < 10 else f"{pct:.0f}%"


def best(fn: Callable[[], Any], repeat: int) -> float:
    """The shortest of ``repeat`` timed runs of ``fn``, in seconds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def best_alternating(fns: list[Callable[[], Any]], repeat: int) -> list[float]:
    """The shortest of ``repeat`` timed runs of each of ``fns``, run in turn (one of each per
    round), so that a slow phase of the machine hits all of them alike."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, t in zip(fns, times, strict=True):
            t0 = time.perf_counter()
            fn()
            t.append(time.perf_counter() - t0)
    return [min(t) for t in times]


def update_section(path: Path, name: str, text: str, heading: str) -> None:
    """Replaces the text between ``<!-- name:start -->`` and ``<!-- name:end -->`` in
    ``path`` with ``text``; appends ``heading`` and a new marked section if there is none."""
    doc = path.read_text() if path.exists() else ""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{text}\n{end}"
    if start in doc and end in doc:
        doc = doc[: doc.index(start)] + block + doc[doc.index(end) + len(end) :]
    else:
        doc += f"\n{heading}\n\n{block}\n"
    path.write_text(doc)
