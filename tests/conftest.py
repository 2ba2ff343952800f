import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import os
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

# The test files that take longest, longest first (seconds of test time each, from
# `pytest -n 2 --dist loadfile --durations=0` at 9827591: 465, 304, 125, 76, 54, 43, 38, 36 of
# the suite's 1,553). `make test` runs pytest with `--no-loadscope-reorder`, so the two
# workers take files in the order below: these start first and the rest of the suite fills
# the other worker meanwhile. xdist's default order (files with the most tests first) ran
# these one-test files last, one worker alone for the last 11 of a cold run's 15 minutes.
LONGEST_FIRST = (
    "test_stream_kills.py",
    "test_cluster.py",
    "test_stream_kills_foreach_batch.py",
    "test_change_campaign.py",
    "test_s3.py",
    "test_cli.py",
    "test_spark.py",
    "test_wheel.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Puts the files of :data:`LONGEST_FIRST` first, in its order; every other test keeps
    its collection order (the sort is stable)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


# The extension registers its test-only functions (`_panic_for_tests`, ...) when this is set at
# import; the one build serves the tests and the wheel. Subprocesses inherit it.
os.environ["LANCE_PARTITIONED_TEST_HOOKS"] = "1"


@pytest.fixture(scope="session")
def s3_server() -> Iterator[Any]:
    """A real S3-compatible server (moto) on 127.0.0.1 for the whole run."""
    import s3_server as s3

    server = s3.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def seaweedfs_server() -> Iterator[Any]:
    """A second, independent S3 implementation (SeaweedFS, Go, concurrent) on 127.0.0.1."""
    import s3_server as s3

    server = s3.start_seaweedfs()
    yield server
    server.stop()


@pytest.fixture
def s3_uri(s3_server: Any) -> tuple[str, dict[str, str]]:
    """A namespace URI in a fresh bucket, with the storage options that reach it."""
    return f"s3://{s3_server.new_bucket()}/ns", s3_server.options()


@pytest.fixture(scope="session")
def wheel_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The python of a fresh venv outside the source tree holding only the wheel of ``dist/``
    (as a user's ``pip install``)."""
    import wheel_env

    return wheel_env.create(tmp_path_factory.mktemp("wheel-venv"))


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local Spark session for the whole run (startup costs ~10 s): 2 cores, tasks may
    fail up to 3 times (so retries can be tested), quiet UI and logs."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    import lance_partitioned.spark as lps

    # Launching the JVM forks (and immediately execs); pylance, when imported by other tests,
    # warns on every fork. Harmless here: nothing of lance runs in the child.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="lance is not fork-safe")
        session = _start(SparkSession)
    session.sparkContext.setLogLevel("ERROR")
    lps.register(session)
    yield session
    session.stop()


def _start(spark_session: Any) -> Any:
    return (
        spark_session.builder.master("local[2,3]")
        .appName("lance-partitioned-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
        .getOrCreate()
    )
