"""What the manifest's fragment limit costs the commits of a stream (issue 35).

For each ``--limits`` value (``lance_partitioned.manifest.max_fragments``), a namespace of
``--partitions`` partitions takes ``--commits`` micro-batches of ``--rows`` rows into one
partition, committed as benches/stream_history.py commits them; the table gives the latency
of the last ``--window`` commits (every compaction after a commit is part of its commit) and
the most fragments the manifest held over them (pylance). One process, limits run one after
the other.

    python benches/manifest_limit.py [--partitions 10000] [--commits 2000] [--rows 1000]
        [--window 200] [--limits 8 16 32] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import lance
from report import update_section
from scratch import discard, scratch
from stream_history import commit_batch, create, quantile

KEY = "lance_partitioned.manifest.max_fragments"


def run_limit(args: argparse.Namespace, limit: int) -> str:
    work = scratch("lp-manifest-limit-")
    root = str(work / "ns")
    try:
        ns = create(root, args.partitions, 100, {KEY: str(limit)})
        latencies, most, errors = [], 0, []
        for batch in range(args.commits):
            latencies.append(commit_batch(ns, batch, args.rows, 0, errors)[0])
            if batch >= args.commits - args.window:
                frags = lance.dataset(str(Path(root) / "__manifest")).get_fragments()
                most = max(most, len(frags))
    finally:
        discard(work)
    last = latencies[-args.window :]
    stats = (
        statistics.mean(last),
        statistics.median(last),
        quantile(last, 90),
        quantile(last, 99),
    )
    ms = [1000 * x for x in stats]
    cells = " | ".join(f"{x:.1f}" for x in ms)
    return f"| {limit} | {cells} | {1000 * max(last):.1f} | {most} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--commits", type=int, default=2_000)
    ap.add_argument("--rows", type=int, default=1_000)
    ap.add_argument("--window", type=int, default=200)
    ap.add_argument("--limits", type=int, nargs="+", default=[8, 16, 32])
    ap.add_argument("--write", type=Path)
    args = ap.parse_args()
    lines = []
    for limit in args.limits:
        lines.append(run_limit(args, limit))
        print(lines[-1], flush=True)
    head = (
        f"`python benches/manifest_limit.py --partitions {args.partitions} --commits "
        f"{args.commits} --rows {args.rows} --window {args.window} --limits "
        f"{' '.join(map(str, args.limits))}` (micro-batches into one partition of "
        f"{args.partitions:,}, the last {args.window} commits, ms; the tiered compaction after "
        "a commit is part of it; the most fragments of `__manifest` over those commits):\n\n"
        "| max_fragments | mean | p50 | p90 | p99 | max | most fragments |\n"
        "|---:|---:|---:|---:|---:|---:|---:|"
    )
    text = "\n".join([head, *lines])
    print(text)
    if args.write:
        update_section(args.write, "manifest-limit", text, "## Manifest fragment limit")


if __name__ == "__main__":
    main()
