"""A model of the compaction after a write, for choosing its ratio (issue 35): how many rows a
stream's micro-batches make it rewrite, and how many extra fragments it leaves.

One partition takes ``--commits`` micro-batches of ``--rows`` rows; after each, when the
partition holds more than ``ceil(rows / target) + --limit`` fragments, it is compacted: either
every fragment under the target (``optimize()``'s rule, "all"), or the newest run in which each
older fragment holds at most ``ratio`` times the rows of the newer ones in the run (the rule of
``rust/core/src/ns/txn/compaction_tiers.rs``; a run of one compacts everything). A run's rows
become files of ``--target`` rows. No I/O: rows rewritten stand for the compaction's cost.

    python benches/compaction_tiers_model.py [--commits 10000] [--rows 1000] [--limit 32]
        [--target 1000000] [--window 100] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from report import update_section


def run_of(sizes: list[int], target: int, ratio: float | None) -> list[int]:
    """Positions of the fragments a compaction rewrites (``ratio`` None: every small one)."""
    if ratio is None:
        return [i for i, n in enumerate(sizes) if n < target]
    newer, run = 0, []
    for i in range(len(sizes) - 1, -1, -1):
        if sizes[i] >= target or (run and sizes[i] > ratio * newer):
            break
        newer += sizes[i]
        run.append(i)
    if len(run) < 2:
        return [i for i, n in enumerate(sizes) if n < target]
    return sorted(run)


def simulate(args: argparse.Namespace, ratio: float | None) -> dict[str, float]:
    sizes: list[int] = []
    costs: list[int] = []
    extra_after: list[int] = []
    for _ in range(args.commits):
        sizes.append(args.rows)
        needed = -(-sum(sizes) // args.target)
        cost = 0
        if len(sizes) > needed + args.limit:
            run = run_of(sizes, args.target, ratio)
            if len(run) >= 2:
                rows = sum(sizes[i] for i in run)
                cost = rows
                files = [args.target] * (rows // args.target) + [rows % args.target] * (
                    rows % args.target > 0
                )
                kept = [n for i, n in enumerate(sizes) if i not in set(run)]
                sizes = kept[: run[0]] + files + kept[run[0] :]
                extra_after.append(len(sizes) - -(-sum(sizes) // args.target))
        costs.append(cost)
    windows = [sorted(costs[s : s + args.window]) for s in range(0, len(costs), args.window)]
    return {
        "rewritten": sum(costs),
        "compactions": sum(1 for c in costs if c),
        "largest": max(costs),
        "second": statistics.mean(w[-2] for w in windows if len(w) > 1),
        "extra": max(extra_after, default=0),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--commits", type=int, default=10_000)
    ap.add_argument("--rows", type=int, default=1_000)
    ap.add_argument("--limit", type=int, default=32)
    ap.add_argument("--target", type=int, default=1_000_000)
    ap.add_argument("--window", type=int, default=100)
    ap.add_argument("--write", type=Path)
    args = ap.parse_args()
    lines = [
        f"`python benches/compaction_tiers_model.py --commits {args.commits} --rows {args.rows} "
        f"--limit {args.limit} --target {args.target} --window {args.window}` (a model, no I/O: "
        "the rows each rule rewrites when one partition takes a stream's micro-batches; the "
        "compaction after a write uses tiers of ratio 2):",
        "",
        "| rule | rows rewritten | compactions | largest rewrite | second-largest per window "
        "(mean) | extra fragments after a compaction (max) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for ratio in (None, 4.0, 2.0, 1.0):
        got = simulate(args, ratio)
        name = "every small fragment" if ratio is None else f"tiers, ratio {ratio:g}"
        lines.append(
            f"| {name} | {got['rewritten']:,.0f} | {got['compactions']:,.0f} "
            f"| {got['largest']:,.0f} | {got['second']:,.0f} | {got['extra']:.0f} |"
        )
    text = "\n".join(lines)
    print(text)
    if args.write:
        update_section(args.write, "compaction-tiers", text, "## Compaction after writes: tiers")


if __name__ == "__main__":
    main()
