"""The Spark session every Spark bench starts: local[2] on this machine, or the standalone
cluster of the tests (a master and two one-core workers, each its own JVM, started by
``standalone()``), the UI and progress bars off, Spark's defaults otherwise (adaptive execution
on) unless a bench says so."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# The master the benches' cells (fresh processes) connect to; local[2] when unset.
MASTER = "LP_BENCH_SPARK_MASTER"


def master() -> str:
    return os.environ.get(MASTER, "local[2]")


def where() -> str:
    """The master as the benches' tables name it."""
    m = master()
    return m if m.startswith("local") else "standalone cluster (2 workers x 1 core)"


@contextlib.contextmanager
def standalone(work: Path, on: bool = True) -> Iterator[None]:
    """With ``on``, starts the tests' standalone cluster under ``work`` and points every Spark
    session started meanwhile (in this process and in the cells it starts) at it."""
    if not on:
        yield
        return
    from servers import tests_module

    work.mkdir(parents=True, exist_ok=True)
    cluster = tests_module("spark_cluster").start(work, workers=2, worker_memory="4g")
    os.environ[MASTER] = cluster.master_url
    try:
        yield
    finally:
        os.environ.pop(MASTER, None)
        cluster.stop()


def session(**conf: str) -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master())
        .appName("lance-partitioned-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "6g")
    )
    if not master().startswith("local"):
        # Executors run Python workers from this interpreter (the project's venv), with the
        # memory of their worker.
        builder = builder.config("spark.pyspark.python", sys.executable)
        builder = builder.config("spark.executor.memory", "3g")
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
