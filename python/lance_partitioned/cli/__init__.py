"""The ``lance-partitioned`` command line (click + rich): inspect, query and maintain
partitioned namespaces. Commands: ``info``, ``partitions``, ``tree``, ``explain``,
``history``, ``scan``, ``skew``, ``optimize``, ``expire``, ``cleanup``, ``repair``, ``tag``,
``index``,
``import-hive``, ``export-hive``; see docs/cli.md.

Run it as ``lance-partitioned ...`` or ``python -m lance_partitioned.cli ...``; in-process,
``main(["info", uri])`` returns the exit code.

Modules: ``app`` (the click group, shared options, error handling), ``params`` (option
types), ``output`` (JSON, tables, numbers, spinners), ``keys`` (partitions as shown),
``inspect`` (info, partitions, explain, history), ``tree``, ``scan``, ``skew`` with the pure
``skew_stats`` and the PNG ``histogram``, ``maintenance`` (optimize, expire, cleanup,
repair), ``tags`` (tag), ``indexes`` (index), ``hive`` (import-hive, export-hive).
"""

from __future__ import annotations

from collections.abc import Sequence

# Importing the command modules registers their commands on the group.
from lance_partitioned.cli import (  # noqa: F401
    hive,
    indexes,
    inspect,
    maintenance,
    scan,
    skew,
    tags,
    tree,
)
from lance_partitioned.cli.app import cli, run

__all__ = ["cli", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``lance-partitioned`` with ``argv`` (default: the process arguments); returns the
    exit code (0 ok, 2 an error reported on one line, 130 interrupted)."""
    return run(argv)
