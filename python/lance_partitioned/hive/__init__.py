"""Hive directory trees: importing one into a namespace
(:meth:`lance_partitioned.PartitionedNamespace.import_hive`) and exporting a namespace as one
(:meth:`lance_partitioned.PartitionedNamespace.export_hive`). Directory names follow
docs/partition-values.md through :mod:`lance_partitioned.values`."""

from lance_partitioned.hive.formats import FORMATS
from lance_partitioned.hive.result import ExportResult

__all__ = ["FORMATS", "ExportResult"]
