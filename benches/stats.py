"""Metadata at scale: ``stats()``, ``partitions()`` and the CLI's ``info`` and ``partitions``
on a namespace of ``--partitions`` partitions (default 100k), against reading the same
statistics leaf by leaf with pylance, in one run.

Data: a strong-mode namespace with one identity field and two rows per partition (the
metadata, not the data, is what is measured).

- ours: each call in a fresh Python process (``cold``: nothing cached in the process; the
  OS page cache is warm), from opening the namespace to the answer; the CLI commands as
  subprocesses, interpreter start included;
- pylance: ``lance.dataset(leaf, version=read_version)`` for every partition listed by the
  manifest (16 threads), then its row count, fragments, data files and their sizes from
  the fragment metadata: what reading statistics costs without the totals every commit of
  ours records (and what ``stats()`` itself did before it read them).

The best of ``--repeat`` runs of each is reported.

    python benches/stats.py [--partitions P] [--repeat R] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from report import update_section

import lance_partitioned as lp

CLI = str(Path(sys.executable).with_name("lance-partitioned"))

OURS = {
    "stats()": "ns.stats()",
    "partitions() with rows": "ns.partitions()",
    "partitions(with_rows=False)": "ns.partitions(with_rows=False)",
}


def build(root: Path, partitions: int) -> float:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("k", pa.int64())])
    spec = lp.PartitionSpec([lp.PartitionField("k", source="k", transform=lp.Identity())])
    ns = lp.PartitionedNamespace.create(str(root), schema, spec)
    ids = np.arange(partitions * 2)
    t0 = time.perf_counter()
    ns.write(pa.table({"id": ids, "k": ids % partitions}), max_new_partitions=None)
    return time.perf_counter() - t0


def python_call(root: Path, expr: str) -> tuple[float, int]:
    """Seconds from opening the namespace to the answer of ``expr``, in a fresh process."""
    code = (
        "import sys, time, lance_partitioned as lp\n"
        "t0 = time.perf_counter()\n"
        f"ns = lp.PartitionedNamespace.open({str(root)!r})\n"
        f"r = {expr}\n"
        "print(time.perf_counter() - t0, r.num_rows)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout.split()
    return float(out[0]), int(out[1])


def cli_call(root: Path, *args: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([CLI, *args, str(root)], check=True, capture_output=True)
    return time.perf_counter() - t0


def pylance_stats(root: Path) -> tuple[float, int]:
    """Every leaf opened by pylance at its read version; rows, fragments, files, bytes."""
    import lance

    parts = lp.PartitionedNamespace.open(str(root)).partitions(with_rows=False)
    t0 = time.perf_counter()
    leaves = list(
        zip(parts["location"].to_pylist(), parts["read_version"].to_pylist(), strict=True)
    )

    def one(leaf: tuple[str, int]) -> tuple[int, int, int, int]:
        ds = lance.dataset(str(root / leaf[0]), version=leaf[1])
        frags = ds.get_fragments()
        files = [f for fr in frags for f in fr.metadata.files]
        size = sum(int(f.file_size_bytes or 0) for f in files)
        return ds.count_rows(), len(frags), len(files), size

    with ThreadPoolExecutor(16) as pool:
        totals = list(pool.map(one, leaves))
    return time.perf_counter() - t0, len(totals)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write", type=str, default=None)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lp-stats-bench-"))
    try:
        root = work / "ns"
        built = build(root, args.partitions)
        print(f"wrote {args.partitions} partitions in {built:.1f} s", flush=True)
        results: dict[str, Any] = {}
        for label, expr in OURS.items():
            runs = [python_call(root, expr) for _ in range(args.repeat)]
            assert all(n == args.partitions for _, n in runs), runs
            results[label] = min(t for t, _ in runs)
            print(label, results[label], flush=True)
        for cmd in ("info", "partitions"):
            results[f"CLI {cmd}"] = min(cli_call(root, cmd) for _ in range(args.repeat))
            print(cmd, results[f"CLI {cmd}"], flush=True)
        peer_runs = [pylance_stats(root) for _ in range(args.repeat)]
        assert all(n == args.partitions for _, n in peer_runs)
        peer = min(t for t, _ in peer_runs)
        print("pylance", peer, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ours = results["stats()"]
    text = "\n".join(
        [
            f"`python benches/stats.py --partitions {args.partitions} --repeat {args.repeat}` "
            f"(strong mode, one identity field, {args.partitions:,} partitions; each call in a "
            "fresh process, timed from opening the namespace; best of "
            f"{args.repeat}):",
            "",
            "| call | s | goal |",
            "|---|---:|---|",
            f"| `ns.stats()` | {results['stats()']:.3f} | < 2 s |",
            f"| `ns.partitions()` (with rows) | {results['partitions() with rows']:.3f} | < 1 s |",
            f"| `ns.partitions(with_rows=False)` | "
            f"{results['partitions(with_rows=False)']:.3f} | |",
            f"| `lance-partitioned info` (whole process) | {results['CLI info']:.3f} | < 1 s |",
            f"| `lance-partitioned partitions` (whole process) | "
            f"{results['CLI partitions']:.3f} | < 1 s |",
            f"| pylance: every leaf opened at its read version (16 threads) | {peer:.3f} | |",
            "",
            f"`ns.stats()` is {peer / ours:.0f}x faster than opening the leaves with pylance: "
            "every commit records the totals of the leaf version it makes in that version's "
            "`table_version` row, so the statistics of any manifest version are one scan of "
            "the manifest's `metadata` column.",
        ]
    )
    print(text)
    if args.write:
        update_section(Path(args.write), "stats", text, "## Metadata at scale: stats()")


if __name__ == "__main__":
    main()
