"""Regenerates BENCHMARKS.md from nothing, in one run: every bench of this directory, in order,
each writing its own section; the file is replaced only when every section was written.

    python benches/all.py [--quick] [--out BENCHMARKS.md]

``--quick`` runs every bench at a small size (minutes, for checking that they all run) and
writes to ``build/BENCHMARKS-quick.md`` unless ``--out`` says otherwise.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scratch import TRASH_ROOT, empty_trash

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# (section marker, heading, script, arguments of the full run, arguments of the quick run)
SECTIONS: list[tuple[str, str, str, list[str], list[str]]] = [
    ("limits", "## Machine and physical limits", "limits.py", [], []),
    ("criterion", "## Kernels under criterion (Rust, one core)", "criterion.py", [], ["--quick"]),
    (
        "kernels",
        "## Kernels against the alternatives (Python)",
        "kernels.py",
        ["--n", "10000000"],
        ["--n", "1000000", "--loop-n", "30000", "--repeat", "1"],
    ),
    (
        "values",
        "## Partition values as strings",
        "values.py",
        ["--n", "10000000"],
        ["--n", "1000000", "--repeat", "1"],
    ),
    (
        "ingest",
        "## Ingest and pruning",
        "ingest.py",
        ["--rows", "10000000", "--partitions", "100000"],
        ["--rows", "1000000", "--partitions", "10000", "--repeat", "1"],
    ),
    (
        "tpch",
        "## TPC-H against the systems users pick",
        "tpch.py",
        ["--sf", "1"],
        ["--sf", "0.1", "--repeat", "1"],
    ),
    (
        "ingest-peers",
        "## Ingest against the systems users pick",
        "ingest_peers.py",
        ["--rows", "10000000"],
        ["--rows", "500000", "--repeat", "1", "--cold", "1", "--only", "events"],
    ),
    (
        "ingest-peers-s3",
        "## Ingest against the systems users pick, on S3",
        "ingest_peers.py",
        ["--rows", "10000000", "--repeat", "2", "--cold", "1", "--store", "s3"],
        ["--rows", "500000", "--repeat", "1", "--cold", "1", "--only", "events", "--store", "s3"],
    ),
    (
        "optimize",
        "## Compaction: optimize()",
        "optimize.py",
        ["--rows", "10000000", "--repeat", "2"],
        ["--rows", "400000", "--partitions", "80", "--repeat", "1"],
    ),
    (
        "lineage",
        "## Lineage overhead",
        "lineage.py",
        ["--rows", "10000000"],
        ["--rows", "1000000", "--repeat", "1"],
    ),
    (
        "commit-cost",
        "## Commit safety checks: cost",
        "commit_cost.py",
        [],
        ["--repeat", "5"],
    ),
    (
        "manifest-limit",
        "## Manifest fragment limit",
        "manifest_limit.py",
        [],
        ["--partitions", "1000", "--commits", "100", "--window", "50", "--limits", "8", "32"],
    ),
    (
        "stream-history",
        "## Streaming history",
        "stream_history.py",
        ["--commits", "10000", "--retain", "100"],
        [
            "--partitions",
            "1000",
            "--commits",
            "300",
            "--window",
            "50",
            "--repeat",
            "1",
            "--retain",
            "50",
        ],
    ),
    (
        "compaction-tiers",
        "## Compaction after writes: tiers",
        "compaction_tiers_model.py",
        [],
        ["--commits", "1000"],
    ),
    (
        "stats",
        "## Metadata at scale: stats()",
        "stats.py",
        ["--partitions", "100000"],
        ["--partitions", "2000", "--repeat", "1"],
    ),
    (
        "join",
        "## Storage-partitioned joins",
        "join.py",
        ["--rows", "5000000", "--spark"],
        ["--rows", "300000", "--spark", "--repeat", "1"],
    ),
    (
        "merge",
        "## Upserts: merge_insert",
        "merge.py",
        ["--rows", "10000000", "--partitions", "800", "--repeat", "3", "--without", "pyiceberg"],
        ["--rows", "200000", "--partitions", "80", "--repeat", "1"],
    ),
    (
        "merge-other-key",
        "### Upserts when the key does not determine the partition",
        "merge.py",
        [
            "--rows",
            "2000000",
            "--partitions",
            "200",
            "--repeat",
            "3",
            "--by",
            "customer",
            "--without",
            "pyiceberg",
        ],
        ["--rows", "200000", "--partitions", "80", "--repeat", "1", "--by", "customer"],
    ),
    (
        "cdc",
        "## Change feeds: apply_changes",
        "cdc.py",
        ["--rows", "10000000", "--partitions", "800", "--repeat", "3", "--without", "pyiceberg"],
        ["--rows", "200000", "--partitions", "80", "--changes", "2000", "--repeat", "1"],
    ),
    (
        "scaling",
        "## Scaling",
        "scaling.py",
        [],
        ["--quick", "--plots", str(ROOT / "build" / "plots")],
    ),
    (
        "s3",
        "## Object storage (local S3 servers)",
        "s3_ingest.py",
        ["--rows", "10000000", "--repeat", "1"],
        ["--rows", "300000", "--partitions", "2000", "--repeat", "1"],
    ),
    (
        "spark",
        "## Spark ingest",
        "spark_ingest.py",
        ["--rows", "5000000"],
        ["--rows", "200000"],
    ),
    (
        "spark_read",
        "## Spark reads",
        "spark_read.py",
        ["--rows", "10000000"],
        ["--rows", "200000", "--repeat", "1"],
    ),
    (
        "spark-standalone",
        "## Spark ingest on the standalone cluster",
        "spark_ingest.py",
        ["--rows", "5000000", "--repeat", "2", "--master", "standalone"],
        ["--rows", "200000", "--master", "standalone"],
    ),
    (
        "spark_read-standalone",
        "## Spark reads on the standalone cluster",
        "spark_read.py",
        ["--rows", "10000000", "--master", "standalone"],
        ["--rows", "200000", "--repeat", "1", "--master", "standalone"],
    ),
    (
        "stream-ingest",
        "## Streaming throughput",
        "stream_ingest.py",
        [],
        ["--rows", "50000", "--batches", "3", "--partitions", "5", "--repeat", "0"],
    ),
    (
        "column-stats-cost",
        "## Column statistics: ingest cost",
        "stats_cost.py",
        ["--rows", "5000000", "--rounds", "7"],
        ["--rows", "100000", "--rounds", "1", "--repeat", "1"],
    ),
    (
        "zorder",
        "## Sort order: Z-order",
        "zorder.py",
        [],
        ["--rows", "200000", "--repeat", "1", "--cold", "1"],
    ),
    (
        "engines-view",
        "## Other engines through the dataset view",
        "engines_view.py",
        ["--rows", "5000000"],
        ["--rows", "100000", "--repeat", "1"],
    ),
    (
        "index-lookup",
        "## Lookups on an indexed column",
        "index_lookup.py",
        ["--sf", "1"],
        ["--sf", "0.05", "--repeat", "1"],
    ),
    (
        "stream-read",
        "## A time window over a stream's partitions",
        "stream_read.py",
        [],
        ["--days", "1", "--batches", "12", "--rows", "2000", "--repeat", "1"],
    ),
]


def commit() -> str:
    """The commit the run measures, taken when it starts (``-dirty`` with local changes)."""
    return subprocess.run(
        ["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()


def stamp(started: float, quick: bool, measured: str) -> str:
    took = (time.time() - started) / 60
    mode = "`make bench-quick` (small sizes)" if quick else "`make bench`"
    return "\n".join(
        [
            "# Benchmarks",
            "",
            f"Generated by {mode} (`benches/all.py`) in one run of {took:.0f} minutes, "
            f"finished {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, at commit `{measured}`; "
            "nothing in this file is edited by hand. The machine, its measured limits and "
            "every peer's version are in the first section.",
            "",
            "How to read the tables: every ingest and query row is a cell run in a fresh "
            "process (`benches/cells.py`): the first call (what a batch job that writes or "
            "reads once per process pays; imports and setup excluded), the best of the "
            "repeats, and the peak resident memory of the process during the calls. "
            '"Share of limit" is the time the physical limit that bounds the row (memory '
            "copy, disk write, measured in the same run) allows for the row's bytes, over "
            "the row's best time. Ratios are their best time over ours: above 1 means we "
            "are faster. Release builds only.",
        ]
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--only", nargs="*", help="run only these sections (for development)")
    args = ap.parse_args()
    out = args.out or (
        ROOT / "build" / "BENCHMARKS-quick.md" if args.quick else ROOT / "BENCHMARKS.md"
    )
    started, measured = time.time(), commit()
    results = Path(tempfile.mkdtemp(prefix="lp-bench-run-"))
    # Scratch directories are renamed into the run's trash and removed after the run
    # (benches/scratch.py): removing 100k partitions' files takes minutes.
    trash = TRASH_ROOT / f"run-{os.getpid()}-{int(started)}"
    env = {**os.environ, "LP_BENCH_RESULTS": str(results), "LP_BENCH_TRASH": str(trash)}
    draft = results / "BENCHMARKS.md"
    body = "".join(
        f"\n{heading}\n\n<!-- {marker}:start -->\n<!-- {marker}:end -->\n"
        for marker, heading, *_ in SECTIONS
    )
    draft.write_text(body)
    try:
        for marker, _, script, full, quick in SECTIONS:
            if args.only and marker not in args.only:
                continue
            t0 = time.time()
            cmd = [sys.executable, str(HERE / script), *(quick if args.quick else full)]
            print(f"== {' '.join(cmd[1:])}", flush=True)
            subprocess.run([*cmd, "--write", str(draft)], env=env, check=True)
            print(f"== {script}: {time.time() - t0:.0f} s", flush=True)
        text = draft.read_text()
        for marker, *_ in SECTIONS:
            empty = f"<!-- {marker}:start -->\n<!-- {marker}:end -->" in text
            if empty and not args.only:
                raise SystemExit(f"section {marker} was not written")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(stamp(started, args.quick, measured) + "\n" + text)
        print(f"wrote {out}")
    finally:
        shutil.rmtree(results, ignore_errors=True)
        empty_trash()


if __name__ == "__main__":
    main()
