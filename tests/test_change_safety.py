"""Every change as safe as a write: schema updates from stale handles, spec evolutions racing
each other and schema changes, cleanup racing a commit, -0.0 partitions, writes fed by our own
scans. Each test names the failure it guards against; the expected answers come from the
input data (pyarrow), never from the namespace under test."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from races import (
    check_consistent,
    make_ns,
    paused_writer,
    python_child,
    resume,
    rows,
    wait_for_pause,
)

import lance_partitioned as lp

# A child process running one change against ROOT (argv[1]); it prints the result.
CHANGE = """
import sys, pyarrow as pa, lance_partitioned as lp
root, what, arg = sys.argv[1:4]
ns = lp.PartitionedNamespace.open(root)
try:
    if what == "add":
        ns.add_columns([pa.field(arg, pa.int64())])
        print("ok")
    elif what == "drop":
        ns.drop_columns(arg)
        print("ok")
    elif what == "evolve":
        spec = lp.PartitionSpec([
            *ns.spec.fields,
            lp.PartitionField("f_" + arg, source=arg, transform=lp.Bucket(4)),
        ])
        print(ns.evolve(spec))
except lp.LancePartitionedError as e:
    print(type(e).__name__)
"""


def change(root: Path, what: str, arg: str, pause: Path | None = None) -> subprocess.Popen[str]:
    point = None if pause is None else f"before_root_commit:{pause}"
    return python_child(["-c", CHANGE, str(root), what, arg], point)


def result(p: subprocess.Popen[str], flag: Path | None = None) -> str:
    if flag is not None:
        resume(p, flag)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert "panic" not in err.lower(), err
    return out.strip()


def test_a_stale_handle_adds_its_column_without_dropping_anothers(tmp_path: Path) -> None:
    """Two handles opened before either adds a column: the second add keeps the first's
    column and the values written into it (it used to send its cached schema plus its field,
    which dropped the other column)."""
    ns = make_ns(tmp_path / "ns")
    h1 = lp.PartitionedNamespace.open(ns.root)
    h2 = lp.PartitionedNamespace.open(ns.root)
    h1.add_columns([pa.field("c1", pa.int64())])
    data = rows(0, 30).append_column("c1", pa.array(range(100, 130), pa.int64()))
    h1.write(data)
    h2.add_columns([pa.field("c2", pa.string())])
    latest = lp.PartitionedNamespace.open(ns.root)
    assert latest.schema.names == ["id", "country", "bucket_src", "c1", "c2"]
    got = latest.to_table(columns=["id", "c1", "c2"]).sort_by("id")
    assert got["c1"].to_pylist() == data["c1"].to_pylist()
    assert got["c2"].null_count == 30


def test_a_stale_handle_cannot_undo_a_concurrent_rename(tmp_path: Path) -> None:
    ns = make_ns(tmp_path / "ns")
    h1 = lp.PartitionedNamespace.open(ns.root)
    h2 = lp.PartitionedNamespace.open(ns.root)
    h1.rename_column("bucket_src", "src")
    # h2 changes the same column from what it read: a conflict, nothing changes
    with pytest.raises(lp.CommitConflictError, match="bucket_src"):
        h2.update_schema(
            pa.schema([f.with_name("bs") if f.name == "bucket_src" else f for f in h2.schema])
        )
    # h2 changes another column: the rename stays
    h2.update_schema(pa.schema([*h2.schema, pa.field("note", pa.string())]))
    assert lp.PartitionedNamespace.open(ns.root).schema.names == [
        "id",
        "country",
        "src",
        "note",
    ]


def test_evolutions_racing_get_distinct_spec_ids(tmp_path: Path) -> None:
    """An evolution paused after it planned spec v2 while another commits v2: the paused one
    plans again and becomes v3; both specs exist and data written under each reads back."""
    ns = make_ns(tmp_path / "ns")
    ns.add_columns([pa.field("a", pa.int64()), pa.field("b", pa.int64())])
    flag = tmp_path / "paused"
    p = change(tmp_path / "ns", "evolve", "a", pause=flag)
    wait_for_pause(p, flag)
    mine = lp.PartitionedNamespace.open(ns.root)
    spec_b = lp.PartitionSpec(
        [*mine.spec.fields, lp.PartitionField("f_b", source="b", transform=lp.Bucket(4))]
    )
    assert mine.evolve(spec_b) == 2
    assert result(p, flag) == "3"
    final = lp.PartitionedNamespace.open(ns.root)
    assert sorted(final.specs) == [1, 2, 3]
    assert [f.field_id for f in final.spec.fields][-1] == "f_a"
    assert [f["field_id"] for f in final.specs[2]["fields"]][-1] == "f_b"
    data = rows(0, 40).append_column("a", pa.array(range(40), pa.int64()))
    data = data.append_column("b", pa.array(range(40), pa.int64()))
    final.write(data)
    assert final.to_table().num_rows == 40


def test_evolve_on_a_column_a_concurrent_change_drops_fails_typed(tmp_path: Path) -> None:
    ns = make_ns(tmp_path / "ns")
    ns.add_columns([pa.field("a", pa.int64())])
    flag = tmp_path / "paused"
    p = change(tmp_path / "ns", "evolve", "a", pause=flag)
    wait_for_pause(p, flag)
    lp.PartitionedNamespace.open(ns.root).drop_columns("a")
    assert result(p, flag) == "SpecError"
    final = lp.PartitionedNamespace.open(ns.root)
    assert sorted(final.specs) == [1]
    final.write(rows(0, 10))
    assert final.to_table().num_rows == 10


def test_drop_of_a_column_a_concurrent_evolution_partitions_by_fails_typed(
    tmp_path: Path,
) -> None:
    ns = make_ns(tmp_path / "ns")
    ns.add_columns([pa.field("a", pa.int64())])
    flag = tmp_path / "paused"
    p = change(tmp_path / "ns", "drop", "a", pause=flag)
    wait_for_pause(p, flag)
    mine = lp.PartitionedNamespace.open(ns.root)
    mine.evolve(
        lp.PartitionSpec(
            [*mine.spec.fields, lp.PartitionField("f_a", source="a", transform=lp.Bucket(4))]
        )
    )
    assert result(p, flag) == "SchemaMismatchError"
    final = lp.PartitionedNamespace.open(ns.root)
    assert "a" in final.schema.names
    final.write(rows(0, 10).append_column("a", pa.array(range(10), pa.int64())))
    assert final.to_table().num_rows == 10


def test_processes_adding_columns_and_evolving_at_once_lose_nothing(tmp_path: Path) -> None:
    """Six processes add a column each while three evolve on pre-made columns, all at once:
    every column and every spec version lands, with distinct ids."""
    ns = make_ns(tmp_path / "ns")
    ns.add_columns([pa.field(f"e{i}", pa.int64()) for i in range(3)])
    procs = [change(tmp_path / "ns", "add", f"c{i}") for i in range(6)]
    procs += [change(tmp_path / "ns", "evolve", f"e{i}") for i in range(3)]
    outs = [result(p) for p in procs]
    assert outs[:6] == ["ok"] * 6
    ids = outs[6:]
    assert sorted(ids) == ["2", "3", "4"], outs
    final = lp.PartitionedNamespace.open(ns.root)
    assert {f"c{i}" for i in range(6)} <= set(final.schema.names)
    assert sorted(final.specs) == [1, 2, 3, 4]
    sources = {f["field_id"] for s in final.specs.values() for f in s["fields"]}
    assert {"f_e0", "f_e1", "f_e2"} <= sources
    history = final.history()
    assert history.num_rows > 0


def test_cleanup_keeps_a_retention_floor(tmp_path: Path) -> None:
    ns = make_ns(tmp_path / "ns")
    ns.write(rows(0, 10))
    with pytest.raises(lp.InvalidArgumentError, match="retention"):
        ns.cleanup(older_than=dt.timedelta(minutes=59))
    ns.cleanup(older_than=dt.timedelta(0), dry_run=True)
    ns.cleanup(older_than=dt.timedelta(hours=1))
    ns.cleanup(older_than=dt.timedelta(0), retention_check=False)
    assert ns.to_table().num_rows == 10


def test_cleanup_during_a_commit_fails_the_commit_not_the_namespace(tmp_path: Path) -> None:
    """A write paused after its leaf commits, before its manifest commit; a cleanup with no
    grace period removes what it committed. The write must fail typed with nothing visible,
    and the namespace stay readable and writable (it used to commit, and every later read
    failed on a missing version)."""
    ns = make_ns(tmp_path / "ns")
    ns.write(rows(0, 60))
    before = ns.snapshot().version
    flag = tmp_path / "paused"
    p = paused_writer(tmp_path / "ns", flag, "before_manifest_commit", 1000, 60, "US,FR,JP")
    wait_for_pause(p, flag)
    done = ns.cleanup(older_than=dt.timedelta(0), retention_check=False)
    assert done.orphans or done.stale_versions, "the cleanup removed nothing of the write"
    flag.unlink()
    _, err = p.communicate(timeout=300)
    assert p.returncode != 0
    assert "CommitConflictError" in err, err
    assert "panic" not in err.lower()
    reopened = lp.PartitionedNamespace.open(ns.root)
    assert reopened.snapshot().version > before  # only the cleanup fence commits landed
    check_consistent(reopened, set(range(60)))
    reopened.write(rows(2000, 30))
    check_consistent(reopened, set(range(60)) | set(range(2000, 2030)))


def test_zero_and_negative_zero_partitions_match_sql_equality(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("x", pa.float64())])
    spec = lp.PartitionSpec([lp.PartitionField("x", source="x", transform=lp.Identity())])
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema, spec)
    data = pa.table(
        {
            "id": pa.array(range(6), pa.int64()),
            "x": pa.array([0.0, -0.0, 1.5, -1.5, 0.0, -0.0], pa.float64()),
        }
    )
    ns.write(data)
    assert ns.partitions().num_rows == 4  # 0.0 and -0.0 are distinct partition values
    for sql, mask in [
        ("x = 0.0", pc.equal(data["x"], 0.0)),
        ("x = -0.0", pc.equal(data["x"], -0.0)),
        ("x <= -0.0", pc.less_equal(data["x"], -0.0)),
        ("x >= 0.0", pc.greater_equal(data["x"], 0.0)),
        ("x IN (0.0)", pc.equal(data["x"], 0.0)),
    ]:
        want = sorted(data.filter(mask)["id"].to_pylist())
        assert len(want) >= 4 or sql.startswith("x <=") or sql.startswith("x >=")
        assert sorted(ns.to_table(sql)["id"].to_pylist()) == want, sql
    kept = ns.partitions("x = 0.0")
    assert kept.num_rows == 2
    ns.delete("x = 0.0")
    left = data.filter(pc.invert(pc.equal(data["x"], 0.0)))
    assert sorted(ns.to_table()["id"].to_pylist()) == sorted(left["id"].to_pylist())


def test_a_write_can_read_from_our_own_scans(tmp_path: Path) -> None:
    src = make_ns(tmp_path / "src")
    src.write(rows(0, 500))
    dst = make_ns(tmp_path / "dst")
    dst.write(src.scan())
    check_consistent(dst, set(range(500)))
    # overwrite a namespace from its own scan: the scan reads the snapshot before the write
    dst.write(dst.scan("country = 'US'"), mode="overwrite_all")
    want = rows(0, 500).filter(pc.equal(rows(0, 500)["country"], "US"))
    assert sorted(dst.to_table()["id"].to_pylist()) == sorted(want["id"].to_pylist())

    def batches() -> Any:
        # a generator that calls the library while the write pulls from it
        for b in src.scan().read_all().to_batches(max_chunksize=100):
            assert src.partitions().num_rows > 0
            yield b

    third = make_ns(tmp_path / "third")
    third.write(pa.RecordBatchReader.from_batches(rows(0, 1).schema, batches()))
    check_consistent(third, set(range(500)))


# A child process committing the messages in files argv[2:] to the weak namespace argv[1].
COMMIT = """
import sys, lance_partitioned as lp
root, *files = sys.argv[1:]
msgs = [open(f, "rb").read() for f in files]
r = lp.DistributedWrite(root, "append", transaction_mode="weak").commit(msgs)
print(r.already_committed, r.rows)
"""


def test_weak_commits_of_the_same_messages_at_once_store_rows_once(tmp_path: Path) -> None:
    """Three processes commit the same staged messages of a weak-mode write at the same time:
    the rows land once, and exactly one commit reports doing it (the others' leaf check and
    commit used to interleave, storing the rows twice)."""
    ns = make_ns(tmp_path / "ns", transaction_mode="weak")
    ns.write(rows(0, 30))  # existing partitions: the appends go to committed leaves
    dw = ns.distributed_write()
    files = []
    for k, start in enumerate((1000, 2000)):
        f = tmp_path / f"m{k}"
        f.write_bytes(dw.stage(rows(start, 300)))
        files.append(str(f))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", COMMIT, ns.root, *files],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    outs = [result(p) for p in procs]
    assert sorted(o.split()[0] for o in outs) == ["False", "True", "True"], outs
    check_consistent(
        lp.PartitionedNamespace.open(ns.root),
        set(range(30)) | set(range(1000, 1300)) | set(range(2000, 2300)),
    )


def test_weak_rewrite_after_a_schema_change_never_erases_a_concurrent_append(
    tmp_path: Path,
) -> None:
    """Weak mode: an append to a partition written under an older schema rewrites it. When
    another append lands on that partition meanwhile, the rewrite must not replace its rows:
    it fails typed (nothing of it visible) and the other append's rows stay."""
    ns = make_ns(tmp_path / "ns", transaction_mode="weak")
    ns.write(rows(0, 30))
    ns.add_columns([pa.field("note", pa.string())])
    # the rewriting write pauses after staging, before its leaf commits
    flag = tmp_path / "paused"
    p = paused_writer(tmp_path / "ns", flag, "after_fragments", 1000, 30, "US,FR,DE")
    wait_for_pause(p, flag)
    other = lp.PartitionedNamespace.open(ns.root)
    other.write(rows(2000, 30).append_column("note", pa.array(["x"] * 30)))
    flag.unlink()
    _, err = p.communicate(timeout=300)
    final = lp.PartitionedNamespace.open(ns.root)
    ids = set(final.to_table(columns=["id"])["id"].to_pylist())
    assert set(range(30)) | set(range(2000, 2030)) <= ids, "rows of a committed append lost"
    if p.returncode != 0:
        assert "CommitConflictError" in err or "PartialCommitError" in err, err
        assert "panic" not in err.lower()
    check_consistent(final, ids)


@pytest.mark.parametrize(
    "field",
    [
        lp.PartitionField("s", source="s", transform=lp.Identity()),
        lp.PartitionField("arr", source=["a", "b"], expression="make_array(col0, col1)"),
        lp.PartitionField("st", source=["a", "b"], expression="named_struct('x', col0, 'y', col1)"),
    ],
    ids=["identity-of-struct", "make_array", "named_struct"],
)
def test_create_refuses_specs_no_write_can_satisfy(tmp_path: Path, field: Any) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("s", pa.struct([("x", pa.int64())])),
            pa.field("a", pa.int64()),
            pa.field("b", pa.int64()),
        ]
    )
    with pytest.raises((lp.SpecError, lp.ExpressionError)):
        lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema, lp.PartitionSpec([field]))
    with pytest.raises(lp.NamespaceNotFoundError):
        lp.PartitionedNamespace.open(str(tmp_path / "ns"))
    # and evolve refuses them too
    ok = lp.PartitionSpec([lp.PartitionField("a", source="a", transform=lp.Identity())])
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ok"), schema, ok)
    with pytest.raises((lp.SpecError, lp.ExpressionError)):
        ns.evolve(lp.PartitionSpec([*ok.fields, field]))
    assert sorted(ns.specs) == [1]


def test_cleanup_between_a_commits_check_and_its_commit_is_fenced(tmp_path: Path) -> None:
    """The race the check alone cannot close: a write has checked that its files exist and is
    about to commit (paused there) when a cleanup with no grace period removes them. The
    cleanup's fence (it rewrites every partition row before deleting) makes that commit
    conflict, so the write plans again, finds its files gone, and fails typed; the namespace
    stays readable (without the fence the write commits a manifest naming missing files)."""
    ns = make_ns(tmp_path / "ns")
    ns.write(rows(0, 60))
    before = ns.snapshot().version
    flag = tmp_path / "paused"
    p = paused_writer(tmp_path / "ns", flag, "before_manifest_apply", 1000, 60, "US,FR,JP")
    wait_for_pause(p, flag)
    done = ns.cleanup(older_than=dt.timedelta(0), retention_check=False)
    assert done.orphans or done.stale_versions, "the cleanup removed nothing of the write"
    resume(p, flag)
    _, err = p.communicate(timeout=300)
    assert p.returncode != 0
    assert "CommitConflictError" in err, err
    reopened = lp.PartitionedNamespace.open(ns.root)
    check_consistent(reopened, set(range(60)))
    for entry in reopened.history().to_pylist():
        if entry["operation"] != "create_namespace":  # before the first spec property
            reopened.to_table(columns=["id"], as_of=entry["version"])
    assert before < reopened.snapshot().version  # the fence's own commits
    reopened.write(rows(2000, 30))
    check_consistent(reopened, set(range(60)) | set(range(2000, 2030)))


def test_view_large_and_dictionary_types_behave_as_plain_ones(tmp_path: Path) -> None:
    """A namespace created from a polars/Parquet-style schema (string_view, binary_view, a
    dictionary, PARQUET:field_id metadata) stores the plain types, so an append is an append
    (it used to rewrite the whole partition), partitions() and pruning work on a string_view
    partition column, and large types are accepted beside plain ones."""
    parquet_id = {b"PARQUET:field_id": b"7"}
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False, metadata=parquet_id),
            pa.field("country", pa.string_view()),
            pa.field("tag", pa.dictionary(pa.int32(), pa.string())),
            pa.field("blob", pa.binary_view()),
            pa.field("note", pa.large_string()),
        ]
    )
    spec = lp.PartitionSpec(
        [lp.PartitionField("country", source="country", transform=lp.Identity())]
    )
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema, spec)
    stored = ns.schema
    assert stored.field("country").type == pa.string()
    assert stored.field("tag").type == pa.string()
    assert stored.field("blob").type == pa.binary()
    assert stored.field("note").type == pa.large_string()
    assert all(b"PARQUET:field_id" not in (f.metadata or {}) for f in stored)

    def batch(start: int, n: int) -> pa.Table:
        ids = list(range(start, start + n))
        return pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "country": pa.array([["US", "FR"][i % 2] for i in ids], pa.string_view()),
                "tag": pa.array([f"t{i % 3}" for i in ids]).dictionary_encode(),
                "blob": pa.array([b"x" * (i % 5) for i in ids], pa.binary_view()),
                "note": pa.array([str(i) for i in ids], pa.large_string()),
            },
            schema=schema,
        )

    ns.write(batch(0, 5000))
    again = ns.write(batch(5000, 100))
    assert again.rewritten == 0
    assert again.bytes < 200_000, again.bytes  # an append, not a rewrite of 5000 rows
    parts = ns.partitions()
    assert sorted(parts["country"].to_pylist()) == ["FR", "US"]
    assert parts.schema.field("country").type == pa.string()
    us = ns.to_table("country = 'US'")
    assert us.num_rows == 2550
    assert set(us["country"].to_pylist()) == {"US"}
    assert ns.partitions("country = 'US'").num_rows == 1
    # the values come back as written (as plain strings and binaries)
    got = ns.to_table().sort_by("id")
    want = batch(0, 5100)
    assert got["tag"].to_pylist() == want["tag"].to_pylist()
    assert got["blob"].to_pylist() == want["blob"].to_pylist()
    assert got["note"].to_pylist() == want["note"].to_pylist()


def test_partitions_checks_and_prunes_pyarrow_expressions(tmp_path: Path) -> None:
    ns = make_ns(tmp_path / "ns")
    data = rows(0, 60)
    ns.write(data)
    for call in (ns.partitions, ns.scan):
        with pytest.raises(lp.ExpressionError):
            call(pc.field("no_such_column") == 1)
    us = ns.partitions(pc.field("country") == "US")
    # the oracle: every partition, filtered by pyarrow
    want = ns.partitions().filter(pc.field("country") == "US")
    assert sorted(us["object_id"].to_pylist()) == sorted(want["object_id"].to_pylist())
    assert 0 < us.num_rows < ns.partitions().num_rows
