"""Metadata at scale: ``stats()``, ``partitions()`` and the CLI's ``info`` and ``partitions``
on a namespace of ``--partitions`` partitions (default 100k), against reading the same
statistics leaf by leaf with pylance, in one run.

Data: a strong-mode namespace with one identity field and two rows per partition (the
metadata, not the data, is what is measured).

- ours: from opening the namespace to the answer; the CLI commands as subprocesses,
  interpreter start included;
- pylance: ``lance.dataset(leaf, version=read_version)`` for every partition listed by the
  manifest (16 threads), then its row count, fragments, data files and their sizes from
  the fragment metadata: what reading statistics costs without the totals every commit of
  ours records (and what ``stats()`` itself did before it read them).

Each is a cell (``cells.py``): a fresh process, the first call (nothing cached in the
process; the OS page cache is warm) and the best of ``--repeat``, peak RSS.

    python benches/stats.py [--partitions P] [--repeat R] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import limits
import numpy as np
import pyarrow as pa
from cells import measure
from report import CELL_HEADER, cell_columns, ratio, share, update_section
from scratch import discard, scratch

import lance_partitioned as lp

CLI = str(Path(sys.executable).with_name("lance-partitioned"))


def build(root: Path, partitions: int) -> float:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("k", pa.int64())])
    spec = lp.PartitionSpec([lp.PartitionField("k", source="k", transform=lp.Identity())])
    ns = lp.PartitionedNamespace.create(str(root), schema, spec)
    ids = np.arange(partitions * 2)
    t0 = time.perf_counter()
    ns.write(pa.table({"id": ids, "k": ids % partitions}), max_new_partitions=None)
    return time.perf_counter() - t0


CALLS: dict[str, Callable[[lp.PartitionedNamespace], pa.Table]] = {
    "stats": lambda ns: ns.stats(),
    "partitions": lambda ns: ns.partitions(),
    "partitions_no_rows": lambda ns: ns.partitions(with_rows=False),
}


def ours(root: str, call: str) -> Callable[[], int]:
    def run() -> int:
        n: int = CALLS[call](lp.PartitionedNamespace.open(root)).num_rows
        return n

    return run


def cli(root: str, command: str) -> Callable[[], int]:
    def run() -> int:
        out = subprocess.run([CLI, command, root], check=True, capture_output=True)
        return len(out.stdout)

    return run


def pylance(root: str) -> Callable[[], int]:
    """Every leaf opened by pylance at its read version; rows, fragments, files, bytes."""
    import lance

    def run() -> int:
        parts = lp.PartitionedNamespace.open(root).partitions(with_rows=False)
        leaves = list(
            zip(parts["location"].to_pylist(), parts["read_version"].to_pylist(), strict=True)
        )

        def one(leaf: tuple[str, int]) -> tuple[int, int, int, int]:
            ds = lance.dataset(f"{root}/{leaf[0]}", version=leaf[1])
            frags = ds.get_fragments()
            files = [f for fr in frags for f in fr.metadata.files]
            size = sum(int(f.file_size_bytes or 0) for f in files)
            return ds.count_rows(), len(frags), len(files), size

        with ThreadPoolExecutor(16) as pool:
            return len(list(pool.map(one, leaves)))

    return run


CASES = {"ours": ours, "cli": cli, "pylance": pylance}
ROWS: list[tuple[str, str, dict[str, str], str]] = [
    ("`ns.stats()`", "ours", {"call": "stats"}, "< 2 s"),
    ("`ns.partitions()` (with rows)", "ours", {"call": "partitions"}, "< 1 s"),
    ("`ns.partitions(with_rows=False)`", "ours", {"call": "partitions_no_rows"}, ""),
    ("`lance-partitioned info` (whole process)", "cli", {"command": "info"}, "< 0.5 s"),
    ("`lance-partitioned partitions` (whole process)", "cli", {"command": "partitions"}, "< 1 s"),
    ("pylance: every leaf opened at its read version (16 threads)", "pylance", {}, ""),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write", type=str, default=None)
    args = ap.parse_args()
    work = scratch("lp-stats-bench-")
    try:
        root = work / "ns"
        built = build(root, args.partitions)
        print(f"wrote {args.partitions} partitions in {built:.1f} s", flush=True)
        data = root / "__manifest" / "data"
        manifest_bytes = sum(f.stat().st_size for f in data.rglob("*") if f.is_file())
        # Opening every leaf with pylance takes a minute at 100k partitions: one repeat.
        cells = [
            measure(
                "stats",
                case,
                {"root": str(root), **params},
                1 if case == "pylance" else args.repeat,
            )
            for _, case, params, _ in ROWS
        ]
    finally:
        discard(work)
    counted = {
        int(c.answer) for c, (_, case, _, _) in zip(cells, ROWS, strict=True) if case != "cli"
    }
    if counted != {args.partitions}:
        raise SystemExit(f"the calls counted different partitions: {counted}")
    lines = [
        f"`python benches/stats.py --partitions {args.partitions} --repeat {args.repeat}` "
        f"(strong mode, one identity field, {args.partitions:,} partitions, written in "
        f"{built:.1f} s, {manifest_bytes / 1e6:.1f} MB of manifest data files; timed from "
        "opening the namespace):",
        "",
        f"| call | {CELL_HEADER} | goal (first call) | share of limit | ours (`stats()`) vs this |",
        "|---|---:|---:|---:|---|---:|---:|",
    ]
    # The limit: the manifest's data files read once at the one-core copy bandwidth.
    at_limit = manifest_bytes / (limits.current()["copy_1_gbps"] / 2 * 1e9)
    for (label, _, _, goal), c in zip(ROWS, cells, strict=True):
        lines.append(
            f"| {label} | {cell_columns(c)} | {goal} | {share(at_limit, c.best)} "
            f"| {ratio(c, cells[0])} |"
        )
    text = "\n".join(lines)
    print(text)
    if args.write:
        update_section(Path(args.write), "stats", text, "## Metadata at scale: stats()")


if __name__ == "__main__":
    main()
