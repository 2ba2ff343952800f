"""Maintenance commands: ``optimize`` (compaction), ``expire`` (old versions), ``cleanup``
(leftovers of failed writes) and ``repair`` (manifest columns other tools dropped)."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

import click

from lance_partitioned.cli.app import cli, filter_option, namespace_options, open_namespace
from lance_partitioned.cli.output import activity, attrs, emit_json, human_bytes, interactive
from lance_partitioned.cli.params import duration
from lance_partitioned.options import MAX_ROWS_PER_FILE

__all__ = ["LISTED"]

LISTED = 20
"""Items of a list (orphans, versions) a human summary names before "... and K more"."""

OPTIMIZE_KEYS = ("partitions", "files_before", "files_after", "rows", "bytes_written")
OPTIMIZE_EXTRA = (
    "resorted",
    "skipped_indexed",
    "rebased",
    "recompacted",
    "attempts",
    "version_rows_removed",
    "stats_recorded",
    "indexes_refreshed",
)
EXPIRE_KEYS = ("manifest_versions", "leaf_versions", "leaf_tables", "files", "bytes", "dry_run")
CLEANUP_KEYS = ("orphans", "stale_versions", "stale_files", "files", "bytes", "removed")


def _listed(items: Sequence[Any]) -> str:
    shown = ", ".join(str(i) for i in items[:LISTED])
    more = len(items) - LISTED
    return shown + (f" ... and {more:,} more" if more > 0 else "")


@cli.command(short_help="Compact small files (one atomic commit).")
@namespace_options
@filter_option
@click.option(
    "--target-rows-per-file",
    type=click.IntRange(min=1),
    default=None,
    help="Rows per compacted file; files with fewer rows are rewritten (default: the "
    "namespace's lance_partitioned.partition.target_rows_per_file, else "
    f"{MAX_ROWS_PER_FILE:,}, as writes).",
)
@click.option(
    "--min-files",
    type=click.IntRange(min=1),
    default=None,
    help="Compact a partition only when at least this many of its files would be (default 2).",
)
@click.option("--dry-run", is_flag=True, help="Only report what would be compacted.")
def optimize(
    uri: str,
    storage_options: dict[str, str] | None,
    as_json: bool,
    filter_: str | None,
    target_rows_per_file: int | None,
    min_files: int | None,
    dry_run: bool,
) -> None:
    """Compacts the small files of the partitions --filter selects (all by default), in one
    atomic commit."""
    ns = open_namespace(uri, storage_options)
    kwargs: dict[str, Any] = {"filter": filter_, "dry_run": dry_run}
    if target_rows_per_file is not None:
        kwargs["target_rows_per_file"] = target_rows_per_file
    if min_files is not None:
        kwargs["min_files"] = min_files
    with activity("compacting partitions", interactive() and not as_json):
        result = ns.optimize(**kwargs)
    doc = attrs(result, (*OPTIMIZE_KEYS, "manifest_version", "dry_run", *OPTIMIZE_EXTRA))
    if as_json:
        emit_json(doc)
        return
    verb = "would compact" if dry_run else "compacted"
    written = "" if dry_run else f", {human_bytes(doc['bytes_written'])} written"
    click.echo(
        f"{verb} {doc['partitions']:,} partitions: {doc['files_before']:,} files -> "
        f"{doc['files_after']:,} files, {doc['rows']:,} rows{written}"
    )
    if not dry_run:
        click.echo(f"manifest version {doc['manifest_version']}")
    if doc.get("resorted"):
        verb = "would sort" if dry_run else "sorted"
        click.echo(f"{verb} {doc['resorted']:,} files that were out of the sort order")
    if doc.get("skipped_indexed"):
        click.echo(f"skipped {doc['skipped_indexed']:,} partitions with indices")
    if doc.get("version_rows_removed"):
        verb = "would remove" if dry_run else "removed"
        click.echo(f"{verb} {doc['version_rows_removed']:,} old table_version rows")
    if doc.get("stats_recorded"):
        verb = "would record" if dry_run else "recorded"
        click.echo(f"{verb} column statistics of {doc['stats_recorded']:,} partitions")
    if doc.get("indexes_refreshed"):
        verb = "would build" if dry_run else "built"
        click.echo(f"{verb} the indexes of {doc['indexes_refreshed']:,} partitions again")


@cli.command(short_help="Remove old manifest and leaf versions.")
@namespace_options
@click.option(
    "--older-than",
    default=None,
    callback=duration,
    metavar="DURATION",
    help="Remove versions older than this (7d, 12h, 30m, 0s; default: the library's).",
)
@click.option(
    "--retain-versions",
    type=click.IntRange(min=1),
    default=None,
    help="Always keep the N newest manifest versions.",
)
@click.option("--dry-run", is_flag=True, help="Only report what would be removed.")
def expire(
    uri: str,
    storage_options: dict[str, str] | None,
    as_json: bool,
    older_than: float | None,
    retain_versions: int | None,
    dry_run: bool,
) -> None:
    """Removes old manifest versions, the leaf versions only they read and the files only
    those name (time travel to a removed version stops working)."""
    ns = open_namespace(uri, storage_options)
    with activity("expiring old versions", interactive() and not as_json):
        result = ns.expire(older_than=older_than, retain_versions=retain_versions, dry_run=dry_run)
    doc = attrs(result, EXPIRE_KEYS)
    if as_json:
        emit_json(doc)
        return
    versions = doc["manifest_versions"]
    click.echo(
        f"{'would remove' if dry_run else 'removed'} {len(versions):,} manifest "
        f"versions, {doc['leaf_versions']:,} leaf versions, {doc['leaf_tables']:,} dropped "
        f"partitions' tables, {doc['files']:,} files "
        f"({human_bytes(doc['bytes'])})"
    )
    if versions:
        click.echo(f"manifest versions: {_listed(versions)}")


@cli.command(short_help="Remove leftovers of failed writes.")
@namespace_options
@click.option(
    "--older-than",
    default="1d",
    show_default=True,
    callback=duration,
    metavar="DURATION",
    help="Grace period: only files older than this are touched (keep it longer than your "
    "longest write).",
)
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
@click.option(
    "--no-retention-check",
    "no_retention_check",
    is_flag=True,
    help="Allow a grace period under the one-hour retention floor.",
)
def cleanup(
    uri: str,
    storage_options: dict[str, str] | None,
    as_json: bool,
    older_than: float,
    dry_run: bool,
    no_retention_check: bool,
) -> None:
    """Removes what failed writes left behind: leaf tables no manifest version references,
    detached versions no manifest version records, and data files no version names."""
    ns = open_namespace(uri, storage_options)
    with activity("cleaning up", interactive() and not as_json):
        result = ns.cleanup(
            datetime.timedelta(seconds=older_than),
            dry_run=dry_run,
            retention_check=not no_retention_check,
        )
    doc = attrs(result, CLEANUP_KEYS)
    for k in ("orphans", "stale_versions", "stale_files"):
        doc[k] = list(doc[k])
    doc["dry_run"] = dry_run
    if as_json:
        emit_json(doc)
        return
    verb = "would remove" if dry_run else "removed"
    click.echo(
        f"{verb} {len(doc['orphans']):,} orphaned leaf tables, {len(doc['stale_versions']):,} "
        f"stale versions, {len(doc['stale_files']):,} stale files; {doc['files']:,} files, "
        f"{human_bytes(doc['bytes'])}"
    )
    for k, name in (
        ("orphans", "orphaned leaf tables"),
        ("stale_versions", "stale versions"),
        ("stale_files", "stale files"),
    ):
        if doc[k]:
            click.echo(f"{name}: {_listed(doc[k])}")


@cli.command(short_help="Restore manifest columns other tools dropped.")
@namespace_options
@click.option(
    "--dry-run",
    is_flag=True,
    help="Only list the manifest columns that are missing (what repair would restore).",
)
def repair(uri: str, storage_options: dict[str, str] | None, as_json: bool, dry_run: bool) -> None:
    """Restores manifest columns another tool dropped (pylance's DirectoryNamespace drops
    read_version and partition_field_* when it writes the manifest); until then every change
    is refused."""
    ns = open_namespace(uri, storage_options)
    if dry_run:
        columns = list(ns.missing_columns)
    else:
        with activity("repairing the manifest", interactive() and not as_json):
            columns = list(ns.repair())
    if as_json:
        emit_json({"columns": columns, "dry_run": dry_run, "manifest_version": ns.version})
        return
    if not columns:
        click.echo("nothing to repair: no manifest column is missing")
    elif dry_run:
        click.echo(f"would restore {len(columns)} manifest columns: {', '.join(columns)}")
    else:
        click.echo(f"restored {len(columns)} manifest columns: {', '.join(columns)}")
