"""Concurrent writers and crashes: every committed row exactly once, never two partitions with
the same values, readers unaffected by a writer killed mid-commit."""

from __future__ import annotations

import datetime as dt
import signal
from pathlib import Path

import pyarrow as pa
import pytest
from races import check_consistent, make_ns, paused_writer, resume, wait_for_pause, writer

import lance_partitioned as lp


@pytest.mark.slow
def test_two_processes_append_concurrently(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = make_ns(root)
    rows, rounds = 50, 8
    # Writer A and B share US/FR (same partitions, created concurrently) and each has its own.
    # A stops before its first manifest commit until B has committed its first write, so the
    # race is certain: A's first commit must adopt the US/FR partitions B created.
    flag = tmp_path / "paused"
    a = writer(root, 0, rows, rounds, "US,FR,DE", pause=f"before_manifest_commit:{flag}")
    wait_for_pause(a, flag)
    b = writer(root, 1_000_000, rows, rounds, "US,FR,JP")
    while "wrote" not in (b.stdout.readline() if b.stdout else ""):
        assert b.poll() is None, b.stderr.read() if b.stderr else ""
    resume(a, flag)  # A pauses before every commit: let it go each time
    outs = []
    for p in (a, b):
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        outs.append(out)
    first_a = outs[0].splitlines()[0]
    assert "adopted=0" not in first_a, first_a
    expected = set(range(rows * rounds)) | set(range(1_000_000, 1_000_000 + rows * rounds))
    ns.refresh()
    check_consistent(ns, expected)
    countries = set(ns.partitions(with_rows=False)["country"].to_pylist())
    assert countries == {"US", "FR", "DE", "JP"}


@pytest.mark.parametrize("point", ["after_fragments", "before_manifest_commit"])
def test_writer_killed_mid_write_leaves_namespace_unchanged(tmp_path: Path, point: str) -> None:
    root = tmp_path / "ns"
    ns = make_ns(root)
    first = pa.table(
        {
            "id": pa.array(range(100), pa.int64()),
            "country": pa.array(["US", "FR"] * 50),
            "bucket_src": pa.array(range(100), pa.int64()),
        }
    )
    ns.write(first)
    before = ns.snapshot()
    flag = tmp_path / "paused"
    with paused_writer(root, flag, point, 1000, 100, "US,DE") as p:
        wait_for_pause(p, flag)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
    assert ns.refresh() is False, "the killed write changed the manifest"
    check_consistent(ns, set(range(100)))
    assert ns.snapshot().version == before.version
    # The killed write's new partition (DE) is an orphan leaf table: invisible, and cleanable
    # once older than the grace period (fresh files are never touched).
    # Its rows for the existing partitions (US) are data files no version names, plus (once
    # the leaf commits ran) detached versions no manifest records: invisible, and cleanable.
    fresh = ns.cleanup()
    assert (fresh.orphans, fresh.stale_versions, fresh.stale_files) == ([], [], [])
    found = ns.cleanup(older_than=dt.timedelta(0), dry_run=True)
    assert len(found.orphans) == 1
    assert found.removed is False
    assert (root / found.orphans[0]).is_dir()
    us = {loc for loc in (p["location"] for p in ns.partitions(with_rows=False).to_pylist())}
    assert found.stale_files, "the killed write's data files in existing partitions"
    assert all(f.split("/")[0] in us for f in found.stale_files)
    assert all((root / f).is_file() for f in found.stale_files)
    if point == "before_manifest_commit":
        assert len(found.stale_versions) >= 1
        assert all(v.split("@")[0] in us for v in found.stale_versions)
    else:
        assert found.stale_versions == []
    done = ns.cleanup(older_than=dt.timedelta(0), retention_check=False)
    assert done.orphans == found.orphans
    assert sorted(done.stale_files) == sorted(found.stale_files)
    assert done.stale_versions == found.stale_versions
    assert done.files > 0
    assert not (root / found.orphans[0]).exists()
    assert not any((root / f).exists() for f in found.stale_files)
    check_consistent(ns, set(range(100)))
    again = ns.cleanup(older_than=dt.timedelta(0), retention_check=False)
    assert (again.orphans, again.stale_versions, again.stale_files) == ([], [], [])
    # The next write succeeds and sees only committed data.
    ns.write(
        pa.table(
            {
                "id": pa.array(range(200, 210), pa.int64()),
                "country": pa.array(["DE"] * 10),
                "bucket_src": pa.array(range(10), pa.int64()),
            }
        )
    )
    check_consistent(ns, set(range(100)) | set(range(200, 210)))


def test_cleanup_keeps_every_version_a_manifest_version_reads(tmp_path: Path) -> None:
    ns = make_ns(tmp_path / "ns")
    history: list[tuple[int, int]] = []
    for r in range(4):
        ns.write(
            pa.table(
                {
                    "id": pa.array(range(r * 10, r * 10 + 10), pa.int64()),
                    "country": pa.array(["US", "FR"] * 5),
                    "bucket_src": pa.array(range(10), pa.int64()),
                }
            ),
            mode="overwrite" if r == 2 else "append",
        )
        history.append((ns.snapshot().version, ns.to_table(columns=["id"]).num_rows))
    done = ns.cleanup(older_than=dt.timedelta(0), retention_check=False)
    assert (done.orphans, done.stale_versions, done.stale_files) == ([], [], [])
    for version, rows in history:
        assert ns.snapshot(version).to_table(columns=["id"]).num_rows == rows


def test_weak_write_failing_after_leaf_commits_names_what_is_visible(tmp_path: Path) -> None:
    """A weak write whose manifest commit fails after its leaf commits raises
    PartialCommitError naming the existing partitions that became visible; the partition it
    would have created stays invisible. Here pylance rewrites the manifest (dropping our
    columns) while the writer is paused between its leaf commits and its manifest commit."""
    from lance.namespace import CreateNamespaceRequest, DirectoryNamespace

    root = tmp_path / "weak"
    ns = make_ns(root, "weak")
    ns.write(
        pa.table(
            {
                "id": pa.array([0, 1], pa.int64()),
                "country": ["US", "US"],
                "bucket_src": pa.array([0, 1], pa.int64()),
            }
        )
    )
    flag = tmp_path / "paused"
    # ids 100..105: US rows land in the existing US partitions, DE rows in new ones.
    with paused_writer(root, flag, "before_manifest_commit", 100, 6, "US,DE") as p:
        try:
            wait_for_pause(p, flag)
            dn = DirectoryNamespace(root=str(root))
            dn.create_namespace(CreateNamespaceRequest(id=["scratch"]))
        finally:
            flag.unlink(missing_ok=True)
        _, err = p.communicate(timeout=120)
    assert p.returncode != 0
    assert "lance_partitioned.exceptions.PartialCommitError" in err, err
    assert 'existing partition(s), which are now visible: country="US"' in err, err
    reopened = lp.PartitionedNamespace.open(str(root))
    assert reopened.missing_columns
    # Visible: the first write, and the US rows whose bucket partition already existed.
    bucket = lp.kernels.bucket(pa.array(range(106), pa.int64()), 2).to_pylist()
    existing = {bucket[0], bucket[1]}
    us = [i for i in range(100, 106, 2) if bucket[i % 3] in existing]
    assert us, "the test needs at least one row in an existing partition"
    ids = sorted(reopened.to_table(columns=["id"])["id"].to_pylist())
    assert ids == [0, 1, *us]
