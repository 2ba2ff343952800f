"""The cost of lineage on a write: the ingest benchmark's table (10M rows into ~800 partitions,
identity(country) x bucket(city, 16)) written with OpenLineage off and on (the client's file
transport, every event written to a file), alternating, in one run.

    python benches/lineage.py [--rows N] [--repeat 3] [--write BENCHMARKS.md]

Reports the best time of each and the ratio on/off (goal: within 5%).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

from ingest import SPEC, make_table
from report import update_section

import lance_partitioned as lp

ROOT = Path(__file__).resolve().parent.parent
ENV = {
    "OPENLINEAGE__TRANSPORT__TYPE": "file",
    "OPENLINEAGE__TRANSPORT__APPEND": "true",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write", type=Path, default=None)
    args = ap.parse_args()
    table = make_table(args.rows)
    work = Path(tempfile.mkdtemp(prefix="lp-lineage-bench-"))
    log = work / "events.jsonl"
    times: dict[str, list[float]] = {"off": [], "on": []}
    partitions = 0
    try:
        for r in range(args.repeat):
            for mode in ("off", "on"):
                root = work / f"ns-{mode}-{r}"
                ns = lp.PartitionedNamespace.create(str(root), table.schema, SPEC)
                if mode == "on":
                    os.environ.update(ENV, OPENLINEAGE__TRANSPORT__LOG_FILE_PATH=str(log))
                else:
                    for key in (*ENV, "OPENLINEAGE__TRANSPORT__LOG_FILE_PATH"):
                        os.environ.pop(key, None)
                assert lp.lineage.enabled() == (mode == "on")
                t0 = time.perf_counter()
                result = ns.write(table)
                times[mode].append(time.perf_counter() - t0)
                partitions = result.partitions
                shutil.rmtree(root)
                print(f"{mode}: {times[mode][-1]:.2f} s", flush=True)
        events = sum(1 for _ in log.open()) if log.exists() else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)
    off, on = min(times["off"]), min(times["on"])
    lines = [
        f"`python benches/lineage.py --rows {args.rows}` ({platform.machine()}, "
        f"{os.cpu_count()} cores, best of {args.repeat}, alternating): one write of "
        f"{args.rows:,} rows into {partitions} partitions; {events} events written.",
        "",
        "| lineage | write (s) | M rows/s |",
        "|---|---:|---:|",
        f"| off | {off:.2f} | {args.rows / off / 1e6:.2f} |",
        f"| on (file transport) | {on:.2f} | {args.rows / on / 1e6:.2f} |",
        "",
        f"Lineage on / off: {on / off:.3f}x (goal: <= 1.05x).",
    ]
    print("\n".join(lines))
    if args.write:
        update_section(args.write, "lineage", "\n".join(lines), "## Lineage overhead")


if __name__ == "__main__":
    main()
