"""Option values of the command line: ``KEY=VALUE`` pairs, durations (``7d``, ``12h``,
``1h30m``, ``0s``) and Arrow type names. Each is parsed by an option callback (plain
functions, so any click 8 works), a bad value raising ``click.BadParameter``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import click
import pyarrow as pa

__all__ = [
    "arrow_types",
    "duration",
    "key_values",
    "parse_arrow_type",
    "parse_duration",
    "parse_key_value",
]

_UNITS = {"w": 7 * 86400.0, "d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)([wdhms])")


def parse_duration(text: str) -> float:
    """Seconds in ``text``: one or more ``<number><unit>`` parts, units ``w`` (weeks), ``d``,
    ``h``, ``m``, ``s`` (``7d``, ``12h``, ``1h30m``, ``0.5s``, ``0s``). Raises ValueError."""
    s = text.strip().lower()
    pos = 0
    total = 0.0
    for m in _PART.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if not s or pos != len(s):
        raise ValueError(
            f"{text!r} is not a duration: use a number with a unit w, d, h, m or s "
            "(7d, 12h, 1h30m, 0s)"
        )
    return total


def parse_key_value(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` as ``(key, value)`` (the value may hold ``=``). Raises ValueError."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"expected KEY=VALUE, not {text!r}")
    return key.strip(), value


def parse_arrow_type(text: str) -> pa.DataType:
    """An Arrow type by its pyarrow alias (``int64``, ``string``, ``date32``, ``double``,
    ``timestamp[us]``, ...). Raises ValueError."""
    alias: Any = text.strip()
    try:
        result: pa.DataType = pa.type_for_alias(alias)
    except (ValueError, KeyError):
        raise ValueError(
            f"unknown Arrow type {text!r} (use a pyarrow alias: int32, int64, double, string, "
            "date32, timestamp[us], ...)"
        ) from None
    return result


# -- option callbacks -------------------------------------------------------------------------


def duration(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """A duration option's value in seconds (None when not given)."""
    del ctx, param
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


def key_values(
    ctx: click.Context, param: click.Parameter, value: Sequence[str]
) -> dict[str, str] | None:
    """A repeatable ``KEY=VALUE`` option as a dict (a later key wins; None when not given)."""
    del ctx, param
    out: dict[str, str] = {}
    for item in value:
        try:
            key, val = parse_key_value(item)
        except ValueError as e:
            raise click.BadParameter(str(e)) from None
        out[key] = val
    return out or None


def arrow_types(
    ctx: click.Context, param: click.Parameter, value: Sequence[str]
) -> dict[str, pa.DataType] | None:
    """A repeatable ``NAME=TYPE`` option as a dict of Arrow types (None when not given)."""
    pairs = key_values(ctx, param, value) or {}
    try:
        return {name: parse_arrow_type(text) for name, text in pairs.items()} or None
    except ValueError as e:
        raise click.BadParameter(str(e)) from None
