"""The Rust kernels under criterion (one core, 1M seeded values per iteration), run and read
back in one go: once with the run-time dispatched SIMD loops and once with
``LANCE_PARTITIONED_PORTABLE=1`` (the baseline x86-64 loops, hashing group only).

Each row states its share of the one-core warm copy bandwidth (``limits.py``) for the bytes
the kernel must read and write (its input values and its output column), its target where an
issue set one, and for the named-zone rows arrow's ``date_part`` (the peer, in the same run).

    python benches/criterion.py [--quick] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from pathlib import Path

import limits
from report import share, update_section

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))

# Bytes read + written per value (input, output column) for the share of the copy limit.
BYTES = {
    "murmur3_int64": 8 + 4,
    "bucket_int64_n16": 8 + 4,
    "bucket_int64_n1000": 8 + 4,
    "reference_raw_loop_u64_prealloc": 8 + 4,
    "reference_byte_slice_loop_u64": 8 + 4,
    "bucket_utf8_10_20b": 15 + 4 + 4,
    "multi_bucket_2xutf8": 2 * (15 + 4) + 4,
    "year_ts_utc": 8 + 4,
    "hour_ts_utc": 8 + 4,
    "truncate_utf8_w4": 15 + 4 + 4 + 4,
    "truncate_int64_w1000": 8 + 8,
}
BYTES["year_ts_named_zone"] = 8 + 4
for part in ("year", "hour"):
    for data in ("events", "random"):
        BYTES[f"{part}_ts_named_zone_{data}"] = 8 + 4

# Targets the issues set (M values/s), by (bench, dispatch).
TARGETS = {
    ("bucket_int64_n16", "avx2"): 1000,
    ("bucket_int64_n16", "portable"): 400,
    ("bucket_int64_n1000", "avx2"): 1000,
    ("bucket_int64_n1000", "portable"): 450,
    ("bucket_utf8_10_20b", "avx2"): 65,
    ("multi_bucket_2xutf8", "avx2"): 45,
    ("year_ts_named_zone_events", "avx2"): 150,
    ("hour_ts_named_zone_events", "avx2"): 150,
    ("year_ts_named_zone_random", "avx2"): 150,
    ("hour_ts_named_zone_random", "avx2"): 150,
}


def run(filters: list[str], portable: bool, seconds: int) -> None:
    env = dict(os.environ)
    if portable:
        env["LANCE_PARTITIONED_PORTABLE"] = "1"
    cmd = ["cargo", "bench", "-p", "lance-partitioned-core", "--bench", "kernels", "--"]
    cmd += [*filters, "--warm-up-time", "1", "--measurement-time", str(seconds), "--noplot"]
    subprocess.run(cmd, cwd=ROOT, env=env, check=True)


def results() -> dict[tuple[str, str], float]:
    """M values/s of every benchmark criterion has a new estimate of, by (group, bench)."""
    out = {}
    for est in (TARGET / "criterion").glob("*/*/new/estimates.json"):
        bench = json.loads((est.parent / "benchmark.json").read_text())
        elements = bench["throughput"]["Elements"]
        ns = json.loads(est.read_text())["mean"]["point_estimate"]
        out[(bench["group_id"], bench["function_id"])] = elements / ns * 1e3
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="1 s of measurement per benchmark")
    ap.add_argument("--write", type=Path)
    args = ap.parse_args()
    seconds = 1 if args.quick else 3
    crit = TARGET / "criterion"
    if crit.exists():
        for old in crit.glob("*/*/new"):  # only this run's estimates are read back
            subprocess.run(["rm", "-rf", str(old)], check=True)
    run([], portable=False, seconds=seconds)
    run(["hash_"], portable=True, seconds=seconds)
    got = results()
    copy = limits.current()["copy_1_gbps"] * 1e9
    simd = next((g[5:] for g, _ in got if g.startswith("hash_") and g != "hash_portable"), "avx2")
    portable = {f: v for (g, f), v in got.items() if g.startswith("hash_") and g[5:] != simd}
    lines = [
        f"`python benches/criterion.py{' --quick' if args.quick else ''}` (criterion, "
        f"{seconds} s per benchmark, 1M values per iteration, one core; dispatched level "
        f"`{simd}`, portable = `LANCE_PARTITIONED_PORTABLE=1`; share of limit = the bytes "
        "read and written at the one-core warm copy bandwidth):",
        "",
        "| group | benchmark | M values/s | portable M values/s | share of limit | target |",
        "|---|---|---:|---:|---:|---|",
    ]
    for (group, name), rate in sorted(got.items()):
        if (group.startswith("hash_") and group[5:] != simd) or name.endswith("_arrow"):
            continue
        port = portable.get(name) if group.startswith("hash_") else None
        lim = share(BYTES[name] / copy, 1 / rate / 1e6) if name in BYTES else "-"
        target = []
        for dispatch, value in (("avx2", rate), ("portable", port)):
            goal = TARGETS.get((name, dispatch))
            if goal is not None and value is not None:
                target.append(f">= {goal} {dispatch}: {'met' if value >= goal else 'NOT met'}")
        lines.append(
            f"| {group} | {name} | {rate:.1f} | {f'{port:.1f}' if port else '-'} | {lim} "
            f"| {'; '.join(target) or '-'} |"
        )
    zone = {n: v for (g, n), v in got.items() if g == "transform" and "named_zone_" in n}
    lines += [
        "",
        "Timestamps in `America/New_York` against the peer, arrow's `date_part` (one chrono-tz "
        "conversion per value, what DataFusion runs), same run:",
        "",
        "| benchmark | ours M values/s | arrow `date_part` M values/s | ours vs arrow |",
        "|---|---:|---:|---:|",
    ]
    for name in sorted(n for n in zone if f"{n}_arrow" in zone):
        peer = zone[f"{name}_arrow"]
        lines.append(f"| {name} | {zone[name]:.1f} | {peer:.1f} | {zone[name] / peer:.1f}x |")
    text = "\n".join(lines)
    print(text)
    if args.write:
        update_section(args.write, "criterion", text, "## Kernels under criterion")


if __name__ == "__main__":
    main()
