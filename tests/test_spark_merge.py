"""merge_insert and apply_changes run in Spark tasks, against the independent dict model of
test_merge (expected tables computed here in plain Python, never by the code under test),
and against the same merge run in this process: same rows, same counts. A concurrent commit
to a partition the merge read makes it run again; a not-matched-by-source delete is decided
where every task's matches meet; mistakes (keys the DataFrame lacks) fail on the driver before
any task runs."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark import cloudpickle
from test_merge import SCHEMA, by_bucket, by_day, content, model_merge, rows, table

import lance_partitioned as lp
import lance_partitioned.spark as lps

pytestmark = pytest.mark.spark

# The concurrent writer below runs inside a Spark task: ship this module (and the helpers it
# uses) by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])
cloudpickle.register_pickle_by_value(sys.modules["test_merge"])


def frame(spark: Any, rs: list[dict[str, Any]], schema: pa.Schema = SCHEMA, parts: int = 3) -> Any:
    """``rs`` as a DataFrame of ``parts`` Spark partitions (rows of one key may start in
    different partitions: the merge must bring them together)."""
    return spark.createDataFrame(table(rs, schema).to_pandas()).repartition(parts)


def test_upsert_in_spark_equals_the_model_and_the_local_merge(spark: Any, tmp_path: Path) -> None:
    base = rows(300)
    source = rows(120, start=240, qty=9)  # 60 existing ids, 60 new ones
    want = model_merge({r["id"]: r for r in base}, source, update=lambda t, s: dict(s), insert=True)
    distributed = by_bucket(tmp_path / "spark", n=8)
    distributed.write(table(base))
    local = by_bucket(tmp_path / "local", n=8)
    local.write(table(base))
    got = (
        lps.merge_insert(distributed.root, "id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute(frame(spark, source), num_tasks=3)
    )
    mine = (
        local.merge_insert("id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute(table(source))
    )
    distributed.refresh()
    assert content(distributed) == want == content(local)
    assert (got.inserted, got.updated, got.deleted, got.moved) == (60, 60, 0, 0)
    assert (got.inserted, got.updated, got.deleted) == (mine.inserted, mine.updated, mine.deleted)
    per = {tuple(p.partition.values): (p.inserted, p.updated) for p in got.partitions}
    assert per == {tuple(p.partition.values): (p.inserted, p.updated) for p in mine.partitions}
    assert got.attempts == 1
    assert got.manifest_version == distributed.version
    assert distributed.history().column("operation").to_pylist()[0] == "merge"  # newest first


def test_conditions_deletes_and_moves_when_the_key_does_not_determine_the_partition(
    spark: Any, tmp_path: Path
) -> None:
    """Partitioned by day, keyed by id: the shuffle is by key; updated rows move day."""
    ns = by_day(tmp_path / "ns")
    base = rows(100)
    ns.write(table(base))
    source = [dict(r, qty=-r["qty"], day=rows(1, start=r["id"] + 1)[0]["day"]) for r in base[:40]]
    source += rows(10, start=500, qty=3)
    result = (
        lps.merge_insert(ns.root, "id")
        .when_matched_delete("source.qty < -30")
        .when_matched_update_all("source.id % 2 = 0")
        .when_not_matched_insert_all("source.id < 505")
        .execute(frame(spark, source, parts=4))
    )

    def update(t: dict[str, Any], s: dict[str, Any]) -> Any:
        return dict(s) if s["qty"] >= -30 and s["id"] % 2 == 0 else None

    want = model_merge(
        {r["id"]: r for r in base},
        [s for s in source if s["id"] < 505 or s["id"] < 100],
        update=update,
        insert=True,
        delete_matched=lambda t, s: s["qty"] < -30,
    )
    ns.refresh()
    assert content(ns) == want
    deleted = sum(1 for s in source[:40] if s["qty"] < -30)
    updated = sum(1 for s in source[:40] if s["qty"] >= -30 and s["id"] % 2 == 0)
    assert (result.inserted, result.updated, result.deleted) == (5, updated, deleted)
    assert result.moved == updated  # every updated row changed day
    assert any("does not determine" in line for line in result.matching)


def test_apply_changes_in_spark_keeps_the_last_change_per_key(spark: Any, tmp_path: Path) -> None:
    ns = by_bucket(tmp_path / "ns", n=4)
    base = rows(50)
    ns.write(table(base))
    feed_schema = SCHEMA.append(pa.field("seq", pa.int64())).append(pa.field("op", pa.string()))
    feed = []
    for i in range(0, 60, 3):  # ids 0..57: three changes each, the last one counts
        for seq, op in ((1, "U"), (2, "D" if i % 2 else "U"), (3, "U" if i % 4 == 0 else "D")):
            feed.append(dict(rows(1, start=i, qty=seq)[0], seq=seq, op=op))
    result = lps.apply_changes(
        frame(spark, feed[::-1], feed_schema, parts=4), ns.root, "id", sequence_by="seq"
    )
    want = {r["id"]: r for r in base}
    last = {}
    for c in feed:
        if c["id"] not in last or c["seq"] > last[c["id"]]["seq"]:
            last[c["id"]] = c
    for k, c in last.items():
        if c["op"] == "D":
            want.pop(k, None)
        else:
            want[k] = {f: c[f] for f in SCHEMA.names}
    ns.refresh()
    assert content(ns) == want
    assert result.deleted == sum(1 for k, c in last.items() if c["op"] == "D" and k < 50)


def test_a_concurrent_commit_to_a_partition_read_runs_the_merge_again(
    spark: Any, tmp_path: Path
) -> None:
    ns = by_bucket(tmp_path / "ns", n=4)
    base = rows(40)
    ns.write(table(base))
    flag = tmp_path / "raced"
    root = ns.root

    def race(batches: Any) -> Any:
        # Once (the first run), while the merge's first job runs: another writer updates id 5,
        # which the merge also changes, and inserts id 1000.
        if not flag.exists():
            flag.touch()
            other = lp.PartitionedNamespace.open(root)
            change = [dict(rows(1, start=5, qty=100)[0], note="other")]
            change.append(dict(rows(1, start=1000)[0], note="other"))
            other.merge_insert(
                "id"
            ).when_matched_update_all().when_not_matched_insert_all().execute(table(change))
        yield from batches

    source = rows(10, start=0, qty=2)
    df = frame(spark, source, parts=1)
    raced = df.mapInArrow(race, df.schema)
    result = (
        lps.merge_insert(root, "id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute(raced, num_tasks=2)
    )
    assert flag.exists()
    assert result.attempts == 2
    want = {r["id"]: r for r in base}
    want[1000] = dict(rows(1, start=1000)[0], note="other")
    want = model_merge(want, source, update=lambda t, s: dict(s), insert=True)
    ns.refresh()
    assert content(ns) == want


@pytest.mark.parametrize("layout", [by_bucket, by_day], ids=["key-determines", "by-day"])
def test_not_matched_by_source_in_spark_equals_the_model_and_the_local_merge(
    spark: Any, tmp_path: Path, layout: Any
) -> None:
    """Each task sees part of the source; a target row is deleted only when no task matched
    it. Under bucket(id, 8) some buckets get no source row at all (no task reads them)."""
    base = rows(200)
    source = [dict(r, qty=-1) for r in base[20:30]] + rows(5, start=900)
    late = dt.date(2025, 1, 4)
    condition = "day >= DATE '2025-01-04' AND qty <> 7"
    want = model_merge(
        {r["id"]: r for r in base},
        source,
        update=lambda t, s: dict(s),
        insert=True,
        delete_unmatched=lambda t: t["day"] >= late and t["qty"] != 7,
    )
    results = []
    for where in ("spark", "local"):
        ns = layout(tmp_path / where)
        ns.write(table(base))
        version = ns.version
        builder = (
            (lps.merge_insert(ns.root, "id") if where == "spark" else ns.merge_insert("id"))
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .when_not_matched_by_source_delete(condition)
        )
        if where == "spark":
            results.append(builder.execute(frame(spark, source, parts=4), num_tasks=3))
        else:
            results.append(builder.execute(table(source)))
        ns.refresh()
        assert content(ns) == want
        assert ns.version == version + 1  # one commit
    got, mine = results
    deleted = sum(1 for r in base[:20] + base[30:] if r["day"] >= late and r["qty"] != 7)
    assert (got.inserted, got.updated, got.deleted) == (5, 10, deleted)
    assert (got.inserted, got.updated, got.deleted) == (mine.inserted, mine.updated, mine.deleted)
    per = {tuple(p.partition.values): (p.inserted, p.updated, p.deleted) for p in got.partitions}
    assert per == {
        tuple(p.partition.values): (p.inserted, p.updated, p.deleted) for p in mine.partitions
    }
    assert any("not matched by source" in line for line in got.matching)


def test_an_empty_dataframe_with_a_not_matched_by_source_delete_deletes_what_it_reaches(
    spark: Any, tmp_path: Path
) -> None:
    ns = by_bucket(tmp_path / "ns", n=4)
    base = rows(40)
    ns.write(table(base))
    empty = frame(spark, rows(5)).limit(0)
    result = (
        lps.merge_insert(ns.root, "id")
        .when_matched_update_all()
        .when_not_matched_by_source_delete("qty >= 30")
        .execute(empty)
    )
    ns.refresh()
    assert content(ns) == {r["id"]: r for r in base if r["qty"] < 30}
    assert (result.inserted, result.updated, result.deleted) == (0, 0, 10)


def test_mistakes_fail_on_the_driver_before_any_task(spark: Any, tmp_path: Path) -> None:
    ns = by_bucket(tmp_path / "ns")
    ns.write(table(rows(10)))
    df = frame(spark, rows(5, start=3))
    version = ns.version
    with pytest.raises(lp.InvalidArgumentError, match="not in the DataFrame"):
        lps.merge_insert(ns.root, "order_id").when_matched_update_all().execute(df)
    with pytest.raises(lp.InvalidArgumentError, match="num_tasks"):
        lps.merge_insert(ns.root, "id").when_matched_update_all().execute(df, num_tasks=0)
    assert ns.version == version


def test_two_rows_with_one_key_fail_the_merge_and_commit_nothing(
    spark: Any, tmp_path: Path
) -> None:
    ns = by_day(tmp_path / "ns")
    ns.write(table(rows(20)))
    before = content(ns)
    version = ns.version
    twice = [*rows(3, start=7), dict(rows(1, start=8, qty=5)[0], day=rows(1, start=9)[0]["day"])]
    with pytest.raises(lp.DuplicateKeyError, match="raised in a Spark task"):
        lps.merge_insert(ns.root, "id").when_matched_update_all().execute(
            frame(spark, twice, parts=4)
        )
    ns.refresh()
    assert ns.version == version
    assert content(ns) == before


def test_an_empty_dataframe_changes_nothing(spark: Any, tmp_path: Path) -> None:
    ns = by_bucket(tmp_path / "ns")
    ns.write(table(rows(10)))
    version = ns.version
    empty = frame(spark, rows(5)).limit(0)
    result = lps.merge_insert(ns.root, "id").when_matched_update_all().execute(empty)
    assert (result.inserted, result.updated, result.manifest_version) == (0, 0, version)
    ns.refresh()
    assert ns.version == version
