"""A streaming driver SIGKILLed around its commits and restarted from its checkpoint, again
and again: before a micro-batch's manifest commit (nothing of it visible; Spark runs it again)
and right after it (committed, but Spark never recorded it; Spark runs it again and that run
commits nothing). Every input row must land exactly once; the expected rows are pyarrow's
reading of the input files."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_spark_stream import SPEC, input_files, rows

import lance_partitioned as lp

pytestmark = [pytest.mark.spark, pytest.mark.slow]

JOB = str(Path(__file__).parent / "stream_job.py")
POINTS = ("before_manifest_apply", "after_manifest_commit")


def driver(args: list[str], pause: str | None) -> subprocess.Popen[str]:
    env = dict(os.environ)
    if pause is not None:
        env["LANCE_PARTITIONED_TEST_PAUSE"] = pause
    return subprocess.Popen(
        [sys.executable, JOB, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # the driver, its JVM and Python workers: one group to kill
    )


def kill_at(p: subprocess.Popen[str], flag: Path, timeout: float = 240) -> bool:
    """SIGKILLs the driver's process group once it pauses at ``flag``; False when it ended
    first (nothing left to commit)."""
    deadline = time.monotonic() + timeout
    while not flag.exists():
        if p.poll() is not None:
            return False
        assert time.monotonic() < deadline, "the driver never reached its commit"
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGKILL)
    p.communicate(timeout=60)  # reaps it and closes its pipes
    kill_all_with(str(flag))
    return True


def kill_all_with(marker: str) -> None:
    """SIGKILLs every process whose environment names ``marker``: PySpark's daemon and its
    workers (where the data source's commit runs) sit in a process group of their own."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            environ = Path("/proc", pid, "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in environ:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)


def test_sink_driver_killed_20_times_around_commits_lands_every_row_once(tmp_path: Path) -> None:
    killed_and_restarted(tmp_path, "sink", 20)


def killed_and_restarted(tmp_path: Path, how: str, kills: int) -> None:
    """Kills the driver ``kills`` times, alternately before and right after a batch's manifest
    commit, then lets it finish; checks every input row landed once."""
    uri = str(tmp_path / "ns")
    schema = input_files(tmp_path / "unused", 1).schema
    lp.PartitionedNamespace.create(uri, schema, SPEC)
    folder, checkpoint = tmp_path / "in", tmp_path / "cp"
    expected = input_files(folder, files=kills + 4)
    args = [str(folder), uri, str(checkpoint), how]
    killed = {point: 0 for point in POINTS}
    for k in range(kills):
        point = POINTS[k % 2]
        flag = tmp_path / f"pause-{k}"
        p = driver(args, f"{point}:{flag}")
        assert kill_at(p, flag), f"kill {k}: the driver ended before {point}"
        killed[point] += 1
    assert killed == {POINTS[0]: kills // 2, POINTS[1]: kills - kills // 2}
    last = driver(args, None)
    out, err = last.communicate(timeout=600)
    assert last.returncode == 0, err[-3000:]
    assert out.split() == ["done"]
    got = lp.PartitionedNamespace.open(uri).to_table()
    assert rows(got) == rows(expected)
