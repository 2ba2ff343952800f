"""A time window over partitions written as a stream (issue 36, fragment statistics): events
partitioned by day, each day written by ``--batches`` micro-batches of consecutive time (one
commit each, as a streaming sink writes them), then a one-hour window read. Every system
stores the same rows its own way, written the same way, one commit per micro-batch:

- ours: each micro-batch adds a fragment to its day's partition and records the statistics
  of its rows, so the window reads only the fragments whose hours it can match;
- ours with column statistics turned off (``lance_partitioned.column_stats = false``): what
  the statistics buy;
- ours with a compaction target of ``--target`` rows
  (``lance_partitioned.partition.target_rows_per_file``): the compactions after the writes
  make files of that many rows, each keeping the bounds of the micro-batches it holds, where
  the default target (a million rows) merges a run of them into one file spanning their hours;
- ours with a zone-map index on ``ts`` (``ns.create_index("ts", "zonemap")`` before the
  stream; every write indexes what it adds): Lance skips the zones of a fragment the window
  cannot match, inside the fragments a compaction made of many micro-batches;
- DuckDB over Hive Parquet, one file per micro-batch (as Spark's file sink writes them;
  DuckDB skips files and row groups by their min/max);
- deltalake, one ``write_deltalake(mode="append")`` per micro-batch (its log's per-file
  statistics skip files), read with delta-rs's ``QueryBuilder`` SQL;
- pyiceberg, one ``append`` per micro-batch (per-file bounds in its manifests),
  ``scan(row_filter=...)``.

Each cell runs in a fresh process (``cells.py``): the first call (imports and opening
excluded), then the best of ``--repeat``; every system must return the same rows.

    python benches/stream_read.py [--days 2] [--batches 150] [--rows 10000] [--repeat 5]
        [--target 131072] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import datetime
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
from cells import Cell, measure
from report import update_section
from scratch import scratch
from tpch import iceberg_catalog

import lance_partitioned as lp

START = datetime.datetime(2026, 3, 1)
SCHEMA = pa.schema(
    [
        ("ts", pa.timestamp("us")),
        ("user_id", pa.int64()),
        ("kind", pa.string()),
        ("value", pa.float64()),
    ]
)
SPEC = lp.PartitionSpec([lp.PartitionField("day", "ts", lp.Day())])
COLUMNS = ["ts", "user_id", "value"]


def micro_batch(day: int, k: int, batches: int, rows: int) -> pa.Table:
    """Micro-batch ``k`` of day ``day``: ``rows`` events evenly over its slice of the day."""
    import numpy as np

    span = 86_400_000_000 // batches
    t0 = int((START + datetime.timedelta(days=day)).timestamp() * 1_000_000) + k * span
    rng = np.random.default_rng(day * 100_003 + k)
    ts = t0 + np.sort(rng.integers(0, span, rows))
    kinds = np.array(["view", "click", "buy", "share"])
    return pa.table(
        {
            "ts": pa.array(ts.astype("datetime64[us]")),
            "user_id": rng.integers(0, 1_000_000, rows),
            "kind": kinds[rng.integers(0, 4, rows)],
            "value": rng.random(rows),
        },
        schema=SCHEMA,
    )


def prepare(days: int, batches: int, rows: int, target: int, work: Path) -> dict[str, float]:
    """Writes the stream into every system; returns each one's seconds of writing."""
    import pyarrow.compute as pc
    import pyarrow.dataset as pds
    from deltalake import write_deltalake
    from pyiceberg.transforms import DayTransform

    ours = lp.PartitionedNamespace.create(str(work / "ours"), SCHEMA, SPEC)
    plain = lp.PartitionedNamespace.create(
        str(work / "ours_plain"),
        SCHEMA,
        SPEC,
        properties={"lance_partitioned.column_stats": "false"},
    )
    fine = lp.PartitionedNamespace.create(
        str(work / "ours_fine"),
        SCHEMA,
        SPEC,
        properties={"lance_partitioned.partition.target_rows_per_file": str(target)},
    )
    zoned = lp.PartitionedNamespace.create(str(work / "ours_zonemap"), SCHEMA, SPEC)
    zoned.create_index("ts", "zonemap")
    ice = iceberg_catalog(work / "iceberg").create_table("bench.events", schema=SCHEMA)
    with ice.update_spec() as update:
        update.add_field("ts", DayTransform(), "day")
    spent = dict.fromkeys(
        [
            "ours",
            "ours_plain",
            "ours_fine",
            "ours_zonemap",
            "duckdb_hive",
            "deltalake",
            "pyiceberg",
        ],
        0.0,
    )

    def timed(name: str, f: Callable[[], Any]) -> None:
        t0 = time.perf_counter()
        f()
        spent[name] += time.perf_counter() - t0

    for day in range(days):
        for k in range(batches):
            b = micro_batch(day, k, batches, rows)
            dated = b.append_column("day", pc.strftime(b["ts"], "%Y-%m-%d"))
            timed("ours", lambda b=b: ours.write(b))
            timed("ours_plain", lambda b=b: plain.write(b))
            timed("ours_fine", lambda b=b: fine.write(b))
            timed("ours_zonemap", lambda b=b: zoned.write(b))
            timed(
                "duckdb_hive",
                lambda d=dated, day=day, k=k: pds.write_dataset(
                    d,
                    work / "hive",
                    format="parquet",
                    partitioning=["day"],
                    partitioning_flavor="hive",
                    basename_template=f"part-{day}-{k}-{{i}}.parquet",
                    existing_data_behavior="overwrite_or_ignore",
                ),
            )
            timed(
                "deltalake",
                lambda d=dated: write_deltalake(
                    str(work / "delta"), d, partition_by=["day"], mode="append"
                ),
            )
            timed("pyiceberg", lambda b=b: ice.append(b))
    window = START + datetime.timedelta(days=days - 1, hours=13)
    (work / "window.json").write_text(json.dumps({"lo": window.isoformat()}))
    return spent


def _window(work: str) -> tuple[str, datetime.datetime, datetime.datetime]:
    lo = datetime.datetime.fromisoformat(json.loads((Path(work) / "window.json").read_text())["lo"])
    hi = lo + datetime.timedelta(hours=1)
    sql = f"ts >= TIMESTAMP '{lo.isoformat()}' AND ts < TIMESTAMP '{hi.isoformat()}'"
    return sql, lo, hi


def _sum(t: pa.Table) -> str:
    import pyarrow.compute as pc

    return f"{t.num_rows}:{pc.sum(t['user_id']).as_py()}"


def ours(work: str) -> Callable[[], str]:
    ns = lp.PartitionedNamespace.open(f"{work}/ours")
    sql, _, _ = _window(work)
    return lambda: _sum(ns.to_table(filter=sql, columns=COLUMNS))


def ours_plain(work: str) -> Callable[[], str]:
    ns = lp.PartitionedNamespace.open(f"{work}/ours_plain")
    sql, _, _ = _window(work)
    return lambda: _sum(ns.to_table(filter=sql, columns=COLUMNS))


def ours_fine(work: str) -> Callable[[], str]:
    ns = lp.PartitionedNamespace.open(f"{work}/ours_fine")
    sql, _, _ = _window(work)
    return lambda: _sum(ns.to_table(filter=sql, columns=COLUMNS))


def ours_zonemap(work: str) -> Callable[[], str]:
    ns = lp.PartitionedNamespace.open(f"{work}/ours_zonemap")
    sql, _, _ = _window(work)
    return lambda: _sum(ns.to_table(filter=sql, columns=COLUMNS))


def duckdb_hive(work: str) -> Callable[[], str]:
    import duckdb

    sql, _, _ = _window(work)
    src = f"read_parquet('{work}/hive/**/*.parquet', hive_partitioning = true)"
    con = duckdb.connect()
    q = f"SELECT {', '.join(COLUMNS)} FROM {src} WHERE {sql}"
    return lambda: _sum(con.sql(q).arrow().read_all())


def deltalake(work: str) -> Callable[[], str]:
    from deltalake import DeltaTable, QueryBuilder

    sql, _, _ = _window(work)
    qb = QueryBuilder().register("events", DeltaTable(f"{work}/delta"))
    q = f"SELECT {', '.join(COLUMNS)} FROM events WHERE {sql}"
    return lambda: _sum(pa.table(qb.execute(q).read_all()))


def pyiceberg(work: str) -> Callable[[], str]:
    from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan

    _, lo, hi = _window(work)
    expr = And(GreaterThanOrEqual("ts", lo.isoformat()), LessThan("ts", hi.isoformat()))
    table = iceberg_catalog(Path(work) / "iceberg").load_table("bench.events")
    return lambda: _sum(table.scan(row_filter=expr, selected_fields=tuple(COLUMNS)).to_arrow())


CASES: dict[str, Callable[..., Any]] = {
    "ours": ours,
    "ours_plain": ours_plain,
    "ours_fine": ours_fine,
    "ours_zonemap": ours_zonemap,
    "duckdb_hive": duckdb_hive,
    "deltalake": deltalake,
    "pyiceberg": pyiceberg,
}
LABELS = {
    "ours": "ours (`ns.to_table(filter=SQL)`)",
    "ours_plain": "ours, column statistics off",
    "ours_fine": "ours, compaction target {target:,} rows",
    "ours_zonemap": "ours with a zone-map index on `ts`",
    "duckdb_hive": "DuckDB `read_parquet(hive)`, a file per micro-batch",
    "deltalake": "deltalake `QueryBuilder` SQL",
    "pyiceberg": "pyiceberg `scan(row_filter=...)`",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", type=int, default=2)
    ap.add_argument("--batches", type=int, default=150)
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--target", type=int, default=131_072)
    ap.add_argument("--write", type=Path, default=None)
    args = ap.parse_args()
    work = scratch("lp-stream-read-")
    spent = prepare(args.days, args.batches, args.rows, args.target, work)
    got: dict[str, Cell] = {
        case: measure("stream_read", case, {"work": str(work)}, args.repeat) for case in CASES
    }
    answers = {c.answer for c in got.values()}
    if len(answers) != 1:
        raise SystemExit(f"the readers disagree: {answers}")
    total = args.days * args.batches * args.rows
    lines = [
        f"{total:,} events partitioned by day, each of {args.days} days written as "
        f"{args.batches} micro-batches of {args.rows:,} rows in time order (one commit each, in "
        "every system); the query reads a one-hour window of the last day (`ts` in [13:00, "
        "14:00), rows:sum of `user_id` in the table). Each cell a fresh process: first call, "
        f"then best of {args.repeat}. `x ours` is the cell's best over ours (above 1: slower).",
        "",
        "| reader | answer | first call s | best s | peak MiB | x ours | writing the stream s |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for case, c in got.items():
        lines.append(
            f"| {LABELS[case].format(target=args.target)} | {c.answer} | {c.first:.3f} "
            f"| {c.best:.3f} | {c.peak_mib:.0f} | "
            f"{c.best / got['ours'].best:.2f} | {spent[case]:.1f} |"
        )
    lines += [
        "",
        f"Command: `python benches/stream_read.py --days {args.days} --batches {args.batches} "
        f"--rows {args.rows} --repeat {args.repeat} --target {args.target}`.",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        update_section(
            args.write, "stream-read", text, "## A time window over a stream's partitions"
        )


if __name__ == "__main__":
    main()
