"""``scan``: rows of a namespace as a table on the terminal, CSV, JSON Lines or Parquet."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from typing import IO

import click
import pyarrow as pa

from lance_partitioned.cli.app import (
    CliError,
    as_of_option,
    cli,
    filter_option,
    namespace_options,
    open_namespace,
)
from lance_partitioned.cli.output import emit_json, jsonable, plural, stdout_console, table

__all__ = ["FORMATS", "limited", "write_rows"]

FORMATS = ("table", "csv", "json", "parquet")
TABLE_LIMIT = 20
"""Rows the table format shows unless --limit says otherwise."""
_EXTENSIONS = {".csv": "csv", ".json": "json", ".jsonl": "json", ".parquet": "parquet"}


def limited(reader: pa.RecordBatchReader, limit: int | None) -> Iterator[pa.RecordBatch]:
    """The batches of ``reader`` up to ``limit`` rows; stops reading once it has them."""
    left = limit
    for batch in reader:
        if left is not None:
            if left <= 0:
                break
            if batch.num_rows > left:
                batch = batch.slice(0, left)
            left -= batch.num_rows
        yield batch


def _flat(table: pa.Table) -> pa.Table:
    """Struct columns as ``parent.child`` columns, at every depth (CSV has no nesting)."""
    while any(pa.types.is_struct(f.type) for f in table.schema):
        table = table.flatten()
    return table


def _csv(batches: Iterator[pa.RecordBatch], schema: pa.Schema, out: IO[bytes]) -> int:
    import pyarrow.csv as pacsv

    rows = 0
    writer: pacsv.CSVWriter | None = None
    try:
        for batch in batches:
            flat = _flat(pa.Table.from_batches([batch]))
            if writer is None:
                writer = pacsv.CSVWriter(out, flat.schema)
            writer.write_table(flat)
            rows += batch.num_rows
        if writer is None:  # no rows: the header alone
            writer = pacsv.CSVWriter(out, _flat(schema.empty_table()).schema)
    except pa.ArrowNotImplementedError as e:
        raise CliError(
            f"CSV cannot hold these columns ({e}); use --format json or parquet"
        ) from None
    finally:
        if writer is not None:
            writer.close()
    return rows


def _json_lines(batches: Iterator[pa.RecordBatch], out: IO[bytes]) -> int:
    rows = 0
    for batch in batches:
        lines = [json.dumps(jsonable(r), allow_nan=False) for r in batch.to_pylist()]
        if lines:
            out.write(("\n".join(lines) + "\n").encode())
        rows += batch.num_rows
    return rows


def _parquet(batches: Iterator[pa.RecordBatch], schema: pa.Schema, path: str) -> int:
    import pyarrow.parquet as pq

    rows = 0
    with pq.ParquetWriter(path, schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
            rows += batch.num_rows
    return rows


def write_rows(
    reader: pa.RecordBatchReader, fmt: str, output: str | None, limit: int | None
) -> int:
    """Writes up to ``limit`` rows of ``reader`` as ``fmt`` to the file ``output`` (stdout
    when None); returns the rows written."""
    batches = limited(reader, limit)
    if fmt == "parquet":
        if output is None:
            raise CliError("--format parquet needs --output FILE")
        return _parquet(batches, reader.schema, output)
    if output is None:
        sys.stdout.flush()
        return _write_to(batches, reader.schema, fmt, sys.stdout.buffer)
    with open(output, "wb") as f:
        return _write_to(batches, reader.schema, fmt, f)


def _write_to(
    batches: Iterator[pa.RecordBatch], schema: pa.Schema, fmt: str, out: IO[bytes]
) -> int:
    rows = _csv(batches, schema, out) if fmt == "csv" else _json_lines(batches, out)
    out.flush()
    return rows


def _format(fmt: str | None, output: str | None, as_json: bool) -> str:
    if fmt is not None:
        if as_json and output is None and fmt not in ("json", "table"):
            raise CliError(f"--json prints JSON; it cannot be combined with --format {fmt}")
        return "json" if as_json and output is None else fmt
    if output is not None:
        ext = os.path.splitext(output)[1].lower()
        if ext not in _EXTENSIONS:
            raise CliError(
                f"cannot tell the format of {output!r} from its extension; pass --format "
                "csv, json or parquet"
            )
        return _EXTENSIONS[ext]
    return "json" if as_json else "table"


@cli.command(short_help="Rows as a table, CSV, JSON Lines or Parquet.")
@namespace_options
@filter_option
@click.option(
    "--columns",
    default=None,
    metavar="A,B,...",
    help="Comma-separated columns to read (default: all).",
)
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=None,
    help=f"At most N rows (default: {TABLE_LIMIT} for the table format, else all).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default=None,
    help="table (default on stdout), csv, json (JSON Lines: one object per row) or parquet "
    "(needs --output). With --output the default comes from the file's extension.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write the rows to this file instead of stdout.",
)
@as_of_option
def scan(
    uri: str,
    storage_options: dict[str, str] | None,
    as_json: bool,
    filter_: str | None,
    columns: str | None,
    limit: int | None,
    fmt: str | None,
    output: str | None,
    as_of: int | str | None,
) -> None:
    """Reads the rows --filter matches (only the partitions pruning keeps) and prints or writes
    them.

    With --json and no --output the rows are JSON Lines on stdout; with --output, --json
    prints a summary document instead ({"rows", "format", "output"}).
    """
    fmt = _format(fmt, output, as_json)
    if fmt == "table" and output is not None:
        raise CliError("--format table prints to the terminal; choose csv, json or parquet")
    cols = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    ns = open_namespace(uri, storage_options)
    reader = ns.scan(filter_, cols, as_of=as_of)
    if fmt == "table":
        n = TABLE_LIMIT if limit is None else limit
        t = pa.Table.from_batches(list(limited(reader, n)), schema=reader.schema)
        caption = plural(t.num_rows, "row") + (" (--limit reached)" if t.num_rows == n else "")
        numeric = [
            f.name
            for f in t.schema
            if pa.types.is_integer(f.type)
            or pa.types.is_floating(f.type)
            or pa.types.is_decimal(f.type)
        ]
        stdout_console().print(
            table(
                t.column_names,
                [list(r.values()) for r in t.to_pylist()],
                caption=caption,
                numeric=numeric,
            )
        )
        return
    rows = write_rows(reader, fmt, output, limit)
    if output is None:
        return
    if as_json:
        emit_json({"rows": rows, "format": fmt, "output": output})
    else:
        click.echo(f"wrote {rows:,} rows to {output} ({fmt})")
