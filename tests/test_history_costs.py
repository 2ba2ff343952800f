"""What a long history costs (issue 35, section 2): the `table_version` rows a partition keeps,
stream write ids that outlive them, writers rebasing over versions the manifest no longer
records, partitions that micro-batches fragment compacted after the write, and tags.

Manifest rows and fragment counts are read with pylance; expected rows come from the inputs."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest
from races import python_child, resume, wait_for_pause

import lance_partitioned as lp

KEPT = "lance_partitioned.manifest.versions_kept"
EXTRA = "lance_partitioned.partition.max_extra_fragments"
INTERVAL = "lance_partitioned.expire.interval"
OLDER = "lance_partitioned.expire.older_than_seconds"
RETAIN = "lance_partitioned.expire.retain_versions"


def make(root: Path, **props: str) -> lp.PartitionedNamespace:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.int64())])
    spec = lp.PartitionSpec([lp.PartitionField("p", source="p", transform=lp.Identity())])
    return lp.PartitionedNamespace.create(str(root), schema=schema, spec=spec, properties=props)


def batch(start: int, n: int, p: int = 0) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "p": [p] * n})


def manifest_rows(root: Path, version: int | None = None) -> list[dict[str, object]]:
    ds = lance.dataset(str(root / "__manifest"), version=version)
    cols = ["object_id", "object_type", "location", "read_version"]
    return ds.to_table(columns=cols).to_pylist()


def version_rows(root: Path, p: int) -> list[str]:
    """The `table_version` rows of partition ``p`` (identity value in its object id)."""
    table = leaf_row(root, p)["object_id"]
    return [
        r["object_id"]
        for r in manifest_rows(root)
        if r["object_type"] == "table_version" and str(r["object_id"]).startswith(f"{table}$")
    ]


def leaf_row(root: Path, p: int) -> dict[str, object]:
    leaves = [
        r
        for r in manifest_rows(root)
        if r["object_type"] == "table" and str(r["object_id"]).endswith("$dataset")
    ]
    ns = lp.PartitionedNamespace.open(str(root))
    parts = ns.partitions(f"p = {p}", with_rows=False)
    (oid,) = parts["object_id"].to_pylist()
    (row,) = [r for r in leaves if r["object_id"] == oid]
    return row


def leaf_fragments(root: Path, p: int) -> int:
    row = leaf_row(root, p)
    ds = lance.dataset(str(root / str(row["location"])), version=row["read_version"])
    return len(ds.get_fragments())


def ids(t: pa.Table) -> list[int]:
    return sorted(t["id"].to_pylist())


def test_a_partition_keeps_a_bounded_number_of_version_rows(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = make(root, **{KEPT: "4", EXTRA: "0"})
    written = [batch(0, 5)]
    ns.write(written[0])
    first_version = ns.version
    counts = []
    for i in range(1, 40):
        written.append(batch(100 * i, 5))
        ns.write(written[-1])
        counts.append(len(version_rows(root, 0)))
    # Trimmed back to 4 once past 8: never more than 8, and trimming did happen.
    assert max(counts) <= 8, counts
    assert counts[-1] < 39, counts
    assert min(counts[10:]) >= 4, counts
    assert ids(ns.to_table()) == ids(pa.concat_tables(written))
    # Older manifest versions keep their own rows: as_of reads are unchanged.
    assert ids(ns.to_table(as_of=first_version)) == ids(written[0])
    assert ids(ns.to_table(as_of=first_version + 5)) == ids(pa.concat_tables(written[:6]))
    assert len(ns.history()) == ns.version


def test_zero_keeps_every_version_row(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = make(root, **{KEPT: "0", EXTRA: "0"})
    for i in range(20):
        ns.write(batch(10 * i, 2))
    # One row per version of the leaf: its creation and 19 appends.
    assert len(version_rows(root, 0)) == 20


def test_stream_batches_stay_recognised_after_their_rows_are_trimmed(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = make(root, **{KEPT: "2", EXTRA: "0"})
    ns.write(batch(0, 1))
    for b in range(30):
        dw = ns.distributed_write()
        dw.commit([dw.stage(batch(1000 + 10 * b, 10))], write_id=f"stream:q1:{b}")
    other = ns.distributed_write()
    other.commit([other.stage(batch(5000, 3))], write_id="job-1")
    # Batch 0's rows are long gone from the manifest, its stream's newest batch stands for it.
    assert len(version_rows(root, 0)) <= 4
    replay = ns.distributed_write()
    assert replay.committed("stream:q1:0") is not None
    res = replay.commit([replay.stage(batch(1000, 10))], write_id="stream:q1:0")
    assert res.already_committed
    assert replay.committed("stream:q1:30") is None
    assert replay.committed("stream:q2:0") is None
    assert replay.committed("job-1") is not None
    expected = [0, *range(1000, 1300), 5000, 5001, 5002]
    assert ids(lp.PartitionedNamespace.open(str(root)).to_table()) == expected


def in_commit_order(root: Path, object_ids: list[str]) -> list[str]:
    """``object_ids`` ordered by the first manifest version holding each (read by pylance)."""
    first: dict[str, int] = {}
    for v in lance.dataset(str(root / "__manifest")).versions():
        for r in manifest_rows(root, v["version"]):
            first.setdefault(str(r["object_id"]), v["version"])
    return sorted(object_ids, key=lambda o: first[o])


def test_optimize_trims_the_version_rows_commits_leave(tmp_path: Path) -> None:
    """A partition no commit touches any more keeps up to twice the limit; optimize() takes
    it down to the limit, keeping its newest versions and its stream's newest batch."""
    root = tmp_path / "ns"
    ns = make(root, **{KEPT: "4", EXTRA: "0"})
    written = [batch(0, 3)]
    ns.write(written[-1])
    dw = ns.distributed_write()
    written.append(batch(100, 3))
    dw.commit([dw.stage(written[-1])], write_id="stream:q:0")
    for i in range(2, 7):
        written.append(batch(100 * i, 3))
        ns.write(written[-1])
    ns.write(batch(9000, 1, p=1))
    before = in_commit_order(root, version_rows(root, 0))
    assert len(before) == 7  # under twice the limit: no commit trimmed them
    stream_row = before[1]
    want = [stream_row, *before[-4:]]
    version = ns.version

    dry = ns.optimize(min_files=1000, dry_run=True)
    assert dry.version_rows_removed == len(before) - len(want)
    assert ns.version == version

    res = ns.optimize(min_files=1000)
    assert res.partitions == 0
    assert res.version_rows_removed == len(before) - len(want)
    assert in_commit_order(root, version_rows(root, 0)) == want
    assert res.manifest_version == ns.version == version + 1
    # Nothing a reader sees changed, the stream's batch is still recognised, writes go on.
    assert ids(ns.to_table("p = 0")) == ids(pa.concat_tables(written))
    assert ids(ns.to_table("p = 0", as_of=version)) == ids(pa.concat_tables(written))
    again = ns.distributed_write()
    assert again.commit([again.stage(batch(100, 3))], write_id="stream:q:0").already_committed
    # Nothing left to trim: no commit.
    assert ns.optimize(min_files=1000).version_rows_removed == 0
    assert ns.version == version + 1
    ns.write(batch(7000, 2))
    assert ids(ns.to_table("p = 0")) == ids(pa.concat_tables([*written, batch(7000, 2)]))


WRITE_ONE = (
    "import sys, pyarrow as pa, lance_partitioned as lp\n"
    "ns = lp.PartitionedNamespace.open(sys.argv[1])\n"
    "ns.write(pa.table({'id': pa.array([int(sys.argv[2])], pa.int64()), 'p': [0]}))\n"
)


def test_optimize_trimming_races_a_writer_of_the_partition(tmp_path: Path) -> None:
    """A writer planned on the untrimmed rows (its commit would trim them itself) pauses
    before its manifest commit; optimize() trims them; the writer re-plans and commits: no
    row lost, no version row lost twice, the partition within the limit."""
    root = tmp_path / "ns"
    ns = make(root, **{KEPT: "4", EXTRA: "0"})
    written = [batch(10 * i, 2) for i in range(8)]
    for t in written:
        ns.write(t)
    assert len(version_rows(root, 0)) == 8  # the next commit trims them
    flag = tmp_path / "paused"
    p = python_child(["-c", WRITE_ONE, str(root), "999"], f"before_manifest_commit:{flag}")
    try:
        wait_for_pause(p, flag)
        assert ns.optimize(min_files=1000).version_rows_removed == 4
        resume(p, flag)
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert ids(ns.to_table()) == ids(pa.concat_tables([*written, batch(999, 1)]))
    assert len(version_rows(root, 0)) == 5
    assert ns.optimize(min_files=1000).version_rows_removed == 1


def test_a_writer_lagging_behind_trimmed_versions_is_rebased(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = make(root, **{KEPT: "2", EXTRA: "0"})
    ns.write(batch(0, 1))
    slow = ns.distributed_write()
    staged = slow.stage(batch(9000, 4))
    for i in range(12):
        lp.PartitionedNamespace.open(str(root)).write(batch(10 * (i + 1), 2))
    # The slow writer's base version is no longer recorded in the manifest; the leaf's own
    # transactions show that only appends happened since.
    assert len(version_rows(root, 0)) <= 4
    res = slow.commit([staged])
    assert res.rebased == 1
    expected = [0, *[10 * (i + 1) + k for i in range(12) for k in range(2)], *range(9000, 9004)]
    assert ids(lp.PartitionedNamespace.open(str(root)).to_table()) == sorted(expected)


def test_a_writer_lagging_behind_a_trimmed_overwrite_conflicts(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = make(root, **{KEPT: "2", EXTRA: "0"})
    ns.write(batch(0, 1))
    slow = ns.distributed_write()
    staged = slow.stage(batch(9000, 4))
    other = lp.PartitionedNamespace.open(str(root))
    other.write(batch(50, 2), mode="overwrite")
    for i in range(10):
        other.write(batch(100 + i, 1))
    with pytest.raises(lp.CommitConflictError, match="overwrite"):
        slow.commit([staged])
    assert ids(lp.PartitionedNamespace.open(str(root)).to_table()) == [50, 51, *range(100, 110)]


def test_micro_batches_are_compacted_after_the_write(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = make(root, **{EXTRA: "4"})
    written, seen, compacted = [], [], 0
    for i in range(20):
        written.append(batch(10 * i, 10))
        res = ns.write(written[-1])
        compacted += res.compacted
        seen.append(leaf_fragments(root, 0))
    # One fragment needed for 200 rows, 4 extra allowed: a write leaving 6 compacts to 1.
    assert max(seen) <= 5, seen
    assert compacted >= 3, (compacted, seen)
    assert seen.count(1) >= 3, seen
    assert ids(ns.to_table()) == ids(pa.concat_tables(written))
    assert "compact" in ns.history()["operation"].to_pylist()
    # Distributed commits (the stream sink's) compact too.
    for i in range(6):
        dw = ns.distributed_write()
        res = dw.commit([dw.stage(batch(1000 + i, 1))], write_id=f"stream:s:{i}")
        compacted += res.compacted
        assert leaf_fragments(root, 0) <= 5


def leaf_files(root: Path, p: int) -> list[tuple[str, int]]:
    """(data file path, rows) of each fragment of partition ``p``, as pylance reads them."""
    row = leaf_row(root, p)
    ds = lance.dataset(str(root / str(row["location"])), version=row["read_version"])
    return [(f.data_files()[0].path, f.count_rows()) for f in ds.get_fragments()]


def test_the_compaction_after_writes_leaves_a_large_file_until_the_new_rows_are_half_of_it(
    tmp_path: Path,
) -> None:
    """A file of 1,000 rows, then micro-batches of 10 rows with 4 extra fragments allowed: the
    compactions after the writes merge the micro-batches among themselves, in tiers, and leave
    the large file's data file as it is while they hold fewer than 500 rows (a compaction of
    every small file would copy it each time, from the first); it is merged once a run of
    newer files holds at least half of it, before the new rows pass its size.
    ``optimize()`` still compacts everything into one file."""
    root = tmp_path / "ns"
    ns = make(root, **{EXTRA: "4"})
    written = [batch(0, 1000)]
    ns.write(written[0])
    ((big, _),) = leaf_files(root, 0)
    compactions, merged_at = 0, None
    for i in range(100):
        written.append(batch(10_000 + 10 * i, 10))
        compactions += ns.write(written[-1]).compacted
        files = leaf_files(root, 0)
        assert len(files) <= 6, files
        new_rows = 10 * (i + 1)
        if merged_at is None and big not in [path for path, _ in files]:
            merged_at = new_rows
        if merged_at is None:
            assert files[0] == (big, 1000), (new_rows, files)
    assert compactions >= 20, compactions
    assert merged_at is not None
    assert 500 <= merged_at <= 1000, merged_at
    assert ids(ns.to_table()) == ids(pa.concat_tables(written))
    ns.optimize()
    assert [rows for _, rows in leaf_files(root, 0)] == [2000]


def test_compaction_after_writes_can_be_turned_off(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = make(root, **{EXTRA: "0"})
    for i in range(40):
        assert ns.write(batch(10 * i, 1)).compacted == 0
    assert leaf_fragments(root, 0) == 40


@pytest.mark.parametrize(
    "props",
    [
        {KEPT: "many"},
        {EXTRA: "-1"},
        {"lance_partitioned.partition.target_rows_per_file": "0"},
        {"lance_partitioned.partition.target_rows_per_file": "1e6"},
        {INTERVAL: "1.5"},
        {RETAIN: "ten"},
        {OLDER: "0"},  # with no count rule: every version but the latest would go
    ],
)
def test_bad_policy_values_are_refused_with_a_typed_error(
    tmp_path: Path, props: dict[str, str]
) -> None:
    key = next(iter(props)).rsplit(".", 1)[-1]
    with pytest.raises(lp.InvalidArgumentError, match=key):
        make(tmp_path / "ns", **props)
    assert not (tmp_path / "ns" / "__manifest").exists()


def manifest_versions(root: Path) -> list[int]:
    return sorted(v["version"] for v in lance.dataset(str(root / "__manifest")).versions())


def leaf_versions(root: Path, p: int) -> int:
    return len(lance.dataset(str(root / str(leaf_row(root, p)["location"]))).versions())


def test_old_manifest_versions_expire_automatically(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = make(root, **{INTERVAL: "5", OLDER: "0", RETAIN: "3", EXTRA: "0"})
    written: list[pa.Table] = []
    expected: dict[int, list[int]] = {}  # manifest version -> the ids it reads
    expired, counts = 0, []
    for i in range(30):
        written.append(batch(10 * i, 10, p=i % 3))
        res = ns.write(written[-1])
        expected[res.manifest_version] = ids(pa.concat_tables(written))
        expired += res.expired
        assert res.maintenance_errors == [], res.maintenance_errors
        if i == 4:
            pinned = ns.tag("pinned", res.manifest_version)
        counts.append(len(manifest_versions(root)))
    # Kept: the last 3, the tag, and what the commits since the last expiry added (< 5),
    # plus the manifest's own compaction versions.
    assert expired > 0
    assert max(counts[10:]) <= 3 + 1 + 5 + 2, counts
    kept = manifest_versions(root)
    assert pinned in kept
    for v in kept:
        if v in expected:
            assert ids(ns.to_table(as_of=v)) == expected[v], v
    assert ids(ns.to_table(as_of="pinned")) == expected[pinned]
    gone = [v for v in expected if v not in kept]
    assert len(gone) >= 15, (gone, kept)
    for v in gone:
        with pytest.raises(lp.NamespaceNotFoundError):
            ns.to_table(as_of=v)
    # The leaf versions only expired manifest versions read went with them (10 appends each).
    assert all(leaf_versions(root, p) < 10 for p in range(3))
    assert ids(ns.to_table()) == ids(pa.concat_tables(written))


def test_row_changes_expire_too_and_zero_turns_it_off(tmp_path: Path) -> None:
    on = make(tmp_path / "on", **{INTERVAL: "4", OLDER: "0", RETAIN: "2"})
    off = make(tmp_path / "off", **{INTERVAL: "0", OLDER: "0", RETAIN: "2"})
    for ns in (on, off):
        ns.write(batch(0, 10))
        for i in range(12):
            ns.update({"id": f"id + {100 * (i + 1)}"}, where=f"id % 10 = {i % 10}")
    assert len(manifest_versions(tmp_path / "on")) <= 2 + 4 + 2
    assert len(manifest_versions(tmp_path / "off")) >= 14
    assert ids(on.to_table()) == ids(off.to_table())


def _version_manifest(leaf: Path, version: int) -> Path:
    """The file of the leaf's main-line version ``version`` (Lance's V1 or V2 naming)."""
    for f in (leaf / "_versions").glob("*.manifest"):
        if not f.stem.isdigit():
            continue  # a detached version
        stem = int(f.stem)
        if (2**64 - 1 - stem if stem > 2**63 else stem) == version:
            return f
    raise AssertionError(f"no manifest of version {version} in {leaf}")


def test_a_failed_expiry_after_a_commit_is_reported_and_the_commit_stands(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ns"
    ns = make(root, **{INTERVAL: "4", OLDER: "0", RETAIN: "2", EXTRA: "0"})
    written = [batch(10 * i, 10) for i in range(2)]
    for t in written:
        assert ns.write(t).maintenance_errors == []
    # Another tool garbles the leaf's first version, which only versions the expiry removes
    # read: the expiry cannot tell which files that version names.
    _version_manifest(root / str(leaf_row(root, 0)["location"]), 1).write_bytes(b"garbled")
    failed = []
    for i in range(2, 10):
        written.append(batch(10 * i, 10))
        res = ns.write(written[-1])
        assert res.expired == 0, res
        failed += res.maintenance_errors
    assert failed, "the due expiries reported nothing"
    assert all(e.startswith("expiry: ") for e in failed), failed
    # Every commit stands, and so does every manifest version: the expiry removed nothing.
    assert ids(ns.to_table()) == ids(pa.concat_tables(written))
    assert len(manifest_versions(root)) >= 1 + len(written)
    with pytest.raises(lp.LancePartitionedError):
        ns.expire(retain_versions=2)


def test_the_expiry_is_not_missed_when_a_manifest_compaction_reaches_the_interval(
    tmp_path: Path,
) -> None:
    # Every few commits compact `__manifest` (two versions no write reports): some land on a
    # multiple of the interval, which the commit after them must not step over.
    root = tmp_path / "ns"
    props = {
        INTERVAL: "4",
        OLDER: "0",
        RETAIN: "2",
        "lance_partitioned.manifest.max_fragments": "3",
    }
    ns = make(root, **props)
    written, counts, compactions = [], [], 0
    for i in range(60):
        written.append(batch(10 * i, 10, p=i % 2))
        before = ns.version
        res = ns.write(written[-1])
        assert res.maintenance_errors == [], res.maintenance_errors
        counts.append(len(manifest_versions(root)))
        compactions += ns.version > res.manifest_version or res.manifest_version > before + 1
    assert compactions >= 10, compactions
    # Kept: the last 2 versions, what the commits since the last expiry added (up to 4, and the
    # 2 of a compaction after the one that reached the interval).
    assert max(counts[10:]) <= 2 + 4 + 2, counts
    assert ids(ns.to_table()) == ids(pa.concat_tables(written))
