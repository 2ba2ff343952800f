"""The data file formats Hive trees hold (no pyarrow import: the CLI and the package's
import read it)."""

from __future__ import annotations

from lance_partitioned.exceptions import InvalidArgumentError

__all__ = ["FORMATS", "check_format"]

FORMATS = ("parquet", "orc", "csv", "arrow")
"""Data file formats of Hive trees (``arrow``: the Arrow IPC file format, a.k.a. Feather v2)."""


def check_format(format: str) -> str:
    if format not in FORMATS:
        raise InvalidArgumentError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    return format
