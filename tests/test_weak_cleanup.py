"""Weak mode against a cleanup with no grace period (retention_check=False): a weak-mode leaf
commit is visible at once, before the write's manifest commit and its cleanup fence check. A
cleanup that listed the leaf's files just before such a commit must not leave the partition
naming files it removed: the cleanup skips a leaf that moved since its listing, and when the
commit lands in the instant after that re-check the write takes its leaf commits back and fails
typed. Real processes stop at test pause points; expected ids come from the input."""

from __future__ import annotations

import datetime as dt
import subprocess
import time
from pathlib import Path

from races import check_consistent, make_ns, python_child, resume, rows, wait_for_pause, writer

import lance_partitioned as lp

CLEANUP = """
import sys, datetime as dt, lance_partitioned as lp
ns = lp.PartitionedNamespace.open(sys.argv[1])
r = ns.cleanup(older_than=dt.timedelta(0), retention_check=False)
print(len(r.stale_files))
"""


def cleanup(root: Path, point: str, flag: Path) -> subprocess.Popen[str]:
    return python_child(["-c", CLEANUP, str(root)], f"{point}:{flag}")


def finish(p: subprocess.Popen[str], flag: Path) -> tuple[int, str, str]:
    """Lets `p` go on past every later pause at `flag` and waits for it."""
    resume(p, flag)
    out, err = p.communicate(timeout=300)
    assert "panic" not in err.lower(), err
    return p.returncode, out, err


def race(tmp_path: Path, cleanup_point: str) -> tuple[int, str, str, set[int]]:
    """A weak-mode write staged (paused) while a cleanup lists its files and stops at
    `cleanup_point`; the write then commits its leaves and stops before its manifest commit;
    the cleanup finishes, then the write. Returns the write's exit code, the cleanup's output,
    the write's stderr and the ids written before."""
    root = tmp_path / "ns"
    ns = make_ns(root, transaction_mode="weak")
    ns.write(rows(0, 60))
    staged, leaves, listed = tmp_path / "staged", tmp_path / "leaves", tmp_path / "listed"
    w = writer(
        root,
        1000,
        60,
        1,
        "US,FR,DE",
        pause=f"after_fragments:{staged},before_manifest_commit:{leaves}",
    )
    wait_for_pause(w, staged)
    time.sleep(1.1)  # the staged files are older than the cleanup's cut-off (whole seconds)
    c = cleanup(root, cleanup_point, listed)
    wait_for_pause(c, listed)
    staged.unlink()
    wait_for_pause(w, leaves)  # the weak leaf commits landed
    _, out, _ = finish(c, listed)
    code, _, err = finish(w, leaves)
    return code, out, err, set(range(60))


def test_cleanup_skips_a_leaf_a_weak_commit_moved_since_its_listing(tmp_path: Path) -> None:
    code, out, err, before = race(tmp_path, "cleanup_listed")
    assert code == 0, err
    assert int(out.strip()) == 0, "the cleanup removed files of a leaf that moved"
    check_consistent(
        lp.PartitionedNamespace.open(str(tmp_path / "ns")), before | set(range(1000, 1060))
    )


def test_a_weak_write_whose_files_cleanup_removed_takes_its_leaf_commits_back(
    tmp_path: Path,
) -> None:
    code, out, err, before = race(tmp_path, "cleanup_before_data_files")
    assert int(out.strip()) > 0, "the cleanup removed nothing of the write"
    assert code != 0
    assert "CommitConflictError" in err, err
    assert "PartialCommitError" not in err, err
    ns = lp.PartitionedNamespace.open(str(tmp_path / "ns"))
    check_consistent(ns, before)  # every partition reads; none of the write's rows stayed
    ns.write(rows(2000, 30))
    check_consistent(ns, before | set(range(2000, 2030)))
    assert ns.cleanup(older_than=dt.timedelta(0), retention_check=False) is not None
    check_consistent(ns, before | set(range(2000, 2030)))
