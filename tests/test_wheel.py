"""The wheel users install: built by ``make wheel`` into ``dist/``, installed here into a fresh
virtual environment outside the source tree, where a smoke script creates, writes and scans a
namespace and runs a kernel. A file missing from the wheel fails this test."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
import wheel_env

SMOKE = textwrap.dedent(
    """
    import sys, tempfile
    import pyarrow as pa
    import lance_partitioned as lp
    from lance_partitioned import kernels
    assert "site-packages" in lp.__file__, lp.__file__
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("c", pa.string())])
    spec = lp.PartitionSpec([lp.PartitionField("c", source="c", transform=lp.Identity())])
    root = tempfile.mkdtemp() + "/ns"
    ns = lp.PartitionedNamespace.create(root, schema, spec)
    res = ns.write(pa.table({"id": [1, 2, 3], "c": ["a", "b", "a"]}))
    assert res.rows == 3 and res.created == 2, res
    got = sorted(ns.to_table(filter="c = 'a'")["id"].to_pylist())
    assert got == [1, 3], got
    assert kernels.bucket(pa.array([1, 2, 3], pa.int64()), 16).to_pylist() == [4, 12, 13]
    try:
        lp.PartitionedNamespace.open(root + "-missing")
    except lp.NamespaceNotFoundError:
        pass
    else:
        raise AssertionError("expected NamespaceNotFoundError")
    # Package data: the lineage facet's JSON schema ships in the wheel.
    assert lp.lineage.partitions_schema()["$defs"]["PartitionDatasetFacet"]
    # ... and so does the jar of the JVM key functions for Spark.
    import zipfile
    from lance_partitioned.spark.key import jar_path
    assert "site-packages" in jar_path(), jar_path()
    names = zipfile.ZipFile(jar_path()).namelist()
    assert "io/lancepartitioned/spark/Bucket.class" in names, names
    # The test-only functions exist only when the test suite's switch is set at import.
    from lance_partitioned import _native
    for hook in ("_panic_for_tests", "_allocator_purge_delay_ms"):
        assert not hasattr(_native, hook), hook
    import inspect
    import lance_partitioned.spark as lps
    assert "_after_stage" not in inspect.signature(lps.write).parameters
    print("smoke ok", lp.__version__)
    print("root=" + root)
    """
)


@pytest.mark.slow
def test_wheel_installs_and_runs_outside_the_source_tree(wheel_python: str, tmp_path: Path) -> None:
    assert "abi3" in wheel_env.wheel().name, wheel_env.wheel().name
    env = wheel_env.clean_env()
    out = subprocess.run(
        [wheel_python, "-c", SMOKE],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "smoke ok" in out.stdout
    # The console script is installed with the wheel.
    root = out.stdout.split("root=")[1].strip()
    cli = subprocess.run(
        [str(Path(wheel_python).parent / "lance-partitioned"), "info", root, "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cli.returncode == 0, cli.stderr
    info = json.loads(cli.stdout)
    assert (info["rows"], info["partitions"]) == (3, 2), info
    # The base install needs only pyarrow (and its numpy): no pyspark, no pandas.
    listed = subprocess.run(
        [wheel_python, "-m", "pip", "list", "--format=freeze"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.lower()
    assert "pyspark" not in listed, listed
    assert "pandas" not in listed, listed


@pytest.mark.slow
def test_the_spark_extra_resolves_a_pandas_that_pyspark_supports(
    wheel_python: str, tmp_path: Path
) -> None:
    """PySpark 4 prints a FutureWarning on every session under pandas 3: ``[spark]`` must
    resolve pandas 2 (pip's own resolution, nothing installed)."""
    report = tmp_path / "report.json"
    subprocess.run(
        [
            wheel_python,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--quiet",
            "--report",
            str(report),
            f"{wheel_env.wheel()}[spark]",
        ],
        env=wheel_env.clean_env(),
        check=True,
        timeout=600,
    )
    got = {
        item["metadata"]["name"].lower(): item["metadata"]["version"]
        for item in json.loads(report.read_text())["install"]
    }
    assert "pyspark" in got, got
    assert got["pandas"].split(".")[0] == "2", got
