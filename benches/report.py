"""Shared by the benches: replace a marked section of BENCHMARKS.md with fresh results."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


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
