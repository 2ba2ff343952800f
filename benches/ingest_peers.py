"""Partitioned ingest against the systems users pick instead (issue 37), cold and warm.

Two inputs, each written by every system partitioned the way its own users would:

- TPC-H SF1 ``lineitem`` (6M rows, ~1 GB in Arrow) by year and month of ``l_shipdate`` (84
  partitions): ours ``year`` + ``month`` fields; pyiceberg ``month(l_shipdate)`` (a SQL catalog
  on SQLite, ``append``); deltalake ``write_deltalake(partition_by=["year", "month"])``;
  DuckDB ``COPY ... (FORMAT parquet, PARTITION_BY (year, month))``; polars
  ``write_parquet(partition_by=["year", "month"])``. The derived columns are computed inside
  the timed call, by each system's own functions (pyarrow's ``year``/``month`` for deltalake).
- the synthetic events table (``events.py``, ``--rows`` rows) by identity(country) and
  bucket(city, 16) (~800 partitions): ours and pyiceberg with their bucket transforms; DuckDB
  ``hash(city) % 16`` in the ``COPY``; polars ``col("city").hash() % 16``; deltalake with the
  bucket column computed by polars (the fastest hash a deltalake user has at hand). The
  date field the issue names is left out: the events' timestamps span 106 days, so a daily
  field would make ~85,000 partitions of about a hundred rows, nobody's layout.

Each (input, system) is one cell (``cells.py``): a fresh process that reads the input, then
times its first write (the cost a batch job, a Spark task or a CLI command pays; the median
over ``--cold`` fresh processes) and the best of ``--repeat`` more, each into a new directory
after ``os.sync()``; peak RSS is the process's during the writes (and during the first write
alone), on top of its resident input. The answer (rows read back by each system's
own reader) must be equal across systems. The ratios are the peer's time over ours, cold
(first call) and warm (best).

    python benches/ingest_peers.py [--rows 10000000] [--repeat 3] [--cold 3]
        [--store local|s3] [--write BENCHMARKS.md]

``--store s3`` writes every system to the tests' SeaweedFS server (started here) instead of
the local disk; DuckDB is left out there (``NO_S3``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import limits
from cells import Cell, fresh_dirs, measure
from report import CELL_HEADER, cell_columns, ratio, share, update_section
from scratch import discard, scratch

SYSTEMS = {
    "ours": "ours (`PartitionedNamespace.write`)",
    "pyiceberg": "pyiceberg `append`",
    "deltalake": "deltalake `write_deltalake`",
    "duckdb": "DuckDB `COPY ... PARTITION_BY`",
    "polars": "polars `write_parquet(partition_by=...)`",
}
INPUTS = {"lineitem": "TPC-H SF1 `lineitem` by year, month", "events": "events by country, bucket"}

Case = tuple[Callable[[], str], Callable[[str], str], Callable[[str], str]]
# The S3 server a cell writes to: {"bucket": ..., "options": Lance's storage options}.
S3 = dict[str, Any]


def _input(data: str, rows: int) -> Any:
    import pyarrow as pa

    if data == "lineitem":
        from tpch import generate, source_table

        table = source_table(generate(1)).combine_chunks()
    else:
        from events import events

        table = events(rows)
    # Making the input leaves freed memory in pyarrow's allocator (1.3 GB for lineitem):
    # returned, so that the peaks count the writes, not the input's generation.
    pa.default_memory_pool().release_unused()
    return table


def _roots(work: str, name: str, s3: S3 | None) -> Callable[[], str]:
    """A ``prepare`` giving every call a new root: a directory under ``work``, or a prefix in
    the S3 server's bucket."""
    if s3 is None:
        local = fresh_dirs(work, name)
        return lambda: str(local())
    n = itertools.count()
    return lambda: f"s3://{s3['bucket']}/{name}-{os.getpid()}-{next(n)}"


def _s3fs(s3: S3) -> Any:
    from pyarrow.fs import S3FileSystem

    o = s3["options"]
    return S3FileSystem(
        access_key=o["aws_access_key_id"],
        secret_key=o["aws_secret_access_key"],
        region=o["aws_region"],
        endpoint_override=o["aws_endpoint"],
        scheme="http",
    )


def _stored(root: str, s3: S3 | None) -> int:
    if s3 is None:
        return limits.tree_size(root)[1]
    from pyarrow.fs import FileSelector

    infos = _s3fs(s3).get_file_info(FileSelector(root.removeprefix("s3://"), recursive=True))
    return sum(i.size or 0 for i in infos)


def _answer(rows: int, root: str, s3: S3 | None, input_bytes: int = 0) -> str:
    return json.dumps({"rows": rows, "bytes": _stored(root, s3), "input": input_bytes})


def _parquet_rows(root: str, s3: S3 | None) -> int:
    import pyarrow.dataset as pads

    if s3 is None:
        return pads.dataset(root, format="parquet").count_rows()
    return pads.dataset(
        root.removeprefix("s3://"), format="parquet", filesystem=_s3fs(s3)
    ).count_rows()


def ours(data: str, rows: int, work: str, s3: S3 | None = None) -> Case:
    import lance_partitioned as lp

    table = _input(data, rows)
    if data == "lineitem":
        spec = lp.PartitionSpec(
            [
                lp.PartitionField("year", "l_shipdate", lp.Year()),
                lp.PartitionField("month", "l_shipdate", lp.Month()),
            ]
        )
    else:
        from events import SPEC as spec

    opts = s3["options"] if s3 else None

    def run(root: str) -> str:
        ns = lp.PartitionedNamespace.create(root, table.schema, spec, storage_options=opts)
        ns.write(table)
        return root

    def answer(root: str) -> str:
        ns = lp.PartitionedNamespace.open(root, storage_options=opts)
        got = ns.to_table(columns=[table.schema[0].name])
        return _answer(got.num_rows, root, s3, table.nbytes)

    return _roots(work, "ours", s3), run, answer


def _iceberg_catalog(work: str, root: str, s3: S3 | None) -> Any:
    """pyiceberg's SQL catalog for the table at ``root`` (on S3: its SQLite file under
    ``work``, its files in the bucket)."""
    from tpch import iceberg_catalog

    if s3 is None:
        return iceberg_catalog(Path(root))
    o = s3["options"]
    return iceberg_catalog(
        Path(work) / root.rsplit("/", 1)[-1],
        f"{root}/warehouse",
        **{
            "s3.endpoint": o["aws_endpoint"],
            "s3.access-key-id": o["aws_access_key_id"],
            "s3.secret-access-key": o["aws_secret_access_key"],
            "s3.region": o["aws_region"],
        },
    )


def pyiceberg(data: str, rows: int, work: str, s3: S3 | None = None) -> Case:
    from pyiceberg.transforms import BucketTransform, IdentityTransform, MonthTransform

    table = _input(data, rows)
    fields = (
        [("l_shipdate", MonthTransform(), "month")]
        if data == "lineitem"
        else [("country", IdentityTransform(), "country"), ("city", BucketTransform(16), "b")]
    )

    def run(root: str) -> str:
        ice = _iceberg_catalog(work, root, s3).create_table("bench.t", schema=table.schema)
        with ice.update_spec() as update:
            for source, transform, name in fields:
                update.add_field(source, transform, name)
        ice.append(table)
        return root

    def answer(root: str) -> str:
        got = _iceberg_catalog(work, root, s3).load_table("bench.t").scan().count()
        return _answer(int(got), root, s3)

    return _roots(work, "iceberg", s3), run, answer


def _polars_bucket(table: Any) -> Any:
    import polars as pl

    return pl.from_arrow(table.select(["city"])).select(pl.col("city").hash() % 16)["city"]


def deltalake(data: str, rows: int, work: str, s3: S3 | None = None) -> Case:
    import pyarrow as pa
    import pyarrow.compute as pc
    from deltalake import write_deltalake

    table = _input(data, rows)
    # One writer at a time: no lock provider needed for the commit's rename.
    so = {**s3["options"], "aws_s3_allow_unsafe_rename": "true"} if s3 else None

    def run(root: str) -> str:
        if data == "lineitem":
            d = table["l_shipdate"]
            keyed = table.append_column("year", pc.year(d)).append_column("month", pc.month(d))
            write_deltalake(root, keyed, partition_by=["year", "month"], storage_options=so)
        else:
            bucket = pa.array(_polars_bucket(table).to_arrow()).cast(pa.int64())
            keyed = table.append_column("b", bucket)
            write_deltalake(root, keyed, partition_by=["country", "b"], storage_options=so)
        return root

    def answer(root: str) -> str:
        from deltalake import DeltaTable

        got = DeltaTable(root, storage_options=so).to_pyarrow_dataset().count_rows()
        return _answer(got, root, s3)

    return _roots(work, "delta", s3), run, answer


def duckdb(data: str, rows: int, work: str, s3: S3 | None = None) -> Case:
    import duckdb as ddb

    table = _input(data, rows)
    select, keys = (
        ("*, year(l_shipdate) AS year, month(l_shipdate) AS month", "year, month")
        if data == "lineitem"
        else ("*, hash(city) % 16 AS b", "country, b")
    )

    def run(root: str) -> str:
        con = ddb.connect()
        con.register("src", table)
        con.execute(
            f"COPY (SELECT {select} FROM src) TO '{root}' (FORMAT parquet, PARTITION_BY ({keys}))"
        )
        con.close()
        return root

    return _roots(work, "duckdb", s3), run, lambda root: _answer(_parquet_rows(root, s3), root, s3)


def polars(data: str, rows: int, work: str, s3: S3 | None = None) -> Case:
    import polars as pl

    table = _input(data, rows)
    po = None
    if s3:
        o = s3["options"]
        po = {
            "aws_endpoint_url": o["aws_endpoint"],
            "aws_region": o["aws_region"],
            "aws_access_key_id": o["aws_access_key_id"],
            "aws_secret_access_key": o["aws_secret_access_key"],
            "aws_allow_http": "true",
        }
    where = {"storage_options": po} if s3 else {"mkdir": True}

    def run(root: str) -> str:
        df = pl.from_arrow(table)
        if data == "lineitem":
            d = pl.col("l_shipdate")
            df = df.with_columns(d.dt.year().alias("year"), d.dt.month().alias("month"))
            df.write_parquet(root, partition_by=["year", "month"], **where)
        else:
            df = df.with_columns((pl.col("city").hash() % 16).alias("b"))
            df.write_parquet(root, partition_by=["country", "b"], **where)
        return root

    return _roots(work, "polars", s3), run, lambda root: _answer(_parquet_rows(root, s3), root, s3)


CASES: dict[str, Callable[..., Any]] = {
    "ours": ours,
    "pyiceberg": pyiceberg,
    "deltalake": deltalake,
    "duckdb": duckdb,
    "polars": polars,
}


def _cold_ratio(cell: Cell, ours_cell: Cell) -> str:
    return "(ours)" if cell is ours_cell else f"{cell.first / ours_cell.first:.2f}x"


# DuckDB writes to S3 through its httpfs extension, which is not bundled and is downloaded
# from extensions.duckdb.org on first use: where that is unreachable it cannot take part.
NO_S3 = {"duckdb": "its `httpfs` extension is not bundled and could not be downloaded here"}


def _measure_all(
    data: str, rows: int, repeat: int, cold: int, work: Path, server: Any
) -> dict[str, Cell]:
    cells: dict[str, Cell] = {}
    for system in SYSTEMS:
        if server is not None and system in NO_S3:
            continue
        under = work / f"{data}-{system}"
        under.mkdir()
        params: dict[str, Any] = {"data": data, "rows": rows, "work": str(under)}
        if server is not None:
            params["s3"] = {"bucket": server.new_bucket(), "options": server.options()}
        cells[system] = measure("ingest_peers", system, params, repeat, sync=True, cold=cold)
        discard(under)
    return cells


def table_of(data: str, rows: int, repeat: int, cold: int, work: Path, server: Any) -> list[str]:
    limit = limits.current()
    cells = _measure_all(data, rows, repeat, cold, work, server)
    counts = {json.loads(c.answer)["rows"] for c in cells.values()}
    if len(counts) != 1:
        raise SystemExit(f"{data}: the systems read back different row counts: {counts}")
    lines = [
        "",
        f"**{INPUTS[data]}** ({counts.pop():,} rows):",
        "",
        f"| system | {CELL_HEADER} | first write's peak MiB | cold / best | MB stored "
        "| share of limit (best) | vs ours, cold | vs ours, warm |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for system, label in SYSTEMS.items():
        if system not in cells:
            lines.append(f"| {label} | - | - | - | - | - | - | - | - | - |")
            continue
        c = cells[system]
        stored = json.loads(c.answer)["bytes"]
        at_limit = share(stored / (limit["disk_gbps"] * 1e9), c.best) if server is None else "-"
        lines.append(
            f"| {label} | {cell_columns(c)} | {c.peak_first_mib:.0f} | {c.first / c.best:.2f} "
            f"| {stored / 1e6:.0f} | {at_limit} | {_cold_ratio(c, cells['ours'])} "
            f"| {ratio(c, cells['ours'])} |"
        )
    if server is not None:
        return lines + [""] + [f"{SYSTEMS[s]}: not run, {why}." for s, why in NO_S3.items()]
    return [*lines, "", _memory_line(cells["ours"])]


def _memory_line(ours: Cell) -> str:
    from lance_partitioned.options import WRITE_BUFFER_BYTES

    input_mib = json.loads(ours.answer)["input"] / 2**20
    budget_mib = WRITE_BUFFER_BYTES >> 20
    bound = input_mib + budget_mib + 256
    held = ours.peak_first_mib
    return (
        f"Memory (issue 37, goal 4): the peak of our first write {held:.0f} MiB against the "
        f"input ({input_mib:.0f} MiB in Arrow) + `max_buffer_bytes` ({budget_mib} MiB) + "
        f"256 MiB = {bound:.0f} MiB: {'met' if held <= bound else 'missed'}; over the first "
        f"write and the repeats {ours.peak_mib:.0f} MiB (the allocator keeps what a write "
        "freed, and reuses it only in part). Peaks are the whole process's resident memory, "
        "the input's included."
    )


def _s3_server(store: str) -> Any:
    if store != "s3":
        return None
    from servers import tests_module

    return tests_module("s3_server").start_seaweedfs()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000, help="rows of the events input")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cold", type=int, default=3, help="fresh processes per cold figure")
    ap.add_argument("--only", choices=sorted(INPUTS), default=None)
    ap.add_argument("--store", choices=["local", "s3"], default="local")
    ap.add_argument("--write", type=Path, default=None)
    args = ap.parse_args()
    work = scratch("lp-ingest-peers-")
    server = _s3_server(args.store)
    where = (
        "the local disk; share of limit: the bytes stored at the page-cache write bandwidth "
        "over the best time"
        if server is None
        else "the tests' SeaweedFS S3 server on 127.0.0.1 (every system to the same server, a "
        "new bucket per cell)"
    )
    try:
        lines = [
            f"`python benches/ingest_peers.py --rows {args.rows} --repeat {args.repeat} "
            f"--cold {args.cold} --store {args.store}`: each cell a fresh process writing to "
            f"{where}; cold = the median first write of {args.cold} fresh processes, warm = the "
            "best of the repeats after the first process's first write; ratios are the peer's "
            "time over ours (above 1: we are faster).",
        ]
        for data in [args.only] if args.only else list(INPUTS):
            lines += table_of(data, args.rows, args.repeat, args.cold, work, server)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if server is not None:
            server.stop()
    text = "\n".join(lines)
    print(text)
    if args.write:
        name, heading = "ingest-peers", "## Ingest against the systems users pick"
        if server is not None:
            name, heading = "ingest-peers-s3", "## Ingest against the systems users pick, on S3"
        update_section(args.write, name, text, heading)


if __name__ == "__main__":
    main()
