"""Compaction of `__manifest`'s own fragments after a commit: the manifest stays a few
fragments long however many commits it has seen, every row and every retained version reads as
before, and writers in other processes racing the compactions lose nothing.

Expected rows come from the inputs (pyarrow), fragment counts from pylance."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from races import WRITER, check_consistent, make_ns, rows

import lance_partitioned as lp

KEY = "lance_partitioned.manifest.max_fragments"


def fragments(root: Path) -> int:
    return len(lance.dataset(str(root / "__manifest")).get_fragments())


def ids_of(table: pa.Table) -> list[int]:
    return sorted(table["id"].to_pylist())


def test_many_commits_keep_the_manifest_within_its_limit(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = make_ns(root, properties={KEY: "4"})
    written: list[pa.Table] = []
    seen = []
    for i in range(30):
        written.append(rows(100 * i, 10))
        ns.write(written[-1])
        seen.append(fragments(root))
    assert max(seen) <= 4, seen
    # Without the compaction every commit adds one: it ran, more than once.
    assert seen.count(1) >= 3, seen
    expected = pa.concat_tables(written)
    got = ns.to_table()
    assert ids_of(got) == ids_of(expected)
    us = ns.to_table("country = 'US'", columns=["id"])
    assert ids_of(us) == ids_of(expected.filter(pc.equal(expected["country"], "US")))
    ops = lp.PartitionedNamespace.open(str(root)).history()["operation"].to_pylist()
    # One line per write (the first creates the partitions), and the compactions named as such.
    assert ops.count("append") == 30, ops
    assert ops.count("compact_manifest") >= 3, ops
    assert "commit" not in ops, ops


def manifest_fragments(root: Path) -> list[tuple[int, int]]:
    """(id, rows in the file) of each fragment of the manifest, as pylance reads them."""
    ds = lance.dataset(str(root / "__manifest"))
    return [(f.fragment_id, f.metadata.physical_rows) for f in ds.get_fragments()]


def base_of(frags: list[tuple[int, int]]) -> int:
    return max(frags, key=lambda f: f[1])[0]


def test_a_compaction_keeps_the_base_until_the_churn_passes_a_quarter(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.int64())])
    spec = lp.PartitionSpec([lp.PartitionField("p", source="p", transform=lp.Identity())])
    ns = lp.PartitionedNamespace.create(str(root), schema=schema, spec=spec, properties={KEY: "4"})

    def batch(start: int, parts: list[int]) -> pa.Table:
        ids = list(range(start, start + len(parts)))
        return pa.table({"id": pa.array(ids, pa.int64()), "p": pa.array(parts, pa.int64())})

    written = [batch(0, list(range(200)))]
    versions = [ns.write(written[-1], max_new_partitions=None).manifest_version]
    first = manifest_fragments(root)
    base = base_of(first)
    kept = (base, dict(first)[base])
    seen: list[list[tuple[int, int]]] = []
    # Commits of one row to one of three partitions: a few manifest rows each.
    for i in range(30):
        written.append(batch(1000 + i, [i % 3]))
        versions.append(ns.write(written[-1]).manifest_version)
        seen.append(manifest_fragments(root))
    assert max(len(f) for f in seen) <= 4, seen
    compactions = ns.history()["operation"].to_pylist().count("compact_manifest")
    assert compactions >= 6, compactions
    # Every compaction merged the small fragments beside the 200 partitions' rows, which
    # stayed in their file.
    assert all(kept in f for f in seen), (kept, seen)
    assert min(len(f) for f in seen) == 2, seen

    # A commit that changes every partition deletes their rows in the base: past a quarter,
    # the next compaction rewrites the base too, into one fragment.
    written.append(batch(2000, list(range(200))))
    versions.append(ns.write(written[-1]).manifest_version)
    after = [manifest_fragments(root)]
    for i in range(6):
        written.append(batch(3000 + i, [0]))
        versions.append(ns.write(written[-1]).manifest_version)
        after.append(manifest_fragments(root))
    # The commit that compacted leaves what the compaction made.
    assert [len(f) for f in after if base not in dict(f)][:1] == [1], (base, after)

    expected = pa.concat_tables(written)
    assert ids_of(ns.to_table(columns=["id"])) == ids_of(expected)
    p1 = ns.to_table("p = 1", columns=["id"])
    assert ids_of(p1) == ids_of(expected.filter(pc.equal(expected["p"], 1)))
    reopened = lp.PartitionedNamespace.open(str(root))
    for i, v in enumerate(versions):
        got = reopened.to_table(as_of=v, columns=["id"])
        assert ids_of(got) == ids_of(pa.concat_tables(written[: i + 1])), v


def test_versions_before_a_compaction_still_read_as_they_were(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = make_ns(root, properties={KEY: "3"})
    written: list[pa.Table] = []
    versions: list[int] = []
    for i in range(12):
        written.append(rows(100 * i, 7))
        versions.append(ns.write(written[-1]).manifest_version)
    reopened = lp.PartitionedNamespace.open(str(root))
    for i, v in enumerate(versions):
        expected = pa.concat_tables(written[: i + 1])
        assert ids_of(reopened.to_table(as_of=v, columns=["id"])) == ids_of(expected), v


def test_zero_turns_the_compaction_off(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    # The other history policies off too: trimming version rows can empty an old fragment
    # (Lance drops it), compacting a partition adds commits.
    off = {KEY: "0", "lance_partitioned.manifest.versions_kept": "0"}
    ns = make_ns(root, properties={**off, "lance_partitioned.partition.max_extra_fragments": "0"})
    seen = []
    for i in range(40):
        ns.write(rows(100 * i, 5))
        seen.append(fragments(root))
    # Every commit adds a fragment, far past the default limit (8).
    assert all(b == a + 1 for a, b in itertools.pairwise(seen)), seen
    assert seen[-1] > 32
    assert "compact_manifest" not in ns.history()["operation"].to_pylist()


@pytest.mark.parametrize("value", ["many", "-1", "2.5", ""])
def test_a_limit_that_is_not_a_whole_number_is_refused(tmp_path: Path, value: str) -> None:
    with pytest.raises(lp.InvalidArgumentError, match="whole number"):
        make_ns(tmp_path / "ns", properties={KEY: value})
    assert not (tmp_path / "ns" / "__manifest").exists()


# Under 3 every compaction rewrites all fragments; at 5 the base may be kept.
@pytest.mark.parametrize("limit", [2, 5])
def test_writers_in_other_processes_racing_compactions_lose_nothing(
    tmp_path: Path, limit: int
) -> None:
    root = tmp_path / "ns"
    make_ns(root, properties={KEY: str(limit)})
    procs = [
        subprocess.Popen(
            [sys.executable, WRITER, str(root), str(100_000 * w), "20", "15", "US,FR,DE,JP"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(3)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert out.strip().endswith("done"), out
    attempts = [
        int(line.split("attempts=")[1].split()[0])
        for out, _ in outs
        for line in out.splitlines()
        if line.startswith("wrote")
    ]
    assert len(attempts) == 45
    # The writers raced each other and the compactions: some commits were planned again.
    assert max(attempts) > 1, attempts
    expected = {100_000 * w + i for w in range(3) for i in range(20 * 15)}
    ns = lp.PartitionedNamespace.open(str(root))
    check_consistent(ns, expected)
    assert fragments(root) <= limit
    assert "compact_manifest" in ns.history()["operation"].to_pylist()
