"""How commands print: JSON documents on stdout, rich tables and trees for people, numbers and
values as text, and the activity spinner of long operations (stderr, terminals only)."""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import math
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = [
    "PIPE_WIDTH",
    "activity",
    "attrs",
    "cell",
    "count",
    "emit_json",
    "human_bytes",
    "interactive",
    "jsonable",
    "plural",
    "stderr_console",
    "stdout_console",
    "table",
]

PIPE_WIDTH = 200
"""The width of tables and trees when stdout is not a terminal (and ``COLUMNS`` is unset): wide
enough that piped output is not cut, tables are only as wide as their content."""


def interactive() -> bool:
    """Whether progress displays are wanted: stdout and stderr are both terminals."""
    return sys.stdout.isatty() and sys.stderr.isatty()


def stdout_console() -> Console:
    """A console on stdout: colours on a terminal, plain text of :data:`PIPE_WIDTH` when piped."""
    if sys.stdout.isatty():
        return Console(highlight=False)
    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() and int(columns) > 0 else PIPE_WIDTH
    return Console(highlight=False, width=width, no_color=True)


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False)


# -- JSON -------------------------------------------------------------------------------------


def jsonable(value: Any) -> Any:
    """``value`` with everything JSON cannot hold made text: dates and times in ISO 8601,
    decimals as strings, bytes as base64, non-finite floats as ``"NaN"``, ``"Infinity"``,
    ``"-Infinity"``; mappings and sequences converted item by item."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    return str(value)


def emit_json(value: Any) -> None:
    """``value`` as one JSON document on stdout (the only thing a ``--json`` command prints
    there)."""
    click.echo(json.dumps(jsonable(value), indent=2, allow_nan=False))


def attrs(result: Any, keys: Sequence[str], optional: Sequence[str] = ()) -> dict[str, Any]:
    """The fields ``keys`` of a result object or mapping (and those of ``optional`` it has)."""

    def get(key: str) -> Any:
        if isinstance(result, Mapping):
            return result[key]
        return getattr(result, key)

    out = {k: get(k) for k in keys}
    for k in optional:
        if (isinstance(result, Mapping) and k in result) or (
            not isinstance(result, Mapping) and hasattr(result, k)
        ):
            out[k] = get(k)
    return out


# -- text -------------------------------------------------------------------------------------


def human_bytes(n: int | float | None) -> str:
    """``97.9 kB``-style sizes (decimal units, as rich and the write progress show them)."""
    if n is None:
        return "-"
    from rich.filesize import decimal

    return decimal(int(n))


def count(n: int | None) -> str:
    """An integer with thousands separators (``-`` for None)."""
    return "-" if n is None else f"{n:,}"


def plural(n: int, word: str) -> str:
    """``1 row``, ``2 rows``, ``1,000 partitions``."""
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def cell(value: Any) -> Text:
    """A table cell for a value: never read as rich markup; NULL shown dimmed."""
    if value is None:
        return Text("NULL", style="dim")
    if isinstance(value, bool):
        return Text(str(value).lower())
    if isinstance(value, int):
        return Text(str(value))
    if isinstance(value, (dict, list)):
        return Text(json.dumps(jsonable(value)))
    if isinstance(value, (bytes, bytearray)):
        return Text(repr(bytes(value)))
    return Text(str(value))


def table(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    title: str | None = None,
    caption: str | None = None,
    numeric: Sequence[str] = (),
) -> Table:
    """A rich table; columns named in ``numeric`` are right-aligned; cells through
    :func:`cell` unless they are rich ``Text`` already."""
    t = Table(title=title, caption=caption, title_justify="left", caption_justify="left")
    for c in columns:
        t.add_column(Text(c), justify="right" if c in numeric else "left", overflow="fold")
    for r in rows:
        t.add_row(*(v if isinstance(v, Text) else cell(v) for v in r))
    return t


# -- progress ---------------------------------------------------------------------------------


@contextmanager
def activity(label: str, enabled: bool) -> Iterator[None]:
    """A spinner with the elapsed time on stderr while the body runs (for one long call that
    reports no progress of its own); nothing unless ``enabled``."""
    if not enabled:
        yield
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=stderr_console(),
        transient=True,
    ) as progress:
        progress.add_task(label, total=None)
        yield
