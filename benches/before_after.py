"""Two builds of ours, measured alternately in one run: kernels, ingest, a local join, a merge.

Each round runs every cell once with the ``--before`` Python, then once with ``--after``
(each cell a fresh process, ``cells.py``: first call and best of ``--repeat``), so drift of a
shared machine lands on both builds alike. The table reports, per cell, the median over the
rounds of each build's best time and first call, and after/before (under 1.00: the after
build is faster). Both Pythons need pyarrow and numpy; each imports its own
``lance_partitioned``.

    python benches/before_after.py --before /tmp/venv-before/bin/python \\
        --after .venv/bin/python --rounds 5 --write BENCHMARKS.md
    python benches/before_after.py ... --only ingest --rounds 15   # one cell, more rounds
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from cells import HERE, Cell, measure
from events import gen_strings
from report import cell_columns, update_section
from scratch import scratch

from lance_partitioned import kernels as k

Case = Callable[[], Any]
MERGE_CHANGED = 0.01
MERGE_PARTITIONS = 200


def _ints(n: int) -> pa.Array:
    scattered = np.arange(n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    return pa.array((scattered & np.uint64(0x7FFFFFFFFFFFFFFF)).astype(np.int64), pa.int64())


def bucket_int64(n: int) -> Case:
    ints = _ints(n)
    return lambda: k.bucket(ints, 1000)


def bucket_utf8(n: int) -> Case:
    strings = gen_strings(n, 100_000, 5)
    return lambda: k.bucket(strings, 16)


def route(n: int) -> Case:
    ints = _ints(n)
    city = gen_strings(n, 100_000, 5)
    batch = pa.record_batch({"id": ints, "country": gen_strings(n, 50, 3), "city": city})
    keys = pa.record_batch({"country": batch.column("country"), "b": k.bucket(city, 16)})
    return lambda: len(k.route(batch, keys).batches)


CASES: dict[str, Callable[..., Any]] = {
    "bucket_int64": bucket_int64,
    "bucket_utf8": bucket_utf8,
    "route": route,
}


def cells(rows: int, work: Path) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(label, script, case, params) of every measured cell."""
    n = {"n": rows}
    return [
        (f"`bucket(int64, 1000)`, {rows:,} values", "before_after", "bucket_int64", n),
        (f"`bucket(utf8, 16)`, {rows:,} values", "before_after", "bucket_utf8", n),
        (f"`route`, {rows:,} rows by (country, bucket)", "before_after", "route", n),
        (
            f"ingest {rows:,} rows (`PartitionedNamespace.write`)",
            "ingest",
            "ours",
            {"rows": rows, "work": str(work / "ingest")},
        ),
        (f"local join ({rows:,} orders)", "join", "ours", {"work": str(work / "join")}),
        (
            f"merge_insert {MERGE_CHANGED:.0%} of {rows:,} rows over {MERGE_PARTITIONS} partitions",
            "merge",
            "ours",
            {
                "template": str(work / "merge" / "t-ours"),
                "work": str(work / "merge"),
                "source": str(work / "merge" / "source.arrow"),
            },
        ),
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, help="Python with the before build")
    ap.add_argument("--after", required=True, help="Python with the after build")
    ap.add_argument("--before-label", default="before")
    ap.add_argument("--after-label", default="after")
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="", help="measure only cells whose label has this text")
    ap.add_argument("--write", type=Path, default=None)
    args = ap.parse_args()
    work = scratch("lp-before-after-")
    (work / "ingest").mkdir()
    (work / "join").mkdir()
    # The join's inputs, written once (by the after build) and read by both.
    where = str(work / "join")
    prepare = f"import join, pathlib; join.prepare_local({args.rows}, pathlib.Path({where!r}))"
    subprocess.run([args.after, "-c", prepare], cwd=HERE, check=True)
    # The merge's template namespace and changes, likewise written once.
    (work / "merge").mkdir()
    where = str(work / "merge")
    prepare = (
        "import merge, pathlib, numpy as np; w = pathlib.Path("
        f"{where!r}); merge.write_source(w, {args.rows}, {MERGE_CHANGED}); "
        f"merge.prepare_ours(w, merge.orders(np.arange({args.rows}), 'open', 1), "
        f"{MERGE_PARTITIONS})"
    )
    subprocess.run([args.after, "-c", prepare], cwd=HERE, check=True)
    measured = [m for m in cells(args.rows, work) if args.only in m[0]]
    got: dict[str, dict[str, list[Cell]]] = {m[0]: {"before": [], "after": []} for m in measured}
    for r in range(args.rounds):
        print(f"round {r + 1}/{args.rounds}", flush=True)
        for label, script, case, params in measured:
            for side in ("before", "after"):
                python = args.before if side == "before" else args.after
                cell = measure(script, case, params, args.repeat, python=python)
                got[label][side].append(cell)
    lines = [
        f"{args.rounds} alternating rounds, each cell a fresh process (first call, then best of "
        f"{args.repeat}); medians over the rounds. before: {args.before_label}; after: "
        f"{args.after_label}.",
        "",
        "| cell | build | first call s | best s | peak MiB | after/before (best) |",
        "|---|---|---|---|---|---|",
    ]
    for label, sides in got.items():
        med = {
            side: Cell(
                statistics.median(c.first for c in cs),
                statistics.median(c.best for c in cs),
                statistics.median(c.peak_mib for c in cs),
                cs[-1].answer,
                statistics.median(c.best for c in cs),
            )
            for side, cs in sides.items()
        }
        change = f"{med['after'].best / med['before'].best:.2f}"
        lines.append(f"| {label} | before | {cell_columns(med['before'])} | |")
        lines.append(f"| | after | {cell_columns(med['after'])} | {change} |")
    text = "\n".join(lines)
    print(text)
    if args.write:
        if args.only:
            heading = f"### Before and after (issue 33): {args.only} only, {args.rounds} rounds"
            update_section(args.write, f"before-after-{args.only}", text, heading)
        else:
            update_section(args.write, "before-after", text, "## Before and after (issue 33)")


if __name__ == "__main__":
    main()
