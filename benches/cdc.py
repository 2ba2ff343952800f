"""Change-data capture: ``apply_changes`` against what a user of each peer writes instead.

Table: ``--rows`` rows (default 10M) of ``merge.py``'s orders in ``--partitions`` partitions
(default 800) keyed by the partition key (``merge.py``'s layout for every system). The change
feed: ``--changes`` rows (default 100k) with an operation column ``op`` (I, U, D) and a
sequence number ``lsn``, in random order: 40% updates of existing orders, 20% deletes of
existing orders, 25% inserts of new orders, and 15% stale earlier changes of updated or
deleted orders (an update that a later change replaces), so that only the last change per
key by ``lsn`` may count.

- ours: ``ns.apply_changes(feed, keys="order_id", sequence_by="lsn", operation="op")`` (one
  atomic commit; the feed's ``op`` and ``lsn`` are read, never written);
- deltalake: the last change per key (pyarrow ``group_by``), then one ``DeltaTable.merge``
  with a conditional delete, update and insert (the partition column in the predicate);
- pylance: the last change per key, then ``merge_insert`` with ``when_matched_delete`` for
  the deletes and ``merge_insert`` update-all / insert-all for the rest (two commits: its
  builder has no conditional delete), on one unpartitioned dataset;
- pyiceberg: the last change per key, then ``Table.delete`` of the deleted keys and
  ``Table.upsert`` of the rest (two commits), bucket-partitioned.

Each (system) is one cell (``cells.py``); each call starts from a fresh copy of the table,
synced to disk before the call. The answer is each system's own reader's row count and the
number of rows carrying the feed's status.

    python benches/cdc.py [--rows N] [--partitions P] [--changes C] [--repeat R]
        [--systems ours,deltalake,pylance,pyiceberg] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import os
from itertools import count
from pathlib import Path
from typing import Any

import lance
import merge
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from report import CELL_HEADER, cell_columns, ratio, update_section
from scratch import discard, scratch

import lance_partitioned as lp

COLUMNS = [f.name for f in merge.SCHEMA]


def feed(n: int, changes: int) -> tuple[pa.Table, int, int]:
    """The change feed, the rows the table holds after it, and how many carry its status."""
    rng = np.random.default_rng(11)
    updates, deletes, inserts = (int(changes * f) for f in (0.40, 0.20, 0.25))
    stale = changes - updates - deletes - inserts
    existing = rng.choice(n, updates + deletes, replace=False)
    upd, dele = existing[:updates], existing[updates:]
    new = np.arange(n, n + inserts)
    stale_keys = rng.choice(existing, stale, replace=False)
    parts = [
        (merge.orders(upd, "changed", 21), "U", 1),
        (merge.orders(dele, "deleted", 22), "D", 1),
        (merge.orders(new, "changed", 23), "I", 1),
        (merge.orders(stale_keys, "stale", 24), "U", 0),
    ]
    tables = []
    for t, op, late in parts:
        # Every key's last change has the highest lsn: the stale ones come first.
        lsn = rng.integers(0, 10**9, t.num_rows) + late * 10**9
        t = t.append_column("op", pa.array([op] * t.num_rows))
        tables.append(t.append_column("lsn", pa.array(lsn, pa.int64())))
    out = pa.concat_tables(tables)
    out = out.take(pa.array(rng.permutation(out.num_rows)))
    return out, n - deletes + inserts, updates + inserts


def last_per_key(changes: pa.Table) -> pa.Table:
    """Each key's change with the highest ``lsn`` (what a peer's user computes first)."""
    latest = changes.group_by("order_id").aggregate([("lsn", "max")])
    return changes.join(
        latest, keys=["order_id", "lsn"], right_keys=["order_id", "lsn_max"], join_type="inner"
    )


def _read_feed(source: str) -> pa.Table:
    return pa.ipc.open_file(source).read_all()


def _answer_of(t: pa.Table) -> str:
    return merge._answer(t.num_rows, pc.sum(pc.equal(t["status"], "changed")).as_py())


def ours(template: str, work: str, source: str) -> Any:
    changes = _read_feed(source)

    def run(root: Path) -> Path:
        ns = lp.PartitionedNamespace.open(str(root))
        ns.apply_changes(changes, keys="order_id", sequence_by="lsn", operation="op")
        return root

    def answer(root: Path) -> str:
        return _answer_of(lp.PartitionedNamespace.open(str(root)).to_table(columns=["status"]))

    return merge._copies(template, work, "ours"), run, answer


def deltalake(template: str, work: str, source: str, partitions: int) -> Any:
    from deltalake import DeltaTable

    changes = _read_feed(source)
    values = {c: f"s.{c}" for c in [*COLUMNS, "bucket"]}

    def run(root: Path) -> Path:
        src = merge.with_bucket(last_per_key(changes), partitions)
        (
            DeltaTable(str(root))
            .merge(
                src,
                predicate="t.bucket = s.bucket AND t.order_id = s.order_id",
                source_alias="s",
                target_alias="t",
            )
            .when_matched_delete(predicate="s.op = 'D'")
            .when_matched_update(updates=values)
            .when_not_matched_insert(updates=values, predicate="s.op <> 'D'")
            .execute()
        )
        return root

    def answer(root: Path) -> str:
        return _answer_of(DeltaTable(str(root)).to_pyarrow_table(columns=["status"]))

    return merge._copies(template, work, "deltalake"), run, answer


def pylance(template: str, work: str, source: str) -> Any:
    changes = _read_feed(source)

    def run(root: Path) -> Path:
        last = last_per_key(changes)
        deleted = last.filter(pc.equal(last["op"], "D")).select(COLUMNS)
        upserted = last.filter(pc.not_equal(last["op"], "D")).select(COLUMNS)
        ds = lance.dataset(str(root))
        ds.merge_insert("order_id").when_matched_delete().execute(deleted)
        ds = lance.dataset(str(root))
        ds.merge_insert("order_id").when_matched_update_all().when_not_matched_insert_all().execute(
            upserted
        )
        return root

    def answer(root: Path) -> str:
        return _answer_of(lance.dataset(str(root)).to_table(columns=["status"]))

    return merge._copies(template, work, "pylance"), run, answer


def pyiceberg(template: str, work: str, source: str, partitions: int) -> Any:
    from pyiceberg.expressions import In

    changes = _read_feed(source)
    base = pa.ipc.open_file(template).read_all()
    n = count()

    def prepare() -> Path:
        root = Path(work) / f"pyiceberg-{os.getpid()}-{next(n)}"
        merge._iceberg_table(root, partitions, "order_id").append(base)
        os.sync()
        return root

    def run(root: Path) -> Path:
        last = last_per_key(changes)
        deleted = last.filter(pc.equal(last["op"], "D"))["order_id"].to_pylist()
        # The join leaves order_id nullable; the Iceberg table requires it.
        upserted = last.filter(pc.not_equal(last["op"], "D")).select(COLUMNS).cast(merge.SCHEMA)
        table = merge._iceberg_open(root)
        table.delete(In("order_id", deleted))
        table.upsert(upserted, join_cols=["order_id"])
        return root

    def answer(root: Path) -> str:
        return _answer_of(merge._iceberg_open(root).scan(selected_fields=("status",)).to_arrow())

    return prepare, run, answer


CASES = {"ours": ours, "deltalake": deltalake, "pylance": pylance, "pyiceberg": pyiceberg}
SYSTEMS = {
    "ours": "ours: `apply_changes(keys, sequence_by, operation)` (one atomic commit)",
    "deltalake": "deltalake: last change per key (pyarrow), one `merge` with conditional "
    "delete / update / insert",
    "pylance": "pylance: last change per key, `merge_insert` delete then upsert (two commits), "
    "one unpartitioned dataset",
    "pyiceberg": "pyiceberg: last change per key, `delete` then `upsert` (two commits), "
    "bucket-partitioned",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--partitions", type=int, default=800)
    ap.add_argument("--changes", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=2)
    merge.add_system_args(ap, SYSTEMS)
    ap.add_argument("--write", type=str, default=None)
    args = ap.parse_args()
    names, left_out = merge.chosen_systems(args)
    work = scratch("lp-cdc-bench-")
    try:
        changes, rows_after, changed_after = feed(args.rows, args.changes)
        source = work / "feed.arrow"
        with pa.ipc.new_file(source, changes.schema) as w:
            w.write_table(changes)
        templates = merge.prepare(work, args.rows, args.partitions, "order_id")
        layout = {"partitions": args.partitions}
        cells = merge.measure_systems("cdc", names, templates, work, source, args.repeat, layout)
    finally:
        discard(work)
    want = merge._answer(rows_after, changed_after)
    answers = {name: c.answer for name, c in cells.items()}
    if set(answers.values()) != {want}:
        raise SystemExit(f"change feed results differ: {answers}, expected {want}")
    lines = [
        f"`python benches/cdc.py --rows {args.rows} --partitions {args.partitions} "
        f"--changes {args.changes} --repeat {args.repeat}`: a feed of {changes.num_rows:,} "
        "changes (updates, deletes, inserts and stale earlier updates, in random order, the "
        f"last per key by `lsn` counting) into {args.rows:,} rows partitioned by a bucket of "
        "the key; every system's own reader counts the same rows afterwards:",
        "",
        f"| change feed | {CELL_HEADER} | ours vs this |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in names:
        c = cells[name]
        lines.append(f"| {SYSTEMS[name]} | {cell_columns(c)} | {ratio(c, cells['ours'])} |")
    if left_out:
        lines += ["", f"Left out at this size (`--without`): {', '.join(left_out)}."]
    text = "\n".join(lines)
    print(text)
    if args.write:
        update_section(Path(args.write), "cdc", text, "## Change feeds: apply_changes")


if __name__ == "__main__":
    main()
