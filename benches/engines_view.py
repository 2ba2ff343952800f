"""DuckDB and polars querying a namespace through its pyarrow dataset view, and DataFusion
through its FFI table provider (``ns.to_datafusion()``), against our own scan and against each
engine reading the same rows written as Hive-partitioned Parquet.

The synthetic events (``events.py``: ~800 partitions by country and bucket(city, 16)) are
written once as a namespace and once as Hive Parquet (``country=.../city_bucket=...``, pyarrow's
``write_to_dataset``). Each cell runs one query in a fresh process (``cells.py``: first call,
then best of ``--repeat``) and returns the rows it selects, so the answers are compared:

- a partition filter with a filter on another column (``country = ... AND id < ...``);
- a filter on a non-partition column alone (``id < ...``, ~1% of the rows).

    python benches/engines_view.py --rows 5000000 --repeat 3 --write BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import datafusion
import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from cells import Cell, measure
from events import SPEC, events
from report import update_section
from scratch import scratch

import lance_partitioned as lp
from lance_partitioned import kernels as k

# One of the 50 countries of events.py (its value pool, entry 7).
COUNTRY = f"v3-{7:09d}-{'x' * 7}"[: 10 + (7 * 7) % 11]
QUERIES = {
    "partition and id": (f"country = '{COUNTRY}' AND id < {2**62}", True),
    "id only (1%)": (f"id < {int(0.01 * 2**63)}", False),
}


def prepare(rows: int, work: Path) -> None:
    table = events(rows)
    ns = lp.PartitionedNamespace.create(str(work / "ns"), table.schema, SPEC)
    ns.write(table)
    keyed = table.append_column("city_bucket", k.bucket(table["city"], 16))
    pq.write_to_dataset(keyed, str(work / "hive"), partition_cols=["country", "city_bucket"])


def _where(query: str) -> str:
    return QUERIES[query][0]


def _polars_filter(query: str) -> pl.Expr:
    lo = pl.col("id") < int(_where(query).rsplit("<", 1)[1])
    if QUERIES[query][1]:
        return (pl.col("country") == COUNTRY) & lo
    return lo


def ours(work: str, query: str) -> Callable[[], int]:
    ns = lp.PartitionedNamespace.open(f"{work}/ns")
    return lambda: ns.to_table(filter=_where(query), columns=["id", "ts"]).num_rows


def duckdb_view(work: str, query: str) -> Callable[[], int]:
    ds = lp.PartitionedNamespace.open(f"{work}/ns").to_pyarrow_dataset()
    con = duckdb.connect()
    con.register("events", ds)
    sql = f"SELECT id, ts FROM events WHERE {_where(query)}"
    return lambda: con.sql(sql).arrow().read_all().num_rows


def duckdb_hive(work: str, query: str) -> Callable[[], int]:
    con = duckdb.connect()
    src = f"read_parquet('{work}/hive/**/*.parquet', hive_partitioning = true)"
    sql = f"SELECT id, ts FROM {src} WHERE {_where(query)}"
    return lambda: con.sql(sql).arrow().read_all().num_rows


def polars_view(work: str, query: str) -> Callable[[], int]:
    ds = lp.PartitionedNamespace.open(f"{work}/ns").to_pyarrow_dataset()
    flt = _polars_filter(query)
    return lambda: pl.scan_pyarrow_dataset(ds).filter(flt).select("id", "ts").collect().height


def polars_hive(work: str, query: str) -> Callable[[], int]:
    flt = _polars_filter(query)
    src = f"{work}/hive/**/*.parquet"

    def run() -> int:
        lf = pl.scan_parquet(src, hive_partitioning=True)
        return lf.filter(flt).select("id", "ts").collect().height

    return run


def pyarrow_view(work: str, query: str) -> Callable[[], int]:
    ds = lp.PartitionedNamespace.open(f"{work}/ns").to_pyarrow_dataset()
    lo = pc.field("id") < int(_where(query).rsplit("<", 1)[1])
    flt = (pc.field("country") == COUNTRY) & lo if QUERIES[query][1] else lo
    return lambda: ds.to_table(columns=["id", "ts"], filter=flt).num_rows


def _datafusion() -> datafusion.SessionContext:
    # Tuned as DataFusion's users would: every core, Parquet pruning and pushdown (defaults).
    config = datafusion.SessionConfig().with_target_partitions(os.cpu_count() or 1)
    return datafusion.SessionContext(config)


def datafusion_table(work: str, query: str) -> Callable[[], int]:
    ctx = _datafusion()  # kept by the closure: the FFI reaches the session weakly
    ctx.register_table("events", lp.PartitionedNamespace.open(f"{work}/ns").to_datafusion())
    sql = f"SELECT id, ts FROM events WHERE {_where(query)}"
    return lambda: ctx.sql(sql).to_arrow_table().num_rows


def datafusion_hive(work: str, query: str) -> Callable[[], int]:
    ctx = _datafusion()
    parts = [("country", pa.string()), ("city_bucket", pa.int32())]
    ctx.register_parquet("events", f"{work}/hive/", table_partition_cols=parts)
    sql = f"SELECT id, ts FROM events WHERE {_where(query)}"
    return lambda: ctx.sql(sql).to_arrow_table().num_rows


CASES: dict[str, Callable[..., Any]] = {
    "ours": ours,
    "duckdb_view": duckdb_view,
    "polars_view": polars_view,
    "pyarrow_view": pyarrow_view,
    "duckdb_hive": duckdb_hive,
    "polars_hive": polars_hive,
    "datafusion_table": datafusion_table,
    "datafusion_hive": datafusion_hive,
}
LABELS = {
    "ours": "ours: `ns.to_table(filter=SQL)`",
    "duckdb_view": "DuckDB SQL over `ns.to_pyarrow_dataset()`",
    "polars_view": "polars `scan_pyarrow_dataset(view)`",
    "pyarrow_view": "pyarrow `view.to_table(filter=expr)`",
    "duckdb_hive": "DuckDB `read_parquet(hive)`",
    "polars_hive": "polars `scan_parquet(hive)`",
    "datafusion_table": "DataFusion SQL over `ns.to_datafusion()` (FFI table provider)",
    "datafusion_hive": "DataFusion `register_parquet(hive)`",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write", type=Path, default=None)
    args = ap.parse_args()
    work = scratch("lp-engines-view-")
    prepare(args.rows, work)
    lines = [
        f"{args.rows:,} synthetic events (~800 partitions by country and bucket(city, 16)); "
        f"each cell a fresh process: first call, then best of {args.repeat}; the rows `id, ts` "
        "selected by the filter. Ratios: the cell's best over ours (under 1.00: faster than "
        "ours).",
        "",
        "| query | reader | rows | first call s | best s | peak MiB | vs ours |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for query in QUERIES:
        got: dict[str, Cell] = {}
        for case in CASES:
            got[case] = measure(
                "engines_view", case, {"work": str(work), "query": query}, args.repeat
            )
        answers = {c.answer for c in got.values()}
        if len(answers) != 1:
            raise SystemExit(f"{query}: the readers disagree: {answers}")
        for case, c in got.items():
            lines.append(
                f"| {query} | {LABELS[case]} | {c.answer} | {c.first:.3f} | {c.best:.3f} | "
                f"{c.peak_mib:.0f} | {c.best / got['ours'].best:.2f} |"
            )
    lines += [
        "",
        f"Command: `python benches/engines_view.py --rows {args.rows} --repeat {args.repeat}`.",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        update_section(
            args.write, "engines-view", text, "## Other engines through the dataset view"
        )


if __name__ == "__main__":
    main()
