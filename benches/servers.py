"""The real servers the tests start, for the benches: the S3-compatible servers
(``tests/s3_server.py``) and the Spark standalone cluster (``tests/spark_cluster.py``),
imported from the tests' directory, so that the benches run the very servers the tests check.

    s3_server = servers.tests_module("s3_server")
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

TESTS = str(Path(__file__).resolve().parent.parent / "tests")


def tests_module(name: str) -> ModuleType:
    """The tests' helper module ``name`` (imported on first use: the Spark cluster's imports
    pyspark)."""
    if TESTS not in sys.path:
        sys.path.insert(0, TESTS)
    return importlib.import_module(name)
