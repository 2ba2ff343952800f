"""``import-hive`` and ``export-hive``: Hive trees (``k=v/`` directories, Spark's
``partitionBy`` layout) into a new namespace and out of one (docs/hive.md)."""

from __future__ import annotations

from typing import Any

import click
import pyarrow as pa

from lance_partitioned.cli.app import (
    as_of_option,
    cli,
    filter_option,
    json_option,
    namespace_options,
    open_namespace,
    storage_options,
)
from lance_partitioned.cli.inspect import totals
from lance_partitioned.cli.output import activity, emit_json, human_bytes, interactive
from lance_partitioned.cli.params import arrow_types, key_values
from lance_partitioned.hive.formats import FORMATS
from lance_partitioned.options import DEFAULT_MAX_NEW_PARTITIONS

__all__: list[str] = []

_format = click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="parquet",
    show_default=True,
    help="Data file format of the Hive tree (arrow: Arrow IPC files).",
)
_timezone = click.option(
    "--timezone",
    default="UTC",
    show_default=True,
    help="Time zone of timestamp partition values in directory names (IANA name or +HH:MM).",
)


@cli.command("import-hive", short_help="Create a namespace from a Hive tree.")
@click.argument("src")
@click.argument("uri")
@storage_options
@json_option
@_format
@_timezone
@click.option(
    "--partition-type",
    "partition_types",
    multiple=True,
    metavar="COLUMN=TYPE",
    callback=arrow_types,
    help="Type of a partition column (int32, int64, double, string, date32, timestamp[us], "
    "...); repeatable. Default: inferred like Spark's partition discovery.",
)
@click.option(
    "--max-new-partitions",
    type=click.IntRange(min=0),
    default=None,
    help="Refuse the import if it would create more partitions than this (default "
    f"{DEFAULT_MAX_NEW_PARTITIONS}; 0: no limit).",
)
def import_hive(
    src: str,
    uri: str,
    storage_options: dict[str, str] | None,
    as_json: bool,
    fmt: str,
    timezone: str,
    partition_types: dict[str, pa.DataType] | None,
    max_new_partitions: int | None,
) -> None:
    """Creates a namespace at URI from the Hive tree at SRC, partitioned by identity on the
    tree's partition columns, in one atomic commit (URI must not exist, or be empty; it is
    removed again if the import fails). --storage-option applies to both."""
    from lance_partitioned.namespace import PartitionedNamespace

    write_options: dict[str, Any] = {"progress": interactive() and not as_json}
    if max_new_partitions is not None:
        write_options["max_new_partitions"] = max_new_partitions or None
    ns = PartitionedNamespace.import_hive(
        src,
        uri,
        partition_types=partition_types,
        format=fmt,
        storage_options=storage_options,
        timezone=timezone,
        **write_options,
    )
    doc: dict[str, Any] = {
        "root": ns.root,
        "source": src,
        "manifest_version": ns.version,
        "partition_columns": [f.field_id for f in ns.spec.fields],
        **totals(ns.stats()),
    }
    if as_json:
        emit_json(doc)
        return
    click.echo(
        f"imported {doc['rows']:,} rows into {doc['partitions']:,} partitions "
        f"({', '.join(doc['partition_columns'])}) at {doc['root']}: {doc['files']:,} files, "
        f"{human_bytes(doc['bytes'])}, manifest version {doc['manifest_version']}"
    )


@cli.command("export-hive", short_help="Write a namespace as a Hive tree.")
@namespace_options
@click.argument("dest")
@_format
@filter_option
@_timezone
@as_of_option
@click.option(
    "--dest-storage-option",
    "dest_options",
    multiple=True,
    metavar="KEY=VALUE",
    callback=key_values,
    help="Object-store option for DEST; repeatable (default: the namespace's).",
)
def export_hive(
    uri: str,
    storage_options: dict[str, str] | None,
    as_json: bool,
    dest: str,
    fmt: str,
    filter_: str | None,
    timezone: str,
    as_of: int | str | None,
    dest_options: dict[str, str] | None,
) -> None:
    """Writes the rows of the namespace at URI (those --filter keeps) as a Hive tree at DEST
    (which must not exist, or be empty): <field>=<value>/ directories of the current spec,
    then _SUCCESS."""
    ns = open_namespace(uri, storage_options)
    with activity(f"exporting to {dest}", interactive() and not as_json):
        result = ns.export_hive(
            dest,
            format=fmt,
            filter=filter_,
            storage_options=dest_options,
            timezone=timezone,
            as_of=as_of,
        )
    doc = {
        "destination": dest,
        "format": fmt,
        "rows": result.rows,
        "partitions": result.partitions,
        "files": result.files,
        "manifest_version": result.manifest_version,
    }
    if as_json:
        emit_json(doc)
        return
    click.echo(
        f"exported {result.rows:,} rows of manifest version {result.manifest_version} to "
        f"{dest}: {result.partitions:,} partition directories, {result.files:,} {fmt} files"
    )
