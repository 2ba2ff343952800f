"""What the safety checks of a commit cost a small write (issue 31).

Every write's commit now lists the cleanup marks, checks for a cleanup fence on the manifest
it commits onto, and, when a cleanup started since the write began, checks that every file and
leaf version it points at still exists. This bench times a small append (1,000 rows into 4 of
16 existing partitions) in four settings:

- ours, strong mode, no cleanup running (the marks listing and the in-memory fence check);
- ours, strong mode, while another thread runs ``cleanup(older_than=1 day)`` in a loop (each
  cleanup leaves a mark, so most commits verify their files);
- ours, weak mode, idle and with the cleanup loop;
- pylance: ``lance.write_dataset(mode="append")`` of the same rows into one dataset (the
  floor: one Lance commit, no partitions, no checks).

Each setting is a cell (``cells.py``): a fresh process, the first write (what a job that
writes once pays) and the best and median of ``--repeat``, peak RSS.

    python benches/commit_cost.py [--repeat 30] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import threading
from itertools import count
from pathlib import Path
from typing import Any

import lance
import limits
import pyarrow as pa
from cells import measure
from report import CELL_HEADER, cell_columns, seconds, share, update_section
from scratch import discard, scratch

import lance_partitioned as lp

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("p", pa.int64())])
SPEC = lp.PartitionSpec([lp.PartitionField("p", source="p", transform=lp.Identity())])


def batch(start: int, n: int, parts: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": pa.array(ids, pa.int64()), "p": pa.array([i % parts for i in ids])})


def namespace(root: Path, mode: str) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(str(root), SCHEMA, SPEC, transaction_mode=mode)
    ns.write(batch(0, 16_000, 16))
    return ns


class CleanupLoop:
    """Runs ``cleanup(older_than=1 day)`` on ``root`` in a loop on a thread of its own."""

    def __init__(self, root: str) -> None:
        self.ns = lp.PartitionedNamespace.open(root)
        self.stop = threading.Event()
        self.runs = 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stop.is_set():
            self.ns.cleanup(older_than=dt.timedelta(days=1))
            self.runs += 1

    def __enter__(self) -> CleanupLoop:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def ours(root: str, cleanup: bool) -> Any:
    """Appends of 1,000 rows into 4 partitions; with ``cleanup``, a cleanup loop runs on a
    thread of the same process from before the first call to after the last. The answer: the
    cleanups that ran and the files one commit created."""
    ns = lp.PartitionedNamespace.open(root)
    counter = count(10_000_000, 1_000)
    before, calls = limits.tree_size(root)[0], count(1)
    loop = CleanupLoop(root).__enter__() if cleanup else None

    def run(_: None) -> int:
        next(calls)
        return int(ns.write(batch(next(counter), 1_000, 4)).rows)

    def answer(_: int) -> str:
        if loop is not None:
            loop.__exit__()
        made = (limits.tree_size(root)[0] - before) / (next(calls) - 1)
        return json.dumps({"cleanups": loop.runs if loop else 0, "files": made})

    return lambda: None, run, answer


def pylance(root: str) -> Any:
    counter = count(10_000_000, 1_000)
    before, calls = limits.tree_size(root)[0], count(1)

    def run(_: None) -> int:
        next(calls)
        lance.write_dataset(batch(next(counter), 1_000, 4), root, mode="append")
        return 1_000

    def answer(_: int) -> str:
        made = (limits.tree_size(root)[0] - before) / (next(calls) - 1)
        return json.dumps({"cleanups": 0, "files": made})

    return lambda: None, run, answer


CASES = {"ours": ours, "pylance": pylance}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--write", type=Path)
    args = ap.parse_args()
    work = scratch("lp-commit-")
    try:
        for mode in ("strong", "weak"):
            namespace(work / mode, mode)
        lance.write_dataset(batch(0, 16_000, 16), str(work / "peer.lance"))
        rows = {
            "ours, strong, no cleanup": ("ours", {"root": str(work / "strong"), "cleanup": False}),
            "ours, strong, cleanup looping": (
                "ours",
                {"root": str(work / "strong"), "cleanup": True},
            ),
            "ours, weak, no cleanup": ("ours", {"root": str(work / "weak"), "cleanup": False}),
            "ours, weak, cleanup looping": ("ours", {"root": str(work / "weak"), "cleanup": True}),
            "pylance append, one dataset (floor)": ("pylance", {"root": str(work / "peer.lance")}),
        }
        cells = {
            label: measure("commit_cost", case, params, args.repeat)
            for label, (case, params) in rows.items()
        }
    finally:
        discard(work)
    floor = cells["pylance append, one dataset (floor)"]
    lines = [
        f"`python benches/commit_cost.py --repeat {args.repeat}` (1,000 rows into 4 of 16 "
        "existing partitions; each row a fresh process; the cleanup loop runs on a thread of "
        "the writing process, cleanups counted; share of limit: the files one commit creates, "
        "each at the measured latency of creating a small file, over the median):",
        "",
        f"| write | {CELL_HEADER} | median s | cleanups | files per commit | share of limit "
        "| median vs pylance |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    per_file = limits.current()["small_file_ms"] / 1000
    for label, c in cells.items():
        got = json.loads(c.answer)
        cleanups = got["cleanups"] if "cleanup looping" in label else "-"
        lines.append(
            f"| {label} | {cell_columns(c)} | {seconds(c.median)} | {cleanups} "
            f"| {got['files']:.1f} | {share(got['files'] * per_file, c.median)} "
            f"| {c.median / floor.median:.2f}x |"
        )
    text = "\n".join(lines)
    print(text)
    if args.write:
        update_section(args.write, "commit-cost", text, "## Commit safety checks: cost")


if __name__ == "__main__":
    main()
