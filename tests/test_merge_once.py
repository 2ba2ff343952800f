"""Row-level changes under a write id happen once (issue 35: update mode and streaming CDC):
a merge, an update or a change feed whose id the manifest records changes nothing when run
again, whether the first run finished, raced it in another process, or was killed after its
commit point. The changes are increments (not idempotent), so a second application shows as
a wrong count; the expected counts are the number of distinct ids run."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import lance
import pyarrow as pa
import pytest
from races import python_child, wait_for_pause

import lance_partitioned as lp

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("qty", pa.int64())])


def create(root: Path, mode: str = "strong") -> lp.PartitionedNamespace:
    spec = lp.PartitionSpec([lp.PartitionField("b", source="id", transform=lp.Bucket(4))])
    ns = lp.PartitionedNamespace.create(str(root), SCHEMA, spec, transaction_mode=mode)  # type: ignore[arg-type]
    ns.write(pa.table({"id": pa.array(range(20), pa.int64()), "qty": [0] * 20}, schema=SCHEMA))
    return ns


INCREMENT = """
import sys, pyarrow as pa, lance_partitioned as lp
ns = lp.PartitionedNamespace.open(sys.argv[1])
src = pa.table({"id": pa.array(range(20), pa.int64()), "qty": pa.array([1] * 20)})
for wid in sys.argv[2:]:
    res = (
        ns.merge_insert("id")
        .when_matched_update({"qty": "target.qty + source.qty"})
        .execute(src, write_id=wid, max_attempts=1000)
    )
    print(wid, res.already_committed, flush=True)
"""


def increment(ns: lp.PartitionedNamespace, write_id: str | None) -> lp.MergeResult:
    src = pa.table({"id": pa.array(range(20), pa.int64()), "qty": pa.array([1] * 20)})
    return (
        ns.merge_insert("id")
        .when_matched_update({"qty": "target.qty + source.qty"})
        .execute(src, write_id=write_id)
    )


def qty(root: Path) -> list[int]:
    """Every row's qty, read by pylance from the leaves the latest manifest names."""
    manifest = lance.dataset(str(root / "__manifest")).to_table().to_pylist()
    out = []
    for r in manifest:
        if r["object_type"] == "table" and str(r["object_id"]).endswith("$dataset"):
            ds = lance.dataset(str(root / r["location"]), version=r["read_version"])
            out += ds.to_table(columns=["qty"])["qty"].to_pylist()
    return out


def test_a_merge_run_again_under_its_id_changes_nothing(tmp_path: Path) -> None:
    ns = create(tmp_path / "ns")
    first = increment(ns, "job:1")
    assert (first.updated, first.already_committed) == (20, False)
    other = increment(ns, None)  # a change in between: the replay must not undo or redo it
    again = increment(ns, "job:1")
    assert again.already_committed
    assert again.updated == 0
    assert again.manifest_version == other.manifest_version == ns.version
    assert qty(tmp_path / "ns") == [2] * 20
    # Updates and change feeds take ids the same way.
    u = ns.update({"qty": "qty + 10"}, write_id="job:2")
    assert not u.already_committed
    assert ns.update({"qty": "qty + 10"}, write_id="job:2").already_committed
    feed = pa.table(
        {"id": pa.array([0, 1], pa.int64()), "qty": [100, 100], "seq": [1, 1], "op": ["U", "D"]}
    )
    assert not ns.apply_changes(feed, "id", "seq", write_id="job:3").already_committed
    assert ns.apply_changes(feed, "id", "seq", write_id="job:3").already_committed
    assert sorted(qty(tmp_path / "ns")) == sorted([100] + [12] * 18)


def test_write_ids_of_changes_need_strong_mode_and_a_string(tmp_path: Path) -> None:
    ns = create(tmp_path / "ns", "weak")
    with pytest.raises(lp.InvalidArgumentError, match="strong mode"):
        increment(ns, "job:1")
    with pytest.raises(lp.ArgumentTypeError, match="write_id"):
        increment(ns, 7)  # type: ignore[arg-type]
    with pytest.raises(lp.InvalidArgumentError):
        increment(create(tmp_path / "strong"), "x" * 600)
    assert qty(tmp_path / "ns") == [0] * 20


def test_processes_racing_one_id_apply_it_once(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    create(root)
    ids = [f"race:{i}" for i in range(6)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", INCREMENT, str(root), *ids],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    applied = 0
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        applied += sum(1 for line in out.splitlines() if line.endswith("False"))
    assert applied == len(ids)
    assert qty(root) == [len(ids)] * 20


@pytest.mark.parametrize("point", ["before_manifest_apply", "after_manifest_commit"])
def test_a_merge_killed_around_its_commit_and_run_again_applies_once(
    tmp_path: Path, point: str
) -> None:
    root = tmp_path / "ns"
    create(root)
    flag = tmp_path / "paused"
    p = python_child(["-c", textwrap.dedent(INCREMENT), str(root), "once"], f"{point}:{flag}")
    wait_for_pause(p, flag)
    p.send_signal(signal.SIGKILL)
    p.communicate()
    committed = qty(root) == [1] * 20
    assert committed == (point == "after_manifest_commit")
    # The run after the restart: applies it when the killed run did not, else nothing.
    out = subprocess.run(
        [sys.executable, "-c", INCREMENT, str(root), "once"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.split() == ["once", json.dumps(committed).title()]
    assert qty(root) == [1] * 20
