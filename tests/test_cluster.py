"""The ingest pipeline on a real Spark standalone cluster (a master and two workers, each its
own JVM; executors run Python workers from a venv holding only the installed wheel) writing to
the S3 server: clustered and one-pass writes, the Data Source writer, pruned reads, an
executor SIGKILLed mid-write (and mid-merge, and mid-stream), and a speculative second
attempt of a slow task."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import spark_cluster

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.s3, pytest.mark.slow]

JOB = str(Path(__file__).parent / "cluster_job.py")


def _driver_env(**extra: str) -> dict[str, str]:
    """The environment of a driver process: this one's without PySpark settings, on loopback."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK")}
    return {**env, "SPARK_LOCAL_IP": "127.0.0.1", **extra}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[spark_cluster.SparkCluster]:
    c = spark_cluster.start(tmp_path_factory.mktemp("spark-cluster"))
    yield c
    c.stop()


def test_ingest_pipeline_on_a_standalone_cluster(
    cluster: spark_cluster.SparkCluster, wheel_python: str, s3_server: Any, tmp_path: Path
) -> None:
    bucket = s3_server.new_bucket()
    env = _driver_env()
    out = subprocess.run(
        [
            sys.executable,
            JOB,
            cluster.master_url,
            wheel_python,
            json.dumps(s3_server.options()),
            bucket,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line is not None, f"{out.stdout[-3000:]}\n{out.stderr[-6000:]}\n{cluster.tail()}"
    res = json.loads(line[len("RESULT ") :])
    n = 40_000
    for step in ("clustered", "one_pass", "data_source"):
        got = res[step]
        assert (got["rows"], got["unique"], got["min"], got["max"]) == (n, n, 0, n - 1), step
        assert got["partitions"] == 20, step
    assert res["clustered"]["written"] == res["one_pass"]["written"] == n
    assert res["clustered"]["jvm_key"] is True
    assert res["clustered"]["files_per_partition"] == 1
    # 'FR' is every fifth id: 4 buckets of it, nothing else read.
    assert res["pruned_read"]["tasks"] <= 4  # small leaves share read tasks
    del res["pruned_read"]["tasks"]
    assert res["pruned_read"] == {"rows": n // 5, "leaves": 4, "countries": ["FR"]}
    assert res["source_read"] == {"rows": n // 5, "leaves": 4}
    killed = res["killed"]
    assert len(killed["pids"]) == 1, "an executor was killed while the write's tasks ran"
    assert killed["written"] == n
    assert (killed["rows"], killed["unique"], killed["min"], killed["max"]) == (
        2 * n,
        2 * n,
        0,
        2 * n - 1,
    )
    # Whatever the killed attempt had staged was never committed: cleanup removes it (how much
    # depends on where its task was when the executor died) without touching a row.
    assert res["after_cleanup"]["rows"] == res["after_cleanup"]["unique"] == 2 * n
    spec = res["speculative"]
    assert (spec["written"], spec["rows"], spec["unique"], spec["min"], spec["max"]) == (
        n,
        n,
        n,
        0,
        n - 1,
    )
    merged = res["merge"]
    assert len(merged["pids"]) == 1, "an executor was killed while the merge's tasks ran"
    assert (merged["rows"], merged["unique"], merged["min"], merged["max"]) == (
        n + 1000,
        n + 1000,
        0,
        n + 999,
    )
    assert (merged["inserted"], merged["updated"]) == (1000, n // 4)
    # Every changed row carries its own id's new payload; every other row kept its own.
    assert merged["merged"] == merged["right"] == n // 4 + 1000
    stream = res["stream"]
    assert len(stream["pids"]) == 1, "an executor was killed while the stream ran"
    assert stream["batches"] >= 6, stream
    # Every number of the committed batches once: 0 .. max, none missing, none twice.
    assert stream["rows"] == stream["unique"] == stream["max"] + 1, stream
    assert stream["min"] == 0
    assert stream["rows"] >= 4000, stream
    # Proof that a speculative copy raced: Spark interrupts the losing attempt when the stage
    # finishes (the SIGKILLed executor of step 5 logs nothing of the kind).
    log = cluster.executor_log()
    assert re.search(r"killed task \d+\.\d+ in stage .*Stage finished", log), log[-3000:]
    # The driver wrote nothing locally: everything is in the bucket.
    assert not any(p.name != "spark-warehouse" for p in tmp_path.iterdir()), list(
        tmp_path.iterdir()
    )
    keys = s3_server.keys(bucket)
    assert {k.split("/")[0] for k in keys} == {
        "clustered",
        "one-pass",
        "data-source",
        "speculative",
        "stream",
    }


def test_demo_runs_on_the_cluster_against_object_storage(
    cluster: spark_cluster.SparkCluster, wheel_python: str, s3_server: Any, tmp_path: Path
) -> None:
    """The user guide's cluster command (docs/guide/spark.md): ``make demo``'s job with
    --master, --uri and --storage-option."""
    bucket = s3_server.new_bucket()
    env = _driver_env(PYSPARK_PYTHON=wheel_python)
    opts = [f"--storage-option={k}={v}" for k, v in s3_server.options().items()]
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "lance_partitioned.demo",
            "--rows",
            "20000",
            "--master",
            cluster.master_url,
            "--uri",
            f"s3://{bucket}/events",
            *opts,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, f"{out.stdout[-3000:]}\n{out.stderr[-5000:]}"
    assert f"namespace at s3://{bucket}/events" in out.stdout
    assert "MISMATCH" not in out.stdout
    assert s3_server.options()["aws_secret_access_key"] not in out.stdout + out.stderr
    assert any(k.startswith("events/__manifest/") for k in s3_server.keys(bucket))


def test_packed_venv_shipped_with_spark_archives(
    cluster: spark_cluster.SparkCluster, s3_server: Any, tmp_path: Path
) -> None:
    """The user guide's other way to reach the executors (docs/guide/spark.md): a venv
    holding the wheel, packed with venv-pack and shipped by ``spark-submit --archives
    env.tar.gz#env``; the executors run ``./env/bin/python`` from it (PYSPARK_PYTHON), the
    driver its own interpreter."""
    import pyspark
    import venv_pack
    import wheel_env

    wheel_env.create(tmp_path / "env")
    packed = tmp_path / "env.tar.gz"
    venv_pack.pack(prefix=str(tmp_path / "env"), output=str(packed))
    spark_home = os.path.dirname(pyspark.__file__)
    env = _driver_env(
        SPARK_HOME=spark_home,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        PYSPARK_PYTHON="./env/bin/python",
    )
    uri = f"s3://{s3_server.new_bucket()}/archived"
    out = subprocess.run(
        [
            os.path.join(spark_home, "bin", "spark-submit"),
            "--master",
            cluster.master_url,
            "--archives",
            f"{packed}#env",
            "--conf",
            "spark.ui.enabled=false",
            str(Path(__file__).parent / "archive_job.py"),
            json.dumps(s3_server.options()),
            uri,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, f"{out.stdout[-2000:]}\n{out.stderr[-4000:]}"
    assert "RESULT 1000 1000" in out.stdout
