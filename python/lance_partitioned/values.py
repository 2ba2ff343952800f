"""Partition values as text: the string form, Hive directory names and URI paths.

One implementation (in Rust) serves every place a partition value becomes text: namespace
properties, lineage facets, Hive import and export, ``explain`` and error messages. The rules
are in docs/partition-values.md; in short:

- :func:`to_string`: the string form (``None`` for NULL, ``''`` and ``b''``): integers in
  decimal, floating point as Java's ``Double.toString`` (``-0.0``, ``1.0E7``, ``5.0E-324``,
  ``NaN``, ``Infinity``), decimals with every digit of their scale, dates ``YYYY-MM-DD``,
  timestamps with a zone as the UTC instant ``YYYY-MM-DDTHH:MM:SS.ffffffZ``, without a zone
  ``YYYY-MM-DD HH:MM:SS.ffffff``, strings as they are, binary values as UTF-8 text with ``\\``
  doubled and other bytes as ``\\xHH``.
- :func:`from_string`: the typed value back (``from_string(to_string(v), t) == v``).
- :func:`hive_escape` / :func:`uri_escape`: the directory-name encoding of a string form, and
  the extra URI encoding of a relative path.
- :func:`hive_segment` / :func:`parse_hive_segment`: ``name=<escaped value>`` directories, NULL
  and empty values as ``__HIVE_DEFAULT_PARTITION__``, timestamps shown in ``timezone``.
- :func:`to_strings`: the string form of a whole array at once.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lance_partitioned import _native
from lance_partitioned._arguments import typed_api
from lance_partitioned.exceptions import InvalidArgumentError

__all__ = [
    "HIVE_DEFAULT_PARTITION",
    "from_string",
    "hive_escape",
    "hive_segment",
    "hive_unescape",
    "parse_hive_segment",
    "to_string",
    "to_strings",
    "uri_escape",
]

HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def _type_schema(type: pa.DataType) -> pa.Schema:
    if not isinstance(type, pa.DataType):
        raise InvalidArgumentError(f"expected a pyarrow DataType, got {type!r}")
    return pa.schema([pa.field("value", type)])


def _one(value: Any, type: pa.DataType | None) -> pa.Array[Any]:
    """``value`` (a pyarrow scalar or a Python value) as a one-element array of ``type``."""
    try:
        if isinstance(value, pa.Scalar):
            arr: pa.Array[Any] = pa.array([value], type=value.type)
            return arr if type is None or arr.type == type else arr.cast(type)
        if type is None:
            raise InvalidArgumentError("a Python value needs its pyarrow type")
        return pa.array([value], type=type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError) as e:
        raise InvalidArgumentError(f"{value!r} is not a {type}: {e}") from e


@typed_api
def to_string(value: Any, type: pa.DataType | None = None) -> str | None:
    """The string form of ``value`` (a pyarrow scalar, or a Python value with its ``type``);
    ``None`` for NULL, ``''`` and ``b''``."""
    result: str | None = _native.value_to_string(_one(value, type))
    return result


@typed_api
def from_string(text: str | None, type: pa.DataType) -> pa.Scalar[Any]:
    """The value of ``type`` whose string form is ``text`` (``None`` is NULL)."""
    if text is not None and not isinstance(text, str):
        raise InvalidArgumentError(f"expected a str or None, got {text!r}")
    value: pa.Scalar[Any] = _native.value_from_string(text, _type_schema(type))[0]
    return value


@typed_api
def to_strings(array: Any) -> pa.Array[Any] | pa.ChunkedArray[Any]:
    """The string form of every value of ``array`` (a pyarrow ``Array``/``ChunkedArray`` or
    any Arrow array): a string array, NULL where the value is NULL or empty."""
    if isinstance(array, pa.ChunkedArray):
        return pa.chunked_array([_native.values_to_strings(c) for c in array.chunks], pa.string())
    if not hasattr(array, "__arrow_c_array__"):
        raise InvalidArgumentError(f"expected an Arrow array, got {type(array).__name__}")
    return _native.values_to_strings(array)


@typed_api
def hive_escape(text: str) -> str:
    """The Hive directory-name encoding of a string form (``/`` -> ``%2F``, ``:`` -> ``%3A``,
    ...; spaces and non-ASCII stay as they are)."""
    result: str = _native.hive_escape(_text(text))
    return result


@typed_api
def hive_unescape(text: str) -> str:
    """The inverse of :func:`hive_escape` (every ``%XX`` decoded)."""
    result: str = _native.hive_unescape(_text(text))
    return result


@typed_api
def uri_escape(path: str) -> str:
    """The extra URI encoding of a relative path (``%`` -> ``%25``, space -> ``%20``, ...)."""
    result: str = _native.uri_escape(_text(path))
    return result


@typed_api
def hive_segment(
    name: str, value: Any, type: pa.DataType | None = None, timezone: str = "UTC"
) -> str:
    """``name=<escaped value>``; ``name=__HIVE_DEFAULT_PARTITION__`` for NULL and empty values.
    Timestamps with a zone are shown as local time in ``timezone`` (an IANA name or an offset
    such as ``+02:00``); ``timezone`` is ignored for other types. Values no directory can name
    (a NUL character, binary values that are not UTF-8) raise InvalidArgumentError."""
    result: str = _native.hive_segment(_text(name), _one(value, type), _text(timezone))
    return result


@typed_api
def parse_hive_segment(
    segment: str, type: pa.DataType, timezone: str = "UTC"
) -> tuple[str, pa.Scalar[Any]]:
    """The inverse of :func:`hive_segment`: ``(name, value)``. A local time that ``timezone``
    shows twice (when daylight saving time ends) reads as the earlier instant."""
    name, arr = _native.parse_hive_segment(_text(segment), _type_schema(type), _text(timezone))
    return name, arr[0]


def _text(s: object) -> str:
    if not isinstance(s, str):
        raise InvalidArgumentError(f"expected a str, got {s!r}")
    return s
