"""Local ingest and pruning of the partitioned namespace against the writers a user would
script instead.

Ingest: the events table (``events.py``: id, country ~50 values, ts, city ~100k values)
partitioned by identity(country) and bucket(city, 16) (~800 partitions), written by

- ours: ``PartitionedNamespace.write`` (strong mode, one atomic manifest commit);
- pyarrow ``pq.write_to_dataset(partition_cols=[country, city_bucket])``, as documented and
  as a pyarrow expert runs it (input sorted by the keys: one open file at a time, full row
  groups, ``max_open_files`` above the partition count);
- pylance per partition: each partition its own dataset by ``lance.write_dataset``, in a loop
  and on a thread pool of one thread per core (pylance releases the GIL);
- pylance unpartitioned: one ``lance.write_dataset`` of the whole table (the ceiling).

Each writer is one cell (``cells.py``): a fresh process, first call and best of ``--repeat``,
each call into a new directory after ``os.sync()``; the answer is the rows each writer's own
reader counts back. Limit: the page-cache write bandwidth (``limits.py``) for the bytes the
writer wrote.

Pruning: a manifest of ``--partitions`` leaves (~4 manifest rows each) and an equality filter
on all three partition fields: ours cold (first call of a fresh process: open + prune) and
warm (cached snapshot, version re-checked), against a filtered pylance scan of the same
``__manifest`` and a pyarrow filter of it in memory. Limit: reading the manifest's files once
at the one-core copy bandwidth.

    python benches/ingest.py [--rows N] [--partitions N] [--repeat N] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import lance
import limits
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
from cells import Cell, fresh_dirs, measure
from events import SPEC, events, routed
from report import CELL_HEADER, cell_columns, ratio, share, update_section
from scratch import discard, scratch

import lance_partitioned as lp
from lance_partitioned import kernels as k

Case = tuple[Callable[[], Path], Callable[[Path], Path], Callable[[Path], str]]


def _answer(rows: int, root: Path, **more: int) -> str:
    return json.dumps({"rows": rows, "bytes": limits.tree_size(root)[1], **more})


def _lance_answer(root: Path) -> str:
    if (root / "_versions").exists():
        return _answer(lance.dataset(str(root)).count_rows(), root)
    rows = sum(lance.dataset(str(p)).count_rows() for p in root.iterdir())
    return _answer(rows, root)


def _parquet_answer(root: Path) -> str:
    return _answer(pads.dataset(str(root), format="parquet").count_rows(), root)


def ours(rows: int, work: str, properties: dict[str, str] | None = None) -> Case:
    """Our write into a fresh namespace (created with ``properties``)."""
    table = events(rows)
    fresh = fresh_dirs(work, "ours")

    def prepare() -> Path:
        root = fresh()
        lp.PartitionedNamespace.create(str(root), table.schema, SPEC, properties=properties)
        return root

    def write(root: Path) -> Path:
        lp.PartitionedNamespace.open(str(root)).write(table)
        return root

    def answer(root: Path) -> str:
        ns = lp.PartitionedNamespace.open(str(root))
        parts = ns.partitions(with_rows=False).num_rows
        return _answer(ns.to_table(columns=["id"]).num_rows, root, partitions=parts)

    return prepare, write, answer


def _keyed(table: pa.Table) -> pa.Table:
    return table.append_column("city_bucket", k.bucket(table["city"], 16))


def pyarrow_default(rows: int, work: str) -> Case:
    table = events(rows)

    def write(root: Path) -> Path:
        pq.write_to_dataset(_keyed(table), str(root), partition_cols=["country", "city_bucket"])
        return root

    return fresh_dirs(work, "parquet"), write, _parquet_answer


def pyarrow_sorted(rows: int, work: str) -> Case:
    table = events(rows)

    def write(root: Path) -> Path:
        keyed = _keyed(table).sort_by([("country", "ascending"), ("city_bucket", "ascending")])
        pq.write_to_dataset(
            keyed,
            str(root),
            partition_cols=["country", "city_bucket"],
            max_open_files=4096,
            min_rows_per_group=64 * 1024,
        )
        return root

    return fresh_dirs(work, "parquet-sorted"), write, _parquet_answer


def pylance_loop(rows: int, work: str) -> Case:
    table = events(rows)

    def write(root: Path) -> Path:
        for i, part in enumerate(routed(table)):
            lance.write_dataset(part, str(root / f"p{i}"))
        return root

    return fresh_dirs(work, "pylance-loop"), write, _lance_answer


def pylance_pool(rows: int, work: str) -> Case:
    table = events(rows)

    def write(root: Path) -> Path:
        parts = list(enumerate(routed(table)))
        with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            list(pool.map(lambda ip: lance.write_dataset(ip[1], str(root / f"p{ip[0]}")), parts))
        return root

    return fresh_dirs(work, "pylance-pool"), write, _lance_answer


def pylance_flat(rows: int, work: str) -> Case:
    table = events(rows)

    def write(root: Path) -> Path:
        lance.write_dataset(table, str(root))
        return root

    return fresh_dirs(work, "pylance-flat"), write, _lance_answer


WRITERS = {
    "ours": "ours: PartitionedNamespace.write (strong)",
    "pyarrow_default": "pyarrow pq.write_to_dataset(partition_cols), default",
    "pyarrow_sorted": "pyarrow write_to_dataset, input sorted by the keys (tuned)",
    "pylance_loop": "pylance: lance.write_dataset per partition, loop",
    "pylance_pool": "pylance: lance.write_dataset per partition, thread pool (tuned)",
    "pylance_flat": "pylance: lance.write_dataset, unpartitioned (ceiling)",
}


def synthetic_manifest(
    root: str | Path, partitions: int, storage_options: dict[str, str] | None = None
) -> None:
    """A namespace whose manifest lists `partitions` leaves (3 levels, 2 versions each); the
    leaves themselves are not written (pruning never opens them)."""
    schema = pa.schema(
        [pa.field("y", pa.int32()), pa.field("c", pa.string()), pa.field("u", pa.int64())]
    )
    spec = lp.PartitionSpec(
        [
            lp.PartitionField("y", source="y", transform=lp.Identity()),
            lp.PartitionField("c", source="c", transform=lp.Identity()),
            lp.PartitionField("u", source=["u"], transform=lp.Bucket(80)),
        ]
    )
    ns = lp.PartitionedNamespace.create(str(root), schema, spec, storage_options=storage_options)
    m = ns.snapshot().manifest()
    per_c = 80
    n_c = 50
    n_y = max(2, -(-partitions // (per_c * n_c)))
    target = (2001, 7, k.bucket(pa.array([12345], pa.int64()), per_c)[0].as_py())
    # The leaf the pruning filter selects comes first, so every size has exactly one match.
    others = [
        (2000 + yi, ci, u)
        for yi in range(n_y)
        for ci in range(n_c)
        for u in range(per_c)
        if (2000 + yi, ci, u) != target
    ]
    leaves = [target, *others[: partitions - 1]]
    rows: dict[str, list[Any]] = {name: [] for name in m.schema.names}

    def add(oid: str, typ: str, loc: Any, meta: str, rv: Any, y: Any, c: Any, u: Any) -> None:
        rows["object_id"].append(oid)
        rows["object_type"].append(typ)
        rows["location"].append(loc)
        rows["metadata"].append(meta)
        rows["base_objects"].append(None)
        rows["read_version"].append(rv)
        rows["partition_field_y"].append(y)
        rows["partition_field_c"].append(c)
        rows["partition_field_u"].append(u)

    seen: set[tuple[int, ...]] = set()
    for y, ci, u in leaves:
        yi = y - 2000
        c = f"c{ci:02d}"
        yid = f"v1$y{yi:015d}"
        cid = f"{yid}$c{yi:07d}{ci:08d}"
        if (y,) not in seen:
            seen.add((y,))
            add(yid, "namespace", None, json.dumps({"partition.y": str(y)}), None, y, None, None)
        if (y, ci) not in seen:
            seen.add((y, ci))
            add(cid, "namespace", None, json.dumps({"partition.c": c}), None, y, c, None)
        uid = f"{cid}$u{yi:05d}{ci:05d}{u:05d}"
        add(uid, "namespace", None, json.dumps({"partition.u": str(u)}), None, y, c, u)
        tid = f"{uid}$dataset"
        add(tid, "table", f"00000000_{tid}", "{}", 2, y, c, u)
        add(f"{tid}$1", "table_version", None, '{"operation":"create"}', 1, None, None, None)
        add(
            f"{tid}$2",
            "table_version",
            None,
            '{"operation":"append","base_version":"1"}',
            2,
            None,
            None,
            None,
        )
    t = pa.table(rows, schema=m.schema)
    lance.write_dataset(t, f"{root}/__manifest", mode="append", storage_options=storage_options)


FILTER = "y = 2001 AND c = 'c07' AND u = 12345"


def _manifest_filter() -> str:
    bucket = k.bucket(pa.array([12345], pa.int64()), 80)[0].as_py()
    return (
        "object_type = 'table' AND partition_field_y = 2001 AND partition_field_c = 'c07'"
        f" AND partition_field_u = {bucket}"
    )


def prune_cold(root: str) -> Callable[[], int]:
    def run() -> int:
        ns = lp.PartitionedNamespace.open(root)
        n: int = ns.partitions(FILTER, with_rows=False).num_rows
        return n

    return run


def prune_warm(root: str) -> Callable[[], int]:
    ns = lp.PartitionedNamespace.open(root)
    return lambda: ns.partitions(FILTER, with_rows=False).num_rows


def prune_pylance(root: str) -> Callable[[], int]:
    pred = _manifest_filter()
    return lambda: lance.dataset(f"{root}/__manifest").to_table(filter=pred).num_rows


def prune_pyarrow(root: str) -> Callable[[], int]:
    mem = lance.dataset(f"{root}/__manifest").to_table()
    bucket = k.bucket(pa.array([12345], pa.int64()), 80)[0].as_py()

    def run() -> int:
        mask = pc.and_(
            pc.and_(
                pc.equal(mem["object_type"], "table"), pc.equal(mem["partition_field_y"], 2001)
            ),
            pc.and_(
                pc.equal(mem["partition_field_c"], "c07"),
                pc.equal(mem["partition_field_u"], bucket),
            ),
        )
        n: int = mem.filter(mask).num_rows
        return n

    return run


PRUNERS = {
    "prune_cold": "ours: open() + partitions(filter)",
    "prune_warm": "ours: partitions(filter) on an open namespace (version re-checked)",
    "prune_pylance": "pylance: filtered scan of __manifest",
    "prune_pyarrow": "pyarrow: filter of the manifest already in memory",
}

CASES: dict[str, Callable[..., Any]] = {
    "ours": ours,
    "pyarrow_default": pyarrow_default,
    "pyarrow_sorted": pyarrow_sorted,
    "pylance_loop": pylance_loop,
    "pylance_pool": pylance_pool,
    "pylance_flat": pylance_flat,
    "prune_cold": prune_cold,
    "prune_warm": prune_warm,
    "prune_pylance": prune_pylance,
    "prune_pyarrow": prune_pyarrow,
}


# Our extension keeps freed memory for reuse for 10 s (mimalloc's purge delay; pyarrow's own
# mimalloc keeps the default, 1 s): the same writers with equal settings, both ways.
EQUAL_ALLOCATORS = {
    "ours_purge_1s": (
        "ours",
        "ours, `MIMALLOC_PURGE_DELAY=1000` (mimalloc's default, as in pyarrow: equal settings)",
        {"MIMALLOC_PURGE_DELAY": "1000"},
    ),
    "pyarrow_sorted_purge_10s": (
        "pyarrow_sorted",
        "pyarrow sorted (tuned), `MIMALLOC_PURGE_DELAY=10000` (both keep it 10 s)",
        {"MIMALLOC_PURGE_DELAY": "10000"},
    ),
}


def ingest_table(rows: int, repeat: int, work: Path) -> list[str]:
    limit = limits.current()
    params = {"rows": rows, "work": str(work)}
    cells = {name: measure("ingest", name, params, repeat, sync=True) for name in WRITERS}
    for key, (case, _, env) in EQUAL_ALLOCATORS.items():
        cells[key] = measure("ingest", case, params, repeat, sync=True, env=env)
    counts = {json.loads(c.answer)["rows"] for c in cells.values()}
    if counts != {rows}:
        raise SystemExit(f"the writers read back different row counts: {counts}")
    parts = json.loads(cells["ours"].answer)["partitions"]
    lines = [
        f"`python benches/ingest.py --rows {rows} --repeat {repeat}`: {rows} rows, "
        f"{parts} partitions; Lance compute pool: ours {k.lance_compute_threads()} threads, "
        "pylance "
        "its default. Share of limit = the page-cache write bandwidth for the bytes written "
        "over the writer's best time.",
        "",
        f"| writer | M rows/s | MB written | {CELL_HEADER} | share of limit | ours vs this |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    labels = {**WRITERS, **{key: label for key, (_, label, _) in EQUAL_ALLOCATORS.items()}}
    for name, label in labels.items():
        c = cells[name]
        written = json.loads(c.answer)["bytes"]
        at_limit = written / (limit["disk_gbps"] * 1e9)
        lines.append(
            f"| {label} | {rows / c.best / 1e6:.2f} | {written / 1e6:.0f} | {cell_columns(c)} "
            f"| {share(at_limit, c.best)} | {ratio(c, cells['ours'])} |"
        )
    return lines


def pruning_table(partitions: int, repeat: int, work: Path) -> list[str]:
    root = work / "big"
    synthetic_manifest(root, partitions)
    limit = limits.current()
    manifest_bytes = limits.tree_size(root / "__manifest" / "data")[1]
    cells: dict[str, Cell] = {
        name: measure("ingest", name, {"root": str(root)}, max(repeat, 10)) for name in PRUNERS
    }
    if {c.answer for c in cells.values()} != {"1"}:
        raise SystemExit(f"the pruners disagree: {[c.answer for c in cells.values()]}")
    manifest = lance.dataset(str(root / "__manifest")).count_rows()
    at_limit = manifest_bytes / (limit["copy_1_gbps"] / 2 * 1e9)
    lines = [
        "",
        f"Pruning: {partitions} partitions, {manifest} manifest rows "
        f"({manifest_bytes / 1e6:.1f} MB of manifest data files), one equality filter on all "
        "three partition fields. Share of limit = reading the manifest's data files once at "
        "the one-core copy bandwidth, over the best time:",
        "",
        f"| query | {CELL_HEADER} | share of limit | ours (open + prune) vs this |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, label in PRUNERS.items():
        c = cells[name]
        lines.append(
            f"| {label} | {cell_columns(c)} | {share(at_limit, c.best)} "
            f"| {ratio(c, cells['prune_cold'])} |"
        )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--write", type=Path, default=None)
    args = ap.parse_args()
    work = scratch("lp-bench-")
    try:
        lines = ingest_table(args.rows, args.repeat, work)
        lines += pruning_table(args.partitions, args.repeat, work)
    finally:
        discard(work)
    text = "\n".join(lines)
    print(text)
    if args.write:
        update_section(args.write, "ingest", text, "## Partitioned namespace: ingest and pruning")


if __name__ == "__main__":
    main()
