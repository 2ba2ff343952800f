"""``lance-partitioned tag``: name a manifest version, list the tags, delete one."""

from __future__ import annotations

import click

from lance_partitioned.cli.app import cli, namespace_options, open_namespace
from lance_partitioned.cli.output import emit_json, stdout_console, table


@cli.command(short_help="Name a manifest version; list or delete tags.")
@namespace_options
@click.argument("name", required=False)
@click.option(
    "--version",
    "version",
    type=click.IntRange(min=1),
    default=None,
    help="The manifest version to name (default: the latest).",
)
@click.option("--delete", is_flag=True, help="Delete the tag NAME instead.")
def tag(
    uri: str,
    storage_options: dict[str, str] | None,
    as_json: bool,
    name: str | None,
    version: int | None,
    delete: bool,
) -> None:
    """With NAME, names a manifest version NAME (read it with --as-of NAME; expire keeps
    it); with --delete, removes the tag NAME; without NAME, lists every tag."""
    ns = open_namespace(uri, storage_options)
    if name is None:
        if delete or version is not None:
            raise click.UsageError("--delete and --version need a tag NAME")
        tags = ns.tags()
        if as_json:
            emit_json({"root": ns.root, "tags": tags})
            return
        rows = [[n, v] for n, v in tags.items()]
        stdout_console().print(
            table(["tag", "version"], rows, title=f"Tags of {ns.root}", numeric=["version"])
        )
        return
    if delete:
        if version is not None:
            raise click.UsageError("--delete takes no --version")
        ns.delete_tag(name)
        shown = {"tag": name, "deleted": True}
    else:
        shown = {"tag": name, "version": ns.tag(name, version)}
    if as_json:
        emit_json(shown)
    elif delete:
        click.echo(f"deleted tag {name}")
    else:
        click.echo(f"tagged manifest version {shown['version']} as {name}")
