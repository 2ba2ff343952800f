"""``MergeInsertBuilder.explain``: what a merge would read, and why, without reading a partition
or writing anything. The partitions expected to be read are found here by reading every
partition's rows with pylance, never from the code under test."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import lance
import pyarrow as pa
import pytest
from test_merge import by_bucket, by_day, rows, table

import lance_partitioned as lp


def holding(root: Path, ns: lp.PartitionedNamespace, column: str, values: set) -> set[str]:
    """Locations of the partitions holding a row whose ``column`` is in ``values`` (pylance)."""
    out = set()
    for p in ns.partitions().to_pylist():
        ds = lance.dataset(str(root / p["location"]), version=p["read_version"])
        if set(ds.to_table(columns=[column]).column(column).to_pylist()) & values:
            out.add(p["location"])
    return out


def test_explain_lists_the_partitions_holding_the_source_keys(tmp_path: Path) -> None:
    ns = by_bucket(tmp_path / "ns", n=16)
    ns.write(table(rows(400)))
    source = table(rows(5, start=100, qty=7) + rows(2, start=1000))
    want = holding(tmp_path / "ns", ns, "id", set(source.column("id").to_pylist()))
    total = len(ns.partitions())
    version, history = ns.version, ns.history().num_rows
    builder = ns.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()

    plan = builder.explain(source)

    assert {p.location for p in plan.read} == want
    assert plan.skipped == total - len(want)
    assert "determines" in plan.matching[0]
    assert plan.manifest_version == version
    # Nothing written.
    assert (ns.version, ns.history().num_rows) == (version, history)
    # The merge reads what explain said.
    result = builder.execute(source)
    assert (result.scanned, result.skipped) == (len(plan.read), plan.skipped)
    assert result.matching == plan.matching


def test_explain_when_the_key_does_not_determine_the_partition(tmp_path: Path) -> None:
    ns = by_day(tmp_path / "ns")
    ns.write(table(rows(50)))
    every = {p["location"] for p in ns.partitions().to_pylist()}
    plan = ns.merge_insert("id").when_matched_update_all().explain(table(rows(3)))
    assert {p.location for p in plan.read} == every
    assert plan.skipped == 0
    assert "does not" in plan.matching[0]

    # Only a not-matched-by-source delete: its condition prunes to the day it names.
    only_delete = ns.merge_insert("id").when_not_matched_by_source_delete("day = DATE '2025-01-02'")
    plan = only_delete.explain(table(rows(3)))
    want = holding(tmp_path / "ns", ns, "day", {dt.date(2025, 1, 2)})
    assert {p.location for p in plan.read} == want
    assert len(want) == 1
    assert plan.skipped == len(every) - 1
    assert plan.read[0].values == [("d", "2025-01-02")]


def test_explain_checks_the_source_as_execute_does(tmp_path: Path) -> None:
    ns = by_bucket(tmp_path / "ns")
    ns.write(table(rows(20)))
    version = ns.version
    twice = table(rows(2) + rows(1))
    with pytest.raises(lp.DuplicateKeyError):
        ns.merge_insert("id").when_matched_update_all().explain(twice)
    with pytest.raises(lp.InvalidArgumentError):
        ns.merge_insert("no_such_column").when_matched_update_all().explain(table(rows(2)))
    bad = pa.table({"id": pa.array(["x"]), "qty": pa.array([1])})
    with pytest.raises(lp.SchemaMismatchError):
        ns.merge_insert("id").when_matched_update_all().explain(bad)
    assert ns.version == version
