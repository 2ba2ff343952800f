"""A namespace snapshot as a DataFusion table, for datafusion-python's SQL.

``ctx.register_table("t", ns.to_datafusion())`` hands DataFusion a table provider over
DataFusion's FFI (``__datafusion_table_provider__``): DataFusion plans the query and pushes the
projection, the filters and the limit into it, and the namespace answers them with its pruned
scan (partition values, column statistics, the filter pushed into each leaf's Lance scan,
indexes). Filters our filter rules accept are answered exactly, so DataFusion does not filter
again; the others stay with DataFusion.

The FFI ties the table to the DataFusion major the package is built with: datafusion-python
54.x. Another major is refused by datafusion-python or fails to exchange plans; see
docs/reads.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lance_partitioned import _native

if TYPE_CHECKING:
    from lance_partitioned.snapshot import Snapshot


class DataFusionTable:
    """One snapshot (manifest version) as a DataFusion table: every query reads that version."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._table = _native.DataFusionTable(snapshot._s)
        self.version = snapshot.version

    def __datafusion_table_provider__(self, session: Any) -> object:
        """The FFI table provider capsule datafusion-python asks for (``session`` is its
        ``SessionContext``)."""
        return self._table.__datafusion_table_provider__(session)

    def scans(self) -> list[dict[str, Any]]:
        """The scans DataFusion planned on this table, oldest first: ``columns`` read,
        ``filter`` taken (text), ``limit``, and ``leaves`` / ``kept_by_partitions`` / ``kept``
        (the snapshot's leaves, those the partition values kept, those also the column
        statistics kept, which were read)."""
        return self._table.scans()
