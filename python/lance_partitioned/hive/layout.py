"""Reading a Hive directory tree's layout: which partition columns it has, the data files of
each partition, and the partition values with their types.

A tree is ``name=value/`` segments above data files, escaped as in
docs/partition-values.md (``__HIVE_DEFAULT_PARTITION__`` is NULL). Like Spark's partition
discovery, files and directories whose name starts with ``_`` or ``.`` (``_SUCCESS``,
``.part-0.crc``, ``_temporary/``) are skipped unless they hold a ``=``; every data file must
sit under the same partition columns, in the same order.

Types are inferred as Spark infers them, unless given: ``int32`` when every value fits, else
``int64``, else ``double`` for numbers, ``date32`` for ``YYYY-MM-DD``, ``timestamp[us]`` for
``YYYY-MM-DD HH:MM:SS[.ffffff]`` (and dates mixed with them), else ``string``; a column with
only NULLs is ``string``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lance_partitioned.exceptions import ArgumentTypeError, InvalidArgumentError
from lance_partitioned.values import HIVE_DEFAULT_PARTITION, hive_unescape, parse_hive_segment

__all__ = ["HivePartition", "HiveTree", "read_layout"]

_INT = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,9})?")
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


@dataclass(frozen=True)
class HivePartition:
    """One partition directory: its segments (relative path), raw segment texts and files."""

    path: str
    segments: tuple[str, ...]
    files: tuple[str, ...]


@dataclass(frozen=True)
class HiveTree:
    """A parsed tree: partition column names (outermost first) and the partitions."""

    columns: tuple[str, ...]
    partitions: tuple[HivePartition, ...]


def _hidden(name: str) -> bool:
    return name.startswith(("_", ".")) and "=" not in name


def read_layout(files: list[str]) -> HiveTree:
    """The layout of a tree from its files' relative paths (see the module docs)."""
    columns: tuple[str, ...] | None = None
    first = ""
    by_dir: dict[tuple[str, ...], list[str]] = {}
    for rel in files:
        parts = rel.split("/")
        if any(_hidden(p) for p in parts):
            continue
        segments = tuple(parts[:-1])
        names = []
        for seg in segments:
            if "=" not in seg:
                raise InvalidArgumentError(
                    f"not a Hive partition directory: {seg!r} in {rel!r} (expected name=value)"
                )
            names.append(hive_unescape(seg.split("=", 1)[0]))
        if columns is None:
            columns, first = tuple(names), rel
        elif tuple(names) != columns:
            raise InvalidArgumentError(
                f"inconsistent partition columns: {rel!r} is under "
                f"({', '.join(names) or 'no partition'}) but {first!r} is under "
                f"({', '.join(columns) or 'no partition'})"
            )
        by_dir.setdefault(segments, []).append(rel)
    if columns is None:
        raise InvalidArgumentError("no data files in the tree")
    if len(set(columns)) != len(columns):
        raise InvalidArgumentError(f"a partition column repeats in {first!r}")
    parts_out = tuple(
        HivePartition("/".join(segs), segs, tuple(fs)) for segs, fs in sorted(by_dir.items())
    )
    return HiveTree(columns, parts_out)


def _kind(text: str) -> str:
    if _INT.fullmatch(text):
        v = int(text)
        if _INT32[0] <= v <= _INT32[1]:
            return "int32"
        return "int64" if _INT64[0] <= v <= _INT64[1] else "double"
    if _NUMBER.fullmatch(text):
        return "double"
    if _DATE.fullmatch(text):
        return "date"
    if _TIMESTAMP.fullmatch(text):
        return "timestamp"
    return "string"


_RANK = {"int32": 0, "int64": 1, "double": 2}


def _merge(a: str | None, b: str) -> str:
    if a is None or a == b:
        return b
    if a in _RANK and b in _RANK:
        return a if _RANK[a] > _RANK[b] else b
    if {a, b} == {"date", "timestamp"}:
        return "timestamp"
    return "string"


_TYPES: dict[str, pa.DataType] = {
    "int32": pa.int32(),
    "int64": pa.int64(),
    "double": pa.float64(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us"),
    "string": pa.string(),
}


def infer_types(tree: HiveTree, given: Mapping[str, pa.DataType] | None) -> dict[str, pa.DataType]:
    """The type of every partition column: ``given`` where it names one, else inferred."""
    given = dict(given or {})
    unknown = set(given) - set(tree.columns)
    if unknown:
        raise InvalidArgumentError(
            f"partition_types names columns the tree does not have: {sorted(unknown)} "
            f"(it has {list(tree.columns)})"
        )
    out: dict[str, pa.DataType] = {}
    for i, name in enumerate(tree.columns):
        if name in given:
            if not isinstance(given[name], pa.DataType):
                raise ArgumentTypeError(f"partition_types[{name!r}] must be a pyarrow type")
            out[name] = given[name]
            continue
        kind: str | None = None
        for p in tree.partitions:
            raw = p.segments[i].split("=", 1)[1]
            if raw == HIVE_DEFAULT_PARTITION:
                continue
            kind = _merge(kind, _kind(hive_unescape(raw)))
        out[name] = _TYPES[kind or "string"]
    return out


def partition_values(
    p: HivePartition, types: Mapping[str, pa.DataType], timezone: str
) -> dict[str, pa.Scalar[Any]]:
    """The typed values of one partition (a value that does not parse as its type raises
    InvalidArgumentError naming the directory)."""
    out = {}
    for seg in p.segments:
        name, raw = seg.split("=", 1)
        name = hive_unescape(name)
        if pa.types.is_timestamp(types[name]) and _DATE.fullmatch(raw):
            seg = f"{seg} 00:00:00"  # a date among timestamps: its midnight, as Spark reads it
        try:
            _, value = parse_hive_segment(seg, types[name], timezone)
        except InvalidArgumentError as e:
            raise InvalidArgumentError(f"partition directory {p.path!r}: {e}") from None
        out[name] = value
    return out
