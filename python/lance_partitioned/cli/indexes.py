"""``lance-partitioned index``: list the declared indexes and their coverage, create one,
drop one."""

from __future__ import annotations

import click

from lance_partitioned.cli.app import cli, namespace_options, open_namespace
from lance_partitioned.cli.output import (
    activity,
    attrs,
    emit_json,
    interactive,
    stdout_console,
    table,
)

INFO_KEYS = ("name", "column", "kind", "partitions", "partitions_indexed", "rows", "rows_indexed")
RESULT_KEYS = ("name", "partitions", "indexes_built", "rebuilt", "manifest_version", "attempts")


@cli.command(short_help="List scalar indexes and their coverage; create or drop one.")
@namespace_options
@click.argument("column", required=False)
@click.option(
    "--kind",
    type=click.Choice(["btree", "bitmap", "zonemap"]),
    default="btree",
    show_default=True,
    help="The kind of index to create on COLUMN.",
)
@click.option("--name", default=None, help="The index name (default: COLUMN_idx).")
@click.option("--replace", is_flag=True, help="Replace an index of the same name.")
@click.option("--drop", "drop", default=None, metavar="NAME", help="Drop the index NAME.")
def index(
    uri: str,
    storage_options: dict[str, str] | None,
    as_json: bool,
    column: str | None,
    kind: str,
    name: str | None,
    replace: bool,
    drop: str | None,
) -> None:
    """With COLUMN, declares an index on it and builds it on every partition; with --drop,
    removes an index; without either, lists every declared index with the partitions and
    rows it covers (rows outside it are read without it)."""
    ns = open_namespace(uri, storage_options)
    if drop is not None or column is not None:
        if drop is not None and column is not None:
            raise click.UsageError("give COLUMN to create an index or --drop NAME, not both")
        if column is None:
            assert drop is not None
            with activity(f"dropping index {drop}", interactive() and not as_json):
                result = ns.drop_index(drop)
            verb = "dropped"
        else:
            with activity(f"building a {kind} index on {column}", interactive() and not as_json):
                result = ns.create_index(column, kind, name=name, replace=replace)  # type: ignore[arg-type]
            verb = "built"
        doc = attrs(result, RESULT_KEYS)
        if as_json:
            emit_json(doc)
            return
        click.echo(
            f"{verb} index {doc['name']} on {doc['partitions']:,} partitions "
            f"(manifest version {doc['manifest_version']})"
        )
        return
    infos = [attrs(i, INFO_KEYS) for i in ns.indexes()]
    if as_json:
        emit_json({"root": ns.root, "indexes": infos})
        return
    rows = [
        [
            i["name"],
            i["column"] or "(dropped)",
            i["kind"],
            f"{i['partitions_indexed']:,} / {i['partitions']:,}",
            f"{i['rows_indexed']:,} / {i['rows']:,}",
        ]
        for i in infos
    ]
    stdout_console().print(
        table(
            ["index", "column", "kind", "partitions indexed", "rows indexed"],
            rows,
            title=f"Indexes of {ns.root}",
        )
    )
