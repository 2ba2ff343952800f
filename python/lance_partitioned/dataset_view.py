"""A namespace snapshot as a ``pyarrow.dataset.Dataset``, for engines that push projections and
filters into pyarrow datasets (DuckDB, polars' ``scan_pyarrow_dataset``, pyarrow itself).

The view holds one snapshot (a manifest version), so every scan of it reads the same data. Its
scanner turns ``columns`` and ``filter`` (a ``pyarrow.compute.Expression``) into the
snapshot's pruned scan: partition pruning, column statistics, the filter pushed into each
leaf's Lance scan. Like pylance's ``LanceDataset`` it subclasses ``pyarrow.dataset.Dataset`` so
that engines recognise it; the methods pyarrow implements over fragments (``get_fragments``,
``join``, ``sort_by``, ...) are not available and raise ``NotImplementedError``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from lance_partitioned.exceptions import InvalidArgumentError

if TYPE_CHECKING:
    from lance_partitioned.snapshot import Snapshot

_SCAN_OPTIONS = frozenset(
    {
        "batch_size",
        "batch_readahead",
        "fragment_readahead",
        "fragment_scan_options",
        "use_threads",
        "cache_metadata",
        "memory_pool",
    }
)


def _columns(schema: pa.Schema, columns: Sequence[str] | dict[str, Any] | None) -> list[str] | None:
    if columns is None:
        return None
    if isinstance(columns, dict):
        raise InvalidArgumentError(
            "a namespace dataset takes column names, not projection expressions"
        )
    missing = [c for c in columns if c not in schema.names]
    if missing:
        raise InvalidArgumentError(f"no column {missing[0]!r} in the namespace schema")
    return list(columns)


BATCH_ROWS = 1 << 17
"""Rows per batch of the view's scans when the caller names none (pyarrow's own default)."""


def _options(kwargs: dict[str, Any]) -> int:
    unknown = sorted(set(kwargs) - _SCAN_OPTIONS)
    if unknown:
        raise InvalidArgumentError(f"unsupported scan option(s): {', '.join(unknown)}")
    size = kwargs.get("batch_size")
    return int(size) if size is not None else BATCH_ROWS


class NamespaceScanner(pads.Scanner):
    """A pruned scan of a namespace snapshot, with ``pyarrow.dataset.Scanner``'s read methods."""

    def __init__(
        self,
        snapshot: Snapshot,
        columns: list[str] | None,
        filter: pc.Expression | None,
        batch_size: int,
    ) -> None:
        self._snapshot = snapshot
        self._columns = columns
        self._filter = filter
        self._batch_size = batch_size

    @property
    def projected_schema(self) -> pa.Schema:
        schema = self._snapshot.schema
        if self._columns is None:
            return schema
        return pa.schema([schema.field(c) for c in self._columns])

    @property
    def dataset_schema(self) -> pa.Schema:
        return self._snapshot.schema

    def to_reader(self) -> pa.RecordBatchReader:
        return self._snapshot.scan(self._filter, self._columns, batch_size=self._batch_size)

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        yield from self.to_reader()

    def to_table(self) -> pa.Table:
        return self.to_reader().read_all()

    def head(self, num_rows: int) -> pa.Table:
        batches, left = [], num_rows
        reader = self.to_reader()
        for b in reader:
            if left <= 0:
                break
            batches.append(b.slice(0, left))
            left -= batches[-1].num_rows
        reader.close()
        return pa.Table.from_batches(batches, schema=reader.schema)

    def count_rows(self) -> int:
        return sum(b.num_rows for b in self._snapshot.scan(self._filter, self._count_columns()))

    def _count_columns(self) -> list[str]:
        # The narrowest read: one column (the filter's columns are read anyway).
        return [self._snapshot.schema.names[0]]


class NamespaceDataset(pads.Dataset):
    """A namespace snapshot as a ``pyarrow.dataset.Dataset`` (see the module docs); made by
    :meth:`lance_partitioned.PartitionedNamespace.to_pyarrow_dataset`."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

    @property
    def schema(self) -> pa.Schema:
        return self._snapshot.schema

    @property
    def version(self) -> int:
        """The manifest version the view reads."""
        return self._snapshot.version

    def scanner(  # type: ignore[override]  # column names and a filter, as documented
        self,
        columns: Sequence[str] | dict[str, Any] | None = None,
        filter: pc.Expression | None = None,
        **kwargs: Any,
    ) -> NamespaceScanner:
        if filter is not None and not isinstance(filter, pc.Expression):
            raise InvalidArgumentError(
                "a namespace dataset's filter is a pyarrow.compute.Expression"
                f" (got {type(filter).__name__}); for SQL use PartitionedNamespace.scan"
            )
        cols = _columns(self.schema, columns)
        return NamespaceScanner(self._snapshot, cols, filter, _options(kwargs))

    def to_reader(self, columns: Any = None, filter: Any = None, **kwargs: Any) -> Any:
        return self.scanner(columns, filter, **kwargs).to_reader()

    def to_batches(  # type: ignore[override]
        self, columns: Any = None, filter: Any = None, **kwargs: Any
    ) -> Iterator[pa.RecordBatch]:
        return self.scanner(columns, filter, **kwargs).to_batches()

    def to_table(  # type: ignore[override]
        self, columns: Any = None, filter: Any = None, **kwargs: Any
    ) -> pa.Table:
        return self.scanner(columns, filter, **kwargs).to_table()

    def head(  # type: ignore[override]
        self, num_rows: int, columns: Any = None, filter: Any = None, **kwargs: Any
    ) -> pa.Table:
        return self.scanner(columns, filter, **kwargs).head(num_rows)

    def count_rows(  # type: ignore[override]
        self, filter: Any = None, **kwargs: Any
    ) -> int:
        return self.scanner(None, filter, **kwargs).count_rows()

    def get_fragments(self, filter: Any = None) -> Any:
        raise NotImplementedError("a namespace dataset has no pyarrow fragments; use scanner()")

    def replace_schema(self, schema: Any) -> Any:
        raise NotImplementedError("a namespace dataset's schema is the namespace's")

    def join(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("use PartitionedNamespace.join, or scan into an engine")

    def __repr__(self) -> str:
        return f"NamespaceDataset(version={self.version}, schema={self.schema})"
