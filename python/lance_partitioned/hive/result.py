"""What an export returns, importable without the exporter (and pyarrow's file systems)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ExportResult"]


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote."""

    rows: int
    partitions: int
    files: int
    manifest_version: int
