"""The string form of whole arrays: ``values.to_strings`` against ``pyarrow.compute.cast(array,
pa.string())`` on the same data, in one run.

Usage: .venv/bin/python benches/values.py [--n 10000000] [--repeat 3] [--write BENCHMARKS.md]

Reports the best of --repeat rounds (ours and the two casts in turn, one of each per round) as
values per second and the ratio of ours to pyarrow's cast, with pyarrow's default memory pool
(warm from the previous round) and with the system allocator (fresh memory each time).
The two do not write the same text for timestamps (pyarrow: ``2024-06-15 19:30:45.123456Z``
without the ISO ``T`` and with trailing zeros cut; ours: the string form of
docs/partition-values.md), so the ratio compares the work, not the output.
"""

from __future__ import annotations

import argparse
import platform
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from report import best_alternating, update_section

from lance_partitioned import values as lv

ROOT = Path(__file__).resolve().parent.parent


def arrays(n: int) -> dict[str, pa.Array]:
    """Deterministic pseudo-random values: int64 over the whole range, timestamps spread over
    2000-2030 (microseconds, UTC) and the same without a zone."""
    idx = pa.array(range(n), pa.int64())
    mixed = pc.bit_wise_and(pc.multiply_checked(idx, 0x9E3779B1), 0xFFFFFFFFFFF)
    ints = pc.subtract(pc.multiply(mixed, 2_000_003), 2**60)
    span = 30 * 365 * 86_400 * 1_000_000
    micros = pc.add(pc.remainder(pc.multiply(mixed, 7_919), span), 946_684_800_000_000)
    return {
        "int64": ints,
        "timestamp[us, UTC]": micros.cast(pa.timestamp("us", tz="UTC")),
        "timestamp[us]": micros.cast(pa.timestamp("us")),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write", type=Path, default=None)
    args = ap.parse_args()
    lines = [
        f"`python benches/values.py --n {args.n}` ({platform.machine()}, best of "
        f"{args.repeat}; M values/s):",
        "",
        "| values | ours (`values.to_strings`) | pyarrow `cast(string)` | ours / pyarrow "
        "| pyarrow cast, `system_memory_pool()` | ours / that |",
        "|---|---|---|---|---|---|",
    ]
    for name, arr in arrays(args.n).items():
        assert lv.to_strings(arr[:1000]).null_count == 0
        ours, theirs, fresh = best_alternating(
            [
                lambda arr=arr: lv.to_strings(arr),
                lambda arr=arr: pc.cast(arr, pa.string()),
                lambda arr=arr: pc.cast(arr, pa.string(), memory_pool=pa.system_memory_pool()),
            ],
            args.repeat,
        )
        row = (
            f"| {name} | {args.n / ours / 1e6:.1f} | {args.n / theirs / 1e6:.1f} | "
            f"{theirs / ours:.2f}x | {args.n / fresh / 1e6:.1f} | {fresh / ours:.2f}x |"
        )
        print(row, flush=True)
        lines.append(row)
    if args.write:
        update_section(args.write, "values", "\n".join(lines), "## Partition values as strings")


if __name__ == "__main__":
    main()
