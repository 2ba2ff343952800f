"""Scalar indexes per partition (mixed into :class:`~lance_partitioned.PartitionedNamespace`):
Lance's B-tree, bitmap or zone-map index on one column of every partition, declared once for
the namespace and kept current by later writes and :meth:`optimize`."""

from __future__ import annotations

from typing import Literal

from lance_partitioned import _native
from lance_partitioned._arguments import typed_class
from lance_partitioned.exceptions import ArgumentTypeError
from lance_partitioned.options import write_concurrency

IndexKind = Literal["btree", "bitmap", "zonemap"]


@typed_class
class Indexes:
    """Scalar indexes: scans, deletes, merges and the engines reading through
    :meth:`to_pyarrow_dataset` use them through the filter pushed into each partition."""

    _ns: _native.Namespace

    def refresh(self) -> bool:
        """Reloads the manifest if another writer moved it (the handle's own)."""
        raise NotImplementedError

    def create_index(
        self,
        column: str,
        kind: IndexKind = "btree",
        *,
        name: str | None = None,
        replace: bool = False,
        concurrency: int | None = None,
    ) -> _native.IndexResult:
        """Declares a ``kind`` index on the top-level ``column`` and builds it on every
        partition.

        ``btree`` serves ranges and point lookups on columns with many values, ``bitmap``
        equality and ``IN`` on columns with few, ``zonemap`` ranges on data clustered by the
        column. The index is named ``name`` (``<column>_idx`` by default) on every partition's
        Lance table; the declaration follows the column through renames (it names the
        column's field id). A column has at most one index; an existing declaration of the
        same name on another column or of another kind is replaced only with ``replace=True``.

        The declaration commits first, then every partition's index in one manifest commit
        (a partition a concurrent write changed meanwhile is indexed again from its new
        version). Later writes, merges and updates build the indexes of the partitions they
        write after their commit (``WriteResult.indexed``; the namespace property
        ``lance_partitioned.indexes_on_write = "false"`` leaves that to :meth:`optimize`).
        Rows an index does not cover yet are read without it: answers never depend on it.
        """
        if not isinstance(column, str):
            raise ArgumentTypeError(f"create_index's column is a str, not {column!r}")
        if not isinstance(kind, str):
            raise ArgumentTypeError(f"create_index's kind is a str, not {kind!r}")
        conc = write_concurrency(self._ns.root, concurrency)
        result = self._ns.create_index(
            column, kind=kind, name=name, replace=bool(replace), concurrency=conc
        )
        self.refresh()
        return result

    def drop_index(self, name: str) -> _native.IndexResult:
        """Removes the index ``name``: its declaration, then its Lance index on every
        partition (``InvalidArgumentError`` when no index has that name)."""
        if not isinstance(name, str):
            raise ArgumentTypeError(f"drop_index's name is a str, not {name!r}")
        result = self._ns.drop_index(name)
        self.refresh()
        return result
