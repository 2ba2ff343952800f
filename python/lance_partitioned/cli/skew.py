"""``skew``: how evenly rows and bytes spread over partitions: bars of the largest and the
smallest partitions, and the skew summary (max/median, Gini); ``--png`` draws a histogram."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click
from rich.console import Group
from rich.table import Table
from rich.text import Text

from lance_partitioned.cli.app import (
    as_of_option,
    cli,
    filter_option,
    namespace_options,
    open_namespace,
)
from lance_partitioned.cli.keys import Partition, partitions_of
from lance_partitioned.cli.output import count, emit_json, human_bytes, stdout_console
from lance_partitioned.cli.skew_stats import Summary, summarize

__all__ = ["BAR_WIDTH", "bar", "extremes"]

BAR_WIDTH = 40
"""Characters of the longest bar."""
_PARTIAL = " ▏▎▍▌▋▊▉"
"""Eighths of a character cell, left-aligned."""


def bar(value: float, maximum: float, width: int = BAR_WIDTH) -> str:
    """A horizontal bar of ``value / maximum * width`` cells in block characters, at an
    eighth of a cell's resolution; a positive value always shows at least an eighth."""
    if maximum <= 0 or value <= 0:
        return ""
    eighths = max(1, round(min(value, maximum) / maximum * width * 8))
    full, rest = divmod(eighths, 8)
    return "█" * full + (_PARTIAL[rest] if rest else "")


def extremes(parts: Sequence[Partition], top: int) -> tuple[list[Partition], list[Partition]]:
    """The ``top`` largest partitions by rows, and the ``top`` smallest (largest first) that
    are not among them."""
    ranked = sorted(parts, key=lambda p: (-p.rows, p.order))
    largest = ranked[:top]
    smallest = ranked[max(top, len(ranked) - top) :]
    return largest, smallest


def _bars(largest: Sequence[Partition], smallest: Sequence[Partition]) -> Table:
    """One table (so the bars share one scale and column): the largest partitions, a gap
    line, the smallest."""
    maximum = largest[0].rows if largest else 0
    title = f"largest {len(largest)}" + (f" and smallest {len(smallest)}" if smallest else "")
    t = Table(
        title=f"{title} partitions by rows",
        title_justify="left",
        box=None,
        pad_edge=False,
        show_header=False,
    )
    t.add_column("partition", overflow="fold")
    t.add_column("bar", no_wrap=True)
    t.add_column("rows", justify="right")
    t.add_column("bytes", justify="right", style="dim")
    for i, p in enumerate([*largest, *smallest]):
        if i == len(largest):
            t.add_row(Text("...", style="dim"), "", "", "")
        t.add_row(
            Text(p.label),
            Text(bar(p.rows, maximum), style="cyan"),
            count(p.rows),
            human_bytes(p.bytes),
        )
    return t


def _summary_text(rows: Summary, size: Summary) -> Text:
    if rows.count == 0:
        return Text("no partitions")
    ratio = f"{rows.max_median:.2f}x" if rows.max_median is not None else "n/a (median 0)"
    return Text(
        f"partitions {rows.count:,}; rows {count(int(rows.total))}: min {count(int(rows.min))}, "
        f"median {rows.median:,.0f}, mean {rows.mean:,.1f}, max {count(int(rows.max))}\n"
        f"skew: max/median rows {ratio}, Gini rows {rows.gini:.3f}, Gini bytes "
        f"{size.gini:.3f} (0 = even, {(rows.count - 1) / rows.count:.3f} = all in one)"
    )


def _entry(p: Partition) -> dict[str, Any]:
    return {
        "object_id": p.object_id,
        "spec_id": p.spec_id,
        "values": p.values,
        "rows": p.rows,
        "bytes": p.bytes,
    }


@cli.command(short_help="Partition size skew: bars, Gini, histogram.")
@namespace_options
@filter_option
@click.option(
    "--top",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Largest and smallest partitions shown.",
)
@click.option(
    "--png",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Also write a histogram of rows per partition to this PNG file (800x450; needs "
    "the extra lance-partitioned[plot]).",
)
@as_of_option
def skew(
    uri: str,
    storage_options: dict[str, str] | None,
    as_json: bool,
    filter_: str | None,
    top: int,
    png: str | None,
    as_of: int | str | None,
) -> None:
    """Rows and bytes per partition: bars of the TOP largest and smallest partitions, the
    max/median ratio and the Gini coefficient (0: every partition the same size; (n-1)/n:
    one partition holds everything)."""
    ns = open_namespace(uri, storage_options)
    snap = ns.snapshot(as_of)
    parts = partitions_of(snap.stats(filter_), snap.specs)
    rows = summarize([p.rows for p in parts])
    size = summarize([p.bytes or 0 for p in parts])
    if png is not None:
        from lance_partitioned.cli.histogram import write_histogram

        write_histogram(
            [p.rows for p in parts],
            png,
            f"rows per partition: {ns.root} (v{snap.version}, {len(parts):,} partitions)",
        )
    largest, smallest = extremes(parts, top)
    if as_json:
        emit_json(
            {
                "manifest_version": snap.version,
                "filter": filter_,
                "partitions": len(parts),
                "rows": rows.to_dict(),
                "bytes": size.to_dict(),
                "largest": [_entry(p) for p in largest],
                "smallest": [_entry(p) for p in smallest],
                "png": png,
            }
        )
        return
    shown: list[Any] = [_bars(largest, smallest), Text("")] if parts else []
    shown.append(_summary_text(rows, size))
    if png is not None:
        shown.append(Text(f"histogram written to {png}"))
    stdout_console().print(Group(*shown))
