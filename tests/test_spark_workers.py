"""A Spark whose Python workers cannot import lance_partitioned gets one clear error (the
worker interpreter, what it found, the fix) instead of a JVM stack trace."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

SCRIPT = textwrap.dedent(
    """
    import sys
    from pyspark.sql import SparkSession
    import lance_partitioned as lp
    import lance_partitioned.spark as lps
    worker = sys.argv[1]
    spark = (SparkSession.builder.master("local[1]")
             .config("spark.ui.enabled", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("OFF")
    df = spark.createDataFrame([(1, "a")], "id long, c string")
    spec = lp.PartitionSpec([lp.PartitionField("c", source="c", transform=lp.Identity())])
    try:
        lps.write(df, sys.argv[2], spec=spec)
    except lp.InvalidArgumentError as e:
        print("ERROR:", e)
    else:
        print("NO ERROR")
    spark.stop()
    """
)


def test_workers_without_the_package_get_one_clear_error(tmp_path: Path) -> None:
    # A fresh venv without pyarrow or lance_partitioned stands for a node's bare python3.
    import venv

    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)
    worker = str(bare / "bin" / "python")
    env = dict(os.environ, PYSPARK_PYTHON=worker, SPARK_LOCAL_IP="127.0.0.1")
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, worker, str(tmp_path / "ns")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    line = next(x for x in out.stdout.splitlines() if x.startswith(("ERROR:", "NO ERROR")))
    assert line.startswith("ERROR:"), line
    assert "cannot import lance_partitioned" in line
    assert worker in line
    assert "PYSPARK_PYTHON" in line
    assert "spark.pyspark.python" in line
    assert sys.executable in line, "the fix names the driver's interpreter"
    assert not (tmp_path / "ns").exists(), "nothing is created before the workers are checked"
