"""What recording column statistics costs an ingest: the same write with the namespace property
``lance_partitioned.column_stats`` on and off, alternating in one run.

Each round writes the synthetic events (``events.py``: date/country/bucket partitions, ten
columns of ints, floats, strings and timestamps) into a fresh namespace once with statistics
and once without, each in a fresh process (``cells.py``: first call, then best of
``--repeat``; the file system synced before each call, so one call's write-back does not
land on the next), so drift of a shared machine lands on both alike. The table reports the median
over the rounds of each side's best and first call, its CPU seconds per write (every thread of
the process: the work statistics add, steadier than wall time on a shared machine), and
on/off (the goal: at most 1.05).

    python benches/stats_cost.py --rows 5000000 --rounds 5 --write BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ingest
from cells import Cell, measure
from report import update_section
from scratch import scratch

KEY = "lance_partitioned.column_stats"


def _write(enabled: bool) -> Callable[..., Any]:
    """``ingest.py``'s case of our write, into a namespace with statistics on or off."""
    props = {KEY: "true" if enabled else "false"}
    return lambda rows, work: ingest.ours(rows, work, props)


CASES: dict[str, Callable[..., Any]] = {"on": _write(True), "off": _write(False)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write", type=Path, default=None)
    args = ap.parse_args()
    work = scratch("lp-stats-cost-")
    got: dict[str, list[Cell]] = {"on": [], "off": []}
    for r in range(args.rounds):
        print(f"round {r + 1}/{args.rounds}", flush=True)
        for side in ("on", "off"):
            params = {"rows": args.rows, "work": str(work)}
            got[side].append(measure("stats_cost", side, params, args.repeat, sync=True))

    def written(c: Cell) -> tuple[int, int]:
        a = json.loads(c.answer)
        return a["rows"], a["partitions"]

    answers = {written(c) for cells in got.values() for c in cells}
    if len(answers) != 1:
        raise SystemExit(f"the two sides wrote different data: {answers}")
    size = {side: json.loads(got[side][-1].answer)["bytes"] for side in got}

    def med(side: str, pick: Callable[[Cell], float]) -> float:
        return statistics.median(pick(c) for c in got[side])

    lines = [
        f"{args.rows:,} synthetic events into a fresh namespace, {args.rounds} alternating "
        f"rounds, each side a fresh process per round (first call, then best of "
        f"{args.repeat}); medians over the rounds.",
        "",
        "| column statistics | first call s | best s | CPU s per write | peak MiB "
        "| bytes written |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for side in ("on", "off"):
        lines.append(
            f"| {side} | {med(side, lambda c: c.first):.3f} | {med(side, lambda c: c.best):.3f}"
            f" | {med(side, lambda c: c.cpu):.3f} | {med(side, lambda c: c.peak_mib):.0f}"
            f" | {size[side]:,} |"
        )
    best = med("on", lambda c: c.best) / med("off", lambda c: c.best)
    first = med("on", lambda c: c.first) / med("off", lambda c: c.first)
    cpu = med("on", lambda c: c.cpu) / med("off", lambda c: c.cpu)
    lines += [
        "",
        f"on/off: **{best:.3f}** (best), {first:.3f} (first call), {cpu:.3f} (CPU seconds of "
        "the process per write, every thread: the work statistics add, which a shared "
        "machine's disk and neighbours do not blur); the goal is at most 1.05. "
        f"Command: `python benches/stats_cost.py --rows {args.rows} --rounds {args.rounds} "
        f"--repeat {args.repeat}`.",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        update_section(args.write, "column-stats-cost", text, "## Column statistics: ingest cost")


if __name__ == "__main__":
    main()
