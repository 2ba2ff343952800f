"""`expire()`: old manifest versions go, then the leaf versions and files only they read;
every kept version still reads what it read, readers of kept snapshots are unaffected, and
writers in other processes lose nothing."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from races import check_consistent, make_ns, race_writers, rows

import lance_partitioned as lp


def listing(root: Path) -> dict[str, int]:
    return {
        str(Path(d, f).relative_to(root)): os.path.getsize(Path(d, f))
        for d, _, fs in os.walk(root)
        for f in fs
    }


def history(ns: lp.PartitionedNamespace) -> dict[int, list[int]]:
    """Every manifest version of ``ns`` and the ids it reads, after writes, a delete, a
    compaction and a dropped partition."""
    seen = {}
    for k in range(3):
        ns.write(rows(k * 100, 90))
        seen[ns.version] = sorted(ns.to_table(columns=["id"])["id"].to_pylist())
    ns.delete("id % 7 = 0")
    seen[ns.version] = sorted(ns.to_table(columns=["id"])["id"].to_pylist())
    ns.optimize()
    seen[ns.version] = sorted(ns.to_table(columns=["id"])["id"].to_pylist())
    ns.delete("country = 'DE'")  # drops the DE partitions whole
    seen[ns.version] = sorted(ns.to_table(columns=["id"])["id"].to_pylist())
    ns.write(rows(1000, 30, "US,FR"))
    seen[ns.version] = sorted(ns.to_table(columns=["id"])["id"].to_pylist())
    return seen


def reads(ns: lp.PartitionedNamespace, version: int) -> list[int]:
    return sorted(ns.snapshot(version).to_table(columns=["id"])["id"].to_pylist())


def test_kept_versions_read_as_before_and_expired_ones_are_gone(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = make_ns(root)
    seen = history(ns)
    before = listing(root)
    latest = ns.version
    planned = ns.expire(retain_versions=3, dry_run=True)
    assert listing(root) == before, "a dry run removes nothing"
    done = ns.expire(retain_versions=3)
    assert done.manifest_versions == planned.manifest_versions
    assert (done.leaf_versions, done.leaf_tables, done.files, done.bytes) == (
        planned.leaf_versions,
        planned.leaf_tables,
        planned.files,
        planned.bytes,
    )
    kept = [v for v in range(1, latest + 1) if v > latest - 3]
    assert done.manifest_versions == [v for v in range(1, latest + 1) if v not in kept]
    assert done.leaf_versions > 0
    assert done.files > 0, "the files the compaction replaced"
    assert done.leaf_tables == 0, "the dropped DE partitions are still read by a kept version"
    after = listing(root)
    assert sum(after.values()) < sum(before.values())
    for v in kept:
        assert reads(ns, v) == seen[v]
    for v in done.manifest_versions:
        with pytest.raises(lp.NamespaceNotFoundError):
            ns.snapshot(v)
    # Again: nothing more to remove under the same rule.
    assert ns.expire(retain_versions=3).manifest_versions == []


def test_dropped_partitions_go_whole(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = make_ns(root)
    ns.write(rows(0, 60))
    de = [p["location"] for p in ns.partitions("country = 'DE'").to_pylist()]
    assert de
    ns.delete("country = 'DE'")
    assert all((root / loc).is_dir() for loc in de), "old versions still read them"
    done = ns.expire(retain_versions=1)
    assert done.leaf_tables == len(de)
    assert not any((root / loc).exists() for loc in de)
    check_consistent(ns, {i for i in range(60) if i % 3 != 2})


def test_older_than(tmp_path: Path) -> None:
    ns = make_ns(tmp_path / "ns")
    seen = history(ns)
    assert ns.expire(older_than=dt.timedelta(hours=1)).manifest_versions == []
    assert ns.expire(older_than=3600.0).manifest_versions == []
    latest = ns.version
    done = ns.expire(older_than=0)
    assert done.manifest_versions == list(range(1, latest))
    assert reads(ns, ns.version) == seen[ns.version]


def test_reader_holding_a_kept_snapshot_keeps_reading(tmp_path: Path) -> None:
    ns = make_ns(tmp_path / "ns")
    seen = history(ns)
    v = sorted(seen)[-2]
    held = lp.PartitionedNamespace.open(str(tmp_path / "ns")).snapshot(v)
    old = sorted(seen)[3]  # after the row delete: leaf versions the compaction replaced
    doomed = lp.PartitionedNamespace.open(str(tmp_path / "ns")).snapshot(old)
    ns.expire(retain_versions=2)
    assert sorted(held.to_table(columns=["id"])["id"].to_pylist()) == seen[v]
    # A snapshot of an expired version fails typed (its leaf versions are gone), never with a
    # wrong answer.
    with pytest.raises(lp.NamespaceNotFoundError, match="removed"):
        doomed.to_table(columns=["id"])


def test_weak_mode(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = make_ns(root, transaction_mode="weak")
    for k in range(3):
        ns.write(rows(k * 100, 50))
    ns.optimize()
    before = sum(listing(root).values())
    done = ns.expire(older_than=0)
    assert done.leaf_versions > 0
    assert sum(listing(root).values()) < before
    check_consistent(ns, {i for k in range(3) for i in range(k * 100, k * 100 + 50)})


def test_bad_arguments(tmp_path: Path) -> None:
    ns = make_ns(tmp_path / "ns")
    ns.write(rows(0, 10))
    for kwargs in (
        {"retain_versions": 0},
        {"older_than": -1.0},
        {"older_than": "1d"},
        {"older_than": float("inf")},
        {"retain_versions": True},
    ):
        with pytest.raises(lp.InvalidArgumentError):
            ns.expire(**kwargs)  # type: ignore[arg-type]


@pytest.mark.slow
def test_expire_and_optimize_racing_writers_in_other_processes(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = make_ns(root)
    ns.write(rows(0, 100))

    def optimize_and_expire() -> int:
        ns.optimize()
        return len(ns.expire(retain_versions=1).manifest_versions)

    expired, written = race_writers(root, 40, 10, optimize_and_expire)
    assert expired > 0
    ns.refresh()
    expected = set(range(100)) | written
    check_consistent(ns, expected)
    ns.expire(retain_versions=1)
    check_consistent(ns, expected)


U64_MAX = 2**64 - 1


def _versions(leaf: Path) -> list[int]:
    """The leaf's version numbers from its version manifests' names (Lance's naming:
    ``<u64::MAX - v>.manifest`` on the main line, ``d<v>.manifest`` detached)."""
    out = []
    for name in os.listdir(leaf / "_versions"):
        stem = name.removesuffix(".manifest")
        out.append(int(stem[1:]) if stem.startswith("d") else U64_MAX - int(stem))
    return out


def _named_by(leaf: Path, versions: list[int]) -> tuple[set[str], set[str]]:
    """The transaction files and index directories ``versions`` of the leaf name, read with
    pylance."""
    import lance

    txs: set[str] = set()
    indices: set[str] = set()
    for v in versions:
        ds = lance.dataset(str(leaf), version=v)
        tx = ds.read_transaction(v)
        if tx is not None:
            txs.add(f"{tx.read_version}-{tx.uuid}.txn")
        indices |= {str(seg.uuid) for index in ds.describe_indices() for seg in index.segments}
    return txs, indices


def test_expire_removes_the_transaction_and_index_files_only_expired_leaf_versions_name(
    tmp_path: Path,
) -> None:
    """A partition a stream appends to gains a transaction file per commit (and an index
    segment per append or rebuild); once its versions expire, those go with them."""
    root = tmp_path / "ns"
    ns = make_ns(root)
    ns.write(rows(0, 40, "US"))
    ns.create_index("id", "btree")
    expected = list(range(40))
    for k in range(24):
        ns.write(rows(1000 + k * 10, 10, "US"))
        expected += range(1000 + k * 10, 1010 + k * 10)
        if k % 8 == 7:
            ns.optimize()
    (leaf,) = [Path(root, loc) for loc in ns.partitions()["location"].to_pylist()]
    before_txs = set(os.listdir(leaf / "_transactions"))
    before_indices = set(os.listdir(leaf / "_indices"))
    assert len(before_txs) > 24, "a transaction file per leaf commit"
    done = ns.expire(retain_versions=2)
    assert done.leaf_versions > 0
    kept_txs, kept_indices = _named_by(leaf, _versions(leaf))
    txs = set(os.listdir(leaf / "_transactions"))
    indices = set(os.listdir(leaf / "_indices"))
    assert txs == kept_txs, "exactly the transaction files kept versions name"
    assert len(txs) <= len(_versions(leaf)) < len(before_txs) // 4
    assert indices == kept_indices, "exactly the index segments kept versions have"
    assert indices < before_indices
    # What is kept still reads, through the index, as pyarrow filters the rows written.
    got = ns.to_table(filter="id >= 1100", columns=["id"])["id"].to_pylist()
    assert sorted(got) == [i for i in expected if i >= 1100]
    assert sorted(ns.to_table(columns=["id"])["id"].to_pylist()) == sorted(expected)
    assert ns.expire(retain_versions=2).leaf_versions == 0
