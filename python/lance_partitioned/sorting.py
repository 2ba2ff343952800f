"""The sort order of a namespace (mixed into :class:`~lance_partitioned.PartitionedNamespace`):
the order every writer gives the rows of each file it writes within a partition, so that
column statistics and zone maps of the sort columns bound narrow ranges."""

from __future__ import annotations

from collections.abc import Sequence

from lance_partitioned import _native
from lance_partitioned._arguments import typed_class
from lance_partitioned.exceptions import ArgumentTypeError


@typed_class
class Sorting:
    """The namespace's sort order (as Iceberg's table sort order)."""

    _ns: _native.Namespace

    def refresh(self) -> bool:
        """Reloads the manifest if another writer moved it (the handle's own)."""
        raise NotImplementedError

    @property
    def _snap(self) -> _native.ManifestSnapshot:
        raise NotImplementedError

    @property
    def sort_order(self) -> list[str]:
        """The sort order, one ``"column ASC|DESC NULLS FIRST|LAST"`` item per column (empty:
        none)."""
        return self._snap.sort_order()

    def set_sort_order(self, columns: Sequence[str]) -> int:
        """Sets the order every writer gives the rows of each file it writes within a
        partition (local writes, distributed and Spark writes, merges' new rows), and that
        :meth:`optimize` gives the files it compacts; returns the manifest version.

        Each item is ``"column [ASC|DESC] [NULLS FIRST|NULLS LAST]"`` (ascending by default;
        NULLs last when ascending, first when descending, as SQL) on a top-level column; an
        empty list removes the order. One item ``"zorder(a, b)"`` (two to four columns)
        orders the rows along a Z-curve of those columns instead, so that zone maps and file
        statistics bound each of them. The order names columns by field id, so a rename keeps
        it. Rows written before keep their order until :meth:`optimize` compacts their
        files.
        """
        if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
            raise ArgumentTypeError(
                f"set_sort_order takes a list of column items (str), not {columns!r}"
            )
        version = self._ns.set_sort_order(list(columns))
        self.refresh()
        return version
