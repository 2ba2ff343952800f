"""`optimize()`: compaction of small files, atomic across partitions, safe against writers in
other processes (rebased appends, recompacted partitions), old versions still readable."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from races import (
    check_consistent,
    make_ns,
    paused_writer,
    python_child,
    race_writers,
    wait_for_pause,
)
from races import rows as race_rows

import lance_partitioned as lp

OPTIMIZER = (
    "import sys, lance_partitioned as lp\n"
    "r = lp.PartitionedNamespace.open(sys.argv[1]).optimize()\n"
    "print(r.partitions, r.rebased, r.recompacted, r.files_after, flush=True)\n"
)


def rows(start: int, n: int, countries: str = "US,FR") -> pa.Table:
    return race_rows(start, n, countries)


def files_per_partition(ns: lp.PartitionedNamespace) -> list[int]:
    return sorted(ns.stats()["files"].to_pylist())


def test_optimize_leaves_one_file_per_partition_and_old_versions_readable(
    tmp_path: Path,
) -> None:
    ns = make_ns(tmp_path / "ns")
    for task in range(4):  # four tasks' worth of files in every partition
        ns.write(rows(task * 1000, 600, "US,FR,DE"))
    before = ns.to_table().sort_by("id")
    v_before = ns.version
    parts = ns.stats().num_rows
    assert files_per_partition(ns) == [4] * parts

    planned = ns.optimize(dry_run=True)
    assert ns.version == v_before, "a dry run commits nothing"
    assert (planned.partitions, planned.files_before, planned.files_after) == (
        parts,
        4 * parts,
        parts,
    )
    assert planned.dry_run is True

    done = ns.optimize()
    assert (done.partitions, done.files_before, done.files_after, done.rows) == (
        parts,
        4 * parts,
        parts,
        2400,
    )
    assert done.bytes_written > 0
    assert done.manifest_version == v_before + 1, "one manifest commit for every partition"
    assert files_per_partition(ns) == [1] * parts
    assert sum(ns.stats()["bytes"].to_pylist()) == done.bytes_written
    assert ns.to_table().sort_by("id").equals(before)
    # Readers of the version before keep reading the files it named.
    assert ns.snapshot(v_before).to_table().sort_by("id").equals(before)
    # Nothing left to do.
    again = ns.optimize()
    assert (again.partitions, again.manifest_version) == (0, done.manifest_version)


def test_filter_min_files_and_target(tmp_path: Path) -> None:
    ns = make_ns(tmp_path / "ns")
    for k in range(3):
        ns.write(rows(k * 1000, 300, "US,FR"))
    assert ns.optimize(min_files=4).partitions == 0
    us = ns.optimize(filter="country = 'US'")
    assert us.partitions == len(ns.partitions("country = 'US'"))
    stats = ns.stats()
    by_country = Counter[str]()
    for c, f in zip(stats["country"].to_pylist(), stats["files"].to_pylist(), strict=True):
        by_country[c] = max(by_country[c], f)
    assert by_country == {"US": 1, "FR": 3}
    # Files under the target are rewritten into files of at most that many rows.
    fr = ns.optimize(target_rows_per_file=200)
    assert fr.partitions == len(ns.partitions("country = 'FR'"))
    assert fr.files_after > fr.partitions
    check_consistent(ns, set().union(*(range(k * 1000, k * 1000 + 300) for k in range(3))))


def test_optimize_drops_deleted_rows(tmp_path: Path) -> None:
    ns = make_ns(tmp_path / "ns")
    for k in range(3):
        ns.write(rows(k * 1000, 500))
    ns.delete("id % 4 = 0")
    assert sum(ns.stats()["fragments_with_deletions"].to_pylist()) > 0
    expected = {i for k in range(3) for i in range(k * 1000, k * 1000 + 500) if i % 4}
    ns.optimize()
    stats = ns.stats()
    assert sum(stats["fragments_with_deletions"].to_pylist()) == 0
    assert sum(stats["rows"].to_pylist()) == len(expected)
    check_consistent(ns, expected)


def test_weak_mode_compacts_each_leaf_in_place(tmp_path: Path) -> None:
    ns = make_ns(tmp_path / "ns", transaction_mode="weak")
    for k in range(3):
        ns.write(rows(k * 1000, 200))
    v = ns.version
    done = ns.optimize()
    assert done.partitions == len(ns.partitions())
    assert ns.version == v, "weak mode commits to the leaves, not the manifest"
    assert files_per_partition(ns) == [1] * done.partitions
    check_consistent(ns, {i for k in range(3) for i in range(k * 1000, k * 1000 + 200)})


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    ns = make_ns(tmp_path / "ns")
    ns.write(rows(0, 10))
    with pytest.raises(lp.InvalidArgumentError):
        ns.optimize(target_rows_per_file=0)
    with pytest.raises(lp.InvalidArgumentError):
        ns.optimize(min_files=-1)
    with pytest.raises(lp.InvalidArgumentError):
        ns.optimize(filter="  ")
    with pytest.raises(lp.ExpressionError):
        ns.optimize(filter="no_such_column = 1")


def paused_optimizer(root: Path, flag: Path) -> subprocess.Popen[str]:
    return python_child(["-c", OPTIMIZER, str(root)], f"optimize_before_manifest_commit:{flag}")


def three_writes(tmp_path: Path) -> tuple[Path, Path, lp.PartitionedNamespace]:
    """The namespace root, the pause flag, and the namespace after three writes of 300 rows
    (ids 0.., 1000.., 2000..): three files in every partition."""
    ns = make_ns(tmp_path / "ns")
    for k in range(3):
        ns.write(rows(k * 1000, 300))
    return tmp_path / "ns", tmp_path / "paused", ns


def finish(p: subprocess.Popen[str], flag: Path) -> list[int]:
    flag.unlink(missing_ok=True)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    return [int(x) for x in out.split()]


def test_append_during_optimize_is_rebased(tmp_path: Path) -> None:
    root, flag, ns = three_writes(tmp_path)
    parts = len(ns.partitions())
    with paused_optimizer(root, flag) as p:
        wait_for_pause(p, flag)
        ns.write(rows(5000, 300))  # every partition gets a new file meanwhile
        compacted, rebased, recompacted, _ = finish(p, flag)
    assert (compacted, rebased, recompacted) == (parts, parts, 0)
    ns.refresh()
    # The compacted file plus the append's file, in every partition.
    assert files_per_partition(ns) == [2] * parts
    ids = {i for k in [0, 1, 2, 5] for i in range(k * 1000, k * 1000 + 300)}
    check_consistent(ns, ids)


def test_delete_during_optimize_makes_it_compact_again(tmp_path: Path) -> None:
    root, flag, ns = three_writes(tmp_path)
    parts = len(ns.partitions())
    with paused_optimizer(root, flag) as p:
        wait_for_pause(p, flag)
        ns.delete("id % 4 = 0 AND country = 'US'")  # new deletion files in the US leaves
        compacted, rebased, recompacted, _ = finish(p, flag)
    us = len(ns.partitions("country = 'US'"))
    assert recompacted == us
    assert rebased == 0
    assert compacted == parts
    ns.refresh()
    written = pa.concat_tables([rows(k * 1000, 300) for k in range(3)]).to_pylist()
    expected = {r["id"] for r in written if not (r["id"] % 4 == 0 and r["country"] == "US")}
    check_consistent(ns, expected)
    assert files_per_partition(ns) == [1] * parts


def test_append_committing_after_optimize_rebases_over_it(tmp_path: Path) -> None:
    root, flag, ns = three_writes(tmp_path)
    with paused_writer(root, flag, "before_manifest_commit", 7000, 100, "US,FR") as p:
        wait_for_pause(p, flag)  # its leaf versions are committed, its manifest commit is not
        assert ns.optimize().partitions == len(ns.partitions())
        flag.unlink()
        out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    # The race happened: the write's partitions were rebased over the compaction.
    assert "rebased=0 " not in out, out
    ns.refresh()
    ids = {i for k in range(3) for i in range(k * 1000, k * 1000 + 300)} | set(range(7000, 7100))
    check_consistent(ns, ids)


@pytest.mark.slow
def test_optimize_racing_writers_in_other_processes(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = make_ns(root)
    ns.write(rows(0, 100, "US,FR,DE"))
    compactions, written = race_writers(root, 40, 10, lambda: ns.optimize().partitions)
    compactions += ns.optimize().partitions
    assert compactions > 0
    ns.refresh()
    check_consistent(ns, set(range(100)) | written)
    assert files_per_partition(ns) == [1] * len(ns.partitions())


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    ops=st.lists(
        st.one_of(
            st.tuples(st.just("write"), st.integers(1, 60)),
            st.tuples(st.just("delete"), st.integers(2, 5)),
            st.tuples(st.just("optimize"), st.integers(1, 3)),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_any_sequence_of_writes_deletes_and_optimizes_matches_a_model(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int]]
) -> None:
    ns = make_ns(tmp_path_factory.mktemp("ns") / "ns")
    model: set[int] = set()
    versions: list[tuple[int, set[int]]] = []
    next_id = 0
    for op, arg in ops:
        if op == "write":
            ns.write(rows(next_id, arg, "US,FR,DE"))
            model |= set(range(next_id, next_id + arg))
            next_id += arg
        elif op == "delete":
            ns.delete(f"id % {arg} = 1")
            model = {i for i in model if i % arg != 1}
        else:
            ns.optimize(min_files=arg)
        versions.append((ns.version, set(model)))
    check_consistent(ns, model)
    for version, expected in versions:
        got = ns.snapshot(version).to_table(columns=["id"])["id"].to_pylist()
        assert sorted(got) == sorted(expected)
