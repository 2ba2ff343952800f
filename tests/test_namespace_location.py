"""Where a namespace may be created and what opening something else says: a new or empty
directory only (never mixed into other files), and a file is named as a file, with typed
errors from the API and the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import lance_partitioned as lp

SCHEMA = pa.schema([pa.field("a", pa.int64())])
SPEC = lp.PartitionSpec([lp.PartitionField("a", source="a", transform=lp.Identity())])


def test_create_in_a_new_or_empty_directory(tmp_path: Path) -> None:
    lp.PartitionedNamespace.create(str(tmp_path / "new" / "ns"), SCHEMA, SPEC)
    (tmp_path / "empty").mkdir()
    ns = lp.PartitionedNamespace.create(str(tmp_path / "empty"), SCHEMA, SPEC)
    ns.write(pa.table({"a": [1, 2]}, schema=SCHEMA))
    assert sorted(ns.to_table()["a"].to_pylist()) == [1, 2]


def test_create_in_a_directory_holding_other_files_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "data"
    (root / "sub").mkdir(parents=True)
    (root / "notes.txt").write_text("mine")
    with pytest.raises(lp.InvalidArgumentError, match=r"is not empty \(2 entries, e.g. \"notes"):
        lp.PartitionedNamespace.create(str(root), SCHEMA, SPEC)
    assert sorted(p.name for p in root.iterdir()) == ["notes.txt", "sub"]
    assert (root / "notes.txt").read_text() == "mine"


def test_create_over_a_namespace_is_namespace_exists(tmp_path: Path) -> None:
    lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    with pytest.raises(lp.NamespaceExistsError):
        lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)


def test_a_file_is_named_as_a_file(tmp_path: Path) -> None:
    f = tmp_path / "table.parquet"
    f.write_bytes(b"PAR1")
    with pytest.raises(lp.NamespaceNotFoundError, match="is a file, not a partitioned namespace"):
        lp.PartitionedNamespace.open(str(f))
    with pytest.raises(lp.InvalidArgumentError, match="is a file: create"):
        lp.PartitionedNamespace.create(str(f), SCHEMA, SPEC)
    assert f.read_bytes() == b"PAR1"
    cli = subprocess.run(
        [sys.executable, "-m", "lance_partitioned.cli", "info", str(f)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cli.returncode == 2
    assert cli.stderr.startswith("error: ")
    assert "is a file, not a partitioned namespace" in cli.stderr
    assert "LanceError" not in cli.stderr
