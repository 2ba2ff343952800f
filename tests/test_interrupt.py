"""Ctrl-C during a change: before the commit point nothing of it becomes visible and the
KeyboardInterrupt says so; after it the change completes and the KeyboardInterrupt says that it
committed (it used to arrive after a committed write as a bare KeyboardInterrupt, which reads
as a failure). Real processes receive a real SIGINT at a test pause point; the expected rows
come from the input (pyarrow), never from the namespace."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from races import make_ns, python_child, rows, wait_for_pause

import lance_partitioned as lp

# A child appending 100 rows from id 1000 to argv[1] (argv[2]: this directory); prints what
# became of it.
APPEND = """
import sys
sys.path.insert(0, sys.argv[2])
from races import rows
import lance_partitioned as lp
ns = lp.PartitionedNamespace.open(sys.argv[1])
try:
    ns.write(rows(1000, 100))
    print("COMMITTED")
except KeyboardInterrupt as e:
    print("INTERRUPTED", e)
"""


def interrupted(args: list[str], point: str, flag: Path) -> str:
    """Runs `python -c *args` stopping at the test pause `point`, sends it SIGINT there, lets
    it go on and returns what it printed."""
    p = python_child(["-c", *args], f"{point}:{flag}")
    wait_for_pause(p, flag)
    p.send_signal(signal.SIGINT)
    flag.unlink()
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert "panic" not in err.lower(), err
    return out.strip()


def interrupted_append(root: Path, point: str, flag: Path) -> str:
    return interrupted([APPEND, str(root), str(Path(__file__).parent)], point, flag)


def ids(root: Path) -> list[int]:
    ns = lp.PartitionedNamespace.open(str(root))
    return sorted(ns.to_table(columns=["id"])["id"].to_pylist())


@pytest.mark.parametrize("mode", ["strong", "weak"])
@pytest.mark.parametrize("point", ["after_fragments", "before_manifest_commit"])
def test_ctrl_c_before_the_commit_point_leaves_nothing_visible(
    tmp_path: Path, mode: str, point: str
) -> None:
    root = tmp_path / "ns"
    ns = make_ns(root, transaction_mode=mode)
    before = rows(0, 30)
    ns.write(before)
    version = ns.version
    if mode == "weak" and point == "before_manifest_commit":
        point = "after_fragments"  # weak leaf commits are visible: stop before them
    out = interrupted_append(root, point, tmp_path / "flag")
    assert out.startswith("INTERRUPTED"), out
    assert "nothing of it is visible" in out, out
    assert ids(root) == sorted(before["id"].to_pylist())
    assert lp.PartitionedNamespace.open(str(root)).version == version


def test_ctrl_c_after_the_commit_point_completes_and_says_it_committed(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = make_ns(root)
    before = rows(0, 30)
    ns.write(before)
    out = interrupted_append(root, "after_commit_point", tmp_path / "flag")
    assert out.startswith("INTERRUPTED"), out
    assert "committed and its changes are visible" in out, out
    expected = sorted(before["id"].to_pylist() + rows(1000, 100)["id"].to_pylist())
    assert ids(root) == expected


def test_ctrl_c_before_a_schema_change_commits_leaves_the_schema(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    make_ns(root)
    flag = tmp_path / "flag"
    code = (
        "import sys, pyarrow as pa, lance_partitioned as lp\n"
        "ns = lp.PartitionedNamespace.open(sys.argv[1])\n"
        "try:\n"
        "    ns.add_columns([pa.field('extra', pa.int64())]); print('COMMITTED')\n"
        "except KeyboardInterrupt as e:\n"
        "    print('INTERRUPTED', e)\n"
    )
    out = interrupted([code, str(root)], "before_root_commit", flag)
    assert out.startswith("INTERRUPTED"), out
    assert "nothing of it is visible" in out, out
    assert "extra" not in lp.PartitionedNamespace.open(str(root)).schema.names
