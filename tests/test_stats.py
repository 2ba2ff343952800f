"""`stats()`: per-partition rows, files, bytes, deletions and versions from Lance metadata,
checked against the files on disk and a model of what was written."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pyarrow as pa

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
    st = ns.stats()
    assert st.column_names == [
        "object_id",
        "c",
        "rows",
        "files",
        "bytes",
        "fragments_with_deletions",
        "versions",
    ]
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
