"""Against the systems users would pick instead, on TPC-H (issue 32).

TPC-H ``lineitem`` at scale factor ``--sf`` (1: 6M rows), generated once by ``tpchgen-cli``
(PyPI) and cached, partitioned by ``l_shipmode`` (identity, 7 partitions) by each system as its
own users would write it:

- ours: ``PartitionedNamespace.create`` + ``write`` (strong mode, one atomic commit);
- pyiceberg: a SQL catalog on SQLite, an identity partition spec, ``table.append``;
- deltalake: ``write_deltalake(partition_by=["l_shipmode"])``;
- DuckDB: ``COPY (...) TO dir (FORMAT parquet, PARTITION_BY (l_shipmode))``;
- polars: ``write_parquet(dir, partition_by="l_shipmode")``.

Operations: ``ingest``; ``pruned`` (sum of ``l_extendedprice`` where ``l_shipmode = 'AIR'``:
one partition read); ``filtered`` (the same sum where ``l_quantity < 5``: no partition
pruned, the filter on a data column); ``join_ingest`` and ``join`` (``lineitem`` and ``orders``
stored for a join on the order key, then the sum of ``l_extendedprice`` over the join with
urgent orders; see ``JOIN_SQL`` for each system's layout). Each (system, operation) runs
in a fresh process (``cells.py``): the first call is timed (imports excluded), then the best
of ``--repeat`` more; peak RSS is the process's during the calls. Every answer (rows read
back after an ingest, the sums) must be equal across the systems, or the bench fails.

    python benches/tpch.py [--sf 1] [--repeat 3] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import limits
from cells import Cell, measure
from report import CELL_HEADER, cell_columns, ratio, share, update_section
from scratch import discard, scratch

SYSTEMS = ["ours", "pyiceberg", "deltalake", "duckdb", "polars"]
PURGE_1S = "ours, `MIMALLOC_PURGE_DELAY=1000` (mimalloc's default)"
OPS = ["ingest", "pruned", "filtered", "join_ingest", "join"]
CACHE = Path.home() / ".cache" / "lance-partitioned" / "tpch"


def generate(sf: float) -> Path:
    """lineitem.parquet and orders.parquet at `sf`, generated once; the lineitem path."""
    out = CACHE / f"sf{sf:g}"
    for table in ("lineitem", "orders"):
        if not (out / f"{table}.parquet").exists():
            out.mkdir(parents=True, exist_ok=True)
            cli = Path(sys.executable).parent / "tpchgen-cli"
            subprocess.run(
                [str(cli), "parquet", "-s", f"{sf:g}", "--tables", table, "-o", str(out)],
                check=True,
            )
    return out / "lineitem.parquet"


def source_table(path: Path) -> Any:
    """The generated table with plain string columns (pyiceberg takes no string_view)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pq.read_table(path)
    fields = [
        pa.field(f.name, pa.string()) if pa.types.is_string_view(f.type) else f for f in t.schema
    ]
    return t.cast(pa.schema(fields))


# -- one system's operations, run in a child process ------------------------------------------


def iceberg_catalog(warehouse: Path, data: str | None = None, **props: str) -> Any:
    """pyiceberg's SQL catalog on SQLite in `warehouse`, with the namespace ``bench``; its
    tables' files under ``data`` (default: `warehouse`/warehouse), with the FileIO
    properties ``props`` (an S3 endpoint and keys)."""
    from pyiceberg.catalog.sql import SqlCatalog

    warehouse.mkdir(exist_ok=True)
    cat = SqlCatalog(
        "bench",
        uri=f"sqlite:///{warehouse}/catalog.db",
        warehouse=data or f"file://{warehouse}/warehouse",
        **props,
    )
    if ("bench",) not in cat.list_namespaces():
        cat.create_namespace("bench")
    return cat


def ours(work: Path, table: Any) -> dict[str, Callable[[], Any]]:
    import pyarrow.compute as pc

    import lance_partitioned as lp

    root = str(work / "ours")
    spec = lp.PartitionSpec([lp.PartitionField("mode", "l_shipmode", lp.Identity())])

    def reset() -> None:
        assert table is not None
        shutil.rmtree(root, ignore_errors=True)

    def ingest() -> None:
        ns = lp.PartitionedNamespace.create(root, table.schema, spec)
        ns.write(table)

    def total(sql: str) -> Decimal:
        t = lp.PartitionedNamespace.open(root).to_table(sql, columns=["l_extendedprice"])
        return pc.sum(t["l_extendedprice"]).as_py()

    return {
        "reset": reset,
        "ingest": ingest,
        "count": lambda: (
            lp.PartitionedNamespace.open(root).to_table(columns=["l_orderkey"]).num_rows
        ),
        "pruned": lambda: total("l_shipmode = 'AIR'"),
        "filtered": lambda: total("l_quantity < 5"),
    }


def iceberg(work: Path, table: Any) -> dict[str, Callable[[], Any]]:
    import pyarrow.compute as pc
    from pyiceberg.expressions import EqualTo, LessThan
    from pyiceberg.transforms import IdentityTransform

    def catalog() -> Any:
        return iceberg_catalog(work / "iceberg")

    def reset() -> None:
        cat = catalog()
        if cat.table_exists("bench.lineitem"):
            cat.purge_table("bench.lineitem")

    def ingest() -> None:
        t = catalog().create_table("bench.lineitem", schema=table.schema)
        with t.update_spec() as update:
            update.add_field("l_shipmode", IdentityTransform(), "mode")
        t.append(table)

    def total(expr: Any) -> Decimal:
        t = catalog().load_table("bench.lineitem")
        got = t.scan(row_filter=expr, selected_fields=("l_extendedprice",)).to_arrow()
        return pc.sum(got["l_extendedprice"]).as_py()

    return {
        "reset": reset,
        "ingest": ingest,
        "count": lambda: int(catalog().load_table("bench.lineitem").scan().count()),
        "pruned": lambda: total(EqualTo("l_shipmode", "AIR")),
        "filtered": lambda: total(LessThan("l_quantity", Decimal("5.00"))),
    }


def delta(work: Path, table: Any) -> dict[str, Callable[[], Any]]:
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    from deltalake import DeltaTable, write_deltalake

    path = str(work / "delta")

    def ingest() -> None:
        write_deltalake(path, table, partition_by=["l_shipmode"])

    def total(expr: Any) -> Decimal:
        d = DeltaTable(path).to_pyarrow_dataset()
        got = d.to_table(filter=expr, columns=["l_extendedprice"])
        return pc.sum(got["l_extendedprice"]).as_py()

    return {
        "reset": lambda: shutil.rmtree(path, ignore_errors=True),
        "ingest": ingest,
        "count": lambda: DeltaTable(path).to_pyarrow_dataset().count_rows(),
        "pruned": lambda: total(ds.field("l_shipmode") == "AIR"),
        "filtered": lambda: total(ds.field("l_quantity") < Decimal(5)),
    }


def duck(work: Path, table: Any) -> dict[str, Callable[[], Any]]:
    import duckdb

    path = work / "duckdb"
    glob = f"{path}/**/*.parquet"

    def ingest() -> None:
        con = duckdb.connect()
        con.register("src", table)
        con.execute(f"COPY src TO '{path}' (FORMAT parquet, PARTITION_BY (l_shipmode))")

    def total(where: str) -> Decimal:
        q = (
            f"SELECT sum(l_extendedprice) FROM read_parquet('{glob}', hive_partitioning=true) "
            f"WHERE {where}"
        )
        return duckdb.connect().execute(q).fetchone()[0]

    return {
        "reset": lambda: shutil.rmtree(path, ignore_errors=True),
        "ingest": ingest,
        "count": lambda: (
            duckdb.connect().execute(f"SELECT count(*) FROM read_parquet('{glob}')").fetchone()[0]
        ),
        "pruned": lambda: total("l_shipmode = 'AIR'"),
        "filtered": lambda: total("l_quantity < 5"),
    }


def polars(work: Path, table: Any) -> dict[str, Callable[[], Any]]:
    import polars as pl

    path = work / "polars"

    def ingest() -> None:
        pl.from_arrow(table).write_parquet(path, partition_by="l_shipmode", mkdir=True)

    def total(cond: Any) -> Decimal:
        lf = pl.scan_parquet(path, hive_partitioning=True)
        return lf.filter(cond).select(pl.col("l_extendedprice").sum()).collect().item()

    return {
        "reset": lambda: shutil.rmtree(path, ignore_errors=True),
        "ingest": ingest,
        "count": lambda: (
            pl.scan_parquet(path, hive_partitioning=True).select(pl.len()).collect().item()
        ),
        "pruned": lambda: total(pl.col("l_shipmode") == "AIR"),
        "filtered": lambda: total(pl.col("l_quantity") < 5),
    }


MAKERS = {"ours": ours, "pyiceberg": iceberg, "deltalake": delta, "duckdb": duck, "polars": polars}

# -- the join: lineitem JOIN orders ON orderkey, orders filtered ------------------------------
# Each system stores both tables as its users would for a join on the key: ours and pyiceberg
# bucket both by the order key (16 buckets: ours joins bucket by bucket), the Parquet and
# Delta writers keep them unpartitioned (a key of 1.5M values is no partition column for them).

JOIN_SQL = (
    "SELECT sum(l_extendedprice) FROM lineitem JOIN orders ON l_orderkey = o_orderkey "
    "WHERE o_orderpriority = '1-URGENT'"
)
BUCKETS = 16


def ours_join(work: Path, tables: Any) -> dict[str, Callable[[], Any]]:
    import pyarrow.compute as pc

    import lance_partitioned as lp

    roots = {name: str(work / f"ours_{name}") for name in ("lineitem", "orders")}
    keys = {"lineitem": "l_orderkey", "orders": "o_orderkey"}

    def reset() -> None:
        for root in roots.values():
            shutil.rmtree(root, ignore_errors=True)

    def ingest() -> int:
        n = 0
        for name, table in tables().items():
            field = lp.PartitionField("b", keys[name], lp.Bucket(BUCKETS))
            ns = lp.PartitionedNamespace.create(
                roots[name], table.schema, lp.PartitionSpec([field])
            )
            n += ns.write(table).rows
        return n

    def join() -> Decimal:
        reader = lp.join(
            lp.PartitionedNamespace.open(roots["lineitem"]),
            lp.PartitionedNamespace.open(roots["orders"]),
            on=[("l_orderkey", "o_orderkey")],
            columns=["l_extendedprice"],
            filter=(None, "o_orderpriority = '1-URGENT'"),
        )
        return pc.sum(reader.read_all()["l_extendedprice"]).as_py()

    return {"join_reset": reset, "join_ingest": ingest, "join": join}


def iceberg_join(work: Path, tables: Any) -> dict[str, Callable[[], Any]]:
    import pyarrow.compute as pc
    from pyiceberg.expressions import EqualTo
    from pyiceberg.transforms import BucketTransform

    keys = {"lineitem": "l_orderkey", "orders": "o_orderkey"}

    def catalog() -> Any:
        return iceberg_catalog(work / "iceberg_join")

    def reset() -> None:
        cat = catalog()
        for name in keys:
            if cat.table_exists(f"bench.{name}"):
                cat.purge_table(f"bench.{name}")

    def ingest() -> int:
        cat = catalog()
        n = 0
        for name, table in tables().items():
            t = cat.create_table(f"bench.{name}", schema=table.schema)
            with t.update_spec() as update:
                update.add_field(keys[name], BucketTransform(BUCKETS), "b")
            t.append(table)
            n += table.num_rows
        return n

    def join() -> Decimal:
        # What a pyiceberg user does without a SQL engine: scan both, join in pyarrow.
        cat = catalog()
        li = cat.load_table("bench.lineitem").scan(
            selected_fields=("l_orderkey", "l_extendedprice")
        )
        od = cat.load_table("bench.orders").scan(
            row_filter=EqualTo("o_orderpriority", "1-URGENT"), selected_fields=("o_orderkey",)
        )
        joined = li.to_arrow().join(od.to_arrow(), "l_orderkey", "o_orderkey", join_type="inner")
        return pc.sum(joined["l_extendedprice"]).as_py()

    return {"join_reset": reset, "join_ingest": ingest, "join": join}


def delta_join(work: Path, tables: Any) -> dict[str, Callable[[], Any]]:
    from deltalake import DeltaTable, QueryBuilder, write_deltalake

    paths = {name: str(work / f"delta_{name}") for name in ("lineitem", "orders")}

    def reset() -> None:
        for path in paths.values():
            shutil.rmtree(path, ignore_errors=True)

    def ingest() -> int:
        n = 0
        for name, table in tables().items():
            write_deltalake(paths[name], table)
            n += table.num_rows
        return n

    def join() -> Decimal:
        qb = QueryBuilder()
        for name, path in paths.items():
            qb = qb.register(name, DeltaTable(path))
        return qb.execute(JOIN_SQL).read_all().column(0)[0].as_py()

    return {"join_reset": reset, "join_ingest": ingest, "join": join}


def duck_join(work: Path, tables: Any) -> dict[str, Callable[[], Any]]:
    import duckdb

    paths = {name: work / f"duckdb_{name}.parquet" for name in ("lineitem", "orders")}

    def ingest() -> int:
        con = duckdb.connect()
        n = 0
        for name, table in tables().items():
            con.register("src", table)
            con.execute(f"COPY src TO '{paths[name]}' (FORMAT parquet)")
            con.unregister("src")
            n += table.num_rows
        return n

    def join() -> Decimal:
        con = duckdb.connect()
        for name, path in paths.items():
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{path}')")
        return con.execute(JOIN_SQL).fetchone()[0]

    return {"join_ingest": ingest, "join": join}


def polars_join(work: Path, tables: Any) -> dict[str, Callable[[], Any]]:
    import polars as pl

    paths = {name: work / f"polars_{name}.parquet" for name in ("lineitem", "orders")}

    def ingest() -> int:
        n = 0
        for name, table in tables().items():
            pl.from_arrow(table).write_parquet(paths[name])
            n += table.num_rows
        return n

    def join() -> Decimal:
        li = pl.scan_parquet(paths["lineitem"])
        od = pl.scan_parquet(paths["orders"]).filter(pl.col("o_orderpriority") == "1-URGENT")
        q = li.join(od, left_on="l_orderkey", right_on="o_orderkey")
        return q.select(pl.col("l_extendedprice").sum()).collect().item()

    return {"join_ingest": ingest, "join": join}


JOIN_MAKERS = {
    "ours": ours_join,
    "pyiceberg": iceberg_join,
    "deltalake": delta_join,
    "duckdb": duck_join,
    "polars": polars_join,
}


def cell(system: str, op: str, work: str, data: str) -> Any:
    """The operation ``op`` of ``system``; only an ingest holds the source tables, so a
    query's peak RSS is the query's own."""
    lineitem = Path(data)
    if op.startswith("join"):
        loaded = ("lineitem", "orders")
        cached = (
            {name: source_table(lineitem.parent / f"{name}.parquet") for name in loaded}
            if op == "join_ingest"
            else {}
        )
        ops = JOIN_MAKERS[system](Path(work), lambda: cached)
        if op == "join_ingest" and "join_reset" in ops:
            return ops["join_reset"], lambda _: ops["join_ingest"]()
        fn: Callable[[], Any] = ops[op]
        return fn
    table = source_table(lineitem) if op == "ingest" else None
    ops = MAKERS[system](Path(work), table)
    if op == "ingest":
        # The old copy is removed and the rows are counted back outside the timing.
        return ops["reset"], lambda _: ops["ingest"](), lambda _: ops["count"]()
    made: Callable[[], Any] = ops[op]
    return made


CASES = {"cell": cell}


def same(answers: dict[str, str]) -> bool:
    values = {round(float(a), 2) for a in answers.values()}
    return len(values) == 1


# Where each system keeps what an ingest wrote, for the bytes it wrote.
STORED = {
    "ingest": {
        "ours": ["ours"],
        "pyiceberg": ["iceberg/warehouse"],
        "deltalake": ["delta"],
        "duckdb": ["duckdb"],
        "polars": ["polars"],
    },
    "join_ingest": {
        "ours": ["ours_lineitem", "ours_orders"],
        "pyiceberg": ["iceberg_join/warehouse"],
        "deltalake": ["delta_lineitem", "delta_orders"],
        "duckdb": ["duckdb_lineitem.parquet", "duckdb_orders.parquet"],
        "polars": ["polars_lineitem.parquet", "polars_orders.parquet"],
    },
}


def stored_bytes(work: Path, op: str, system: str) -> int:
    paths = [work / p for p in STORED[op][system]]
    files = [f for p in paths for f in ([p] if p.is_file() else p.rglob("*"))]
    return sum(f.stat().st_size for f in files if f.is_file())


def touched_bytes(data: Path) -> dict[str, int]:
    """The Arrow bytes each query must read at least once: the columns it filters and sums
    (only the AIR partition's for the pruned query, both join keys and the columns on top)."""
    import pyarrow.compute as pc

    li = source_table(data)
    od = source_table(data.parent / "orders.parquet")
    air = li.filter(pc.equal(li["l_shipmode"], "AIR"))
    return {
        "pruned": air["l_extendedprice"].nbytes,
        "filtered": li["l_quantity"].nbytes + li["l_extendedprice"].nbytes,
        "join": sum(li[c].nbytes for c in ("l_orderkey", "l_extendedprice"))
        + sum(od[c].nbytes for c in ("o_orderkey", "o_orderpriority")),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sf", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write", type=Path)
    args = ap.parse_args()
    data = generate(args.sf)
    work = scratch("lp-tpch-")
    results: dict[str, dict[str, Cell]] = {op: {} for op in OPS}
    written: dict[str, dict[str, int]] = {}
    try:
        for op in OPS:
            for system in SYSTEMS:
                params = {"system": system, "op": op, "work": str(work), "data": str(data)}
                results[op][system] = measure("tpch", "cell", params, args.repeat)
            # Ours with mimalloc's default purge delay (ours keeps freed memory 10 s).
            params = {"system": "ours", "op": op, "work": str(work), "data": str(data)}
            results[op][PURGE_1S] = measure(
                "tpch", "cell", params, args.repeat, env={"MIMALLOC_PURGE_DELAY": "1000"}
            )
            answers = {s: r.answer for s, r in results[op].items()}
            if not same(answers):
                raise SystemExit(f"{op}: the systems disagree: {answers}")
            if op in STORED:
                written[op] = {s: stored_bytes(work, op, s) for s in SYSTEMS}
    finally:
        discard(work)
    import pyarrow.parquet as pq

    rows = pq.ParquetFile(data).metadata.num_rows
    limit = limits.current()
    touched = touched_bytes(data)
    lines = [
        f"`python benches/tpch.py --sf {args.sf:g} --repeat {args.repeat}` (TPC-H lineitem, "
        f"{rows} rows, partitioned by l_shipmode; every answer equal across the systems; "
        "share of limit: for an ingest the bytes it stored at the page-cache write bandwidth, "
        "for a query the Arrow bytes of the columns it must read at the one-core copy "
        "bandwidth):",
        "",
        f"| operation | system | {CELL_HEADER} | MB stored | share of limit | vs ours (best) "
        "| vs ours (first call) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for op in OPS:
        ours = results[op]["ours"]
        for system in [*SYSTEMS, PURGE_1S]:
            r = results[op][system]
            first = "(ours)" if r is ours else f"{r.first / ours.first:.2f}x"
            if op in written:
                stored = written[op]["ours" if system == PURGE_1S else system]
                mb, at_limit = f"{stored / 1e6:.0f}", stored / (limit["disk_gbps"] * 1e9)
            else:
                mb, at_limit = "-", touched[op] / (limit["copy_1_gbps"] / 2 * 1e9)
            lines.append(
                f"| {op} | {system} | {cell_columns(r)} | {mb} | {share(at_limit, r.best)} "
                f"| {ratio(r, ours)} | {first} |"
            )
    text = "\n".join(lines)
    print(text)
    if args.write:
        update_section(args.write, "tpch", text, "## TPC-H against the systems users pick")


if __name__ == "__main__":
    main()
