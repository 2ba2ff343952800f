"""Parameter types of the command line: ``KEY=VALUE`` pairs, durations (``7d``, ``12h``,
``1h30m``, ``0s``) and Arrow type names."""

from __future__ import annotations

import re
from typing import Any

import click
import pyarrow as pa

__all__ = ["DURATION", "KEY_VALUE", "Duration", "KeyValue", "parse_duration", "to_mapping"]

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


class Duration(click.ParamType):
    """A duration, converted to seconds (float)."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, (int, float)):
            return float(value)
        try:
            return parse_duration(str(value))
        except ValueError as e:
            self.fail(str(e), param, ctx)


class KeyValue(click.ParamType):
    """A ``KEY=VALUE`` pair, converted to a ``(key, value)`` tuple."""

    name = "key=value"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, tuple):
            return value
        key, sep, val = str(value).partition("=")
        if not sep or not key.strip():
            self.fail(f"expected KEY=VALUE, not {value!r}", param, ctx)
        return key.strip(), val


class ArrowType(click.ParamType):
    """An Arrow type by its pyarrow alias (``int64``, ``string``, ``date32``, ``double``,
    ``timestamp[us]``, ...)."""

    name = "type"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, pa.DataType):
            return value
        try:
            return pa.type_for_alias(str(value).strip())
        except ValueError:
            self.fail(
                f"unknown Arrow type {value!r} (use a pyarrow alias: int32, int64, double, "
                "string, date32, timestamp[us], ...)",
                param,
                ctx,
            )


DURATION = Duration()
KEY_VALUE = KeyValue()
ARROW_TYPE = ArrowType()


def to_mapping(pairs: tuple[tuple[str, str], ...] | list[tuple[str, str]]) -> dict[str, str]:
    """Repeated ``KEY=VALUE`` options as a dict (a later key wins)."""
    return dict(pairs)
