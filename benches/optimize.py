"""Compaction: ``optimize()`` against pylance's ``compact_files`` run dataset by dataset, in
one run.

Data: ``--rows`` rows (default 10M: id, country, event_day, user_id, amount, note) in
``--partitions`` partitions (default 800: identity(country) x identity(event_day)), written in
four appends, as four Spark tasks of a one-pass write leave them: every partition has four
files.

- ours: ``ns.optimize()`` of a strong-mode namespace: every leaf compacted into one file
  (detached ``Rewrite`` versions, compacted concurrently), then one manifest commit;
- pylance: the same partitions as plain Lance datasets (one per partition, written by
  ``lance.write_dataset`` in the same four appends), each compacted with
  ``dataset.optimize.compact_files()``, then the manifest updated with the new versions in
  one ``merge_insert`` (the least a user keeping their own manifest has to do): with the
  defaults (one dataset after the other, pages decoded and re-encoded), and as a Lance expert
  runs it (``compaction_mode="try_binary_copy"``, datasets on a thread pool of one thread per
  core).

Each (system) is one cell (``cells.py``: a fresh process, first call and best of
``--repeat``, peak RSS); each call starts from a fresh copy of the same data (not timed).
Share of limit: the data files read once and written once at the page-cache write bandwidth.

    python benches/optimize.py [--rows N] [--partitions P] [--repeat R] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
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

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("country", pa.string()),
        pa.field("event_day", pa.date32()),
        pa.field("user_id", pa.int64()),
        pa.field("amount", pa.float64()),
        pa.field("note", pa.string()),
    ]
)
SPEC = lp.PartitionSpec(
    [
        lp.PartitionField("country", source="country", transform=lp.Identity()),
        lp.PartitionField("event_day", source="event_day", transform=lp.Identity()),
    ]
)
TASKS = 4


def make_task(task: int, n: int, partitions: int) -> pa.Table:
    """One task's rows: ids task, task + 4, ...; every partition gets n / partitions / 4."""
    rng = np.random.default_rng(task)
    ids = np.arange(task, n, TASKS, dtype=np.int64)
    part = (ids // TASKS) % partitions
    countries = np.array([f"C{c:02d}" for c in range(20)])
    days = max(1, partitions // 20)
    epoch = np.datetime64("2026-01-01", "D")
    return pa.table(
        {
            "id": ids,
            "country": countries[part % 20],
            "event_day": pa.array(epoch + (part // 20) % days, pa.date32()),
            "user_id": rng.integers(0, 1_000_000, len(ids)),
            "amount": rng.random(len(ids)) * 100,
            "note": pa.array([f"n{i % 997}" for i in ids]),
        },
        schema=SCHEMA,
    )


def prepare(work: Path, n: int, partitions: int) -> tuple[Path, Path]:
    """The namespace (ours) and the plain datasets plus their manifest (pylance's)."""
    ours = work / "template-ours"
    ns = lp.PartitionedNamespace.create(str(ours), SCHEMA, SPEC)
    peer = work / "template-peer"
    (peer / "parts").mkdir(parents=True)
    for task in range(TASKS):
        t = make_task(task, n, partitions)
        ns.write(t)
        keys = pc.binary_join_element_wise(t["country"], pc.cast(t["event_day"], pa.string()), "_")
        for key in pc.unique(keys).to_pylist():
            mode = "append" if task else "create"
            part = t.filter(pc.equal(keys, key))
            lance.write_dataset(part, str(peer / "parts" / key / "data"), mode=mode)
    versions = {p.name: lance.dataset(str(p / "data")).version for p in (peer / "parts").iterdir()}
    lance.write_dataset(
        pa.table(
            {
                "object_id": list(versions),
                "read_version": pa.array(list(versions.values()), pa.uint64()),
            }
        ),
        str(peer / "manifest"),
    )
    files = ns.stats()["files"].to_pylist()
    assert set(files) == {TASKS}, f"expected {TASKS} files per partition, got {set(files)}"
    return ours, peer


def _copies(template: str, work: str, name: str) -> Callable[[], Path]:
    n = count()

    def prepare() -> Path:
        dest = Path(work) / f"{name}-{os.getpid()}-{next(n)}"
        shutil.copytree(template, dest)
        return dest

    return prepare


def ours(template: str, work: str) -> Any:
    def run(root: Path) -> Path:
        lp.PartitionedNamespace.open(str(root)).optimize()
        return root

    def answer(root: Path) -> str:
        ns = lp.PartitionedNamespace.open(str(root))
        stats = ns.stats()
        files = set(stats["files"].to_pylist())
        return json.dumps({"partitions": stats.num_rows, "files": sorted(files)})

    return _copies(template, work, "ours"), run, answer


def _peer(template: str, work: str, tuned: bool) -> Any:
    def compact(p: Path) -> tuple[str, int]:
        ds = lance.dataset(str(p / "data"))
        if tuned:
            ds.optimize.compact_files(compaction_mode="try_binary_copy", num_threads=1)
        else:
            ds.optimize.compact_files()
        return p.name, ds.version

    def run(root: Path) -> Path:
        parts = sorted((root / "parts").iterdir())
        if tuned:
            with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
                versions = dict(pool.map(compact, parts))
        else:
            versions = dict(map(compact, parts))
        m = lance.dataset(str(root / "manifest"))
        update = pa.table(
            {
                "object_id": list(versions),
                "read_version": pa.array(list(versions.values()), pa.uint64()),
            }
        )
        m.merge_insert("object_id").when_matched_update_all().execute(update)
        return root

    def answer(root: Path) -> str:
        parts = list((root / "parts").iterdir())
        files = {len(lance.dataset(str(p / "data")).get_fragments()) for p in parts}
        return json.dumps({"partitions": len(parts), "files": sorted(files)})

    return _copies(template, work, "peer-tuned" if tuned else "peer"), run, answer


CASES = {
    "ours": ours,
    "pylance_default": lambda template, work: _peer(template, work, False),
    "pylance_tuned": lambda template, work: _peer(template, work, True),
}
SYSTEMS = {
    "ours": "ours: `ns.optimize()` (one manifest commit)",
    "pylance_default": "pylance `compact_files` per dataset, defaults, + one manifest "
    "`merge_insert`",
    "pylance_tuned": "pylance `compact_files(compaction_mode='try_binary_copy')` on a thread "
    "pool + one manifest `merge_insert` (tuned)",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--partitions", type=int, default=800)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write", type=str, default=None)
    args = ap.parse_args()
    work = scratch("lp-optimize-bench-")
    try:
        ours_t, peer_t = prepare(work, args.rows, args.partitions)
        data_bytes = sum(f.stat().st_size for f in ours_t.rglob("*.lance") if f.is_file())
        templates = {"ours": ours_t, "pylance_default": peer_t, "pylance_tuned": peer_t}
        cells = {
            name: measure(
                "optimize",
                name,
                {"template": str(templates[name]), "work": str(work)},
                args.repeat,
            )
            for name in SYSTEMS
        }
    finally:
        discard(work)
    answers = {c.answer for c in cells.values()}
    want = json.dumps({"partitions": args.partitions, "files": [1]})
    if answers != {want}:
        raise SystemExit(f"compaction results differ: {answers}, expected {want}")
    at_limit = 2 * data_bytes / (limits.current()["disk_gbps"] * 1e9)
    lines = [
        f"`python benches/optimize.py --rows {args.rows} --partitions {args.partitions} "
        f"--repeat {args.repeat}`: {args.partitions} partitions x {TASKS} files, "
        f"{args.rows:,} rows ({data_bytes / 1e6:.0f} MB of data files); every system leaves "
        "one file per partition:",
        "",
        f"| compaction | {CELL_HEADER} | share of limit | ours vs this |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, label in SYSTEMS.items():
        c = cells[name]
        lines.append(
            f"| {label} | {cell_columns(c)} | {share(at_limit, c.best)} "
            f"| {ratio(c, cells['ours'])} |"
        )
    text = "\n".join(lines)
    print(text)
    if args.write:
        update_section(Path(args.write), "optimize", text, "## Compaction: optimize()")


if __name__ == "__main__":
    main()
