"""What the safety checks of a commit cost a small write (issue 31).

Every write's commit now lists the cleanup marks, checks for a cleanup fence on the manifest
it commits onto, and, when a cleanup started since the write began, checks that every file and
leaf version it points at still exists. This bench times a small append (1,000 rows into 4 of
16 existing partitions) in four settings, alternating, best of N and median:

- ours, strong mode, no cleanup running (the marks listing and the in-memory fence check);
- ours, strong mode, while another thread runs ``cleanup(older_than=1 day)`` in a loop (each
  cleanup leaves a mark, so most commits verify their files);
- ours, weak mode, idle and with the cleanup loop;
- pylance: ``lance.write_dataset(mode="append")`` of the same rows into one dataset (the
  floor: one Lance commit, no partitions, no checks).

The first write of a fresh process is timed in a subprocess, beside the warm numbers.

    python benches/commit_cost.py [--repeat 30] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import lance
import pyarrow as pa
from report import update_section

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


FIRST = """
import sys, time, pyarrow as pa
t0 = time.perf_counter()
import lance_partitioned as lp
ns = lp.PartitionedNamespace.open(sys.argv[1])
ids = list(range(10_000_000, 10_001_000))
ns.write(pa.table({"id": pa.array(ids, pa.int64()), "p": pa.array([i % 4 for i in ids])}))
print(time.perf_counter() - t0)
"""


def first_call(root: Path) -> float:
    out = subprocess.run(
        [sys.executable, "-c", FIRST, str(root)], capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip())


def timed(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--write", type=Path)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lp-commit-"))
    try:
        strong = namespace(work / "strong", "strong")
        weak = namespace(work / "weak", "weak")
        peer = work / "peer.lance"
        lance.write_dataset(batch(0, 16_000, 16), str(peer))
        counter = iter(range(1_000_000, 10**9, 1_000))

        def ours(ns: lp.PartitionedNamespace) -> Callable[[], object]:
            return lambda: ns.write(batch(next(counter), 1_000, 4))

        def pylance() -> object:
            return lance.write_dataset(batch(next(counter), 1_000, 4), str(peer), mode="append")

        idle = timed({"strong": ours(strong), "weak": ours(weak), "pylance": pylance}, args.repeat)
        with CleanupLoop(strong.root) as c1, CleanupLoop(weak.root) as c2:
            busy = timed({"strong": ours(strong), "weak": ours(weak)}, args.repeat)
            cleanups = c1.runs + c2.runs
        first = first_call(work / "strong")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    floor = statistics.median(idle["pylance"])
    rows = [
        ("ours, strong, no cleanup", idle["strong"]),
        ("ours, strong, cleanup looping", busy["strong"]),
        ("ours, weak, no cleanup", idle["weak"]),
        ("ours, weak, cleanup looping", busy["weak"]),
        ("pylance append, one dataset (floor)", idle["pylance"]),
    ]
    lines = [
        f"`python benches/commit_cost.py --repeat {args.repeat}` (1,000 rows into 4 of 16 "
        f"existing partitions; alternating; {cleanups} cleanups ran during the looping rows; "
        f"first write of a fresh process, import included: {first * 1000:.0f} ms):",
        "",
        "| write | best ms | median ms | median vs pylance |",
        "|---|---:|---:|---:|",
    ]
    for name, t in rows:
        med = statistics.median(t)
        lines.append(f"| {name} | {min(t) * 1000:.1f} | {med * 1000:.1f} | {med / floor:.2f}x |")
    text = "\n".join(lines)
    print(text)
    if args.write:
        update_section(args.write, "commit-cost", text, "## Commit safety checks: cost")


if __name__ == "__main__":
    main()
