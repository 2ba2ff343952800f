"""The cost of lineage on a write: the ingest bench's write (``ingest.py``: the events table
into ~800 partitions, identity(country) x bucket(city, 16)) with OpenLineage off and on (the
client's file transport, every event written to a file), each a cell of its own (a fresh
process: first call, best of ``--repeat``, peak RSS).

    python benches/lineage.py [--rows N] [--repeat 3] [--write BENCHMARKS.md]

Goal: lineage on within 5% of off.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import limits
from cells import measure
from report import CELL_HEADER, cell_columns, share, update_section
from scratch import discard, scratch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write", type=Path, default=None)
    args = ap.parse_args()
    work = scratch("lp-lineage-bench-")
    log = work / "events.jsonl"
    on = {
        "OPENLINEAGE__TRANSPORT__TYPE": "file",
        "OPENLINEAGE__TRANSPORT__APPEND": "true",
        "OPENLINEAGE__TRANSPORT__LOG_FILE_PATH": str(log),
    }
    params = {"rows": args.rows, "work": str(work)}
    try:
        cells = {
            "off": measure("ingest", "ours", params, args.repeat, sync=True),
            "on (file transport)": measure("ingest", "ours", params, args.repeat, True, on),
        }
        events = sum(1 for _ in log.open()) if log.exists() else 0
    finally:
        discard(work)
    if events == 0:
        raise SystemExit("lineage on wrote no events")
    off, with_lineage = cells["off"], cells["on (file transport)"]
    lines = [
        f"`python benches/lineage.py --rows {args.rows} --repeat {args.repeat}` "
        f"({os.cpu_count()} cores): the ingest bench's write of {args.rows:,} rows; "
        f"{events} events written with lineage on; share of limit: the bytes written at "
        "the page-cache write bandwidth.",
        "",
        f"| lineage | M rows/s | {CELL_HEADER} | share of limit |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    disk = limits.current()["disk_gbps"] * 1e9
    for name, c in cells.items():
        at_limit = json.loads(c.answer)["bytes"] / disk
        lines.append(
            f"| {name} | {args.rows / c.best / 1e6:.2f} | {cell_columns(c)} "
            f"| {share(at_limit, c.best)} |"
        )
    lines += [
        "",
        f"Lineage on / off, best: {with_lineage.best / off.best:.3f}x; first call: "
        f"{with_lineage.first / off.first:.3f}x (goal: <= 1.05x).",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        update_section(args.write, "lineage", text, "## Lineage overhead")


if __name__ == "__main__":
    main()
