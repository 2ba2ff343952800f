"""Lookups on an indexed non-partition column (issue 36): a point lookup and a 1% range on
``l_orderkey`` of TPC-H ``lineitem``, partitioned by year and month of ``l_shipdate`` (84
partitions), against the systems users pick, each reading the same rows stored its own way:

- ours with a B-tree on ``l_orderkey`` (``ns.create_index("l_orderkey")``), and ours without
  it (what the index buys);
- DuckDB over Hive Parquet written by DuckDB (``COPY ... PARTITION_BY (year, month)``; its
  row groups' min/max skip what they can);
- pyiceberg (``month(l_shipdate)``, a SQL catalog on SQLite): ``scan(row_filter=...)``, which
  skips files by the column bounds in its manifests;
- deltalake (``partition_by=["year", "month"]``): delta-rs's own engine,
  ``QueryBuilder().register(...).execute(SQL)``, which skips files by the log's statistics.

Each cell runs in a fresh process (``cells.py``): the first call (imports and opening
excluded), then the best of ``--repeat``; every system must return the same rows.

    python benches/index_lookup.py [--sf 1] [--repeat 3] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cells import Cell, measure
from report import update_section
from scratch import scratch
from tpch import generate, iceberg_catalog, source_table

import lance_partitioned as lp

COLUMNS = ["l_orderkey", "l_extendedprice"]
SPEC = lp.PartitionSpec(
    [
        lp.PartitionField("year", "l_shipdate", lp.Year()),
        lp.PartitionField("month", "l_shipdate", lp.Month()),
    ]
)


def prepare(sf: float, work: Path) -> dict[str, int]:
    """Writes the data for every system; returns the keys the queries use."""
    import duckdb
    import pyarrow.compute as pc
    from deltalake import write_deltalake
    from pyiceberg.transforms import MonthTransform

    table = source_table(generate(sf))
    keys = table["l_orderkey"]
    point = keys[len(keys) // 2].as_py()
    one_pct = pc.quantile(keys, q=0.01)[0].as_py()
    for name, index in (("ours", True), ("ours_plain", False)):
        ns = lp.PartitionedNamespace.create(str(work / name), table.schema, SPEC)
        ns.write(table)
        if index:
            ns.create_index("l_orderkey")
    con = duckdb.connect()
    con.register("src", table)
    con.execute(
        f"COPY (SELECT *, year(l_shipdate) AS year, month(l_shipdate) AS month FROM src) "
        f"TO '{work / 'duckdb'}' (FORMAT parquet, PARTITION_BY (year, month))"
    )
    ice = iceberg_catalog(work / "iceberg").create_table("bench.lineitem", schema=table.schema)
    with ice.update_spec() as update:
        update.add_field("l_shipdate", MonthTransform(), "month")
    ice.append(table)
    dated = table.append_column("year", pc.year(table["l_shipdate"])).append_column(
        "month", pc.month(table["l_shipdate"])
    )
    write_deltalake(str(work / "delta"), dated, partition_by=["year", "month"])
    keys_doc = {"point": int(point), "one_pct": int(one_pct)}
    (work / "keys.json").write_text(json.dumps(keys_doc))
    return keys_doc


def _where(work: str, query: str) -> tuple[str, int]:
    keys = json.loads((Path(work) / "keys.json").read_text())
    if query == "point":
        return f"l_orderkey = {keys['point']}", keys["point"]
    return f"l_orderkey < {keys['one_pct']}", keys["one_pct"]


def ours(work: str, query: str) -> Callable[[], int]:
    ns = lp.PartitionedNamespace.open(f"{work}/ours")
    sql, _ = _where(work, query)
    return lambda: ns.to_table(filter=sql, columns=COLUMNS).num_rows


def ours_plain(work: str, query: str) -> Callable[[], int]:
    ns = lp.PartitionedNamespace.open(f"{work}/ours_plain")
    sql, _ = _where(work, query)
    return lambda: ns.to_table(filter=sql, columns=COLUMNS).num_rows


def duckdb_hive(work: str, query: str) -> Callable[[], int]:
    import duckdb

    sql, _ = _where(work, query)
    src = f"read_parquet('{work}/duckdb/**/*.parquet', hive_partitioning = true)"
    con = duckdb.connect()
    q = f"SELECT {', '.join(COLUMNS)} FROM {src} WHERE {sql}"
    return lambda: con.sql(q).arrow().read_all().num_rows


def pyiceberg(work: str, query: str) -> Callable[[], int]:
    from pyiceberg.expressions import EqualTo, LessThan

    _, key = _where(work, query)
    expr = EqualTo("l_orderkey", key) if query == "point" else LessThan("l_orderkey", key)
    table = iceberg_catalog(Path(work) / "iceberg").load_table("bench.lineitem")
    return lambda: table.scan(row_filter=expr, selected_fields=tuple(COLUMNS)).to_arrow().num_rows


def deltalake(work: str, query: str) -> Callable[[], int]:
    from deltalake import DeltaTable, QueryBuilder

    sql, _ = _where(work, query)
    qb = QueryBuilder().register("lineitem", DeltaTable(f"{work}/delta"))
    q = f"SELECT {', '.join(COLUMNS)} FROM lineitem WHERE {sql}"
    return lambda: qb.execute(q).read_all().num_rows


CASES: dict[str, Callable[..., Any]] = {
    "ours": ours,
    "ours_plain": ours_plain,
    "duckdb_hive": duckdb_hive,
    "pyiceberg": pyiceberg,
    "deltalake": deltalake,
}
LABELS = {
    "ours": "ours, B-tree on `l_orderkey` (`ns.to_table(filter=SQL)`)",
    "ours_plain": "ours without the index",
    "duckdb_hive": "DuckDB `read_parquet(hive)`",
    "pyiceberg": "pyiceberg `scan(row_filter=...)`",
    "deltalake": "deltalake `QueryBuilder` SQL",
}
QUERIES = {"point": "point lookup `l_orderkey = k`", "range": "1% range `l_orderkey < q`"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sf", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write", type=Path, default=None)
    args = ap.parse_args()
    work = scratch("lp-index-lookup-")
    prepare(args.sf, work)
    lines = [
        f"TPC-H `lineitem` SF{args.sf:g}, partitioned by year and month of `l_shipdate` (84 "
        "partitions) by each system; each cell a fresh process: first call, then best of "
        f"{args.repeat}; columns `l_orderkey, l_extendedprice`. `x ours` is the cell's best over "
        "ours with the index (above 1: slower than ours).",
        "",
        "| query | reader | rows | first call s | best s | peak MiB | x ours |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for query, label in QUERIES.items():
        got: dict[str, Cell] = {}
        for case in CASES:
            got[case] = measure(
                "index_lookup", case, {"work": str(work), "query": query}, args.repeat
            )
        answers = {c.answer for c in got.values()}
        if len(answers) != 1:
            raise SystemExit(f"{query}: the readers disagree: {answers}")
        for case, c in got.items():
            lines.append(
                f"| {label} | {LABELS[case]} | {c.answer} | {c.first:.3f} | {c.best:.3f} | "
                f"{c.peak_mib:.0f} | {c.best / got['ours'].best:.2f} |"
            )
    lines += [
        "",
        f"Command: `python benches/index_lookup.py --sf {args.sf:g} --repeat {args.repeat}`.",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        update_section(args.write, "index-lookup", text, "## Lookups on an indexed column")


if __name__ == "__main__":
    main()
