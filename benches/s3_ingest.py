"""Ingest and pruning on object storage: the local S3 servers of the tests (on 127.0.0.1,
started here), every writer in the same run against the same server. Two servers:

- moto (one Python process answering one request at a time): its access log counts the
  requests of every write; time there is mostly per-request server time;
- SeaweedFS (Go, concurrent, as a real object store): where writing partitions concurrently
  shows, and the fairer measure of time.

Ingest: the events table (``events.py``: id, country ~50 values, ts, city), partitioned by
identity(country) and bucket(city, 16) (~800 partitions), written by

- ours: ``PartitionedNamespace.write`` (strong mode, one atomic manifest commit);
- pylance per partition: every partition its own dataset by ``lance.write_dataset``, in a loop
  and on a thread pool of 16 threads (tuned: object-store requests wait on the network, so
  more threads than cores);
- pylance unpartitioned: ``lance.write_dataset`` of the whole table (the ceiling).

Each writer on each server is a cell (``cells.py``: a fresh process, first call and best of
``--repeat`` (on moto the first call only), each call into a new prefix, peak RSS). Requests:
moto's access log counts the requests of one more write of each writer, by method; the serial
request floor is that count times the measured latency of one small request (``limits.py``),
and the share of limit is that floor over the best time (above 100%: the writer overlaps its
requests). A small append to 1 partition of namespaces holding 100 and 800 partitions shows
whether the cost grows with the partitions that exist (it should not).

Pruning: a manifest of ``--partitions`` partitions in the bucket, one equality filter on all
partition fields: open + prune (first call = a fresh process) and prune on an open namespace.

    python benches/s3_ingest.py [--rows N] [--partitions N] [--servers moto,seaweedfs]
                                [--repeat R] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import lance
import limits
import pyarrow.compute as pc
from cells import Cell, measure
from events import SPEC, events, make_table, routed
from ingest import FILTER, synthetic_manifest
from report import CELL_HEADER, cell_columns, ratio, share, update_section
from servers import tests_module

import lance_partitioned as lp
from lance_partitioned import kernels as k

s3_server = tests_module("s3_server")


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


def _prefix(bucket: str, name: str) -> Callable[[], str]:
    return lambda: f"s3://{bucket}/{name}-{uuid.uuid4().hex[:8]}"


def ours(rows: int, bucket: str, options: dict[str, str]) -> Any:
    table = events(rows)
    fresh = _prefix(bucket, "ours")

    def prepare() -> str:
        root = fresh()
        lp.PartitionedNamespace.create(root, table.schema, SPEC, storage_options=options)
        return root

    def run(root: str) -> int:
        r = lp.PartitionedNamespace.open(root, storage_options=options).write(table)
        return int(r.rows)

    return prepare, run


def pylance_loop(rows: int, bucket: str, options: dict[str, str]) -> Any:
    table = events(rows)

    def run(root: str) -> int:
        parts = routed(table)
        for i, part in enumerate(parts):
            lance.write_dataset(part, f"{root}/p{i}", storage_options=options)
        return sum(p.num_rows for p in parts)

    return _prefix(bucket, "loop"), run


def pylance_pool(rows: int, bucket: str, options: dict[str, str]) -> Any:
    table = events(rows)

    def run(root: str) -> int:
        parts = list(enumerate(routed(table)))
        with ThreadPoolExecutor(16) as pool:
            list(
                pool.map(
                    lambda ip: lance.write_dataset(
                        ip[1], f"{root}/p{ip[0]}", storage_options=options
                    ),
                    parts,
                )
            )
        return sum(p.num_rows for _, p in parts)

    return _prefix(bucket, "pool"), run


def pylance_flat(rows: int, bucket: str, options: dict[str, str]) -> Any:
    table = events(rows)

    def run(root: str) -> int:
        lance.write_dataset(table, root, storage_options=options)
        return table.num_rows

    return _prefix(bucket, "flat"), run


def prune_open(root: str, options: dict[str, str]) -> Callable[[], int]:
    def run() -> int:
        ns = lp.PartitionedNamespace.open(root, storage_options=options)
        n: int = ns.partitions(FILTER, with_rows=False).num_rows
        return n

    return run


def prune_warm(root: str, options: dict[str, str]) -> Callable[[], int]:
    ns = lp.PartitionedNamespace.open(root, storage_options=options)
    return lambda: ns.partitions(FILTER, with_rows=False).num_rows


CASES: dict[str, Callable[..., Any]] = {
    "ours": ours,
    "pylance_loop": pylance_loop,
    "pylance_pool": pylance_pool,
    "pylance_flat": pylance_flat,
    "prune_open": prune_open,
    "prune_warm": prune_warm,
}
WRITERS = {
    "ours": "ours: PartitionedNamespace.write (strong)",
    "pylance_loop": "pylance: lance.write_dataset per partition, loop",
    "pylance_pool": "pylance: lance.write_dataset per partition, 16 threads (tuned)",
    "pylance_flat": "pylance: lance.write_dataset, unpartitioned (ceiling)",
}


def requests(server: Any, rows: int) -> dict[str, Counter[str]]:
    """The requests of one write of each writer (moto's access log)."""
    out = {}
    bucket = server.new_bucket()
    for name in WRITERS:
        made = CASES[name](rows, bucket, server.options())
        root = made[0]()
        _, out[name] = _timed_requests(server, lambda made=made, root=root: made[1](root))
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


def _start(name: str) -> Any:
    return s3_server.start_seaweedfs() if name == "seaweedfs" else s3_server.start()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--servers", type=str, default="moto,seaweedfs")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--write", type=str, default=None)
    args = ap.parse_args()
    latency = limits.current()["s3_put_ms"] / 1000
    get_latency = limits.current()["s3_get_ms"] / 1000
    writes: dict[str, dict[str, Cell]] = {}
    prunes: dict[str, dict[str, Cell]] = {}
    counted: dict[str, Counter[str]] = {}
    prune_requests: dict[str, Counter[str]] = {}
    appends: list[tuple[int, Counter[str]]] = []
    for name in args.servers.split(","):
        server = _start(name)
        try:
            params = {"rows": args.rows, "bucket": server.new_bucket(), "options": server.options()}
            # moto answers one request at a time (times there are its per-request cost): one
            # call per writer; SeaweedFS gets the repeats.
            repeat = 0 if server.log is not None else args.repeat
            writes[name] = {w: measure("s3_ingest", w, params, repeat) for w in WRITERS}
            if server.log is not None:
                counted = requests(server, args.rows)
                appends = small_appends(server)
            root = f"s3://{server.new_bucket()}/big"
            synthetic_manifest(root, args.partitions, server.options())
            p = {"root": root, "options": server.options()}
            if server.log is not None:
                for q in ("prune_open", "prune_warm"):
                    query = CASES[q](**p)
                    prune_requests[q] = _timed_requests(server, query)[1]
            prunes[name] = {
                q: measure("s3_ingest", q, p, args.repeat) for q in ("prune_open", "prune_warm")
            }
        finally:
            server.stop()
    answers = {c.answer for cells in writes.values() for c in cells.values()}
    if answers != {str(args.rows)}:
        raise SystemExit(f"the writers wrote different row counts: {answers}")
    lines = [
        f"`python benches/s3_ingest.py --rows {args.rows} --repeat {args.repeat}` (each server "
        "on 127.0.0.1, started by the script; requests of one write counted from moto's access "
        "log; serial floor = requests x the measured small-PUT latency):",
        "",
        f"| server | writer | M rows/s | {CELL_HEADER} | requests | share of serial floor "
        "| ours vs this |",
        "|---|---|---:|---:|---:|---:|---|---:|---:|",
    ]
    for name, cells in writes.items():
        for w, label in WRITERS.items():
            c = cells[w]
            req = counted.get(w) if name == "moto" else None
            floor = share(sum(req.values()) * latency, c.best) if req else "-"
            lines.append(
                f"| {name} | {label} | {args.rows / c.best / 1e6:.2f} | {cell_columns(c)} "
                f"| {_fmt(req) if req else '-'} | {floor} | {ratio(c, cells['ours'])} |"
            )
    if appends:
        lines += ["", "Appending 100 rows to one partition (requests of the whole write):", ""]
        lines += [f"- namespace of {p} partitions: {_fmt(req)}" for p, req in appends]
    lines += [
        "",
        f"Pruning a manifest of {args.partitions:,} partitions in the bucket (requests of one "
        "query counted on moto, the same on both servers: they are our client's; serial floor = "
        "requests x the measured small-GET latency, boto3 on moto, the fastest client measured "
        "here; above 100%: our requests cost less than boto3's, or overlap):",
        "",
        f"| server | query | {CELL_HEADER} | requests | share of serial floor |",
        "|---|---|---:|---:|---:|---|---:|",
    ]
    labels = {
        "prune_open": "open() + partitions(filter)",
        "prune_warm": "partitions(filter) on an open namespace (version re-checked)",
    }
    for name, cells in prunes.items():
        for q, c in cells.items():
            req = prune_requests.get(q)
            floor = share(sum(req.values()) * get_latency, c.best) if req else "-"
            lines.append(
                f"| {name} | {labels[q]} | {cell_columns(c)} | {_fmt(req) if req else '-'} "
                f"| {floor} |"
            )
    text = "\n".join(lines)
    print(text)
    if args.write:
        update_section(Path(args.write), "s3", text, "## Object storage (local S3 servers)")


if __name__ == "__main__":
    main()
