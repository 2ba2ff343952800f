"""Ingest and pruning on object storage: the local S3 servers of the tests (on 127.0.0.1,
started here), every writer in the same run against the same server. Two servers:

- moto (one Python process answering one request at a time): its access log counts the
  requests of every write; time there is mostly per-request server time;
- SeaweedFS (Go, concurrent, as a real object store): where writing partitions concurrently
  shows, and the fairer measure of time.

Ingest: the table of ``benches/ingest.py`` (id, country ~50 values, ts, city), partitioned by
identity(country) and bucket(city, 16) (~800 partitions), written by

- ours: ``PartitionedNamespace.write`` (strong mode, one atomic manifest commit),
- pylance per partition: every partition written as its own dataset with
  ``lance.write_dataset`` (the approach a user would script by hand),
- pylance unpartitioned: ``lance.write_dataset`` of the whole table (the ceiling).

Requests: the server's access log counts every request of each write (by method). A small
append to 1 partition of namespaces holding 100 and 800 partitions shows whether the cost
grows with the partitions that exist (it should not).

Pruning: a manifest of 100k partitions in the bucket, one equality filter on all partition
fields, cold (fresh open) and warm (cached snapshot, version re-checked).

    python benches/s3_ingest.py [--rows N] [--partitions N] [--servers moto,seaweedfs]
                                [--repeat R] [--concurrency C] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pyarrow.compute as pc
from ingest import SPEC, make_table, synthetic_manifest
from report import update_section

import lance_partitioned as lp
from lance_partitioned import kernels as k

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import s3_server


def _fmt(c: Counter[str]) -> str:
    return ", ".join(f"{m} {c[m]}" for m in ("GET", "HEAD", "PUT", "POST", "DELETE") if c[m])


def _timed_requests(server: Any, fn: Any) -> tuple[float, Counter[str]]:
    mark = server.log_mark()
    t0 = time.perf_counter()
    fn()
    t = time.perf_counter() - t0
    if server.log is not None:
        time.sleep(0.3)  # the access log is written after the response
    return t, server.requests(mark)


PAIR_RATIOS: dict[str, list[float]] = {}
"""Per server: ours / unpartitioned throughput of each alternating pair of runs."""


def _ours(server: Any, table: pa.Table, concurrency: int | None) -> tuple[float, Counter[str]]:
    opts = server.options()
    root = f"s3://{server.new_bucket()}/ours"
    lp.PartitionedNamespace.create(root, table.schema, SPEC, storage_options=opts)
    return _timed_requests(
        server,
        lambda: lp.PartitionedNamespace.open(root, storage_options=opts).write(
            table, concurrency=concurrency
        ),
    )


def _flat(server: Any, table: pa.Table) -> tuple[float, Counter[str]]:
    flat = f"s3://{server.new_bucket()}/flat"
    opts = server.options()
    return _timed_requests(server, lambda: lance.write_dataset(table, flat, storage_options=opts))


def ingest(
    server: Any, n: int, repeat: int, concurrency: int | None
) -> list[tuple[str, float, Counter[str]]]:
    """The three writers; ours and the unpartitioned write run ``repeat`` times, alternating
    (each into a new bucket), and keep their median time."""
    table = make_table(n)
    opts = server.options()
    out = []
    runs = [(_ours(server, table, concurrency), _flat(server, table)) for _ in range(repeat)]
    for (t_ours, _), (t_flat, _) in runs:
        print(
            f"{server.name}: ours {n / t_ours / 1e6:.2f} M rows/s, unpartitioned "
            f"{n / t_flat / 1e6:.2f} M rows/s ({t_flat / t_ours:.2f}x)",
            flush=True,
        )
    PAIR_RATIOS[server.name] = [f / o for (o, _), (f, _) in runs]
    ours = sorted((r[0] for r in runs), key=lambda x: x[0])[len(runs) // 2]
    flat = sorted((r[1] for r in runs), key=lambda x: x[0])[len(runs) // 2]
    out.append(("ours: PartitionedNamespace.write (strong)", *ours))

    parts_root = f"s3://{server.new_bucket()}/parts"

    def pylance_parts() -> None:
        keys = pa.record_batch(
            {
                "country": table["country"].combine_chunks(),
                "b": k.bucket(table["city"].combine_chunks(), 16),
            }
        )
        routed = k.route(table.combine_chunks().to_batches()[0], keys)
        for i, part in enumerate(routed.batches):
            lance.write_dataset(part, f"{parts_root}/p{i}", storage_options=opts)

    t, req = _timed_requests(server, pylance_parts)
    out.append(("pylance: lance.write_dataset per partition", t, req))
    print(f"{server.name}: pylance per partition {n / t / 1e6:.2f} M rows/s", flush=True)

    out.append(("pylance: lance.write_dataset, unpartitioned (ceiling)", *flat))
    return out


def small_appends(server: Any) -> list[tuple[int, Counter[str]]]:
    """Requests of appending 100 rows to one existing partition, in namespaces of 100 and 800
    partitions."""
    opts = server.options()
    out = []
    for parts in (100, 800):
        table = make_table(20 * parts)
        spec = lp.PartitionSpec([lp.PartitionField("b", source=["id"], transform=lp.Bucket(parts))])
        root = f"s3://{server.new_bucket()}/ns"
        ns = lp.PartitionedNamespace.create(root, table.schema, spec, storage_options=opts)
        ns.write(table)
        assert ns.partitions(with_rows=False).num_rows == parts
        one = table.filter(pc.equal(k.bucket(table["id"].combine_chunks(), parts), 0))
        _, req = _timed_requests(
            server,
            lambda root=root, one=one: lp.PartitionedNamespace.open(
                root, storage_options=opts
            ).write(one),
        )
        out.append((parts, req))
        print(f"append to 1 of {parts} partitions: {_fmt(req)}", flush=True)
    return out


def pruning(server: Any, partitions: int) -> list[tuple[str, float]]:
    opts = server.options()
    root = f"s3://{server.new_bucket()}/big"
    synthetic_manifest(root, partitions, opts)
    filt = "y = 2001 AND c = 'c07' AND u = 12345"
    cold = []
    for _ in range(5):
        t0 = time.perf_counter()
        ns = lp.PartitionedNamespace.open(root, storage_options=opts)
        kept = ns.partitions(filt, with_rows=False)
        cold.append(time.perf_counter() - t0)
    assert kept.num_rows == 1, kept
    warm = []
    for _ in range(30):
        t0 = time.perf_counter()
        ns.partitions(filt, with_rows=False)
        warm.append(time.perf_counter() - t0)
    return [
        ("cold: open() + partitions(filter)", statistics.median(cold)),
        ("warm: partitions(filter), cached manifest, version re-checked", statistics.median(warm)),
    ]


def _start(name: str) -> Any:
    return s3_server.start_seaweedfs() if name == "seaweedfs" else s3_server.start()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--servers", type=str, default="moto,seaweedfs")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=None)
    ap.add_argument("--write", type=str, default=None)
    args = ap.parse_args()
    servers = args.servers.split(",")
    results: dict[str, list[tuple[str, float, Counter[str]]]] = {}
    appends: list[tuple[int, Counter[str]]] = []
    pr: dict[str, list[tuple[str, float]]] = {}
    for name in servers:
        server = _start(name)
        try:
            results[name] = ingest(server, args.rows, args.repeat, args.concurrency)
            if server.log is not None:
                appends = small_appends(server)
            pr[name] = pruning(server, args.partitions)
        finally:
            server.stop()
    lines = [
        f"`python benches/s3_ingest.py --rows {args.rows} --repeat {args.repeat}` (one run; "
        "each server on 127.0.0.1, started by the script; ours and the unpartitioned write "
        f"alternate {args.repeat} times, median shown; requests counted from moto's access log):",
        "",
        "| server | writer | M rows/s | ours vs this | requests |",
        "|---|---|---:|---:|---|",
    ]
    for name, res in results.items():
        ours_t = res[0][1]
        for writer, t, req in res:
            ratio = "(ours)" if t == ours_t else f"{t / ours_t:.2f}x"
            lines.append(
                f"| {name} | {writer} | {args.rows / t / 1e6:.2f} | {ratio} | {_fmt(req) or '-'} |"
            )
    lines += [""]
    lines += [
        f"- {name}: ours / unpartitioned per pair of runs: "
        + ", ".join(f"{r:.2f}x" for r in ratios)
        + f" (median {statistics.median(ratios):.2f}x)"
        for name, ratios in PAIR_RATIOS.items()
    ]
    if appends:
        lines += ["", "Appending 100 rows to one partition (requests of the whole write):", ""]
        lines += [f"- namespace of {p} partitions: {_fmt(req)}" for p, req in appends]
    lines += [
        "",
        f"Pruning a manifest of {args.partitions} partitions in the bucket (median, ms):",
        "",
        "| query | " + " | ".join(pr) + " |",
        "|---|" + "---:|" * len(pr),
    ]
    names = [q for q, _ in next(iter(pr.values()))]
    for j, q in enumerate(names):
        lines.append(f"| {q} | " + " | ".join(f"{pr[s][j][1] * 1e3:.1f}" for s in pr) + " |")
    text = "\n".join(lines)
    print(text)
    if args.write:
        update_section(Path(args.write), "s3", text, "## Object storage (local S3 server)")


if __name__ == "__main__":
    main()
