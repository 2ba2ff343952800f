"""Tags: names for manifest versions, read with `as_of="name"`, listed by `history()`, the CLI
and pylance (they are Lance tags of `__manifest`), and kept by `expire()`.

Expected rows come from the inputs."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lance_partitioned as lp


def make(root: Path) -> lp.PartitionedNamespace:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.int64())])
    spec = lp.PartitionSpec([lp.PartitionField("p", source="p", transform=lp.Identity())])
    return lp.PartitionedNamespace.create(str(root), schema=schema, spec=spec)


def batch(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": pa.array(ids, pa.int64()), "p": [i % 3 for i in ids]})


def ids(t: pa.Table) -> list[int]:
    return sorted(t["id"].to_pylist())


def test_a_tagged_version_reads_as_it_was_and_survives_expire(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = make(root)
    ns.write(batch(0, 10))
    trained = ns.tag("trained-2026.11")
    assert trained == ns.version
    ns.write(batch(10, 10))
    ns.delete("id < 5")
    ns.write(batch(20, 5), mode="overwrite")
    assert ids(ns.to_table(as_of="trained-2026.11")) == list(range(10))
    assert ns.tags() == {"trained-2026.11": trained}
    # Pylance sees the tag on the manifest.
    assert lance.dataset(str(root / "__manifest")).tags.list()["trained-2026.11"]["version"] == (
        trained
    )
    hist = ns.history()
    pairs = zip(hist["version"].to_pylist(), hist["tags"].to_pylist(), strict=True)
    tagged = {v: t for v, t in pairs if t}
    assert tagged == {trained: ["trained-2026.11"]}
    res = ns.expire(older_than=datetime.timedelta(0), retain_versions=1)
    assert trained not in res.manifest_versions
    assert res.manifest_versions
    fresh = lp.PartitionedNamespace.open(str(root))
    assert ids(fresh.to_table(as_of="trained-2026.11")) == list(range(10))
    assert ids(fresh.to_table(as_of=trained, columns=["id"])) == list(range(10))
    # The overwrite touched every partition (p = id % 3 over 20..24).
    assert ids(fresh.to_table()) == list(range(20, 25))
    fresh.delete_tag("trained-2026.11")
    assert fresh.tags() == {}
    fresh.expire(older_than=datetime.timedelta(0), retain_versions=1)
    with pytest.raises(lp.NamespaceNotFoundError):
        fresh.to_table(as_of="trained-2026.11")
    with pytest.raises(lp.NamespaceNotFoundError):
        fresh.to_table(as_of=trained)


def test_tag_mistakes_are_typed_errors(tmp_path: Path) -> None:
    ns = make(tmp_path / "ns")
    ns.write(batch(0, 3))
    ns.tag("a")
    with pytest.raises(lp.InvalidArgumentError, match="already exists"):
        ns.tag("a")
    with pytest.raises(lp.InvalidArgumentError, match="not a valid tag name"):
        ns.tag("no spaces")
    with pytest.raises(lp.InvalidArgumentError, match="not a valid tag name"):
        ns.tag(".hidden")
    with pytest.raises(lp.NamespaceNotFoundError, match="version 99"):
        ns.tag("b", 99)
    with pytest.raises(lp.ArgumentTypeError):
        ns.tag(3)  # type: ignore[arg-type]
    with pytest.raises(lp.NamespaceNotFoundError, match="no tag"):
        ns.delete_tag("missing")
    with pytest.raises(lp.NamespaceNotFoundError, match="no tag"):
        ns.to_table(as_of="missing")
    assert ns.tags() == {"a": ns.version}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "lance_partitioned.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_the_cli_tags_lists_and_reads_as_of_a_tag(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = make(root)
    ns.write(batch(0, 4))
    first = ns.version
    ns.write(batch(4, 4))
    out = cli("tag", str(root), "v1", "--version", str(first))
    assert out.returncode == 0, out.stderr
    assert f"tagged manifest version {first} as v1" in out.stdout
    assert json.loads(cli("tag", str(root), "--json").stdout)["tags"] == {"v1": first}
    hist = json.loads(cli("history", str(root), "--json").stdout)
    assert [v["tags"] for v in hist["versions"] if v["version"] == first] == [["v1"]]
    scanned = cli("scan", str(root), "--as-of", "v1", "--format", "json")
    assert scanned.returncode == 0, scanned.stderr
    lines = [json.loads(line) for line in scanned.stdout.splitlines() if line.strip()]
    assert sorted(r["id"] for r in lines) == [0, 1, 2, 3]
    gone = cli("tag", str(root), "v1", "--delete")
    assert gone.returncode == 0
    assert "deleted tag v1" in gone.stdout
    missing = cli("tag", str(root), "v1", "--delete")
    assert missing.returncode == 2, missing.stderr
    assert "no tag" in missing.stderr
