"""Partitions as the commands show them: the spec version of each (the ``v<N>`` first segment
of its object id), its partition values as text (the project's string form) and as JSON
values, and its statistics, from the table ``stats()`` returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned.values import to_strings

__all__ = [
    "Partition",
    "all_fields",
    "ordered",
    "partitions_of",
    "spec_fields",
    "spec_id_of",
    "text",
]

NULL = "NULL"
"""How a NULL partition value is shown; an empty string is shown as ``''``."""


@dataclass(frozen=True)
class Partition:
    """One leaf partition."""

    object_id: str
    spec_id: int
    key: tuple[tuple[str, str], ...]
    """``(field, value as text)`` for every field of its spec version, in spec order."""
    values: dict[str, Any]
    """The same values for JSON (numbers and strings as they are, others as text)."""
    rows: int
    files: int | None = None
    bytes: int | None = None
    order: tuple[Any, ...] = ()
    """Sorts partitions by spec version, then by their typed values (NULL last)."""

    @property
    def label(self) -> str:
        """``v1 year=2024/country=US``."""
        return f"v{self.spec_id} " + "/".join(f"{f}={v}" for f, v in self.key)


def spec_id_of(object_id: str) -> int:
    """The spec version of a leaf: ``v2$...`` -> 2."""
    head = object_id.split("$", 1)[0]
    return int(head[1:]) if head[:1] == "v" and head[1:].isdigit() else 0


def spec_fields(specs: Mapping[int, Mapping[str, Any]]) -> dict[int, list[str]]:
    """The partition field ids of every spec version, outermost level first."""
    return {sid: [str(f["field_id"]) for f in spec["fields"]] for sid, spec in specs.items()}


def all_fields(specs: Mapping[int, Mapping[str, Any]]) -> list[str]:
    """Every partition field id: the current spec's in order, then older versions' others."""
    out: list[str] = []
    for sid in sorted(specs, reverse=True):
        for f in spec_fields({sid: specs[sid]})[sid]:
            if f not in out:
                out.append(f)
    return out


def text(column: pa.ChunkedArray[Any] | pa.Array[Any]) -> list[str]:
    """The string form of every value: ``NULL`` for NULL, ``''`` for an empty value."""
    strings = to_strings(column).to_pylist()
    raw = column.is_null().to_pylist()
    return [
        s if s is not None else (NULL if null else "''")
        for s, null in zip(strings, raw, strict=True)
    ]


def _json_values(column: pa.ChunkedArray[Any]) -> list[Any]:
    t = column.type
    if (
        pa.types.is_integer(t)
        or pa.types.is_boolean(t)
        or pa.types.is_floating(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
    ):
        return column.to_pylist()
    strings = to_strings(column).to_pylist()
    nulls = column.is_null().to_pylist()
    return [
        None if n else (s if s is not None else "") for s, n in zip(strings, nulls, strict=True)
    ]


def _order(values: Any) -> list[tuple[bool, Any]]:
    return [(v is None, 0 if v is None else v) for v in values]


def partitions_of(stats: pa.Table, specs: Mapping[int, Mapping[str, Any]]) -> list[Partition]:
    """One :class:`Partition` per row of ``stats`` (``object_id``, one column per partition
    field, ``rows`` and, when present, ``files`` and ``bytes``)."""
    by_spec = spec_fields(specs)
    ids = [str(i) for i in stats.column("object_id").to_pylist()]
    names = [f for f in all_fields(specs) if f in stats.column_names]
    texts = {f: text(stats.column(f)) for f in names}
    values = {f: _json_values(stats.column(f)) for f in names}
    raw = {f: stats.column(f).to_pylist() for f in names}
    rows = stats.column("rows").to_pylist()
    files = stats.column("files").to_pylist() if "files" in stats.column_names else None
    size = stats.column("bytes").to_pylist() if "bytes" in stats.column_names else None
    out = []
    for i, oid in enumerate(ids):
        sid = spec_id_of(oid)
        fields = [f for f in by_spec.get(sid, names) if f in texts]
        out.append(
            Partition(
                object_id=oid,
                spec_id=sid,
                key=tuple((f, texts[f][i]) for f in fields),
                values={f: values[f][i] for f in fields},
                rows=int(rows[i] or 0),
                files=None if files is None else int(files[i] or 0),
                bytes=None if size is None else int(size[i] or 0),
                order=(sid, *_order(raw[f][i] for f in fields)),
            )
        )
    return out


SPEC_COLUMN = "__spec_id"


def ordered(
    stats: pa.Table, specs: Mapping[int, Mapping[str, Any]], by: str, limit: int | None
) -> pa.Table:
    """The first ``limit`` rows (all when ``None``) of ``stats`` in the order the commands
    show partitions: by ``values`` (spec version, then each spec's own fields in order, NULL
    last), or largest first by ``rows``, ``bytes`` or ``files`` (ties by spec version and
    values). Sorted by Arrow (NULL last is its default), so only the rows shown become
    Python objects."""
    heads = pc.extract_regex(stats.column("object_id"), r"^v(?P<spec>\d+)\$")
    sids = pc.cast(pc.struct_field(heads, [0]), pa.int32())
    table = stats.append_column(SPEC_COLUMN, sids)
    by_spec = spec_fields(specs)
    asc: Literal["ascending"] = "ascending"
    if by == "values":
        parts = []
        left = table.num_rows if limit is None else limit
        # Groups by spec version as contiguous slices (no scalars: pa.scalar imports pandas).
        table = table.take(pc.sort_indices(table, sort_keys=[(SPEC_COLUMN, asc)]))
        start = 0
        counts = pc.value_counts(table.column(SPEC_COLUMN))
        spec_ids = counts.field("values").to_pylist()
        for sid, n in zip(spec_ids, counts.field("counts").to_pylist(), strict=True):
            group = table.slice(start, n or 0)
            start += n or 0
            if left <= 0:
                break
            own = [(f, asc) for f in by_spec.get(sid or 0, []) if f in group.column_names]
            if own:
                group = group.take(pc.sort_indices(group, sort_keys=own))
            parts.append(group.slice(0, left))
            left -= min(left, group.num_rows)
        out = pa.concat_tables(parts) if parts else table.slice(0, 0)
    else:
        fields = [f for f in all_fields(specs) if f in table.column_names]
        keys: list[tuple[str, Literal["ascending", "descending"]]] = [
            (by, "descending"),
            (SPEC_COLUMN, asc),
        ]
        keys += [(f, asc) for f in fields]
        out = table.take(pc.sort_indices(table, sort_keys=keys))
        out = out if limit is None else out.slice(0, limit)
    return out.drop_columns([SPEC_COLUMN])
