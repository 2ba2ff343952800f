"""Shared by the tests that race writers in other processes against our commits: the namespace
they write (tests/ns_writer.py), waiting for a paused process, and the consistency check."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

import lance_partitioned as lp

WRITER = str(Path(__file__).parent / "ns_writer.py")


def make_ns(
    root: Path, transaction_mode: str = "strong", properties: dict[str, str] | None = None
) -> lp.PartitionedNamespace:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("country", pa.string()),
            pa.field("bucket_src", pa.int64()),
        ]
    )
    spec = lp.PartitionSpec(
        [
            lp.PartitionField("country", source="country", transform=lp.Identity()),
            lp.PartitionField("b", source="bucket_src", transform=lp.Bucket(2)),
        ]
    )
    return lp.PartitionedNamespace.create(
        str(root), schema, spec, transaction_mode=transaction_mode, properties=properties
    )


def wait_for_pause(p: subprocess.Popen[Any], flag: Path) -> None:
    """Waits until the writer process `p` reaches its pause point (it creates `flag`)."""
    deadline = time.time() + 120
    while not flag.exists():
        assert p.poll() is None, p.stderr.read() if p.stderr else ""
        assert time.time() < deadline, "writer never reached the pause point"
        time.sleep(0.05)


def check_consistent(ns: lp.PartitionedNamespace, expected_ids: set[int]) -> None:
    ids = ns.to_table(columns=["id"])["id"].to_pylist()
    dupes = [k for k, c in Counter(ids).items() if c > 1]
    assert not dupes, f"rows committed twice: {dupes[:10]}"
    assert set(ids) == expected_ids
    parts = ns.partitions(with_rows=False)
    keys = list(zip(parts["country"].to_pylist(), parts["b"].to_pylist(), strict=True))
    assert len(keys) == len(set(keys)), "two partitions with the same values"


def rows(start: int, n: int, countries: str = "US,FR,DE") -> pa.Table:
    """Rows ``start``.. of the namespace ``make_ns`` creates, as tests/ns_writer.py writes
    them (country by id, ``bucket_src`` = id % 3)."""
    cs = countries.split(",")
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "country": pa.array([cs[i % len(cs)] for i in ids]),
            "bucket_src": pa.array([i % 3 for i in ids], pa.int64()),
        }
    )


def race_writers(
    root: Path, n: int, rounds: int, meanwhile: Callable[[], int]
) -> tuple[int, set[int]]:
    """Two writer processes append ``rounds`` rounds of ``n`` rows to ``root`` (ids from
    100_000 over US/FR/DE and from 200_000 over US/FR/JP) while ``meanwhile`` runs again and
    again in this process; returns the sum of what it returned and the ids written."""
    starts = [(100_000, "US,FR,DE"), (200_000, "US,FR,JP")]
    procs = [writer(root, start, n, rounds, cs) for start, cs in starts]
    total = 0
    while any(p.poll() is None for p in procs):
        total += meanwhile()
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
    return total, {i for start, _ in starts for i in range(start, start + n * rounds)}


def python_child(args: list[str], pause: str | None = None) -> subprocess.Popen[str]:
    """A Python process running ``args`` (a script or ``-c CODE`` and its arguments), its
    output captured, stopping at the test hook ``pause`` (``point:flag[,point:flag]``) if
    given."""
    env = dict(os.environ)
    if pause is not None:
        env["LANCE_PARTITIONED_TEST_PAUSE"] = pause
    return subprocess.Popen(
        [sys.executable, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def resume(p: subprocess.Popen[Any], flag: Path) -> None:
    """Lets a paused process go on, and again each time it pauses at ``flag`` (a retried
    commit reaches its pause point once per attempt), until it ends."""
    while p.poll() is None:
        flag.unlink(missing_ok=True)
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=0.05)


def writer(
    root: Path, start: int, n: int, rounds: int, countries: str, pause: str | None = None
) -> subprocess.Popen[str]:
    """A process appending ``rounds`` rounds of ``n`` rows from id ``start`` over
    ``countries`` to ``root`` (stopping at the test hook ``pause``, ``point:flag``, if given)."""
    return python_child([WRITER, str(root), str(start), str(n), str(rounds), countries], pause)


def paused_writer(
    root: Path, flag: Path, point: str, start: int, n: int, countries: str
) -> subprocess.Popen[str]:
    """A writer process appending ``n`` rows from id ``start`` to ``root`` that stops at the
    test hook ``point`` (creating ``flag``) until ``flag`` is removed."""
    return writer(root, start, n, 1, countries, pause=f"{point}:{flag}")
