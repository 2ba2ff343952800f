"""The string form of whole arrays: ``values.to_strings`` against ``pyarrow.compute.cast(array,
pa.string())`` on the same data, in one run.

Usage: .venv/bin/python benches/values.py [--n 10000000] [--repeat 3] [--write BENCHMARKS.md]

Each (values, implementation) is one cell (``cells.py``): a fresh process, first call and best
of --repeat, peak RSS; pyarrow's cast with its default memory pool (warm after the first call)
and with the system allocator (fresh memory each time). Share of limit: the input values and
the output strings and offsets at the one-core warm copy bandwidth (``limits.py``).
The two do not write the same text for timestamps (pyarrow: ``2024-06-15 19:30:45.123456Z``
without the ISO ``T`` and with trailing zeros cut; ours: the string form of
docs/partition-values.md), so the ratio compares the work, not the output.
"""

from __future__ import annotations

import argparse
import platform
from collections.abc import Callable
from pathlib import Path

import limits
import pyarrow as pa
import pyarrow.compute as pc
from cells import measure
from report import CELL_HEADER, cell_columns, ratio, share, update_section

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


def _case(kind: str, n: int, impl: str) -> Callable[[], int]:
    arr = arrays(n)[kind]
    if impl == "ours":
        return lambda: int(lv.to_strings(arr).null_count == 0)
    pool = pa.system_memory_pool() if impl == "pyarrow_system" else None
    return lambda: int(pc.cast(arr, pa.string(), memory_pool=pool).null_count == 0)


CASES = {
    impl: lambda kind, n, impl=impl: _case(kind, n, impl)
    for impl in ("ours", "pyarrow", "pyarrow_system")
}
IMPLS = {
    "ours": "ours: `values.to_strings`",
    "pyarrow": "pyarrow `cast(string)`",
    "pyarrow_system": "pyarrow `cast(string)`, `system_memory_pool()`",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write", type=Path, default=None)
    args = ap.parse_args()
    copy = limits.current()["copy_1_gbps"] * 1e9
    lines = [
        f"`python benches/values.py --n {args.n} --repeat {args.repeat}` "
        f"({platform.machine()}; each cell a fresh process):",
        "",
        f"| values | implementation | M values/s | {CELL_HEADER} | share of limit | ours vs this |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for kind, arr in arrays(args.n).items():
        out = lv.to_strings(arr)
        moved = arr.nbytes + out.nbytes
        cells = {
            impl: measure("values", impl, {"kind": kind, "n": args.n}, args.repeat)
            for impl in IMPLS
        }
        for impl, label in IMPLS.items():
            c = cells[impl]
            lines.append(
                f"| {kind} | {label} | {args.n / c.best / 1e6:.1f} | {cell_columns(c)} | "
                f"{share(moved / copy, c.best)} | {ratio(c, cells['ours'])} |"
            )
    text = "\n".join(lines)
    print(text)
    if args.write:
        update_section(args.write, "values", text, "## Partition values as strings")


if __name__ == "__main__":
    main()
