"""The manifest format's feature flags and pinned partitions, set by another tool (pylance on
`__manifest`, as upstream Lance's directory namespace stamps them): a manifest whose reader
flags this version does not understand is refused for reads and writes, one whose writer
flags it does not understand is readable but refused for every change, and partitions pinned
to a Lance tag or branch (`read_tag`/`read_branch`) are refused instead of read at the wrong
version. Nothing is changed by a refused operation."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lance_partitioned as lp

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("k", pa.string())])
SPEC = lp.PartitionSpec([lp.PartitionField("k", source="k", transform=lp.Identity())])
READER = "lance.namespace.manifest.reader_feature_flags"
WRITER = "lance.namespace.manifest.writer_feature_flags"


def rows(n: int, start: int = 0) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": pa.array(ids, pa.int64()), "k": [f"k{i % 2}" for i in ids]})


def namespace(tmp_path: Path) -> tuple[str, lance.LanceDataset]:
    root = str(tmp_path / "ns")
    lp.PartitionedNamespace.create(root, SCHEMA, SPEC).write(rows(10))
    return root, lance.dataset(f"{root}/__manifest")


def changes(ns: lp.PartitionedNamespace) -> list[object]:
    """Every kind of change, as callables."""
    return [
        lambda: ns.write(rows(2, 100)),
        lambda: ns.delete("id = 1"),
        lambda: ns.update({"k": "'k0'"}, where="id = 2"),
        lambda: ns.merge_insert("id").when_not_matched_insert_all().execute(rows(1, 200)),
        lambda: ns.evolve(
            lp.PartitionSpec([lp.PartitionField("b", source="id", transform=lp.Bucket(2))])
        ),
        lambda: ns.add_columns([pa.field("x", pa.int64())]),
        lambda: ns.optimize(),
        lambda: ns.expire(older_than=dt.timedelta(0)),
    ]


def test_unknown_writer_flags_allow_reads_and_refuse_every_change(tmp_path: Path) -> None:
    root, manifest = namespace(tmp_path)
    manifest.update_metadata({WRITER: str(1 << 5)})
    ns = lp.PartitionedNamespace.open(root)
    assert sorted(ns.to_table()["id"].to_pylist()) == list(range(10))
    version = lance.dataset(f"{root}/__manifest").version
    for change in changes(ns):
        with pytest.raises(lp.IncompatibleFormatError, match="0x20"):
            change()  # type: ignore[operator]
    assert lance.dataset(f"{root}/__manifest").version == version
    assert sorted(lp.PartitionedNamespace.open(root).to_table()["id"].to_pylist()) == list(
        range(10)
    )


@pytest.mark.parametrize("value", [str(1 << 63), "soon"])
def test_unknown_reader_flags_refuse_reads(tmp_path: Path, value: str) -> None:
    root, manifest = namespace(tmp_path)
    manifest.update_metadata({READER: value})
    with pytest.raises(lp.IncompatibleFormatError, match="reader_feature_flags"):
        lp.PartitionedNamespace.open(root)


def test_zero_flags_are_the_format_we_write(tmp_path: Path) -> None:
    root, manifest = namespace(tmp_path)
    manifest.update_metadata({READER: "0", WRITER: "0"})
    ns = lp.PartitionedNamespace.open(root)
    ns.write(rows(2, 100))
    assert ns.to_table().num_rows == 12


@pytest.mark.parametrize("column", ["read_tag", "read_branch"])
def test_partitions_pinned_to_a_tag_or_branch_are_refused(tmp_path: Path, column: str) -> None:
    root, manifest = namespace(tmp_path)
    manifest.add_columns({column: "CAST(NULL AS STRING)"})
    # A NULL pin everywhere is the format we read.
    assert lp.PartitionedNamespace.open(root).to_table().num_rows == 10
    lance.dataset(f"{root}/__manifest").update(
        {column: "'v1'"}, where="object_type = 'table' AND object_id LIKE '%$dataset'"
    )
    with pytest.raises(lp.IncompatibleFormatError, match=column):
        lp.PartitionedNamespace.open(root)
