"""`stats()`: per-partition rows, files, bytes, deletions and versions from Lance metadata,
checked against the files on disk and a model of what was written."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst

import lance_partitioned as lp

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("country", pa.string())])
SPEC = lp.PartitionSpec([lp.PartitionField("c", source="country", transform=lp.Identity())])


def batch(ids: range, countries: list[str]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "country": [countries[i % len(countries)] for i in ids],
        }
    )


def on_disk(root: Path, location: str) -> tuple[int, int, int]:
    """(data files, their bytes, version manifests) in a leaf's directory."""
    data = [p for p in (root / location / "data").iterdir() if p.suffix == ".lance"]
    versions = [p for p in (root / location / "_versions").iterdir() if p.suffix == ".manifest"]
    return len(data), sum(os.path.getsize(p) for p in data), len(versions)


def test_stats_match_the_files_and_the_rows_written(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = lp.PartitionedNamespace.create(str(root), SCHEMA, SPEC)
    written: Counter[str] = Counter()
    for k in range(3):
        t = batch(range(k * 1000, k * 1000 + 700 + 100 * k), ["US", "FR", "DE"][: k + 1])
        ns.write(t)
        written.update(t["country"].to_pylist())
    columns = ["object_id", "c", "rows", "files", "bytes", "fragments_with_deletions"]
    assert ns.stats().column_names == columns
    st = ns.stats(versions=True)
    assert st.column_names == [*columns, "versions"]
    parts = ns.partitions()
    locations = dict(
        zip(parts["object_id"].to_pylist(), parts["location"].to_pylist(), strict=True)
    )
    for row in st.to_pylist():
        assert row["rows"] == written[row["c"]]
        files, size, versions = on_disk(root, locations[row["object_id"]])
        assert (row["files"], row["bytes"], row["versions"]) == (files, size, versions)
        assert row["fragments_with_deletions"] == 0
    us = ns.stats("country = 'US'")
    assert us["c"].to_pylist() == ["US"]
    assert us["files"].to_pylist() == [3]  # one fragment per write

    before = ns.version
    ns.delete("country = 'FR' AND id % 2 = 0")
    after = ns.stats("country = 'FR'").to_pylist()[0]
    assert after["rows"] < written["FR"]
    assert after["fragments_with_deletions"] >= 1
    assert after["rows"] == ns.scan(filter="country = 'FR'").read_all().num_rows
    # An older manifest version still reports what it read.
    old = ns.stats("country = 'FR'", as_of=before).to_pylist()[0]
    assert (old["rows"], old["fragments_with_deletions"]) == (written["FR"], 0)


def measured(root: Path, location: str, version: int | None) -> dict[str, int]:
    """What pylance reads of a leaf version: the ground truth the recorded totals must equal."""
    import lance

    ds = lance.dataset(str(root / location), version=version)
    frags = ds.get_fragments()
    files = [f for fr in frags for f in fr.metadata.files]
    data = root / location / "data"
    return {
        "rows": ds.count_rows(),
        "files": len(files),
        "bytes": sum(os.path.getsize(data / f.path) for f in files),
        "fragments_with_deletions": sum(fr.metadata.deletion_file is not None for fr in frags),
    }


def check_against_pylance(ns: lp.PartitionedNamespace, root: Path, as_of: int | None) -> None:
    parts = ns.partitions(as_of=as_of, with_rows=True)
    by_id = {p["object_id"]: p for p in parts.to_pylist()}
    st = ns.stats(as_of=as_of)
    assert sorted(st["object_id"].to_pylist()) == sorted(by_id)
    for row in st.to_pylist():
        p = by_id[row["object_id"]]
        truth = measured(root, p["location"], p["read_version"])
        assert {k: row[k] for k in truth} == truth, row["c"]
        assert p["rows"] == truth["rows"]


KEYS = ["US", "FR", "DE", "JP"]


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=hst.lists(
        hst.tuples(
            hst.sampled_from(["write", "overwrite", "delete", "optimize"]),
            hst.integers(1, 300),
            hst.sets(hst.sampled_from(KEYS), min_size=1),
        ),
        min_size=1,
        max_size=7,
    )
)
def test_recorded_totals_equal_what_pylance_reads_at_every_version(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, int, set[str]]]
) -> None:
    root = tmp_path_factory.mktemp("model") / "ns"
    ns = lp.PartitionedNamespace.create(str(root), SCHEMA, SPEC)
    versions = []
    next_id = 0
    for op, n, keys in steps:
        countries = sorted(keys)
        if op in ("write", "overwrite"):
            t = batch(range(next_id, next_id + n), countries)
            next_id += n
            ns.write(t, mode="append" if op == "write" else "overwrite")
        elif op == "delete":
            listed = ", ".join(f"'{c}'" for c in countries)
            ns.delete(f"country IN ({listed}) AND id % {n % 3 + 2} = 0")
        else:
            ns.optimize()
        versions.append(ns.version)
    for v in versions:
        check_against_pylance(ns, root, v)


def test_versions_count_what_expire_keeps(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = lp.PartitionedNamespace.create(str(root), SCHEMA, SPEC)
    for k in range(4):
        ns.write(batch(range(k * 100, k * 100 + 90), ["US", "FR"]))
    ns.delete("country = 'FR' AND id % 3 = 0")
    ns.write(batch(range(1000, 1030), ["DE"]))

    def check() -> None:
        parts = ns.partitions()
        locations = dict(
            zip(parts["object_id"].to_pylist(), parts["location"].to_pylist(), strict=True)
        )
        for row in ns.stats(versions=True).to_pylist():
            assert row["versions"] == on_disk(root, locations[row["object_id"]])[2], row["c"]

    check()
    assert ns.stats("country = 'FR'", versions=True)["versions"].to_pylist() == [5]
    ns.expire(retain_versions=3, older_than=0)
    check()
    # The three kept manifest versions read FR after the fourth write and after the delete;
    # the leaf's first version stays too (Lance's latest main-line version: appends in strong
    # mode are detached).
    assert ns.stats("country = 'FR'", versions=True)["versions"].to_pylist() == [3]
    assert ns.stats("country = 'US'", versions=True)["versions"].to_pylist() == [2]


def test_versions_count_the_files_after_the_manifest_trims_its_rows(tmp_path: Path) -> None:
    """A partition committed to more often than the manifest keeps `table_version` rows for
    (`versions_kept`), with automatic expiry keeping a few manifest versions: the count is
    what its `_versions/` holds, whatever the manifest still records."""
    root = tmp_path / "ns"
    props = {
        "lance_partitioned.manifest.versions_kept": "2",
        "lance_partitioned.expire.interval": "5",
        "lance_partitioned.expire.older_than_seconds": "0",
        "lance_partitioned.expire.retain_versions": "8",
    }
    ns = lp.PartitionedNamespace.create(str(root), SCHEMA, SPEC, properties=props)
    for k in range(30):
        ns.write(batch(range(k * 10, k * 10 + 10), ["US"] if k % 6 else ["US", "FR"]))
    parts = ns.partitions()
    locations = dict(
        zip(parts["object_id"].to_pylist(), parts["location"].to_pylist(), strict=True)
    )
    counted = {r["c"]: r["versions"] for r in ns.stats(versions=True).to_pylist()}
    truth = {
        c: on_disk(root, locations[oid])[2]
        for c, oid in zip(parts["c"].to_pylist(), parts["object_id"].to_pylist(), strict=True)
    }
    assert counted == truth
    # More versions than the manifest keeps rows for (2 to 4): the count is not the rows.
    assert truth["US"] > 4


def test_weak_mode_stats_are_measured(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = lp.PartitionedNamespace.create(str(root), SCHEMA, SPEC, transaction_mode="weak")
    for k in range(2):
        ns.write(batch(range(k * 100, k * 100 + 50), ["US", "FR"]))
    ns.delete("country = 'FR' AND id % 2 = 0")
    parts = ns.partitions()
    locations = dict(
        zip(parts["object_id"].to_pylist(), parts["location"].to_pylist(), strict=True)
    )
    for row in ns.stats().to_pylist():
        truth = measured(root, locations[row["object_id"]], None)
        assert {k: row[k] for k in truth} == truth
    for row in ns.stats(versions=True).to_pylist():
        assert row["versions"] == on_disk(root, locations[row["object_id"]])[2]
