"""Vectorised partition kernels: hashing, transforms, expressions and routing.

Every function takes Arrow data through the Arrow PyCapsule interface (pyarrow ``Array`` /
``ChunkedArray`` / ``RecordBatch``, arro3, polars, nanoarrow, ...) without copying, runs in Rust
with the GIL released, and returns pyarrow objects. A ``ChunkedArray`` (or any object exposing
only ``__arrow_c_stream__``) is processed chunk by chunk and returned as a ``ChunkedArray``.

Semantics (see docs/design.md):

- :func:`murmur3` / :func:`murmur3_multi`: MurmurHash3 x86_32, seed 0, as int32; the bytes
  hashed per type are upstream Lance's (native little-endian bytes for numbers, dates and
  timestamps; UTF-8 for strings; raw bytes for binaries; arrow's display string for booleans,
  decimals, times and fixed-size binaries). NULL hashes to NULL; ``murmur3_multi`` skips NULL
  arguments and is NULL only when all are NULL.
- :func:`bucket` / :func:`multi_bucket`: ``|hash| mod n`` computed in 64 bits, an int32 in
  ``[0, n)``. This equals upstream's ``abs(murmur3(x)) % n`` except when the hash is
  ``-2147483648``, where upstream's checked ``abs`` fails and we return ``2147483648 % n``.
- :func:`year`, :func:`month`, :func:`day`, :func:`hour`: DataFusion ``date_part`` semantics
  (int32), in the timezone of the timestamp type; naive timestamps are read as UTC.
- :func:`truncate`: first ``width`` characters of strings; ``v - (v % width)`` (truncated
  remainder) for integers and decimals; the result has the source type.
- :func:`evaluate`: a DataFusion SQL expression over ``col0..colN``, with ``murmur3`` and
  ``murmur3_multi`` available; volatile or stateful functions, subqueries, aggregates and
  window functions are refused with :class:`~lance_partitioned.exceptions.ExpressionError`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import pyarrow as pa

from lance_partitioned import _native
from lance_partitioned._arguments import typed_api
from lance_partitioned.exceptions import ArgumentTypeError, InvalidArgumentError

__all__ = [
    "RoutedBatch",
    "bucket",
    "day",
    "evaluate",
    "evaluate_scalar",
    "expression_type",
    "hour",
    "identity",
    "lance_compute_threads",
    "month",
    "multi_bucket",
    "murmur3",
    "murmur3_multi",
    "partition_values",
    "route",
    "simd_level",
    "truncate",
    "validate_spec",
    "year",
]

ArrayLike: TypeAlias = Any
"""Anything exposing ``__arrow_c_array__`` or ``__arrow_c_stream__``."""

AnyArray: TypeAlias = "pa.Array[Any]"
AnyChunked: TypeAlias = "pa.ChunkedArray[Any]"
ArrayResult: TypeAlias = "pa.Array[Any] | pa.ChunkedArray[Any]"


def _is_array(obj: object) -> bool:
    return hasattr(obj, "__arrow_c_array__") and not isinstance(obj, pa.RecordBatch)


def _as_chunked(obj: ArrayLike) -> AnyChunked:
    if isinstance(obj, pa.ChunkedArray):
        return obj
    if hasattr(obj, "__arrow_c_stream__"):
        return pa.chunked_array(obj)
    raise InvalidArgumentError(
        f"expected an Arrow array (an object with __arrow_c_array__ or __arrow_c_stream__), "
        f"got {type(obj).__name__}"
    )


def _map_chunks(obj: ArrayLike, fn: Callable[[ArrayLike], AnyArray]) -> ArrayResult:
    """Applies a single-array native kernel to an array or to each chunk of a stream."""
    if _is_array(obj):
        return fn(obj)
    chunked = _as_chunked(obj)
    if chunked.num_chunks == 0:
        empty = fn(pa.array([], type=chunked.type))
        return pa.chunked_array([], type=empty.type)
    return pa.chunked_array([fn(c) for c in chunked.chunks])


def _flat(obj: ArrayLike) -> ArrayLike:
    """One contiguous array (a chunked input is combined, which copies)."""
    if _is_array(obj):
        return obj
    return _as_chunked(obj).combine_chunks()


def _flat_many(arrays: Sequence[ArrayLike]) -> list[ArrayLike]:
    if isinstance(arrays, (str, bytes)) or not isinstance(arrays, Sequence):
        raise InvalidArgumentError("expected a sequence of Arrow arrays")
    return [_flat(a) for a in arrays]


@typed_api
def murmur3(array: ArrayLike) -> ArrayResult:
    """MurmurHash3 x86_32 (seed 0) of each value, as int32; NULL stays NULL."""
    return _map_chunks(array, _native.murmur3)


@typed_api
def murmur3_multi(*arrays: ArrayLike) -> AnyArray:
    """MurmurHash3 of the concatenated bytes of the non-NULL arguments of each row."""
    return _native.murmur3_multi(_flat_many(arrays))


@typed_api
def bucket(array: ArrayLike, n: int) -> ArrayResult:
    """``|murmur3(x)| mod n`` as int32 in ``[0, n)``; raises InvalidArgumentError if n <= 0."""
    _check_positive("n", n)
    return _map_chunks(array, lambda a: _native.bucket(a, n))


@typed_api
def multi_bucket(arrays: Sequence[ArrayLike], n: int) -> AnyArray:
    """``|murmur3_multi(*arrays)| mod n`` as int32 in ``[0, n)``."""
    _check_positive("n", n)
    return _native.multi_bucket(_flat_many(arrays), n)


@typed_api
def identity(array: ArrayLike) -> ArrayResult:
    """The values themselves (as pyarrow, zero copy)."""
    if isinstance(array, (pa.Array, pa.ChunkedArray)):
        return array
    if _is_array(array):
        return pa.array(array)
    return _as_chunked(array)


@typed_api
def year(array: ArrayLike) -> ArrayResult:
    """Calendar year of a date or timestamp, as int32."""
    return _map_chunks(array, lambda a: _native.temporal(a, "year"))


@typed_api
def month(array: ArrayLike) -> ArrayResult:
    """Month (1-12) of a date or timestamp, as int32."""
    return _map_chunks(array, lambda a: _native.temporal(a, "month"))


@typed_api
def day(array: ArrayLike) -> ArrayResult:
    """Day of month (1-31) of a date or timestamp, as int32."""
    return _map_chunks(array, lambda a: _native.temporal(a, "day"))


@typed_api
def hour(array: ArrayLike) -> ArrayResult:
    """Hour (0-23) of a timestamp in its type's timezone, as int32."""
    return _map_chunks(array, lambda a: _native.temporal(a, "hour"))


@typed_api
def truncate(array: ArrayLike, width: int) -> ArrayResult:
    """First ``width`` characters of strings; ``v - (v % width)`` for integers and decimals."""
    _check_positive("width", width)
    return _map_chunks(array, lambda a: _native.truncate(a, width))


@typed_api
def evaluate(expression: str, arrays: Sequence[ArrayLike]) -> AnyArray:
    """Evaluates a DataFusion SQL expression over ``col0..colN`` bound to ``arrays``."""
    return _native.evaluate(expression, _flat_many(arrays))


@typed_api
def evaluate_scalar(expression: str, values: Sequence[Any]) -> pa.Scalar[Any]:
    """Evaluates a DataFusion SQL expression on one value per source column.

    ``values`` may be pyarrow scalars (their type is kept) or Python values (typed by
    ``pyarrow.scalar``). This is the pruning path: the expression evaluated on query literals.
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise InvalidArgumentError("values must be a sequence (one value per source column)")
    arrays = []
    for v in values:
        s = v if isinstance(v, pa.Scalar) else pa.scalar(v)
        arrays.append(pa.array([s.as_py()], type=s.type))
    result: AnyArray = _native.evaluate(expression, arrays)
    scalar: pa.Scalar[Any] = result[0]
    return scalar


@typed_api
def expression_type(expression: str, types: Sequence[pa.DataType]) -> pa.DataType:
    """The type ``expression`` returns when ``col{i}`` has ``types[i]``."""
    schema = pa.schema([pa.field(f"col{i}", t) for i, t in enumerate(types)])
    out: pa.RecordBatch = _native.expression_type(expression, schema)
    result: pa.DataType = out.schema.field(0).type
    return result


def _spec_text(spec: str | Mapping[str, Any]) -> str:
    return spec if isinstance(spec, str) else json.dumps(spec)


def _schema_arg(schema: pa.Schema | str | Mapping[str, Any]) -> pa.Schema | str:
    if isinstance(schema, Mapping):
        return json.dumps(schema)
    return schema


@typed_api
def validate_spec(
    spec: str | Mapping[str, Any], schema: pa.Schema | str | Mapping[str, Any]
) -> dict[str, Any]:
    """Validates a partition spec against a namespace schema and returns it normalised.

    Raises :class:`~lance_partitioned.exceptions.SpecError` (or ``ExpressionError``) naming the
    offending field.
    """
    text: str = _native.validate_spec(_spec_text(spec), _schema_arg(schema))
    parsed: dict[str, Any] = json.loads(text)
    return parsed


@typed_api
def partition_values(
    batch: pa.RecordBatch | pa.Table,
    spec: str | Mapping[str, Any],
    schema: pa.Schema | str | Mapping[str, Any],
) -> pa.RecordBatch | pa.Table:
    """All partition values of one spec version for every row, one column per field.

    ``spec`` is a ``partition_spec_v<N>`` object (JSON text or dict); ``schema`` is the
    namespace schema (pyarrow schema with ``lance:field_id`` metadata, or its JSON). Input
    columns are matched by name and cast to the namespace types first, so the values never
    depend on how the writer typed its data. Columns are named by ``field_id`` and typed by
    ``result_type``.
    """
    spec_text = _spec_text(spec)
    schema_arg = _schema_arg(schema)
    if isinstance(batch, pa.Table):
        out = [_native.partition_values(b, spec_text, schema_arg) for b in batch.to_batches()]
        if not out:
            empty = _native.partition_values(
                pa.RecordBatch.from_pylist([], schema=batch.schema), spec_text, schema_arg
            )
            return pa.Table.from_batches([], schema=empty.schema)
        return pa.Table.from_batches(out)
    result: pa.RecordBatch = _native.partition_values(batch, spec_text, schema_arg)
    return result


@dataclass(frozen=True)
class RoutedBatch:
    """Rows of a batch grouped by partition key.

    ``keys`` has one row per distinct key tuple (in order of first appearance; NULL is a key);
    ``batches[i]`` holds the rows whose key is ``keys[i]``, in their input order. ``permuted``
    is the whole input reordered so groups are contiguous; ``offsets`` are the group
    boundaries into it (``batches[i] == permuted.slice(offsets[i], offsets[i+1] -
    offsets[i])``, zero copy).
    """

    keys: pa.RecordBatch
    batches: list[pa.RecordBatch]
    permuted: pa.RecordBatch
    offsets: list[int]

    def __len__(self) -> int:
        return len(self.batches)


@typed_api
def route(
    batch: pa.RecordBatch,
    keys: pa.RecordBatch | Sequence[ArrayLike] | Mapping[str, ArrayLike],
    threads: int | None = None,
) -> RoutedBatch:
    """Groups the rows of ``batch`` by their key tuple (one stable permutation, then slices).

    ``keys`` is a RecordBatch of key columns (e.g. the output of :func:`partition_values`), a
    sequence of arrays (named ``key0..``) or a mapping of name to array; every key column has
    one value per row of ``batch``.

    ``threads`` bounds how many threads move columns (columns are independent): ``None``
    uses the machine's cores for batches of at least 100,000 rows, ``1`` stays on the calling
    thread (use that inside Spark tasks, which already run one per core).
    """
    if isinstance(batch, pa.Table):
        raise InvalidArgumentError("route takes a RecordBatch; route a Table batch by batch")
    if isinstance(keys, pa.RecordBatch):
        key_batch = keys
    elif isinstance(keys, Mapping):
        key_batch = pa.RecordBatch.from_arrays(
            [_as_pyarrow(v) for v in keys.values()], names=list(keys.keys())
        )
    else:
        arrays = [_as_pyarrow(v) for v in keys]
        key_batch = pa.RecordBatch.from_arrays(
            arrays, names=[f"key{i}" for i in range(len(arrays))]
        )
    if threads is not None and (
        isinstance(threads, bool) or not isinstance(threads, int) or threads < 1
    ):
        raise InvalidArgumentError(f"threads must be a positive int or None, got {threads!r}")
    key_out, permuted, offsets = _native.route_batch(batch, key_batch, threads)
    batches = [
        permuted.slice(offsets[i], offsets[i + 1] - offsets[i]) for i in range(len(offsets) - 1)
    ]
    return RoutedBatch(keys=key_out, batches=batches, permuted=permuted, offsets=offsets)


def _as_pyarrow(obj: ArrayLike) -> AnyArray:
    if isinstance(obj, pa.Array):
        return obj
    if _is_array(obj):
        return pa.array(obj)
    return _as_chunked(obj).combine_chunks()


@typed_api
def simd_level() -> str:
    """The SIMD level the hashing loops run at here: ``"avx2"`` or ``"portable"``."""
    level: str = _native.simd_level()
    return level


@typed_api
def lance_compute_threads() -> int:
    """The threads of Lance's compute pool in this process (the pool that encodes the pages
    of every file a write makes): every core, unless ``LANCE_CPU_THREADS`` was set before the
    package was imported. Lance's own default holds two cores back for I/O, which leaves one
    thread on a two-core machine; this package sizes its copy of Lance's pool at import, and
    another Lance in the process (pylance) keeps its own default."""
    threads: int = _native.lance_compute_threads()
    return threads


def _check_positive(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentTypeError(f"{name} must be an int, got {type(value).__name__}")
    if value <= 0:
        raise InvalidArgumentError(f"{name} must be positive, got {value}")
