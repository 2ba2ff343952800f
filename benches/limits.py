"""The physical limits every other bench is measured against, measured in the same run.

- memory copy bandwidth over warm, pre-faulted buffers (a STREAM-style copy: read one array,
  write another), on one core and on every core (one thread per core, each copying its own
  slice; numpy releases the GIL while it copies);
- sequential write bandwidth of the disk the benches write to, without and with ``fsync``;
- request latency of the local S3 server the object-storage tests use (small PUT and GET).

It also stamps the machine: CPU model and flags, cores, memory, the commit, and the versions
of every peer the benches compare against.

    python benches/limits.py [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from report import RESULTS, update_section

COPY_BYTES = 256 << 20
DISK_BYTES = 1 << 30
PEERS = ["pyarrow", "pylance", "duckdb", "polars", "deltalake", "pyiceberg", "datafusion"]


def copy_gbps(threads: int, repeat: int = 5) -> float:
    """Best aggregate copy bandwidth (bytes read + written) with `threads` threads."""
    n = COPY_BYTES // 8
    src = np.arange(n, dtype=np.int64)  # written once: every page faulted in
    dst = np.ones(n, dtype=np.int64)
    np.copyto(dst, src)  # warm
    bounds = np.linspace(0, n, threads + 1, dtype=np.int64)

    def part(i: int) -> None:
        np.copyto(dst[bounds[i] : bounds[i + 1]], src[bounds[i] : bounds[i + 1]])

    best = float("inf")
    for _ in range(repeat):
        workers = [threading.Thread(target=part, args=(i,)) for i in range(threads)]
        t0 = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        best = min(best, time.perf_counter() - t0)
    return 2 * COPY_BYTES / best / 1e9


def small_file_ms(directory: Path, n: int = 2000) -> float:
    """Median time to create a new 1 KiB file in a new directory (what a commit does for each
    manifest, transaction and data file it writes), without fsync."""
    body = os.urandom(1024)
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        sub = directory / f"d{i}"
        sub.mkdir()
        fd = os.open(sub / "f", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, body)
        os.close(fd)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def disk_gbps(directory: Path, fsync: bool, repeat: int = 3) -> float:
    """Best sequential write bandwidth of 1 GiB in 64 MiB writes to a new file in
    `directory` (synced before the next run, so one run's write-back never slows another)."""
    block = os.urandom(64 << 20)
    best = float("inf")
    for i in range(repeat):
        path = directory / f"disk-{fsync}-{i}.bin"
        os.sync()
        t0 = time.perf_counter()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            for _ in range(DISK_BYTES // len(block)):
                os.write(fd, block)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        best = min(best, time.perf_counter() - t0)
        path.unlink()
    return DISK_BYTES / best / 1e9


def s3_latency_ms(n: int = 200) -> tuple[float, float]:
    """Median latency of a 1 KiB PUT and GET against the local S3 server."""
    from servers import tests_module

    server = tests_module("s3_server").start()
    try:
        client = server.client()
        bucket = server.new_bucket()
        body = b"x" * 1024
        puts, gets = [], []
        for i in range(n):
            t0 = time.perf_counter()
            client.put_object(Bucket=bucket, Key=f"k{i}", Body=body)
            t1 = time.perf_counter()
            client.get_object(Bucket=bucket, Key=f"k{i}")["Body"].read()
            puts.append(t1 - t0)
            gets.append(time.perf_counter() - t1)
        return statistics.median(puts) * 1000, statistics.median(gets) * 1000
    finally:
        server.stop()


def machine() -> dict[str, str]:
    """CPU model and flags, cores, memory, commit, peer versions."""
    info: dict[str, str] = {"cores": str(os.cpu_count())}
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key.strip() == "model name" and "cpu" not in info:
                info["cpu"] = value.strip()
            if key.strip() == "flags" and "flags" not in info:
                flags = set(value.split())
                info["flags"] = " ".join(
                    sorted(f for f in ("avx2", "avx512f", "bmi2", "sse4_2") if f in flags)
                )
    with open("/proc/meminfo") as f:
        kb = int(f.readline().split()[1])
    info["memory"] = f"{kb / (1 << 20):.1f} GiB"
    root = Path(__file__).resolve().parent.parent
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True
    )
    info["commit"] = commit.stdout.strip() or "unknown"
    for peer in PEERS:
        try:
            info[peer] = importlib.metadata.version(peer)
        except importlib.metadata.PackageNotFoundError:
            info[peer] = "not installed"
    return info


def measure() -> dict[str, float]:
    """Every limit, measured now, and saved for the other benches of the run."""
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="lp-limits-", dir=Path.home()) as d:
        plain, synced = disk_gbps(Path(d), False), disk_gbps(Path(d), True)
        small = small_file_ms(Path(d))
    put, get = s3_latency_ms()
    got = {
        "copy_1_gbps": copy_gbps(1),
        "copy_all_gbps": copy_gbps(cores),
        "disk_gbps": plain,
        "disk_fsync_gbps": synced,
        "s3_put_ms": put,
        "s3_get_ms": get,
        "small_file_ms": small,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "limits.json").write_text(json.dumps(got))
    return got


def current() -> dict[str, float]:
    """The limits measured earlier in this run (``make bench`` measures them first), or now
    when a bench runs on its own."""
    path = RESULTS / "limits.json"
    if path.exists():
        got: dict[str, float] = json.loads(path.read_text())
        if "small_file_ms" in got:  # else saved by an older version of this file
            return got
    return measure()


def tree_size(root: str | Path) -> tuple[int, int]:
    """The files under ``root`` and their bytes."""
    files = [p for p in Path(root).rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def write_seconds(files: float, nbytes: float) -> float:
    """The least time writing ``files`` new files of ``nbytes`` in all can take here: each file
    at the small-file latency, the bytes at the page-cache write bandwidth."""
    got = current()
    return files * got["small_file_ms"] / 1000 + nbytes / (got["disk_gbps"] * 1e9)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", type=Path)
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    got = measure()
    one, every = got["copy_1_gbps"], got["copy_all_gbps"]
    plain, synced = got["disk_gbps"], got["disk_fsync_gbps"]
    put, get = got["s3_put_ms"], got["s3_get_ms"]
    m = machine()
    lines = [
        "`python benches/limits.py` (the limits every other section states its share of):",
        "",
        "| limit | value |",
        "|---|---:|",
        f"| memory copy, warm buffers, 1 core (read + write) | {one:.1f} GB/s |",
        f"| memory copy, warm buffers, {cores} cores (read + write) | {every:.1f} GB/s |",
        f"| sequential file write, page cache (no fsync) | {plain:.2f} GB/s |",
        f"| sequential file write, fsync at the end | {synced:.2f} GB/s |",
        f"| new 1 KiB file in a new directory (no fsync), median | {got['small_file_ms']:.3f} ms |",
        f"| local S3 server (moto), 1 KiB PUT, median | {put:.2f} ms |",
        f"| local S3 server (moto), 1 KiB GET, median | {get:.2f} ms |",
        "",
        "Machine: " + "; ".join(f"{k} {v}" for k, v in m.items()),
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        update_section(args.write, "limits", text, "## Physical limits of this machine")


if __name__ == "__main__":
    main()
