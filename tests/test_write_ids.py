"""Write ids and shared plans without Spark: a write committed under an id it already
recorded commits nothing, even staged again by other tasks (a stream's replayed micro-batch);
tasks that ask for one key share one plan, and cleanup() removes plans left behind."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import _native

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("k", pa.string())])
SPEC = lp.PartitionSpec([lp.PartitionField("k", source="k", transform=lp.Identity())])


def batch(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": pa.array(ids, pa.int64()), "k": [f"k{i % 3}" for i in ids]})


def staged(root: str, data: pa.Table) -> tuple[lp.DistributedWrite, bytes]:
    dw = lp.DistributedWrite(root)
    return dw, dw.stage(data)


def test_a_write_id_commits_once_whoever_staged_it(tmp_path: Path) -> None:
    root = str(tmp_path / "ns")
    lp.PartitionedNamespace.create(root, SCHEMA, SPEC)
    data = batch(0, 30)
    first, m1 = staged(root, data)
    # The "replay": another plan, other tasks, other files, the same write id.
    second, m2 = staged(root, data)
    assert first.committed("stream:q:0") is None
    r1 = first.commit([m1], write_id="stream:q:0")
    assert not r1.already_committed
    assert r1.rows == 30
    r2 = second.commit([m2], write_id="stream:q:0")
    assert r2.already_committed
    assert r2.manifest_version == r1.manifest_version
    found = second.committed("stream:q:0")
    assert found is not None
    assert found.already_committed
    ns = lp.PartitionedNamespace.open(root)
    assert sorted(ns.to_table()["id"].to_pylist()) == list(range(30))
    # Another id is another write.
    third, m3 = staged(root, batch(30, 5))
    assert not third.commit([m3], write_id="stream:q:1").already_committed
    ns.refresh()
    assert ns.to_table().num_rows == 35


def test_write_ids_need_strong_mode(tmp_path: Path) -> None:
    root = str(tmp_path / "weak")
    lp.PartitionedNamespace.create(root, SCHEMA, SPEC, transaction_mode="weak")
    dw, msg = staged(root, batch(0, 3))
    with pytest.raises(lp.InvalidArgumentError, match="strong mode"):
        dw.committed("w")
    with pytest.raises(lp.InvalidArgumentError, match="strong mode"):
        dw.commit([msg], write_id="w")
    assert lp.PartitionedNamespace.open(root).to_table().num_rows == 0


def test_oversized_write_ids_are_refused_before_anything_commits(tmp_path: Path) -> None:
    root = str(tmp_path / "ns")
    lp.PartitionedNamespace.create(root, SCHEMA, SPEC)
    dw, msg = staged(root, batch(0, 3))
    for bad in ("", "x" * 513):
        with pytest.raises(lp.InvalidArgumentError, match="1 to 512 bytes"):
            dw.commit([msg], write_id=bad)
    assert lp.PartitionedNamespace.open(root).to_table().num_rows == 0


def test_tasks_asking_for_one_key_share_one_plan(tmp_path: Path) -> None:
    root = str(tmp_path / "ns")
    ns = lp.PartitionedNamespace.create(root, SCHEMA, SPEC)
    a = lp.DistributedWrite.shared(root, "append", "run-1-0")
    ns.write(batch(100, 3))  # the manifest moves on between the tasks
    b = lp.DistributedWrite.shared(root, "append", "run-1-0")
    assert (a.nonce, a.manifest_version) == (b.nonce, b.manifest_version)
    # The tasks' messages are one write: they commit together.
    result = b.commit([a.stage(batch(0, 10)), b.stage(batch(10, 10))], write_id="s:0")
    assert result.rows == 20
    a.remove_shared_plan("run-1-0")
    c = lp.DistributedWrite.shared(root, "append", "run-1-0")
    assert c.nonce != a.nonce
    assert c.manifest_version == result.manifest_version
    ns.refresh()
    assert sorted(ns.to_table()["id"].to_pylist()) == [*range(20), 100, 101, 102]


@pytest.mark.parametrize("key", ["", "../x", ".hidden", "a/b", "k" * 201, "sp ace"])
def test_shared_plan_keys_are_checked(tmp_path: Path, key: str) -> None:
    root = str(tmp_path / "ns")
    lp.PartitionedNamespace.create(root, SCHEMA, SPEC)
    with pytest.raises(lp.InvalidArgumentError, match="shared plan key"):
        lp.DistributedWrite.shared(root, "append", key)


def test_cleanup_removes_shared_plans_left_behind(tmp_path: Path) -> None:
    root = str(tmp_path / "ns")
    ns = lp.PartitionedNamespace.create(root, SCHEMA, SPEC)
    lp.DistributedWrite.shared(root, "append", "dead-run-7")
    plans = Path(root) / "_lance_partitioned" / "plans"
    assert [p.name for p in plans.iterdir()] == ["dead-run-7"]
    dry = ns.cleanup(older_than=dt.timedelta(0), dry_run=True, retention_check=False)
    assert dry.files >= 1
    assert [p.name for p in plans.iterdir()] == ["dead-run-7"]
    ns.cleanup(older_than=dt.timedelta(0), retention_check=False)
    assert list(plans.iterdir()) == []
    # A snapshot lookup of an id nobody recorded.
    assert not _native.Namespace(root, None).snapshot().has_write("stream:q:0")
