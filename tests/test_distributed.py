"""Distributed writes without Spark: parts staged independently (as Spark tasks do), committed
once; retried and abandoned attempts never show up."""

from __future__ import annotations

import datetime as dt
import multiprocessing
import pickle
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_partitioned as lp

# This module partitions by day() alone (the day of the month) on purpose: its data spans
# days of one month, and a coarser field would change nothing it checks.
pytestmark = pytest.mark.filterwarnings("ignore::lance_partitioned.PartitionGranularityWarning")

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("country", pa.string()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
    ]
)
SPEC = lp.PartitionSpec(
    [
        lp.PartitionField("country", source="country", transform=lp.Identity()),
        lp.PartitionField("day", source="ts", transform=lp.Day()),
    ]
)
BASE = dt.datetime(2025, 3, 1, tzinfo=dt.timezone.utc)


def rows(ids: range, countries: list[str], days: int = 3) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "country": pa.array([countries[i % len(countries)] for i in ids]),
            "ts": pa.array(
                [BASE + dt.timedelta(days=i % days, minutes=i) for i in ids],
                pa.timestamp("us", tz="UTC"),
            ),
        },
        schema=SCHEMA,
    )


def ids_of(ns: lp.PartitionedNamespace) -> list[int]:
    return sorted(ns.to_table(columns=["id"])["id"].to_pylist())


def partition_keys(ns: lp.PartitionedNamespace) -> list[tuple[object, ...]]:
    p = ns.partitions(with_rows=False)
    return list(zip(p["country"].to_pylist(), p["day"].to_pylist(), strict=True))


def test_parts_staged_apart_commit_once_into_shared_new_partitions(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    ns.write(rows(range(0, 30), ["US"]))
    before = ns.version
    dw = ns.distributed_write()
    # Three "tasks" see overlapping partitions: US exists; FR and DE are new and shared.
    msgs = [
        dw.stage(rows(range(100, 160), ["US", "FR"])),
        dw.stage(rows(range(200, 260), ["FR", "DE"])),
        dw.stage(rows(range(300, 360), ["DE", "US"])),
    ]
    assert ns.refresh() is False, "staging made something visible"
    assert ns.version == before
    res = dw.commit(msgs)
    assert res.rows == 180
    ns.refresh()
    expected = [*list(range(0, 30)), *range(100, 160), *range(200, 260), *range(300, 360)]
    assert ids_of(ns) == sorted(expected)
    keys = partition_keys(ns)
    assert len(keys) == len(set(keys)) == 9  # 3 countries x 3 days, one leaf each
    assert res.created == 6
    assert res.partitions == 9
    # Rows sit in the partition their values say.
    t = ns.to_table(filter="country = 'FR'", columns=["id", "country"])
    assert set(t["country"].to_pylist()) == {"FR"}
    assert t.num_rows == 60


def test_only_committed_attempts_count_and_leftovers_are_cleanable(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    ns.write(rows(range(0, 10), ["US"]))
    dw = ns.distributed_write()
    data = rows(range(100, 150), ["US", "JP"])
    first_attempt = dw.stage(data)  # a task attempt that "failed" after writing
    second_attempt = dw.stage(data)  # its retry: the only one reported to the committer
    other = dw.stage(rows(range(200, 220), ["JP"]))
    assert first_attempt != second_attempt
    dw.commit([second_attempt, other])
    ns.refresh()
    got = ids_of(ns)
    assert [k for k, c in Counter(got).items() if c > 1] == []
    assert got == sorted([*range(0, 10), *range(100, 150), *range(200, 220)])
    # The failed attempt wrote fragments (in US and in the shared new JP leaves) nobody
    # committed: invisible, and removed by cleanup without touching committed data.
    found = ns.cleanup(older_than=dt.timedelta(0), retention_check=False)
    assert found.stale_files, "the abandoned attempt's data files"
    assert found.orphans == []  # its new partitions are the committed ones (same ids)
    assert ids_of(ns) == got


def test_distributed_overwrite_replaces_touched_partitions(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    ns.write(rows(range(0, 30), ["US", "FR"], days=1))
    dw = ns.distributed_write("overwrite")
    msgs = [
        dw.stage(rows(range(500, 510), ["US"], days=1)),
        dw.stage(rows(range(600, 605), ["US"], days=1)),
    ]
    res = dw.commit(msgs)
    assert res.rows == 15
    ns.refresh()
    us = ns.to_table(filter="country = 'US'", columns=["id"])["id"].to_pylist()
    fr = ns.to_table(filter="country = 'FR'", columns=["id"])["id"].to_pylist()
    assert sorted(us) == [*range(500, 510), *range(600, 605)]
    assert sorted(fr) == list(range(1, 30, 2))


def test_distributed_append_to_partition_with_older_schema_rewrites_it_once(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    ns.write(rows(range(0, 20), ["US"], days=1))
    ns.add_columns([pa.field("note", pa.string())])
    dw = ns.distributed_write()
    new = rows(range(100, 110), ["US"], days=1).append_column("note", pa.array(["n"] * 10))
    res = dw.commit([dw.stage(new.slice(0, 5)), dw.stage(new.slice(5))])
    assert res.rewritten == 1
    ns.refresh()
    t = ns.to_table(columns=["id", "note"]).sort_by("id")
    assert t["id"].to_pylist() == [*range(0, 20), *range(100, 110)]
    assert t["note"].to_pylist() == [None] * 20 + ["n"] * 10


def test_commit_rebases_over_a_concurrent_write(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    ns.write(rows(range(0, 10), ["US"], days=1))
    dw = ns.distributed_write()
    msg = dw.stage(rows(range(100, 120), ["US", "BR"], days=1))
    # Another writer appends to US and creates BR (same values) before our commit.
    lp.PartitionedNamespace.open(ns.root).write(rows(range(200, 220), ["US", "BR"], days=1))
    res = dw.commit([msg])
    assert res.rows == 20
    # The race happened: US was rebased over the other append, BR adopted.
    assert (res.rebased, res.adopted) == (1, 1)
    ns.refresh()
    assert ids_of(ns) == sorted([*range(0, 10), *range(100, 120), *range(200, 220)])
    keys = partition_keys(ns)
    assert len(keys) == len(set(keys)) == 2


def test_messages_of_different_writes_are_refused(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    a, b = ns.distributed_write(), ns.distributed_write()
    with pytest.raises(lp.InvalidArgumentError, match="different writes"):
        a.commit([a.stage(rows(range(0, 5), ["US"])), b.stage(rows(range(5, 10), ["US"]))])
    with pytest.raises(lp.InvalidArgumentError, match="staged write message"):
        a.commit([b"not a message"])
    with pytest.raises(lp.InvalidArgumentError):
        ns.distributed_write("upsert")  # type: ignore[arg-type]
    assert ids_of(ns) == []
    assert a.commit([]).rows == 0


def _stage_in_child(dw: lp.DistributedWrite, start: int) -> bytes:
    return dw.stage(rows(range(start, start + 40), ["US", "NZ"]))


def test_parts_staged_in_other_processes(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    dw = pickle.loads(pickle.dumps(ns.distributed_write()))
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        msgs = pool.starmap(_stage_in_child, [(dw, 0), (dw, 1000)])
    dw.commit(msgs)
    ns.refresh()
    assert ids_of(ns) == sorted([*range(0, 40), *range(1000, 1040)])
    keys = partition_keys(ns)
    assert len(keys) == len(set(keys)) == 6


def test_key_hasher_is_per_partition_and_independent_of_input_typing(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    h = ns.distributed_write().key_hasher()
    assert sorted(h.source_columns) == ["country", "ts"]
    t = rows(range(0, 200), ["US", "FR", "DE"])
    keys = h.hash(t.select(["country", "ts"]).to_batches()[0]).to_pylist()
    day = pc.floor_temporal(t["ts"], unit="day").to_pylist()
    by_partition: dict[tuple[object, ...], set[int]] = {}
    for c, d, k in zip(t["country"].to_pylist(), day, keys, strict=True):
        by_partition.setdefault((c, d), set()).add(k)
    assert all(len(v) == 1 for v in by_partition.values())
    assert len({next(iter(v)) for v in by_partition.values()}) == len(by_partition)
    # Spark hands timestamps labelled with the session time zone and strings as large_utf8:
    # the keys must not change.
    other = pa.record_batch(
        {
            "country": t["country"].cast(pa.large_string()).combine_chunks(),
            "ts": t["ts"].cast(pa.timestamp("us", tz="America/Los_Angeles")).combine_chunks(),
        }
    )
    assert h.hash(other).to_pylist() == keys


def _unaligned_decimals(values: list[int]) -> pa.Array:
    """A decimal128 array whose value buffer sits 8 bytes off a 16-byte boundary (what Arrow
    IPC readers, Spark's included, may hand out)."""
    raw = b"".join(v.to_bytes(16, "little", signed=True) for v in values)
    for pad in range(0, 16, 8):
        buf = pa.py_buffer(b"\0" * pad + raw + b"\0" * 8).slice(pad, len(raw))
        if buf.address % 16 == 8:
            return pa.Array.from_buffers(pa.decimal128(10, 2), len(values), [None, buf])
    # py_buffer placed both candidates on 16-byte boundaries: shift by copying into a bigger
    # buffer at a known offset.
    big = pa.allocate_buffer(len(raw) + 24)
    start = 8 if big.address % 16 == 0 else 0
    view = memoryview(big).cast("B")
    view[start : start + len(raw)] = raw
    buf = big.slice(start, len(raw))
    assert buf.address % 16 == 8
    return pa.Array.from_buffers(pa.decimal128(10, 2), len(values), [None, buf])


def test_unaligned_input_buffers_are_accepted(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("amount", pa.decimal128(10, 2))])
    spec = lp.PartitionSpec([lp.PartitionField("b", source="id", transform=lp.Bucket(2))])
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema, spec)
    amounts = _unaligned_decimals([i * 7 for i in range(50)])
    assert amounts.buffers()[1].address % 16 == 8
    batch = pa.record_batch([pa.array(range(50), pa.int64()), amounts], schema=schema)
    reader = pa.RecordBatchReader.from_batches(schema, [batch])
    dw = ns.distributed_write()
    dw.commit([dw.stage(reader)])
    ns.refresh()
    t = ns.to_table().sort_by("id")
    assert t["amount"].to_pylist() == amounts.to_pylist()


def test_empty_string_and_null_partitions_stay_apart(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("tag", pa.string())])
    spec = lp.PartitionSpec([lp.PartitionField("tag", source="tag", transform=lp.Identity())])
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema, spec)
    t = pa.table({"id": pa.array(range(6), pa.int64()), "tag": ["", None, "a", "", None, "a"]})
    dw = ns.distributed_write()
    dw.commit([dw.stage(t.slice(0, 3)), dw.stage(t.slice(3))])
    ns.refresh()
    parts = ns.partitions()
    assert sorted(parts["tag"].to_pylist(), key=str) == sorted(["", None, "a"], key=str)
    assert parts["rows"].to_pylist() == [2, 2, 2]
    assert len(set(parts["location"].to_pylist())) == 3
    empty = ns.to_table(filter="tag = ''", columns=["id"])["id"].to_pylist()
    null = ns.to_table(filter="tag IS NULL", columns=["id"])["id"].to_pylist()
    assert (sorted(empty), sorted(null)) == ([0, 3], [1, 4])


def _rows_per_partition(ns: lp.PartitionedNamespace) -> dict[tuple[object, ...], int]:
    p = ns.partitions()
    return {
        (c, d): r
        for c, d, r in zip(
            p["country"].to_pylist(), p["day"].to_pylist(), p["rows"].to_pylist(), strict=True
        )
    }


@pytest.mark.parametrize("how", ["stage", "write"])
def test_a_small_buffer_budget_writes_early_and_loses_nothing(tmp_path: Path, how: str) -> None:
    # A skewed input (one big partition, many small ones) in many small batches: with a
    # budget far below the input, the largest partitions are written early (more files than
    # partitions) and the small ones compacted; every row still lands in its partition.
    countries = ["US"] * 20 + [f"c{i}" for i in range(30)]
    t = rows(range(60_000), countries, days=2)
    results = []
    for budget in (1 << 30, 256 << 10):
        ns = lp.PartitionedNamespace.create(str(tmp_path / f"ns{budget}"), SCHEMA, SPEC)
        data = pa.RecordBatchReader.from_batches(SCHEMA, iter(t.to_batches(max_chunksize=1_000)))
        if how == "stage":
            dw = ns.distributed_write()
            res = dw.commit([dw.stage(data, max_buffer_bytes=budget)])
            ns.refresh()
        else:
            res = ns.write(data, max_buffer_bytes=budget)
        assert res.rows == t.num_rows
        assert ids_of(ns) == list(range(t.num_rows))
        # Pruned reads find every row of a partition in it.
        assert (
            ns.to_table(filter="country = 'c7'").num_rows
            == pc.sum(pc.equal(t["country"], "c7")).as_py()
        )
        results.append((res, _rows_per_partition(ns)))
    (unbounded, per_partition), (bounded, per_partition_bounded) = results
    assert per_partition_bounded == per_partition
    assert unbounded.files == unbounded.partitions == len(per_partition)
    assert bounded.partitions == len(per_partition)
    assert bounded.files > bounded.partitions


def test_buffer_budget_bounds_what_the_writer_holds(tmp_path: Path) -> None:
    """``max_buffer_bytes`` bounds the input the writer holds at once (buffered plus being
    written) to the budget plus one input batch; without a budget it holds nearly all of it.
    Counted by the writer (deterministic), not read from the process's resident memory, which
    varies between runs (peak memory is a benchmark's business)."""
    schema = pa.schema([pa.field("k", pa.int64()), pa.field("payload", pa.string())])
    spec = lp.PartitionSpec([lp.PartitionField("k", source="k", transform=lp.Identity())])
    pad = "x" * 200

    def batches() -> Iterator[pa.RecordBatch]:
        for i in range(40):  # 40 x 20k rows x ~210 bytes: ~170 MB in all
            ids = pa.array(range(i * 20_000, (i + 1) * 20_000), pa.int64())
            keys = pc.bit_wise_and(ids, 7)
            yield pa.record_batch([keys, pa.array([pad] * 20_000)], schema=schema)

    one = next(batches()).nbytes
    total = one * 40
    peaks = {}
    for name, budget in (("unbounded", 1 << 32), ("bounded", 32 << 20)):
        ns = lp.PartitionedNamespace.create(str(tmp_path / name), schema, spec)
        res = ns.write(
            pa.RecordBatchReader.from_batches(schema, batches()), max_buffer_bytes=budget
        )
        assert res.rows == 800_000, res
        peaks[name] = res.peak_buffered_bytes
    assert peaks["bounded"] <= (32 << 20) + 2 * one, peaks
    assert peaks["unbounded"] >= 0.9 * total, (peaks, total)


def test_buffer_budget_bounds_one_batch_larger_than_the_budget(tmp_path: Path) -> None:
    """A single input batch several times the budget is routed a slice at a time: the writer
    holds at most about 1.25 x the budget, not the whole batch, and every row lands in its
    partition (counted against pyarrow's group-by of the input)."""
    schema = pa.schema([pa.field("k", pa.int64()), pa.field("payload", pa.string())])
    spec = lp.PartitionSpec([lp.PartitionField("k", source="k", transform=lp.Identity())])
    rows = 400_000
    ids = pa.array(range(rows), pa.int64())
    table = pa.table({"k": pc.bit_wise_and(ids, 7), "payload": pa.array(["y" * 200] * rows)})
    batch = table.combine_chunks().to_batches()[0]
    budget = 16 << 20
    assert batch.nbytes > 4 * budget
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema, spec)
    res = ns.write(batch, max_buffer_bytes=budget)
    assert res.peak_buffered_bytes <= 1.25 * budget + (1 << 20), res.peak_buffered_bytes
    expected = table.group_by("k").aggregate([("k", "count")]).sort_by("k")
    got = ns.to_table().group_by("k").aggregate([("k", "count")]).sort_by("k")
    assert got.equals(expected)


@pytest.mark.parametrize("distributed", [False, True])
def test_overwrite_all_of_no_rows_empties_the_namespace(tmp_path: Path, distributed: bool) -> None:
    import lance

    schema = pa.schema([("id", pa.int64()), ("p", pa.int64())])
    spec = lp.PartitionSpec([lp.PartitionField("p", source="p", transform=lp.Identity())])
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema=schema, spec=spec)
    ns.write(pa.table({"id": [1, 2, 3], "p": [1, 2, 2]}))
    if distributed:
        # No task saw a row (a complete-mode micro-batch whose result is empty).
        res = ns.distributed_write(mode="overwrite_all").commit([])
    else:
        res = ns.write(schema.empty_table(), mode="overwrite_all")
    assert res.dropped == 2
    assert ns.to_table().num_rows == 0
    manifest = lance.dataset(str(tmp_path / "ns" / "__manifest")).to_table()
    assert "table" not in manifest["object_type"].to_pylist()
    # Written again, it holds the new rows only.
    ns.write(pa.table({"id": [9], "p": [5]}))
    assert ns.to_table()["id"].to_pylist() == [9]
