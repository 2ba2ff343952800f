"""Kernel and routing benchmarks against the alternatives a user would pick, in one run.

Usage: .venv/bin/python benches/kernels.py [--n 10000000] [--repeat 3] [--write BENCHMARKS.md]

Each row reports the best of --repeat runs as values (rows) per second, the first call in the
process (the kernel's first use: thread pools, fresh output memory), the process's peak RSS
during the calls, and the ratio of ours to each peer measured in the same process on the same
data. The copy rows copy the bytes the kernel reads between warm, pre-faulted buffers on one
core (the physical reference); share of limit = the row's rate over its case's copy rate. The
Python-loop peers run on a prefix of the data and are scaled (reported as values/s, so the
ratio holds).
"""

from __future__ import annotations

import argparse
import os
import platform
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import events
import mmh3
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from report import seconds, share, update_section

from lance_partitioned import kernels as k

ROOT = Path(__file__).resolve().parent.parent


def gen_ints(n: int) -> pa.Array:
    """Deterministic pseudo-random int64 values (Fibonacci hashing of 0..n)."""
    scattered = np.arange(n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    return pa.array((scattered & np.uint64(0x7FFFFFFFFFFFFFFF)).astype(np.int64), pa.int64())


gen_strings = events.gen_strings


@dataclass(frozen=True)
class Timing:
    first: float
    best: float
    peak_mib: float


def timed(fn: Callable[[], object], repeat: int) -> Timing:
    """The first call, the best of ``repeat`` more, and the peak RSS during them."""
    Path("/proc/self/clear_refs").write_text("5")  # reset the high-water mark
    times = []
    for _ in range(repeat + 1):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    status = Path("/proc/self/status").read_text()
    peak = int(status.split("VmHWM:")[1].split()[0]) / 1024
    return Timing(times[0], min(times[1:] or times), peak)


class Report:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, float, str, Timing]] = []

    def add(self, case: str, impl: str, n: int, t: Timing, ours: float | None) -> float:
        rate = n / t.best
        ratio = "" if ours is None else f"{ours / rate:.1f}x"
        self.rows.append((case, impl, rate, ratio, t))
        print(f"{case:38s} {impl:40s} {rate / 1e6:10.2f} M/s  {ratio}", flush=True)
        return rate

    def markdown(self) -> str:
        copies = {case: rate for case, impl, rate, *_ in self.rows if impl.startswith("copy ")}
        out = [
            "| case | implementation | M values/s | first call in process s | peak RSS MiB "
            "| share of limit | ours vs this |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        for case, impl, rate, ratio, t in self.rows:
            limit = share(1 / copies[case], 1 / rate) if case in copies else "-"
            out.append(
                f"| {case} | {impl} | {rate / 1e6:.2f} | {seconds(t.first)} | {t.peak_mib:.0f} "
                f"| {limit} "
                f"| {ratio or '(ours)'} |"
            )
        return "\n".join(out)


class WarmCopy:
    """Copies the bytes a kernel reads into buffers allocated and touched beforehand (a
    STREAM-style copy over warm memory): the physical reference. Copying into fresh memory
    (``bytes(buffer)``) measured page faults, not the memory bus."""

    def __init__(self, arr: pa.Array | pa.Table) -> None:
        bufs = []
        if isinstance(arr, pa.Table):
            for col in arr.columns:
                for chunk in col.chunks:
                    bufs.extend(b for b in chunk.buffers() if b is not None)
        else:
            bufs = [b for b in arr.buffers() if b is not None]
        self.pairs = []
        for b in bufs:
            src = np.frombuffer(b, dtype=np.uint8)
            dst = np.ones_like(src)  # written: every page faulted in now
            self.pairs.append((src, dst))

    def __call__(self) -> int:
        for src, dst in self.pairs:
            np.copyto(dst, src)
        return sum(len(src) for src, _ in self.pairs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--loop-n", type=int, default=300_000, help="rows for Python-loop peers")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write", type=Path, default=None, help="update this markdown file")
    args = ap.parse_args()
    n, r = args.n, args.repeat
    rep = Report()

    import pyiceberg_core.transform as ice

    print(f"n={n:,} simd={k.simd_level()} python={sys.version.split()[0]} pyarrow={pa.__version__}")

    # --- bucket over int64 -------------------------------------------------------------------
    ints = gen_ints(n)
    case = "bucket(int64, 16)"
    ours = rep.add(
        case, "lance_partitioned.kernels.bucket", n, timed(lambda: k.bucket(ints, 16), r), None
    )
    rep.add(case, "copy of the int64 values, warm buffers", n, timed(WarmCopy(ints), r), ours)
    rep.add(
        case, "pyiceberg_core.transform.bucket", n, timed(lambda: ice.bucket(ints, 16), r), ours
    )
    ln = min(args.loop_n, n)
    py_ints = ints.slice(0, ln).to_pylist()
    rep.add(
        case,
        "mmh3 in a Python loop",
        ln,
        timed(lambda: [abs(mmh3.hash(struct.pack("<q", v), 0)) % 16 for v in py_ints], 1),
        ours,
    )

    # --- bucket over 10-20 byte strings -----------------------------------------------------------
    strs = gen_strings(n, 1_000_000, 1)
    case = "bucket(utf8 10-20B, 16)"
    ours = rep.add(
        case, "lance_partitioned.kernels.bucket", n, timed(lambda: k.bucket(strs, 16), r), None
    )
    rep.add(case, "copy of the string buffers, warm buffers", n, timed(WarmCopy(strs), r), ours)
    rep.add(
        case, "pyiceberg_core.transform.bucket", n, timed(lambda: ice.bucket(strs, 16), r), ours
    )
    py_strs = strs.slice(0, ln).to_pylist()
    rep.add(
        case,
        "mmh3 in a Python loop",
        ln,
        timed(lambda: [abs(mmh3.hash(s, 0)) % 16 for s in py_strs], 1),
        ours,
    )

    # --- multi_bucket over two string columns ---------------------------------------------------
    strs2 = gen_strings(n, 1_000_000, 2)
    case = "multi_bucket(2 x utf8, 16)"
    ours = rep.add(
        case,
        "lance_partitioned.kernels.multi_bucket",
        n,
        timed(lambda: k.multi_bucket([strs, strs2], 16), r),
        None,
    )
    py_strs2 = strs2.slice(0, ln).to_pylist()
    rep.add(
        case,
        "mmh3 in a Python loop (concat bytes)",
        ln,
        timed(
            lambda: [
                abs(mmh3.hash(a.encode() + b.encode(), 0)) % 16
                for a, b in zip(py_strs, py_strs2, strict=True)
            ],
            1,
        ),
        ours,
    )

    # --- year/hour of a UTC timestamp ----------------------------------------------------------
    ts_utc = pc.cast(pc.divide(ints, 4096), pa.timestamp("us", tz="UTC"))
    case = "year(timestamp[us, UTC])"
    ours = rep.add(
        case, "lance_partitioned.kernels.year", n, timed(lambda: k.year(ts_utc), r), None
    )
    rep.add(case, "pyarrow.compute.year", n, timed(lambda: pc.year(ts_utc), r), ours)
    rep.add(
        case,
        "pyiceberg_core.transform.year (years since 1970)",
        n,
        timed(lambda: ice.year(ts_utc), r),
        ours,
    )
    case = "hour(timestamp[us, UTC])"
    ours = rep.add(
        case, "lance_partitioned.kernels.hour", n, timed(lambda: k.hour(ts_utc), r), None
    )
    rep.add(case, "pyarrow.compute.hour", n, timed(lambda: pc.hour(ts_utc), r), ours)

    # --- routing a 10M-row table ------------------------------------------------------------------
    import polars as pl

    table = pa.table(
        {
            "id": ints,
            "country": gen_strings(n, 50, 3),
            "ts": pc.cast(ints, pa.timestamp("us")),
            "city": gen_strings(n, 100_000, 5),
        }
    )
    batch = table.combine_chunks().to_batches()[0]
    bucket_col = k.bucket(batch.column("city"), 16)
    keys = pa.record_batch({"country": batch.column("country"), "city_bucket": bucket_col})
    case = f"route {n:,} rows by (country, bucket(city,16))"

    def ours_route() -> int:
        return len(k.route(batch, keys).batches)

    def ours_route_1() -> int:
        return len(k.route(batch, keys, threads=1).batches)

    n_parts = ours_route()
    print(f"  partitions: {n_parts}")
    ours = rep.add(
        case, "lance_partitioned.kernels.route (all cores)", n, timed(ours_route, r), None
    )
    rep.add(case, "ours, threads=1", n, timed(ours_route_1, r), ours)

    def ours_end_to_end() -> int:
        b = k.bucket(batch.column("city"), 16)
        kk = pa.record_batch({"country": batch.column("country"), "city_bucket": b})
        return len(k.route(batch, kk).batches)

    rep.add(case, "ours incl. computing bucket(city)", n, timed(ours_end_to_end, r), ours)
    rep.add(case, "copy of the table's buffers, warm buffers", n, timed(WarmCopy(table), r), ours)

    keyed = pa.Table.from_batches([batch]).append_column("city_bucket", bucket_col)

    def pyarrow_route() -> int:
        codes = pc.dictionary_encode(keyed.column("country")).combine_chunks().indices
        combined = pc.add(
            pc.multiply(pc.cast(codes, pa.int64()), 16),
            pc.cast(keyed.column("city_bucket").combine_chunks(), pa.int64()),
        )
        order = pc.sort_indices(combined)
        sorted_t = keyed.take(order)
        ree = pc.run_end_encode(combined.take(order))
        start, parts = 0, []
        for end in ree.run_ends.to_pylist():
            parts.append(sorted_t.slice(start, end - start))
            start = end
        return len(parts)

    rep.add(case, "pyarrow dictionary_encode+sort_indices+take", n, timed(pyarrow_route, r), ours)

    df = pl.from_arrow(keyed)

    def polars_route() -> int:
        assert isinstance(df, pl.DataFrame)
        return len(df.partition_by(["country", "city_bucket"]))

    rep.add(case, "polars DataFrame.partition_by", n, timed(polars_route, r), ours)

    from pyiceberg.io.pyarrow import _determine_partitions
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import BucketTransform, IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType, TimestampType

    ice_schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "country", StringType(), required=False),
        NestedField(3, "ts", TimestampType(), required=False),
        NestedField(4, "city", StringType(), required=False),
    )
    ice_spec = PartitionSpec(
        PartitionField(2, 1000, IdentityTransform(), "country"),
        PartitionField(4, 1001, BucketTransform(16), "city_bucket"),
    )
    ice_table = pa.Table.from_batches([batch])

    def iceberg_route() -> int:
        return len(list(_determine_partitions(ice_spec, ice_schema, ice_table)))

    rep.add(
        case, "pyiceberg _determine_partitions (incl. bucket)", n, timed(iceberg_route, 1), ours
    )

    md = rep.markdown()
    print()
    print(md)
    if args.write:
        header = (
            f"Measured by `benches/kernels.py --n {n}` (best of {r} after the first call; "
            f"Python-loop peers on {ln:,} values, their first call too) on "
            f"{platform.machine()}, {os.cpu_count()} cores, SIMD level `{k.simd_level()}`, "
            f"release build, pyarrow {pa.__version__}, polars {pl.__version__}."
        )
        update_section(args.write, "kernels", f"{header}\n\n{md}", "## Kernels against peers")


if __name__ == "__main__":
    main()
