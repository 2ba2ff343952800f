"""Upserts: ``merge_insert`` against the merges a user would run instead, in one run.

Data: ``--rows`` rows (default 10M: order_id, customer, amount, status, updated_at) in
``--partitions`` partitions (default 800) keyed by the partition key: ours and pyiceberg use
``bucket(order_id, P)``; Delta Lake has no bucket transform, so its table carries the bucket
as a column (computed by our kernel: the same partitions) and is partitioned by it. The
change set: ``--changed`` of the rows (default 1%), half updates of existing orders spread
over every partition, half new orders.

- ours: ``ns.merge_insert("order_id").when_matched_update_all().when_not_matched_insert_all()``
  (strong mode, one manifest commit);
- deltalake: ``DeltaTable.merge`` with update-all / insert-all, the predicate naming the
  partition column too (``t.bucket = s.bucket AND t.order_id = s.order_id``) so that Delta
  prunes files, as a Delta user is told to;
- pyiceberg: ``Table.upsert(df, join_cols=["order_id"])`` on a SQL-catalog table partitioned
  by ``bucket(P, order_id)`` (written anew for each call: its metadata names files by
  absolute path, so it cannot be copied);
- pylance: ``merge_insert("order_id")`` update-all / insert-all on one unpartitioned Lance
  dataset of the same rows (what a user with one dataset runs).

Each (system) is one cell (``cells.py``: a fresh process, first call and best of
``--repeat``, peak RSS); each call starts from a fresh copy of the same table (not timed,
synced to disk before the call).
The answer is each system's own reader's row count and the number of rows carrying the
source's status. Share of limit: the source rows' bytes written once plus the key columns of
the partitions holding them read once, at the page-cache bandwidth.

    python benches/merge.py [--rows N] [--partitions P] [--changed F] [--repeat R]
        [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import Any

import lance
import limits
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from cells import measure
from report import CELL_HEADER, cell_columns, ratio, share, update_section
from scratch import discard, scratch

import lance_partitioned as lp
from lance_partitioned import kernels as k

SCHEMA = pa.schema(
    [
        pa.field("order_id", pa.int64(), nullable=False),
        pa.field("customer", pa.int64()),
        pa.field("amount", pa.float64()),
        pa.field("status", pa.string()),
        pa.field("updated_at", pa.timestamp("us")),
    ]
)


def orders(ids: np.ndarray, status: str, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "order_id": ids.astype(np.int64),
            "customer": rng.integers(0, 1_000_000, len(ids)),
            "amount": rng.random(len(ids)) * 100,
            "status": pa.array([status] * len(ids)),
            "updated_at": pa.array(
                np.datetime64("2026-01-01T00:00:00", "us") + rng.integers(0, 10**9, len(ids)),
                pa.timestamp("us"),
            ),
        },
        schema=SCHEMA,
    )


def changes(n: int, changed: float) -> pa.Table:
    """Half updates of existing ids (spread over all partitions), half new ids."""
    m = max(2, int(n * changed))
    rng = np.random.default_rng(7)
    updates = rng.choice(n, m // 2, replace=False)
    inserts = np.arange(n, n + m - m // 2)
    return orders(np.concatenate([updates, inserts]), "changed", 8)


def with_bucket(t: pa.Table, partitions: int, by: str = "order_id") -> pa.Table:
    return t.append_column("bucket", k.bucket(t[by].combine_chunks(), partitions))


def prepare_ours(work: Path, base: pa.Table, partitions: int, by: str = "order_id") -> Path:
    """Our template: ``base`` in a namespace bucketed by ``by``."""
    spec = lp.PartitionSpec([lp.PartitionField("b", source=by, transform=lp.Bucket(partitions))])
    root = work / "t-ours"
    lp.PartitionedNamespace.create(str(root), SCHEMA, spec).write(base)
    return root


def write_source(work: Path, n: int, changed: float) -> tuple[Path, pa.Table]:
    """The changes of a run, as an Arrow IPC file every system's process reads."""
    src = changes(n, changed)
    source = work / "source.arrow"
    with pa.ipc.new_file(source, src.schema) as w:
        w.write_table(src)
    return source, src


def prepare(work: Path, n: int, partitions: int, by: str) -> dict[str, Path]:
    """One template per system, holding the same rows."""
    base = orders(np.arange(n), "open", 1)
    out: dict[str, Path] = {"ours": prepare_ours(work, base, partitions, by)}
    out["pylance"] = work / "t-lance"
    lance.write_dataset(base, str(out["pylance"]))
    from deltalake import write_deltalake

    out["deltalake"] = work / "t-delta"
    write_deltalake(
        str(out["deltalake"]), with_bucket(base, partitions, by), partition_by=["bucket"]
    )
    # Iceberg metadata names files by absolute path: a copy would still point at the
    # template, so each call gets a table written anew (not timed).
    out["pyiceberg"] = work / "base.arrow"
    with pa.ipc.new_file(out["pyiceberg"], base.schema) as w:
        w.write_table(base)
    return out


def _iceberg_table(root: Path, partitions: int, by: str) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import BucketTransform
    from pyiceberg.types import DoubleType, LongType, NestedField, StringType, TimestampType

    root.mkdir(parents=True, exist_ok=True)
    catalog = SqlCatalog(
        "bench", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/warehouse"
    )
    catalog.create_namespace("b")
    schema = Schema(
        NestedField(1, "order_id", LongType(), required=True),
        NestedField(2, "customer", LongType(), required=False),
        NestedField(3, "amount", DoubleType(), required=False),
        NestedField(4, "status", StringType(), required=False),
        NestedField(5, "updated_at", TimestampType(), required=False),
        identifier_field_ids=[1],
    )
    spec = PartitionSpec(
        PartitionField(
            source_id=1 if by == "order_id" else 2,
            field_id=1000,
            transform=BucketTransform(partitions),
            name="b",
        )
    )
    return catalog.create_table("b.orders", schema, partition_spec=spec)


def _iceberg_open(root: Path) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog(
        "bench", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/warehouse"
    )
    return catalog.load_table("b.orders")


def _copies(template: str, work: str, name: str) -> Callable[[], Path]:
    n = count()

    def prepare() -> Path:
        dest = Path(work) / f"{name}-{os.getpid()}-{next(n)}"
        shutil.copytree(template, dest)
        # The copy's dirty pages are written back before the timed call, so the kernel's
        # writeback does not land on it.
        os.sync()
        return dest

    return prepare


def _answer(rows: int, changed: int) -> str:
    return json.dumps({"rows": rows, "changed": changed})


def ours(template: str, work: str, source: str) -> Any:
    src = pa.ipc.open_file(source).read_all()

    def run(root: Path) -> Path:
        ns = lp.PartitionedNamespace.open(str(root))
        ns.merge_insert("order_id").when_matched_update_all().when_not_matched_insert_all().execute(
            src
        )
        return root

    def answer(root: Path) -> str:
        t = lp.PartitionedNamespace.open(str(root)).to_table(columns=["status"])
        return _answer(t.num_rows, pc.sum(pc.equal(t["status"], "changed")).as_py())

    return _copies(template, work, "ours"), run, answer


def pylance(template: str, work: str, source: str) -> Any:
    src = pa.ipc.open_file(source).read_all()

    def run(root: Path) -> Path:
        ds = lance.dataset(str(root))
        ds.merge_insert("order_id").when_matched_update_all().when_not_matched_insert_all().execute(
            src
        )
        return root

    def answer(root: Path) -> str:
        t = lance.dataset(str(root)).to_table(columns=["status"])
        return _answer(t.num_rows, pc.sum(pc.equal(t["status"], "changed")).as_py())

    return _copies(template, work, "pylance"), run, answer


def deltalake(template: str, work: str, source: str, partitions: int, by: str) -> Any:
    from deltalake import DeltaTable

    src = with_bucket(pa.ipc.open_file(source).read_all(), partitions, by)
    # The partition column prunes only when the key determines it (a moved row's old and
    # new buckets differ).
    predicate = "t.order_id = s.order_id"
    if by == "order_id":
        predicate = "t.bucket = s.bucket AND " + predicate

    def run(root: Path) -> Path:
        (
            DeltaTable(str(root))
            .merge(
                src,
                predicate=predicate,
                source_alias="s",
                target_alias="t",
            )
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )
        return root

    def answer(root: Path) -> str:
        t = DeltaTable(str(root)).to_pyarrow_table(columns=["status"])
        return _answer(t.num_rows, pc.sum(pc.equal(t["status"], "changed")).as_py())

    return _copies(template, work, "deltalake"), run, answer


def pyiceberg(template: str, work: str, source: str, partitions: int, by: str) -> Any:
    src = pa.ipc.open_file(source).read_all()
    base = pa.ipc.open_file(template).read_all()
    n = count()

    def prepare() -> Path:
        root = Path(work) / f"pyiceberg-{os.getpid()}-{next(n)}"
        _iceberg_table(root, partitions, by).append(base)
        os.sync()
        return root

    def run(root: Path) -> Path:
        _iceberg_open(root).upsert(src, join_cols=["order_id"])
        return root

    def answer(root: Path) -> str:
        t = _iceberg_open(root).scan(selected_fields=("status",)).to_arrow()
        return _answer(t.num_rows, pc.sum(pc.equal(t["status"], "changed")).as_py())

    return prepare, run, answer


CASES = {"ours": ours, "pylance": pylance, "deltalake": deltalake, "pyiceberg": pyiceberg}
SYSTEMS = {
    "ours": "ours: `merge_insert` update-all / insert-all (one manifest commit)",
    "deltalake": "deltalake `DeltaTable.merge` update-all / insert-all (the partition column "
    "in the predicate when the key determines it)",
    "pyiceberg": "pyiceberg `Table.upsert(join_cols=[order_id])`, bucket-partitioned",
    "pylance": "pylance `merge_insert` on one unpartitioned dataset",
}


def add_system_args(ap: argparse.ArgumentParser, systems: dict[str, str]) -> None:
    """``--systems`` (which to measure) and ``--without`` (which to leave out)."""
    ap.add_argument("--systems", type=str, default=",".join(systems))
    ap.add_argument(
        "--without", type=str, default="", help="systems to leave out (too slow at the size)"
    )


def chosen_systems(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """The systems to measure, and those ``--without`` leaves out."""
    left_out = [s for s in args.without.split(",") if s]
    return [s for s in args.systems.split(",") if s and s not in left_out], left_out


def measure_systems(
    script: str,
    names: list[str],
    templates: dict[str, Path],
    work: Path,
    source: Path,
    repeat: int,
    layout: dict[str, Any],
) -> dict[str, Any]:
    """One cell per system; the peers that lay out their own partitions get ``layout``."""
    cells = {}
    for name in names:
        params: dict[str, Any] = {
            "template": str(templates[name]),
            "work": str(work),
            "source": str(source),
        }
        if name in ("deltalake", "pyiceberg"):
            params.update(layout)
        cells[name] = measure(script, name, params, repeat)
    return cells


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--partitions", type=int, default=800)
    ap.add_argument("--changed", type=float, default=0.01)
    ap.add_argument("--repeat", type=int, default=2)
    add_system_args(ap, SYSTEMS)
    ap.add_argument(
        "--by",
        choices=("order_id", "customer"),
        default="order_id",
        help="partition by a bucket of the key (it determines the partition) or of customer "
        "(it does not: every partition is read, and updated rows move)",
    )
    ap.add_argument("--write", type=str, default=None)
    args = ap.parse_args()
    names, left_out = chosen_systems(args)
    work = scratch("lp-merge-bench-")
    try:
        source, src = write_source(work, args.rows, args.changed)
        templates = prepare(work, args.rows, args.partitions, args.by)
        layout = {"partitions": args.partitions, "by": args.by}
        cells = measure_systems("merge", names, templates, work, source, args.repeat, layout)
    finally:
        discard(work)
    want = _answer(args.rows + src.num_rows - src.num_rows // 2, src.num_rows)
    answers = {name: c.answer for name, c in cells.items()}
    if set(answers.values()) != {want}:
        raise SystemExit(f"merge results differ: {answers}, expected {want}")
    by_key = args.by == "order_id"
    why = (
        "the key determines the partition"
        if by_key
        else "the key does not determine the partition: every partition is read, updated rows move"
    )
    per_row = src.nbytes / src.num_rows
    at_limit = (src.nbytes + args.rows * 8 + per_row * src.num_rows // 2) / (
        limits.current()["disk_gbps"] * 1e9
    )
    lines = [
        f"`python benches/merge.py --rows {args.rows} --partitions {args.partitions} "
        f"--changed {args.changed} --repeat {args.repeat} --by {args.by}`: {src.num_rows:,} "
        f"changes ({src.num_rows // 2:,} updates spread over every partition, "
        f"{src.num_rows - src.num_rows // 2:,} inserts) into {args.rows:,} rows partitioned "
        f"by a bucket of {args.by} ({why}); "
        "every system's own reader counts the same rows afterwards:",
        "",
        f"| merge | {CELL_HEADER} | share of limit | ours vs this |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in names:
        c = cells[name]
        lines.append(
            f"| {SYSTEMS[name]} | {cell_columns(c)} | {share(at_limit, c.best)} "
            f"| {ratio(c, cells['ours'])} |"
        )
    if left_out:
        lines += ["", f"Left out at this size (`--without`): {', '.join(left_out)}."]
    text = "\n".join(lines)
    print(text)
    if args.write:
        if by_key:
            update_section(Path(args.write), "merge", text, "## Upserts: merge_insert")
        else:
            heading = "### Upserts when the key does not determine the partition"
            update_section(Path(args.write), "merge-other-key", text, heading)


if __name__ == "__main__":
    main()
