"""Any Arrow data a write accepts, as what the native writer takes."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeVar

import pyarrow as pa

from lance_partitioned.exceptions import InvalidArgumentError

T = TypeVar("T")

_EXPECTED = (
    "data must be a pyarrow Table, RecordBatch, RecordBatchReader, an object with "
    "__arrow_c_stream__, or an iterable of RecordBatches"
)


def peek(items: Iterator[T]) -> tuple[T | None, Iterator[T]]:
    """The first item of ``items`` (None when empty) and an iterator over all of them."""
    first = next(items, None)
    if first is None:
        return None, iter(())

    def chain() -> Iterator[T]:
        yield first
        yield from items

    return first, chain()


def arrow_stream(data: Any) -> Any:
    """``data`` as an object with ``__arrow_c_stream__`` whose batches all share its schema (a
    table), or an iterator of record batches that the writer imports one by one, each with its
    own schema (so a later batch with other types is checked and cast against the namespace
    schema on its own, never reinterpreted)."""
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatchReader):
        return record_batches(iter(data))
    if isinstance(data, (str, bytes, bytearray, Mapping)):
        raise InvalidArgumentError(f"{_EXPECTED}; got {type(data).__name__}")
    if hasattr(data, "__arrow_c_stream__"):
        return data
    if hasattr(data, "__arrow_c_array__"):
        try:
            return pa.Table.from_batches([pa.record_batch(data)])
        except (pa.ArrowException, TypeError, ValueError) as e:
            raise InvalidArgumentError(
                f"data must be a record batch or table, not an array of one column ({e})"
            ) from None
    table = _pandas_table(data)
    if table is not None:
        return table
    if isinstance(data, Iterable):
        first, batches = peek(iter(data))
        if first is None:
            raise InvalidArgumentError("no data to write (an empty iterable)")
        return record_batches(batches)
    raise InvalidArgumentError(f"{_EXPECTED}; got {type(data).__name__}")


def _pandas_table(data: Any) -> pa.Table | None:
    try:
        import pandas as pd  # type: ignore[import-untyped,unused-ignore]
    except ImportError:  # pragma: no cover - pandas is optional
        return None
    if isinstance(data, pd.DataFrame):
        return pa.Table.from_pandas(data, preserve_index=False)
    return None


def record_batches(items: Iterator[Any]) -> Iterator[pa.RecordBatch]:
    """Checks that every item is a record batch (by index, with a typed error)."""
    for i, b in enumerate(items):
        if not isinstance(b, pa.RecordBatch):
            if hasattr(b, "__arrow_c_array__") and not isinstance(b, pa.Array):
                b = pa.record_batch(b)
            else:
                raise InvalidArgumentError(
                    f"item {i} of the input is a {type(b).__name__}, not a pyarrow.RecordBatch"
                )
        yield b
