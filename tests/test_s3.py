"""Namespaces on object storage: a real S3-compatible server (moto, on 127.0.0.1, started by
the ``s3_server`` fixture), reached through ``storage_options``."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from typed import raises_typed

import lance_partitioned as lp

pytestmark = pytest.mark.s3

WRITER = str(Path(__file__).parent / "ns_writer.py")
SECRET = "lp-test-secret-do-not-print"

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("country", pa.string()),
        pa.field("bucket_src", pa.int64()),
    ]
)
SPEC = lp.PartitionSpec(
    [
        lp.PartitionField("country", source="country", transform=lp.Identity()),
        lp.PartitionField("b", source="bucket_src", transform=lp.Bucket(2)),
    ]
)


def rows(ids: range, countries: list[str]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "country": pa.array([countries[i % len(countries)] for i in ids]),
            "bucket_src": pa.array([(i // 3) % 5 for i in ids], pa.int64()),
        }
    )


def create(uri: str, options: dict[str, str], mode: str = "strong") -> lp.PartitionedNamespace:
    return lp.PartitionedNamespace.create(
        uri, SCHEMA, SPEC, transaction_mode=mode, storage_options=options
    )  # type: ignore[arg-type]


def ids_of(ns: lp.PartitionedNamespace, filter: str | None = None) -> list[int]:
    return sorted(ns.to_table(filter=filter, columns=["id"])["id"].to_pylist())


def test_create_write_scan_prune(s3_uri: tuple[str, dict[str, str]], s3_server: Any) -> None:
    uri, options = s3_uri
    ns = create(uri, options)
    res = ns.write(rows(range(100), ["US", "FR", "DE"]))
    assert (res.rows, res.created) == (100, 6)
    assert ids_of(ns) == list(range(100))
    assert ids_of(ns, "country = 'FR'") == [i for i in range(100) if i % 3 == 1]
    parts = ns.partitions("country = 'FR'", with_rows=True)
    assert parts.num_rows == 2
    # Another handle (another process would do the same) sees it all.
    again = lp.PartitionedNamespace.open(uri, storage_options=options)
    assert ids_of(again) == list(range(100))
    # Everything lives in the bucket under the root; nothing on a local disk.
    bucket = uri.split("/")[2]
    keys = s3_server.keys(bucket, "ns/")
    assert any(k.startswith("ns/__manifest/") for k in keys)
    assert sum(1 for k in keys if k.endswith(".lance") and "/data/" in k) >= 6


def test_evolve_overwrite_delete_as_of(s3_uri: tuple[str, dict[str, str]]) -> None:
    uri, options = s3_uri
    ns = create(uri, options)
    ns.write(rows(range(60), ["US", "FR"]))
    v1 = ns.version
    ns.evolve(
        lp.PartitionSpec([lp.PartitionField("country", source="country", transform=lp.Identity())])
    )
    ns.write(rows(range(100, 130), ["US", "JP"]))
    assert ids_of(ns, "country = 'JP'") == [i for i in range(100, 130) if i % 2 == 1]
    # Dynamic overwrite replaces the partitions of the current spec it writes to.
    ns.write(rows(range(200, 210), ["JP"]), mode="overwrite")
    assert ids_of(ns, "country = 'JP'") == list(range(200, 210))
    assert ids_of(ns, "country = 'US'") == [i for i in range(60) if i % 2 == 0] + [
        i for i in range(100, 130) if i % 2 == 0
    ]
    d = ns.delete("id < 10")
    assert d.rows == 10
    assert 0 not in ids_of(ns)
    # Time travel: the first version still reads what it held.
    assert sorted(ns.snapshot(v1).to_table(columns=["id"])["id"].to_pylist()) == list(range(60))


def test_pylance_reads_the_leaves(s3_uri: tuple[str, dict[str, str]]) -> None:
    import lance

    uri, options = s3_uri
    ns = create(uri, options)
    ns.write(rows(range(40), ["US", "FR"]))
    total = 0
    for leaf in ns.partitions(with_rows=False).to_pylist():
        ds = lance.dataset(
            f"{uri}/{leaf['location']}", version=leaf["read_version"], storage_options=options
        )
        total += ds.count_rows()
    assert total == 40
    manifest = lance.dataset(f"{uri}/__manifest", storage_options=options)
    assert manifest.count_rows() >= 4


def test_cleanup_on_object_storage(s3_uri: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    uri, options = s3_uri
    ns = create(uri, options)
    ns.write(rows(range(50), ["US", "FR"]))
    # A write that dies after writing its fragments (SIGKILL) leaves files nobody reads.
    flag = tmp_path / "paused"
    env = dict(
        os.environ,
        LANCE_PARTITIONED_TEST_PAUSE=f"before_manifest_commit:{flag}",
        LP_STORAGE_OPTIONS=json.dumps(options),
    )
    with subprocess.Popen(
        [sys.executable, WRITER, uri, "1000", "50", "1", "US,DE"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    ) as p:
        deadline = time.time() + 120
        while not flag.exists():
            assert p.poll() is None, p.stderr.read() if p.stderr else ""
            assert time.time() < deadline
            time.sleep(0.05)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
    # Readers are unaffected; the next write succeeds.
    assert ns.refresh() is False
    assert ids_of(ns) == list(range(50))
    ns.write(rows(range(50, 60), ["US", "DE"]))
    assert ids_of(ns) == list(range(60))
    found = ns.cleanup(older_than=dt.timedelta(0), dry_run=True)
    assert len(found.orphans) == 1
    assert found.stale_files
    assert found.stale_versions
    done = ns.cleanup(older_than=dt.timedelta(0), retention_check=False)
    assert done.orphans == found.orphans
    assert done.files > 0
    again = ns.cleanup(older_than=dt.timedelta(0), dry_run=True)
    assert (again.orphans, again.stale_files, again.stale_versions) == ([], [], [])
    assert ids_of(ns) == list(range(60))


@pytest.mark.slow
def test_two_processes_append_concurrently(s3_uri: tuple[str, dict[str, str]]) -> None:
    _append_concurrently(*s3_uri)


@pytest.mark.slow
def test_two_processes_append_concurrently_on_seaweedfs(seaweedfs_server: Any) -> None:
    """The same race on a server that answers requests concurrently (moto serialises them),
    so the two writers' conditional puts truly overlap."""
    uri = f"s3://{seaweedfs_server.new_bucket()}/ns"
    _append_concurrently(uri, seaweedfs_server.options())


def test_seaweedfs_create_write_prune_and_conditional_writes(seaweedfs_server: Any) -> None:
    uri = f"s3://{seaweedfs_server.new_bucket()}/ns"
    options = seaweedfs_server.options()
    ns = create(uri, options)
    ns.write(rows(range(200), ["US", "FR"]))
    assert ids_of(ns, "country = 'FR'") == [i for i in range(200) if i % 2 == 1]
    assert (
        ns.partitions("country = 'FR'", with_rows=False).num_rows
        < ns.partitions(with_rows=False).num_rows
    )
    with pytest.raises(lp.StorageError, match="conditional writes"):
        create(
            f"s3://{seaweedfs_server.new_bucket()}/ns",
            {**options, "aws_conditional_put": "disabled"},
        )


def _append_concurrently(uri: str, options: dict[str, str]) -> None:
    ns = create(uri, options)
    n, rounds = 30, 6
    env = dict(os.environ, LP_STORAGE_OPTIONS=json.dumps(options))
    procs = [
        subprocess.Popen(
            [sys.executable, WRITER, uri, str(start), str(n), str(rounds), cs],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for start, cs in [(0, "US,FR,DE"), (1_000_000, "US,FR,JP")]
    ]
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        assert "done" in out
    ns.refresh()
    got = ids_of(ns)
    dupes = [k for k, c in Counter(got).items() if c > 1]
    assert not dupes, f"rows committed twice: {dupes[:10]}"
    expected = set(range(n * rounds)) | set(range(1_000_000, 1_000_000 + n * rounds))
    assert set(got) == expected
    parts = ns.partitions(with_rows=False)
    keys = list(zip(parts["country"].to_pylist(), parts["b"].to_pylist(), strict=True))
    assert len(keys) == len(set(keys)), "two partitions with the same values"


def test_distributed_write_carries_the_options(s3_uri: tuple[str, dict[str, str]]) -> None:
    import pickle

    uri, options = s3_uri
    ns = create(uri, options)
    dw = ns.distributed_write()
    assert dw.storage_options == options
    clone = pickle.loads(pickle.dumps(dw))
    assert clone.storage_options == options
    msgs = [clone.stage(rows(range(i * 10, i * 10 + 10), ["US", "FR"])) for i in range(3)]
    res = dw.commit(msgs)
    assert res.rows == 30
    assert ids_of(ns) == list(range(30))
    for shown in (repr(dw), repr(clone), repr(ns), repr(ns._ns)):
        assert SECRET not in shown, shown


def test_secrets_never_shown(s3_uri: tuple[str, dict[str, str]]) -> None:
    uri, options = s3_uri
    ns = create(uri, options)
    ns.write(rows(range(10), ["US"]))
    assert SECRET not in repr(ns)
    assert SECRET not in repr(ns._ns)
    assert SECRET not in ns.explain("country = 'US'")
    with raises_typed() as e:
        ns.scan(filter="no_such_column = 1")
    assert SECRET not in str(e.value)


def test_wrong_credentials_missing_bucket_unreachable_endpoint(
    s3_uri: tuple[str, dict[str, str]], s3_server: Any
) -> None:
    uri, options = s3_uri
    create(uri, options).write(rows(range(10), ["US"]))
    t0 = time.monotonic()
    # No namespace in a bucket that does not exist.
    with raises_typed() as e:
        lp.PartitionedNamespace.open("s3://lp-no-such-bucket/ns", storage_options=options)
    assert "lp-no-such-bucket" in str(e.value)
    # Nothing listens on this port: a typed error after bounded retries, not a hang.
    dead = {**options, "aws_endpoint": f"http://127.0.0.1:{_closed_port()}"}
    dead["client_max_retries"] = "1"
    dead["client_retry_timeout"] = "5"
    with raises_typed() as e:
        lp.PartitionedNamespace.open(uri, storage_options=dead)
    assert uri in str(e.value)
    assert SECRET not in str(e.value)
    assert time.monotonic() - t0 < 60


def test_wrong_credentials(tmp_path: Path) -> None:
    """Against a server that checks signatures: the right key works, a wrong secret gets a typed
    error naming the URI (and never the secret), quickly."""
    import s3_server

    server = s3_server.start_with_auth()
    try:
        uri = f"s3://{server.new_bucket()}/ns"
        options = server.options()
        create(uri, options).write(rows(range(10), ["US"]))
        wrong = {**options, "aws_secret_access_key": "not-the-secret-either"}
        t0 = time.monotonic()
        with pytest.raises(lp.StorageError) as e:
            lp.PartitionedNamespace.open(uri, storage_options=wrong)
        assert uri in str(e.value)
        assert "not-the-secret-either" not in str(e.value)
        assert options["aws_secret_access_key"] not in str(e.value)
        assert time.monotonic() - t0 < 60
        assert ids_of(lp.PartitionedNamespace.open(uri, storage_options=options)) == list(range(10))
    finally:
        server.stop()


def test_store_without_conditional_writes_is_refused(s3_server: Any) -> None:
    """A store configured without conditional writes could lose a commit to a concurrent
    writer: creating or writing there is refused before anything is committed."""
    uri = f"s3://{s3_server.new_bucket()}/ns"
    options = s3_server.options(aws_conditional_put="disabled")
    with pytest.raises(lp.StorageError) as e:
        create(uri, options)
    assert "conditional writes" in str(e.value)
    assert uri.split("/ns")[0] in str(e.value)
    assert not any("__manifest" in k for k in s3_server.keys(uri.split("/")[2]))


def test_demo_refuses_an_existing_namespace_on_object_storage(
    s3_uri: tuple[str, dict[str, str]], capsys: Any
) -> None:
    from lance_partitioned import demo

    uri, options = s3_uri
    create(uri, options)
    opts = [f"--storage-option={k}={v}" for k, v in options.items()]
    assert demo.main(["--uri", uri, *opts]) == 2
    assert "already holds a namespace" in capsys.readouterr().err
    assert demo.main(["--uri", uri, "--replace", *opts]) == 2
    assert "local directories only" in capsys.readouterr().err


def _closed_port() -> int:
    import s3_server

    return s3_server.free_port()


@pytest.mark.spark
def test_spark_on_object_storage_never_shows_secrets(
    spark: Any, s3_uri: tuple[str, dict[str, str]]
) -> None:
    import lance_partitioned.spark as lps

    uri, options = s3_uri
    df = spark.createDataFrame(rows(range(50), ["US", "FR"]).to_pandas())
    res = lps.write(df, uri, spec=SPEC, storage_options=options)
    assert res.rows == 50
    read = lps.read(spark, uri, "country = 'FR'", storage_options=options)
    assert sorted(r[0] for r in read.select("id").collect()) == list(range(1, 50, 2))
    single = spark.read.format(lps.FORMAT)
    for k, v in options.items():
        single = single.option(k, v)
    single_df = single.load(uri).filter("country = 'US'")
    assert single_df.count() == 25
    for frame in (read, single_df):
        plan = frame._jdf.queryExecution().toString()
        assert SECRET not in plan, plan


def test_repair_on_object_storage(s3_uri: tuple[str, dict[str, str]]) -> None:
    """Another tool rewrites ``__manifest`` in the bucket with its five columns only: reads
    still work, writes refuse until ``repair()`` restores the columns there."""
    import lance

    uri, options = s3_uri
    ns = create(uri, options)
    ns.write(rows(range(40), ["US", "FR"]))
    before = ns.partitions().sort_by("object_id")
    m = ns.snapshot().manifest()
    five = m.select(["object_id", "object_type", "location", "metadata", "base_objects"])
    lance.write_dataset(five, f"{uri}/__manifest", mode="overwrite", storage_options=options)
    again = lp.PartitionedNamespace.open(uri, storage_options=options)
    assert "read_version" in again.missing_columns
    assert ids_of(again, "country = 'US'") == list(range(0, 40, 2))
    with pytest.raises(lp.CorruptNamespaceError, match="repair"):
        again.write(rows(range(100, 101), ["US"]))
    assert "read_version" in again.repair()
    assert again.missing_columns == []
    after = again.partitions().sort_by("object_id").select(before.column_names)
    assert after.equals(before)
    again.write(rows(range(100, 110), ["US"]))
    assert len(ids_of(again)) == 50


def test_commits_check_staged_files_only_after_a_cleanup(
    s3_uri: tuple[str, dict[str, str]], s3_server: Any
) -> None:
    """A commit asks the store about each staged file (a HEAD each) only when a deleting
    cleanup started since the staging did: otherwise no cleanup can have removed them."""
    uri, options = s3_uri
    ns = create(uri, options)
    ns.write(rows(range(10), ["US"]))
    mark = s3_server.log_mark()
    ns.write(rows(range(10, 70), ["US", "FR", "DE"]))
    assert s3_server.requests(mark, "/data/")["HEAD"] == 0
    # A dry run removes nothing and leaves no mark.
    dw = ns.distributed_write()
    msg = dw.stage(rows(range(70, 80), ["US", "JP"]))
    ns.cleanup(dry_run=True)
    mark = s3_server.log_mark()
    dw.commit([msg])
    assert s3_server.requests(mark, "/data/")["HEAD"] == 0
    # A deleting cleanup (here one that finds nothing old enough) started after the staging:
    # the commit checks every staged file.
    dw = ns.distributed_write()
    msg = dw.stage(rows(range(80, 90), ["US", "JP"]))
    ns.cleanup()
    mark = s3_server.log_mark()
    dw.commit([msg])
    assert s3_server.requests(mark, "/data/")["HEAD"] >= 2
    assert ids_of(ns) == list(range(90))
    # The marks live under _lance_partitioned/ (not a leaf: cleanup and readers ignore it).
    bucket = uri.split("/")[2]
    assert any(k.startswith("ns/_lance_partitioned/cleanups/") for k in s3_server.keys(bucket))


def test_writes_on_object_storage_default_to_more_concurrency() -> None:
    from lance_partitioned.options import write_concurrency

    assert write_concurrency("s3://b/ns", None) == 64
    assert write_concurrency("gs://b/ns", None) == 64
    assert write_concurrency("az://c/ns", None) == 64
    assert write_concurrency("/data/ns", None) == 8
    assert write_concurrency("file:///data/ns", None) == 8
    assert write_concurrency("memory://ns", None) == 8
    assert write_concurrency("s3://b/ns", 3) == 3


def test_a_new_partition_costs_three_requests(
    s3_uri: tuple[str, dict[str, str]], s3_server: Any
) -> None:
    """A new leaf is written with three PUTs (data file, transaction file, version manifest)
    and nothing else: no listing to see whether it exists (its location is fresh and random;
    the create-only manifest put refuses an existing one) and no version hint file."""
    uri, options = s3_uri
    ns = create(uri, options)
    ns.write(rows(range(10), ["US"]))
    mark = s3_server.log_mark()
    res = ns.write(rows(range(10, 70), ["FR", "DE", "JP"]))
    assert res.created == 6  # 3 countries x 2 buckets
    leaves = s3_server.requests(mark, "dataset")
    assert leaves == {"PUT": 3 * 6}, leaves
    assert ids_of(ns, "country = 'JP'") == list(range(11, 70, 3))
