"""Structured Streaming into a namespace: the data source's stream writer and the
``foreachBatch`` helpers (appends, upserts, change feeds) land every input row exactly once,
also when Spark runs a committed micro-batch again (its own record of the batch lost, as after
a driver crash between our commit and Spark's); partition explosions fail typed. Expected rows
come from pyarrow reading the input files, or from the changes applied in Python."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lance_partitioned as lp
import lance_partitioned.spark as lps
from lance_partitioned import _native

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("country", pa.string()),
        pa.field("amount", pa.float64()),
    ]
)
SPEC = lp.PartitionSpec(
    [
        lp.PartitionField("country", source="country", transform=lp.Identity()),
        lp.PartitionField("b", source="id", transform=lp.Bucket(4)),
    ]
)
FILES = 4
ROWS = 250


def input_files(folder: Path, files: int = FILES, first: int = 0) -> pa.Table:
    """Writes ``files`` parquet files of ROWS rows each; returns all their rows."""
    folder.mkdir(parents=True, exist_ok=True)
    tables = []
    for f in range(first, first + files):
        ids = list(range(f * ROWS, (f + 1) * ROWS))
        t = pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "country": [["US", "FR", "DE"][i % 3] for i in ids],
                "amount": [i / 4 for i in ids],
            },
            schema=SCHEMA,
        )
        pq.write_table(t, folder / f"part-{f:04d}.parquet")
        tables.append(t)
    return pa.concat_tables(tables)


def rows(table: pa.Table) -> list[tuple[Any, ...]]:
    t = table.select(SCHEMA.names)
    return sorted(zip(*(t[c].to_pylist() for c in SCHEMA.names), strict=True))


def source(spark: Any, folder: Path) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return (
        spark.readStream.schema(from_arrow_schema(SCHEMA))
        .option("maxFilesPerTrigger", 1)
        .parquet(str(folder))
    )


def create(uri: str, transaction_mode: str = "strong") -> None:
    lp.PartitionedNamespace.create(uri, SCHEMA, SPEC, transaction_mode=transaction_mode)


def run_sink(spark: Any, folder: Path, uri: str, checkpoint: Path) -> Any:
    q = (
        source(spark, folder)
        .writeStream.format(lps.FORMAT)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start(uri)
    )
    q.awaitTermination()
    return q


def run_foreach_batch(spark: Any, folder: Path, uri: str, checkpoint: Path) -> Any:
    results: list[lp.WriteResult] = []

    def each(batch: Any, epoch: int) -> None:
        results.append(lps.write_batch(batch, epoch, uri))

    q = (
        source(spark, folder)
        .writeStream.foreachBatch(each)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    q.results = results
    return q


def forget_last_batch(checkpoint: Path) -> int:
    """Removes Spark's record that the last batch committed (what a driver killed between
    our commit and Spark's leaves); returns that batch's id."""
    commits = sorted(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
    last = commits[-1]
    (checkpoint / "commits" / str(last)).unlink()
    crc = checkpoint / "commits" / f".{last}.crc"
    if crc.exists():
        crc.unlink()
    return last


@pytest.mark.parametrize("how", ["sink", "foreach_batch"])
def test_stream_lands_every_row_once_and_a_replayed_batch_commits_nothing(
    spark: Any, tmp_path: Path, how: str
) -> None:
    uri = str(tmp_path / "ns")
    create(uri)
    folder, checkpoint = tmp_path / "in", tmp_path / "cp"
    expected = input_files(folder)
    run = run_sink if how == "sink" else run_foreach_batch
    q = run(spark, folder, uri, checkpoint)
    ns = lp.PartitionedNamespace.open(uri)
    assert rows(ns.to_table()) == rows(expected)
    # One commit per micro-batch (one file each), each under its batch's write id.
    snap = _native.Namespace(uri, None).snapshot()
    for batch in range(FILES):
        assert snap.has_write(lps.stream_write_id(q.id, batch)), batch
    assert not snap.has_write(lps.stream_write_id(q.id, FILES))
    versions = ns.version
    # Spark forgets it committed the last batch and runs it again on restart: no new commit.
    last = forget_last_batch(checkpoint)
    assert last == FILES - 1
    q2 = run(spark, folder, uri, checkpoint)
    assert q2.id == q.id
    ns.refresh()
    assert rows(ns.to_table()) == rows(expected)
    assert ns.version == versions
    if how == "foreach_batch":
        assert [r.already_committed for r in q2.results] == [True]
    # New input after the restart lands once more.
    more = input_files(folder, 2, first=FILES)
    run(spark, folder, uri, checkpoint)
    ns.refresh()
    assert rows(ns.to_table()) == rows(pa.concat_tables([expected, more]))
    # The sink's shared plans are removed once their batch committed.
    plans = Path(uri) / "_lance_partitioned" / "plans"
    assert not plans.exists() or not list(plans.iterdir())


def counts_by_country(spark: Any, tmp_path: Path) -> tuple[str, Any, pa.Table]:
    """A namespace for rows counted per country (identity on ``country``), the streaming
    aggregation that counts the input files' rows per country, and the input rows."""
    from pyspark.sql import functions as F

    folder = tmp_path / "in"
    expected = input_files(folder)
    uri = str(tmp_path / "agg")
    schema = pa.schema([pa.field("country", pa.string()), pa.field("n", pa.int64())])
    spec = lp.PartitionSpec([lp.PartitionField("c", source="country", transform=lp.Identity())])
    lp.PartitionedNamespace.create(uri, schema, spec)
    counts = source(spark, folder).groupBy("country").agg(F.count("*").alias("n"))
    return uri, counts, expected


def check_counts(uri: str, expected: pa.Table) -> None:
    """The namespace holds pyarrow's count of ``expected``'s rows per country."""
    got = lp.PartitionedNamespace.open(uri).to_table()
    want = expected.group_by("country").aggregate([("id", "count")])
    assert sorted(zip(got["country"].to_pylist(), got["n"].to_pylist(), strict=True)) == sorted(
        zip(want["country"].to_pylist(), want["id_count"].to_pylist(), strict=True)
    )


def test_stream_complete_mode_replaces_the_namespace_each_batch(spark: Any, tmp_path: Path) -> None:
    """``complete`` output mode (an aggregation re-emitted whole every batch) commits as
    overwrite_all: the namespace holds exactly the last result."""
    checkpoint = tmp_path / "cp"
    uri, counts, expected = counts_by_country(spark, tmp_path)
    q = (
        counts.writeStream.format(lps.FORMAT)
        .outputMode("complete")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start(uri)
    )
    q.awaitTermination()
    check_counts(uri, expected)


def test_update_mode_goes_through_upsert_batch(spark: Any, tmp_path: Path) -> None:
    """Spark refuses ``update`` output mode for every Python data source (its write builder
    takes no updates as appends), before any batch; the same aggregation in update mode lands
    through ``foreachBatch`` with ``upsert_batch`` keyed by the grouping column: the namespace
    holds the final counts."""
    uri, counts, expected = counts_by_country(spark, tmp_path)
    q = (
        counts.writeStream.format(lps.FORMAT)
        .outputMode("update")
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start(uri)
    )
    with pytest.raises(Exception, match="does not support Update mode"):
        q.awaitTermination()
    assert lp.PartitionedNamespace.open(uri).to_table().num_rows == 0

    def each(batch: Any, epoch: int) -> None:
        lps.upsert_batch(batch, epoch, uri, on="country")

    q = (
        counts.writeStream.outputMode("update")
        .foreachBatch(each)
        .option("checkpointLocation", str(tmp_path / "cp2"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    check_counts(uri, expected)


def test_stream_into_a_weak_namespace_is_refused_before_any_batch(
    spark: Any, tmp_path: Path
) -> None:
    uri = str(tmp_path / "weak")
    create(uri, transaction_mode="weak")
    folder = tmp_path / "in"
    input_files(folder, 1)
    with pytest.raises(Exception, match="strong mode"):
        run_sink(spark, folder, uri, tmp_path / "cp")
    with pytest.raises(Exception, match="strong mode"):
        run_foreach_batch(spark, folder, uri, tmp_path / "cp2")
    assert lp.PartitionedNamespace.open(uri).to_table().num_rows == 0


def test_a_stream_schema_mismatch_fails_typed_before_any_batch(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "ns")
    lp.PartitionedNamespace.create(uri, SCHEMA.remove(2), SPEC)  # no `amount` column
    folder = tmp_path / "in"
    input_files(folder, 1)
    with pytest.raises(Exception, match="amount"):
        run_sink(spark, folder, uri, tmp_path / "cp")
    assert lp.PartitionedNamespace.open(uri).to_table().num_rows == 0


def test_stream_write_ids_are_checked(tmp_path: Path) -> None:
    assert lps.stream_write_id("q", 3) == "stream:q:3"
    with pytest.raises(lp.InvalidArgumentError):
        lps.stream_write_id("", 3)
    with pytest.raises(lp.InvalidArgumentError):
        lps.stream_write_id("q", -1)
    uri = str(tmp_path / "ns")
    create(uri)
    snap = _native.Namespace(uri, None).snapshot()
    with pytest.raises(lp.InvalidArgumentError, match="1 to 512 bytes"):
        snap.has_write("x" * 513)
    shutil.rmtree(uri)


@pytest.mark.s3
def test_stream_into_the_s3_server_lands_every_row_once(
    spark: Any, tmp_path: Path, s3_uri: tuple[str, dict[str, str]]
) -> None:
    """The sink on object storage (the batches' shared plans are create-only puts there):
    every row once, also when Spark runs the last batch again."""
    import json

    uri, options = s3_uri
    lp.PartitionedNamespace.create(
        uri, SCHEMA, SPEC, storage_options=options, transaction_mode="strong"
    )
    folder, checkpoint = tmp_path / "in", tmp_path / "cp"
    expected = input_files(folder, 3)

    def run() -> Any:
        q = (
            source(spark, folder)
            .writeStream.format(lps.FORMAT)
            .option("checkpointLocation", str(checkpoint))
            .option("storage_options", json.dumps(options))
            .trigger(availableNow=True)
            .start(uri)
        )
        q.awaitTermination()
        return q

    q = run()
    ns = lp.PartitionedNamespace.open(uri, storage_options=options)
    assert rows(ns.to_table()) == rows(expected)
    version = ns.version
    forget_last_batch(checkpoint)
    assert run().id == q.id
    ns.refresh()
    assert rows(ns.to_table()) == rows(expected)
    assert ns.version == version


def change_files(folder: Path) -> list[pa.Table]:
    """Three change files (one micro-batch each): inserts of ids 0..299, then updates and
    deletes, then updates again; columns of SCHEMA plus ``seq`` and ``op``."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    steps = [
        [(i, "I") for i in range(300)],
        [(i, "U") for i in range(100)] + [(i, "D") for i in range(250, 300)],
        [(i, "U") for i in range(0, 300, 7) if i < 250] + [(260, "I")],
    ]
    for seq, changes in enumerate(steps):
        t = pa.table(
            {
                "id": pa.array([i for i, _ in changes], pa.int64()),
                "country": [["US", "FR", "DE"][i % 3] for i, _ in changes],
                "amount": [i + 1000.0 * seq for i, _ in changes],
                "seq": pa.array([seq] * len(changes), pa.int64()),
                "op": [op for _, op in changes],
            }
        )
        pq.write_table(t, folder / f"part-{seq:04d}.parquet")
        out.append(t)
    return out


def apply_model(changes: list[pa.Table], deletes: bool) -> list[tuple[Any, ...]]:
    """The namespace a change feed leaves, computed row by row in Python (deletes ignored
    for an upsert-only sink)."""
    state: dict[int, tuple[Any, ...]] = {}
    for t in changes:
        for r in t.to_pylist():
            if r["op"] == "D":
                if deletes:
                    state.pop(r["id"], None)
            else:
                state[r["id"]] = (r["id"], r["country"], r["amount"])
    return sorted(state.values())


def test_stream_cdc_and_upserts_apply_each_batch_once(spark: Any, tmp_path: Path) -> None:
    """``update`` output mode and CDC through ``foreachBatch``: every batch's changes land
    once (expected rows: the changes applied in Python); a batch Spark runs again after
    losing its record changes nothing and commits nothing."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    cdc, upserts = str(tmp_path / "cdc"), str(tmp_path / "up")
    create(cdc)
    create(upserts)
    folder, checkpoint = tmp_path / "in", tmp_path / "cp"
    changes = change_files(folder)
    schema = pa.schema([*SCHEMA, pa.field("seq", pa.int64()), pa.field("op", pa.string())])
    results: list[tuple[bool, bool]] = []

    def each(batch: Any, epoch: int) -> None:
        a = lps.apply_changes_batch(batch, epoch, cdc, "id", "seq")
        rows_ = batch.where(F.col("op") != "D").select(*SCHEMA.names)
        b = lps.upsert_batch(rows_, epoch, upserts, "id")
        results.append((a.already_committed, b.already_committed))

    def run() -> Any:
        q = (
            spark.readStream.schema(from_arrow_schema(schema))
            .option("maxFilesPerTrigger", 1)
            .parquet(str(folder))
            .writeStream.foreachBatch(each)
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination()
        return q

    q = run()
    assert results == [(False, False)] * 3
    got = {uri: lp.PartitionedNamespace.open(uri) for uri in (cdc, upserts)}
    assert rows(got[cdc].to_table()) == apply_model(changes, deletes=True)
    assert rows(got[upserts].to_table()) == apply_model(changes, deletes=False)
    versions = {uri: ns.version for uri, ns in got.items()}
    snap = _native.Namespace(cdc, None).snapshot()
    assert all(snap.has_write(lps.stream_write_id(q.id, b)) for b in range(3))
    forget_last_batch(checkpoint)
    results.clear()
    assert run().id == q.id
    assert results == [(True, True)]
    for uri, ns in got.items():
        ns.refresh()
        assert ns.version == versions[uri], uri
    assert rows(got[cdc].to_table()) == apply_model(changes, deletes=True)


def test_a_stream_exploding_into_partitions_fails_typed_and_commits_nothing(
    spark: Any, tmp_path: Path
) -> None:
    """A micro-batch that would create more partitions than ``max_new_partitions`` fails the
    query with the limit's error, in the sink and in ``foreachBatch``; nothing is committed."""
    uri = str(tmp_path / "ns")
    create(uri)
    folder = tmp_path / "in"
    input_files(folder, 1)  # 3 countries x 4 buckets: 12 new partitions in one batch
    q = (
        source(spark, folder)
        .writeStream.format(lps.FORMAT)
        .option("checkpointLocation", str(tmp_path / "cp"))
        .option("max_new_partitions", "5")
        .trigger(availableNow=True)
        .start(uri)
    )
    with pytest.raises(Exception, match="more than 5 new partitions") as e:
        q.awaitTermination()
    assert "max_new_partitions" in str(e.value)

    def each(batch: Any, epoch: int) -> None:
        lps.write_batch(batch, epoch, uri, max_new_partitions=5)

    q2 = (
        source(spark, folder)
        .writeStream.foreachBatch(each)
        .option("checkpointLocation", str(tmp_path / "cp2"))
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(Exception, match="more than 5 new partitions"):
        q2.awaitTermination()
    ns = lp.PartitionedNamespace.open(uri)
    assert ns.partitions().num_rows == 0
    assert ns.to_table().num_rows == 0
