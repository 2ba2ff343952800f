"""Typed partition specs and namespace schemas.

A :class:`PartitionSpec` is a list of :class:`PartitionField` s. A field names its source
columns (resolved to ``lance:field_id`` s against the namespace schema) and either a well-known
:class:`Transform` or a DataFusion SQL ``expression`` over ``col0..colN``::

    import pyarrow as pa
    import lance_partitioned as lp

    schema = lp.assign_field_ids(pa.schema([...]))
    spec = lp.PartitionSpec([
        lp.PartitionField("event_year", source="event_date", transform=lp.Year()),
        lp.PartitionField("country", source="country", transform=lp.Identity()),
        lp.PartitionField("user_bucket", source=["user_id"], transform=lp.Bucket(16)),
        lp.PartitionField("region", source=["country", "city"],
                          expression="concat(col0, '/', left(col1, 2))",
                          result_type=pa.string()),
    ])
    spec.to_dict(schema, spec_id=1)   # the partition_spec_v1 JSON object, validated

Validation (exactly one of transform/expression, sources exist, the transform accepts the
source types, positive parameters, ``result_type`` consistent with what is computed) happens
in Rust and raises :class:`~lance_partitioned.exceptions.SpecError` or
:class:`~lance_partitioned.exceptions.ExpressionError` naming the field.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa

from lance_partitioned import _native
from lance_partitioned.exceptions import PartitionGranularityWarning, SpecError

__all__ = [
    "FIELD_ID_KEY",
    "Bucket",
    "Day",
    "Hour",
    "Identity",
    "Month",
    "MultiBucket",
    "PartitionField",
    "PartitionSpec",
    "Transform",
    "Truncate",
    "Year",
    "assign_field_ids",
    "field_ids",
    "schema_from_json",
    "schema_to_json",
    "type_from_json",
    "type_to_json",
]

FIELD_ID_KEY = "lance:field_id"


# --------------------------------------------------------------------------------------------
# Transforms
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Transform:
    """A well-known partition transform (the spec's ``transform`` object)."""

    name: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.name}

    def result_type(self, sources: Sequence[pa.DataType]) -> pa.DataType:
        """The result type for the given source types (validated again in Rust)."""
        return pa.int32()

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> Transform:
        kind = d.get("type")
        simple: dict[str, type[Transform]] = {
            "identity": Identity,
            "year": Year,
            "month": Month,
            "day": Day,
            "hour": Hour,
        }
        if kind in simple:
            return simple[kind]()
        if kind == "bucket":
            return Bucket(int(d.get("num_buckets", 0)))
        if kind == "multi_bucket":
            return MultiBucket(int(d.get("num_buckets", 0)))
        if kind == "truncate":
            return Truncate(int(d.get("width", 0)))
        raise SpecError(f"unknown transform {kind!r}")


@dataclass(frozen=True)
class Identity(Transform):
    """The source value itself (``col0``); result type = source type."""

    name: ClassVar[str] = "identity"

    def result_type(self, sources: Sequence[pa.DataType]) -> pa.DataType:
        return sources[0] if sources else pa.null()


@dataclass(frozen=True)
class Year(Transform):
    """``date_part('year', col0)`` as int32."""

    name: ClassVar[str] = "year"


@dataclass(frozen=True)
class Month(Transform):
    """``date_part('month', col0)`` (1-12) as int32."""

    name: ClassVar[str] = "month"


@dataclass(frozen=True)
class Day(Transform):
    """``date_part('day', col0)`` (day of month, 1-31) as int32."""

    name: ClassVar[str] = "day"


@dataclass(frozen=True)
class Hour(Transform):
    """``date_part('hour', col0)`` (0-23) of a timestamp as int32."""

    name: ClassVar[str] = "hour"


@dataclass(frozen=True)
class _Buckets(Transform):
    """A hash transform with a bucket count."""

    num_buckets: int

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.name, "num_buckets": self.num_buckets}


@dataclass(frozen=True)
class Bucket(_Buckets):
    """``abs(murmur3(col0)) % num_buckets`` as int32."""

    name: ClassVar[str] = "bucket"


@dataclass(frozen=True)
class MultiBucket(_Buckets):
    """``abs(murmur3_multi(col0, col1, ...)) % num_buckets`` as int32."""

    name: ClassVar[str] = "multi_bucket"


@dataclass(frozen=True)
class Truncate(Transform):
    """``left(col0, width)`` for strings, ``col0 - (col0 % width)`` for numbers."""

    width: int
    name: ClassVar[str] = "truncate"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.name, "width": self.width}

    def result_type(self, sources: Sequence[pa.DataType]) -> pa.DataType:
        return sources[0] if sources else pa.null()


# --------------------------------------------------------------------------------------------
# Schemas and types
# --------------------------------------------------------------------------------------------


def schema_to_json(schema: pa.Schema) -> str:
    """The JsonArrowSchema text of a pyarrow schema (field metadata, incl. ids, kept)."""
    return _native.schema_to_json(schema)


def schema_from_json(text: str | Mapping[str, Any]) -> pa.Schema:
    """A pyarrow schema from JsonArrowSchema text (or its parsed dict)."""
    return _native.schema_from_json(text if isinstance(text, str) else json.dumps(text))


def type_to_json(data_type: pa.DataType) -> dict[str, Any]:
    """The JsonArrowDataType object of a pyarrow type."""
    parsed: dict[str, Any] = json.loads(schema_to_json(pa.schema([pa.field("t", data_type)])))
    result: dict[str, Any] = parsed["fields"][0]["type"]
    return result


def type_from_json(obj: Mapping[str, Any]) -> pa.DataType:
    """A pyarrow type from a JsonArrowDataType object."""
    schema = schema_from_json({"fields": [{"name": "t", "nullable": True, "type": dict(obj)}]})
    result: pa.DataType = schema.field(0).type
    return result


def _field_id(f: pa.Field[Any], path: str) -> int | None:
    raw = (f.metadata or {}).get(FIELD_ID_KEY.encode())
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError as e:
        raise SpecError(f"column {path!r} has a non-integer field id {raw!r}") from e


def source_fields(schema: pa.Schema) -> dict[str, tuple[int, pa.DataType]]:
    """Source name -> (``lance:field_id``, type) for every field that can be a partition
    source: top-level columns, and struct children named by their path (``s.city``). A
    top-level column named like a path wins over the struct child."""
    out: dict[str, tuple[int, pa.DataType]] = {}

    def visit(f: pa.Field[Any], path: str) -> None:
        fid = _field_id(f, path)
        if fid is not None:
            out.setdefault(path, (fid, f.type))
        if pa.types.is_struct(f.type):
            for i in range(f.type.num_fields):
                child = f.type.field(i)
                visit(child, f"{path}.{child.name}")

    for f in schema:
        fid = _field_id(f, f.name)
        if fid is not None:
            out[f.name] = (fid, f.type)
    for f in schema:
        visit(f, f.name)
    return out


def field_ids(schema: pa.Schema) -> dict[str, int]:
    """Source name (``s.city`` for a struct child) -> ``lance:field_id``."""
    return {name: fid for name, (fid, _) in source_fields(schema).items()}


def assign_field_ids(schema: pa.Schema, start: int | None = None) -> pa.Schema:
    """Gives every field (struct children too) without a ``lance:field_id`` a fresh one.

    Existing ids are kept; new ids are larger than every id in use (and than ``start - 1``),
    so ids are never reused. Raises :class:`SpecError` on duplicate ids.
    """
    return _native.assign_field_ids(schema, start or 0)


# --------------------------------------------------------------------------------------------
# Fields and specs
# --------------------------------------------------------------------------------------------


_TRANSFORMS: tuple[type[Transform], ...] = (
    Identity,
    Year,
    Month,
    Day,
    Hour,
    Bucket,
    MultiBucket,
    Truncate,
)


@dataclass(frozen=True)
class PartitionField:
    """One partition field.

    ``source`` names the source column(s) in the namespace schema (a name or a list of names,
    in ``col0..colN`` order); alternatively give ``source_ids`` directly. Exactly one of
    ``transform`` and ``expression`` must be set. ``result_type`` is required for expressions
    only when it cannot be inferred; for transforms it is derived.
    """

    field_id: str
    source: str | Sequence[str] | None = None
    transform: Transform | None = None
    expression: str | None = None
    result_type: pa.DataType | None = None
    source_ids: Sequence[int] | None = None

    def __post_init__(self) -> None:
        t: object = self.transform
        if t is None or isinstance(t, Transform):
            return
        where = f"partition field {self.field_id!r}: transform"
        if isinstance(t, type) and issubclass(t, Transform):
            raise SpecError(f"{where} must be an instance: {t.__name__}(...), not the class")
        if isinstance(t, str):
            known = {c.name: c.__name__ for c in _TRANSFORMS}
            hint = f"lp.{known[t.lower()]}(...)" if t.lower() in known else "a transform object"
            raise SpecError(f"{where} must be {hint}, not the string {t!r}")
        raise SpecError(f"{where} must be a Transform (lp.Year(), lp.Bucket(16), ...), not {t!r}")

    def _sources(self, schema: pa.Schema) -> tuple[list[int], list[pa.DataType]]:
        by_name = field_ids(schema)
        types_by_id = {fid: t for fid, t in source_fields(schema).values()}
        if self.source_ids is not None:
            ids = list(self.source_ids)
        else:
            names = [self.source] if isinstance(self.source, str) else list(self.source or [])
            if not names:
                raise SpecError(f"partition field {self.field_id!r} has no source columns")
            ids = []
            for n in names:
                if n not in by_name:
                    raise SpecError(
                        f"partition field {self.field_id!r}: source column {n!r} is not in the "
                        f"schema (or has no lance:field_id)"
                    )
                ids.append(by_name[n])
        return ids, [types_by_id.get(i, pa.null()) for i in ids]

    def to_dict(self, schema: pa.Schema) -> dict[str, Any]:
        """The spec's partition field object, with source names resolved against ``schema``."""
        ids, types = self._sources(schema)
        out: dict[str, Any] = {"field_id": self.field_id, "source_ids": ids}
        if self.transform is not None:
            out["transform"] = self.transform.to_dict()
        if self.expression is not None:
            out["expression"] = self.expression
        rt = self.result_type
        if rt is None:
            if self.transform is not None:
                rt = self.transform.result_type(types)
            elif self.expression is not None:
                from lance_partitioned.kernels import expression_type

                rt = expression_type(self.expression, types)
            else:
                rt = pa.null()
        out["result_type"] = type_to_json(rt)
        return out

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> PartitionField:
        """A field from the spec's JSON object (sources stay as ids)."""
        t = d.get("transform")
        return PartitionField(
            field_id=str(d.get("field_id", "")),
            source_ids=list(d.get("source_ids", [])),
            transform=Transform.from_dict(t) if t is not None else None,
            expression=d.get("expression"),
            result_type=type_from_json(d["result_type"]) if "result_type" in d else None,
        )


@dataclass(frozen=True)
class PartitionSpec:
    """An ordered list of partition fields (outermost namespace level first)."""

    fields: Sequence[PartitionField] = field(default_factory=list)

    def to_dict(self, schema: pa.Schema, spec_id: int = 1) -> dict[str, Any]:
        """The validated ``partition_spec_v<spec_id>`` object for the namespace ``schema``."""
        spec = {"id": spec_id, "fields": [f.to_dict(schema) for f in self.fields]}
        validated: dict[str, Any] = json.loads(_native.validate_spec(json.dumps(spec), schema))
        return validated

    def to_json(self, schema: pa.Schema, spec_id: int = 1) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict(schema, spec_id))

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> PartitionSpec:
        """A spec from its JSON object."""
        fields = d.get("fields")
        if not isinstance(fields, list):
            raise SpecError("a partition spec needs a 'fields' list")
        return PartitionSpec([PartitionField.from_dict(f) for f in fields])


_COARSER = {"month": ("year",), "day": ("year", "month"), "hour": ("year", "month", "day")}
_PARENT = {"month": "year", "day": "month", "hour": "day"}


def _user_stacklevel() -> int:
    """The ``stacklevel`` of the first caller outside this package (for warnings)."""
    package = str(Path(__file__).parent)
    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def warn_on_cyclic_fields(spec: Mapping[str, Any]) -> None:
    """Warns (:class:`PartitionGranularityWarning`) for each ``month``, ``day`` or ``hour``
    field of the spec object ``spec`` whose source lacks the coarser fields in the same spec:
    the spec defines these transforms as the month of the year (1-12), the day of the month
    (1-31) and the hour of the day (0-23), not as months (days, hours) since the epoch."""
    fields = list(spec.get("fields", []))
    by_source: dict[tuple[int, ...], set[str]] = {}
    for f in fields:
        kind = (f.get("transform") or {}).get("type")
        by_source.setdefault(tuple(f.get("source_ids", [])), set()).add(str(kind))
    for f in fields:
        kind = (f.get("transform") or {}).get("type")
        if kind not in _COARSER:
            continue
        have = by_source[tuple(f.get("source_ids", []))]
        missing = [c for c in _COARSER[kind] if c not in have]
        if missing:
            warnings.warn(
                PartitionGranularityWarning(
                    f"partition field {f.get('field_id')!r} is {kind}(), the {kind} of the "
                    f"{_PARENT[kind]} as the spec defines it; without "
                    f"{' and '.join(m + '()' for m in missing)} fields of the same column, "
                    f"values {missing[-1]}s apart share one partition (month() alone puts "
                    f"every March of every year together). Add them for one partition per "
                    f"calendar {kind}."
                ),
                stacklevel=_user_stacklevel(),
            )
