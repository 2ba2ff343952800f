"""Distributed merges without Spark: shares of the source staged independently (as Spark tasks
stage them), committed once by the planned merge. A not-matched-by-source delete is decided by
the committer over every share's matches; messages of another merge are refused. Expected
tables come from the plain-Python model of test_merge."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from test_merge import by_bucket, by_day, content, model_merge, rows, table

import lance_partitioned as lp
from lance_partitioned import _native


def stage(dm: _native.DistributedMerge, share: list[dict[str, Any]], by_source: list[Any]) -> bytes:
    """One task's share: update matched rows of even ids (odd ones match and stay), insert
    the others."""
    clauses = (["id"], [("update_all", "source.id % 2 = 0", None)], [None], by_source, None)
    return dm.stage(
        table(share),
        clauses,
        concurrency=2,
        max_buffer_bytes=1 << 20,
    )


def by_source_only(conditions: list[Any]) -> Any:
    """What commit needs of the clauses: the key and the not-matched-by-source conditions."""
    return (["id"], [], [], conditions, None)


@pytest.mark.parametrize("layout", [by_bucket, by_day], ids=["key-determines", "by-day"])
def test_shares_split_by_key_delete_only_rows_no_share_matched(tmp_path: Path, layout: Any) -> None:
    ns = layout(tmp_path / "ns")
    base = rows(120)
    ns.write(table(base))
    source = [dict(r, qty=-5) for r in base[::7]] + rows(4, start=500)
    # Three shares by key (id % 3): each sees rows the others match.
    shares = [[s for s in source if s["id"] % 3 == k] for k in range(3)]
    condition = "day <= DATE '2025-01-03'"
    dm = _native.DistributedMerge.plan(ns.root, None)
    messages = [stage(dm, share, [condition]) for share in shares]
    result = dm.commit(messages, by_source_only([condition]), concurrency=2, max_attempts=1)
    want = model_merge(
        {r["id"]: r for r in base},
        source,
        update=lambda t, s: dict(s) if s["id"] % 2 == 0 else None,
        insert=True,
        delete_unmatched=lambda t: t["day"] <= dt.date(2025, 1, 3),
    )
    ns.refresh()
    assert content(ns) == want
    unmatched = [r for i, r in enumerate(base) if i % 7]
    deleted = sum(1 for r in unmatched if r["day"] <= dt.date(2025, 1, 3))
    updated = sum(1 for r in base[::7] if r["id"] % 2 == 0)
    assert (result.inserted, result.updated, result.deleted) == (4, updated, deleted)


def test_without_shares_the_delete_reaches_every_row_its_condition_selects(tmp_path: Path) -> None:
    ns = by_bucket(tmp_path / "ns", n=4)
    base = rows(40)
    ns.write(table(base))
    dm = _native.DistributedMerge.plan(ns.root, None)
    result = dm.commit([], by_source_only(["qty >= 30"]), concurrency=2, max_attempts=1)
    ns.refresh()
    assert content(ns) == {r["id"]: r for r in base if r["qty"] < 30}
    assert result.deleted == 10
    version = ns.version
    none = dm.commit([], by_source_only([]), concurrency=2, max_attempts=1)  # nothing to decide
    assert none.manifest_version == dm.manifest_version
    ns.refresh()
    assert ns.version == version


def test_messages_of_another_merge_are_refused(tmp_path: Path) -> None:
    ns = by_bucket(tmp_path / "ns")
    ns.write(table(rows(20)))
    before, version = content(ns), ns.version
    first = _native.DistributedMerge.plan(ns.root, None)
    second = _native.DistributedMerge.plan(ns.root, None)
    message = stage(first, rows(3, start=2, qty=4), [])
    with pytest.raises(lp.InvalidArgumentError, match="cannot commit with merge"):
        second.commit([message], by_source_only([]), concurrency=2, max_attempts=1)
    ns.refresh()
    assert (content(ns), ns.version) == (before, version)
