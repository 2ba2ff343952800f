"""Read-only commands about a namespace's metadata: ``info``, ``partitions``, ``explain`` and
``history``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click
import pyarrow as pa
import pyarrow.compute as pc
from rich.console import Group
from rich.text import Text

from lance_partitioned.cli.app import (
    as_of_option,
    cli,
    filter_option,
    namespace_options,
    open_namespace,
)
from lance_partitioned.cli.keys import Partition, all_fields, ordered, partitions_of
from lance_partitioned.cli.output import (
    count,
    emit_json,
    human_bytes,
    stdout_console,
    table,
)
from lance_partitioned.spec import FIELD_ID_KEY, source_fields, type_from_json

__all__ = ["describe_field", "schema_fields", "totals"]


# -- info -------------------------------------------------------------------------------------


def _field_id(f: pa.Field[Any]) -> int | None:
    raw = (f.metadata or {}).get(FIELD_ID_KEY.encode())
    return int(raw) if raw is not None else None


def schema_fields(schema: pa.Schema | pa.StructType) -> list[dict[str, Any]]:
    """Every field with its ``lance:field_id``, struct children nested under ``children``."""
    fields = list(schema) if isinstance(schema, pa.Schema) else schema.fields

    def describe(f: pa.Field[Any], path: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": f.name,
            "path": path,
            "field_id": _field_id(f),
            "type": "struct" if pa.types.is_struct(f.type) else str(f.type),
            "nullable": f.nullable,
        }
        if pa.types.is_struct(f.type):
            out["children"] = [describe(c, f"{path}.{c.name}") for c in f.type.fields]
        return out

    return [describe(f, f.name) for f in fields]


def describe_field(field: Mapping[str, Any], names: Mapping[int, str]) -> str:
    """A partition field's transform as text: ``year(event_date)``, ``bucket(user_id, 16)``,
    ``truncate(name, 4)``, or the SQL expression with its sources (``col0 = country``)."""
    sources = [names.get(int(i), f"#{i}") for i in field.get("source_ids", [])]
    transform = field.get("transform")
    if transform is not None:
        kind = str(transform.get("type"))
        params = [str(transform[k]) for k in ("num_buckets", "width") if k in transform]
        return f"{kind}({', '.join([*sources, *params])})"
    cols = ", ".join(f"col{i} = {s}" for i, s in enumerate(sources))
    return f"{field.get('expression')}  ({cols})"


def _specs(specs: Mapping[int, Mapping[str, Any]], schema: pa.Schema) -> list[dict[str, Any]]:
    names = {fid: name for name, (fid, _) in reversed(list(source_fields(schema).items()))}
    current = max(specs) if specs else None
    out = []
    for sid in sorted(specs):
        fields = []
        for f in specs[sid]["fields"]:
            rt = f.get("result_type")
            fields.append(
                {
                    "field_id": f["field_id"],
                    "transform": describe_field(f, names),
                    "sources": [names.get(int(i)) for i in f.get("source_ids", [])],
                    "source_ids": list(f.get("source_ids", [])),
                    "result_type": str(type_from_json(rt)) if rt is not None else None,
                }
            )
        out.append({"spec_id": sid, "current": sid == current, "fields": fields})
    return out


def totals(stats: pa.Table) -> dict[str, int]:
    """Partitions, rows, files and bytes of a ``stats()`` table."""

    def total(name: str) -> int:
        if name not in stats.column_names:
            return 0
        return int(pc.sum(stats.column(name)).as_py() or 0)

    return {
        "partitions": stats.num_rows,
        "rows": total("rows"),
        "files": total("files"),
        "bytes": total("bytes"),
    }


def _schema_rows(fields: list[dict[str, Any]], depth: int = 0) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for f in fields:
        name = Text("  " * depth + ("└ " if depth else "") + f["name"])
        rows.append([f["field_id"], name, f["type"], "yes" if f["nullable"] else "no"])
        rows.extend(_schema_rows(f.get("children", []), depth + 1))
    return rows


@cli.command(short_help="Schema with field ids, partition specs, totals.")
@namespace_options
@as_of_option
def info(
    uri: str, storage_options: dict[str, str] | None, as_json: bool, as_of: int | str | None
) -> None:
    """Schema (with field ids), partition specs and totals of the namespace at URI.

    Totals (partitions, rows, files, bytes) come from Lance metadata of every leaf; no data
    is read.
    """
    ns = open_namespace(uri, storage_options)
    snap = ns.snapshot(as_of)
    doc: dict[str, Any] = {
        "root": ns.root,
        "manifest_version": snap.version,
        "transaction_mode": ns.transaction_mode,
        "schema": schema_fields(snap.schema),
        "specs": _specs(snap.specs, snap.schema),
        "current_spec_id": max(snap.specs),
        **totals(snap.stats()),
        "missing_columns": snap.missing_columns,
    }
    if as_json:
        emit_json(doc)
        return
    console = stdout_console()
    head = Text.assemble(
        ("Namespace ", "bold"),
        (str(doc["root"]), "bold cyan"),
        f"\nmanifest version {doc['manifest_version']}, transaction mode {doc['transaction_mode']}",
    )
    schema = table(
        ["field id", "column", "type", "nullable"],
        _schema_rows(doc["schema"]),
        title="Schema",
        numeric=["field id"],
    )
    spec_rows = []
    for spec in doc["specs"]:
        label = f"v{spec['spec_id']}" + (" (current)" if spec["current"] else "")
        for i, f in enumerate(spec["fields"]):
            spec_rows.append(
                [label if i == 0 else "", f["field_id"], f["transform"], f["result_type"]]
            )
    specs = table(["spec", "field", "transform", "result type"], spec_rows, title="Partition specs")
    summary = table(
        ["partitions", "rows", "files", "bytes"],
        [
            [
                count(doc["partitions"]),
                count(doc["rows"]),
                count(doc["files"]),
                f"{human_bytes(doc['bytes'])} ({doc['bytes']:,})",
            ]
        ],
        title="Totals",
        numeric=["partitions", "rows", "files", "bytes"],
    )
    parts: list[Any] = [head, schema, specs, summary]
    if doc["missing_columns"]:
        parts.append(
            Text(
                "manifest columns missing (another tool dropped them; run `lance-partitioned "
                f"repair`): {', '.join(doc['missing_columns'])}",
                style="yellow",
            )
        )
    console.print(Group(*parts))


# -- partitions -------------------------------------------------------------------------------

SORTS = ("bytes", "files", "rows", "values")
TABLE_LIMIT = 100
"""Partitions the table shows without ``--limit`` (``--json`` lists all of them)."""


def _partition_json(p: Partition) -> dict[str, Any]:
    return {
        "object_id": p.object_id,
        "spec_id": p.spec_id,
        "values": p.values,
        "rows": p.rows,
        "files": p.files,
        "bytes": p.bytes,
    }


@cli.command(short_help="Partitions: values, rows, files, bytes.")
@namespace_options
@filter_option
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=None,
    help=f"Show at most N partitions (default: {TABLE_LIMIT} in the table, all with --json).",
)
@click.option(
    "--sort",
    type=click.Choice(SORTS),
    default="values",
    show_default=True,
    help="Order: by partition values, or largest first by rows, bytes or files.",
)
@as_of_option
def partitions(
    uri: str,
    storage_options: dict[str, str] | None,
    as_json: bool,
    filter_: str | None,
    limit: int | None,
    sort: str,
    as_of: int | str | None,
) -> None:
    """One row per partition the filter keeps: partition values, rows, files and bytes.

    The filter prunes through the manifest as a scan would (a partition is kept when it may
    hold matching rows); the counts are of whole partitions.
    """
    ns = open_namespace(uri, storage_options)
    snap = ns.snapshot(as_of)
    stats = snap.stats(filter_)
    if limit is None and not as_json:
        limit = TABLE_LIMIT
    shown = partitions_of(ordered(stats, snap.specs, sort, limit), snap.specs)
    total = totals(stats)
    if as_json:
        emit_json(
            {
                "filter": filter_,
                "manifest_version": snap.version,
                "partitions": [_partition_json(p) for p in shown],
                "shown": len(shown),
                "total": total,
            }
        )
        return
    fields = all_fields(snap.specs)
    rows = []
    for p in shown:
        key = dict(p.key)
        rows.append(
            [
                f"v{p.spec_id}",
                *(key.get(f, Text("-", style="dim")) for f in fields),
                count(p.rows),
                count(p.files),
                human_bytes(p.bytes),
            ]
        )
    caption = (
        f"{count(total['partitions'])} partitions, {count(total['rows'])} rows, "
        f"{count(total['files'])} files, {human_bytes(total['bytes'])}"
    )
    if len(shown) < stats.num_rows:
        caption = f"showing {len(shown)} of {caption}"
    stdout_console().print(
        table(
            ["spec", *fields, "rows", "files", "bytes"],
            rows,
            caption=caption,
            numeric=["rows", "files", "bytes"],
        )
    )


# -- explain ----------------------------------------------------------------------------------


@cli.command(short_help="The pruning plan of a filter.")
@namespace_options
@click.argument("filter_", metavar="FILTER")
@click.option(
    "--check-sizes/--no-check-sizes",
    default=True,
    show_default=True,
    help="Sample row counts of the kept partitions and warn when they are tiny.",
)
@as_of_option
def explain(
    uri: str,
    storage_options: dict[str, str] | None,
    as_json: bool,
    filter_: str,
    check_sizes: bool,
    as_of: int | str | None,
) -> None:
    """The pruning plan of FILTER: the manifest predicate per spec version and how many
    partitions it keeps."""
    ns = open_namespace(uri, storage_options)
    snap = ns.snapshot(as_of)
    text = snap.explain(filter_, check_sizes=check_sizes)
    if as_json:
        plan = snap.plan(filter_)
        emit_json(
            {
                "filter": filter_,
                "manifest_version": snap.version,
                "plan": plan,
                "kept": sum(int(p["kept"]) for p in plan),
                "total": sum(int(p["total"]) for p in plan),
                "skipped_by_stats": sum(int(p["skipped_by_stats"]) for p in plan),
                "text": text,
            }
        )
        return
    click.echo(text)


# -- history ----------------------------------------------------------------------------------

HISTORY_COLUMNS = ["version", "timestamp", "operation", "partitions", "rows", "tags"]


@cli.command(short_help="Manifest versions and what made them.")
@namespace_options
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    help="Show the N newest manifest versions (default: all).",
)
def history(
    uri: str, storage_options: dict[str, str] | None, as_json: bool, limit: int | None
) -> None:
    """Manifest versions (as ns.history() lists them): the operation that made each, the
    partitions it changed, the rows it wrote or deleted, and when."""
    ns: Any = open_namespace(uri, storage_options)  # Any: history() is being added alongside
    hist: pa.Table = ns.history() if limit is None else ns.history(limit=limit)
    entries = [
        {c: row.get(c) for c in HISTORY_COLUMNS} for row in hist.select(HISTORY_COLUMNS).to_pylist()
    ]
    if as_json:
        emit_json({"root": ns.root, "versions": entries})
        return
    rows = [
        [
            e["version"],
            e["timestamp"].strftime("%Y-%m-%d %H:%M:%S %Z") if e["timestamp"] else None,
            e["operation"],
            count(e["partitions"]) if e["partitions"] is not None else None,
            count(e["rows"]) if e["rows"] is not None else None,
            ", ".join(e["tags"] or []),
        ]
        for e in entries
    ]
    stdout_console().print(
        table(
            ["version", "time", "operation", "partitions", "rows", "tags"],
            rows,
            title=f"History of {ns.root}",
            numeric=["version", "partitions", "rows"],
        )
    )
