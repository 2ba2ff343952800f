"""Regression tests for the edges where data could change silently, the process could crash,
or an error could escape our hierarchy (each test names the problem it guards)."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from typed import raises_typed

import lance_partitioned as lp
from lance_partitioned import snapshot

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("country", pa.string()),
        pa.field("n", pa.int64()),
        pa.field("day", pa.date32()),
    ]
)
SPEC = lp.PartitionSpec([lp.PartitionField("country", source="country", transform=lp.Identity())])


@pytest.fixture
def ns(tmp_path: Path) -> lp.PartitionedNamespace:
    return lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)


def rows(ids: list[int], country: str | None = "US", **cols: Any) -> pa.Table:
    data: dict[str, Any] = {
        "id": pa.array(ids, pa.int64()),
        "country": pa.array([country] * len(ids), pa.string()),
    }
    data.update(cols)
    return pa.table(data)


# -- 1. lossy casts ---------------------------------------------------------------------------


def test_lossy_float_to_int_is_refused(ns: lp.PartitionedNamespace) -> None:
    with pytest.raises(lp.SchemaMismatchError, match="would change"):
        ns.write(rows([1, 2], n=pa.array([1.5, 2.7])))
    assert ns.to_table().num_rows == 0
    ns.write(rows([1, 2], n=pa.array([1.0, -3.0])))  # exact values are fine
    assert sorted(ns.to_table()["n"].to_pylist()) == [-3, 1]


def test_timestamp_with_a_time_of_day_is_not_stored_as_a_date(ns: lp.PartitionedNamespace) -> None:
    late = pa.array([dt.datetime(2024, 5, 1, 23, 59)], pa.timestamp("us"))
    with pytest.raises(lp.SchemaMismatchError, match="day"):
        ns.write(rows([1], day=late))
    midnight = pa.array([dt.datetime(2024, 5, 1)], pa.timestamp("us"))
    ns.write(rows([1], day=midnight))
    assert ns.to_table()["day"].to_pylist() == [dt.date(2024, 5, 1)]


def test_a_duplicated_input_column_is_refused(ns: lp.PartitionedNamespace) -> None:
    t = pa.Table.from_arrays(
        [pa.array([1], pa.int64()), pa.array(["US"]), pa.array([5], pa.int64())],
        names=["id", "country", "id"],
    )
    with pytest.raises(lp.SchemaMismatchError, match="two columns named"):
        ns.write(t)


# -- 2. streams whose later batches change schema ---------------------------------------------


def test_later_batches_are_checked_on_their_own_types(ns: lp.PartitionedNamespace) -> None:
    first = rows([1], n=pa.array([1], pa.int64())).to_batches()[0]
    huge = rows([2], n=pa.array([2**63 + 1], pa.uint64())).to_batches()[0]
    with pytest.raises(lp.SchemaMismatchError):
        ns.write([first, huge])
    half = rows([2], n=pa.array([2.5])).to_batches()[0]
    with pytest.raises(lp.SchemaMismatchError):
        ns.write(iter([first, half]))
    # a lying RecordBatchReader is read batch by batch with each batch's real types
    liar = pa.RecordBatchReader.from_batches(first.schema, iter([first, half]))
    with pytest.raises(lp.SchemaMismatchError):
        ns.write(liar)
    assert ns.to_table().num_rows == 0
    exact = rows([2], n=pa.array([7.0])).to_batches()[0]
    fewer = rows([3]).to_batches()[0]  # no `n` column at all: NULL
    ns.write([first, exact, fewer])
    got = ns.to_table().sort_by("id")
    assert got["n"].to_pylist() == [1, 7, None]


def test_non_batches_in_an_iterable_raise_our_error(ns: lp.PartitionedNamespace) -> None:
    first = rows([1]).to_batches()[0]
    with pytest.raises(lp.InvalidArgumentError, match="item 1"):
        ns.write([first, {"id": 2}])


# -- 3./4. columns matched by field id -------------------------------------------------------


def test_a_dropped_column_never_comes_back(ns: lp.PartitionedNamespace) -> None:
    ns.add_columns([pa.field("secret", pa.string())])
    ns.write(rows([1, 2], secret=pa.array(["pii-1", "pii-2"])))
    ns.drop_columns(["secret"])
    ns.add_columns([pa.field("secret", pa.string())])
    t = ns.to_table()
    assert t["secret"].to_pylist() == [None, None]
    assert ns.to_table("secret = 'pii-1'").num_rows == 0
    assert ns.to_table("secret IS NULL").num_rows == 2
    # a delete by the new column never matches the old column's data: it deletes nothing
    assert ns.delete("secret = 'pii-1'").rows == 0
    assert ns.to_table().num_rows == 2
    # an append rewrites the old partition: the old values stay gone
    ns.write(rows([3], secret=pa.array(["new"])))
    got = ns.to_table().sort_by("id")
    assert got["secret"].to_pylist() == [None, None, "new"]


def test_rename_then_add_the_old_name(ns: lp.PartitionedNamespace) -> None:
    ns.write(rows([1, 2], n=pa.array([10, 20], pa.int64())))
    ns.rename_column("n", "m")
    ns.add_columns([pa.field("n", pa.string())])
    got = ns.to_table().sort_by("id")
    assert got["m"].to_pylist() == [10, 20]
    assert got["n"].to_pylist() == [None, None]
    ns.write(rows([3], m=pa.array([30], pa.int64()), n=pa.array(["x"])))
    got = ns.to_table().sort_by("id")
    assert got["m"].to_pylist() == [10, 20, 30]
    assert got["n"].to_pylist() == [None, None, "x"]
    assert ns.to_table("m = 20").num_rows == 1


# -- 5./6. foreign manifest rewrites ----------------------------------------------------------


def test_empty_string_and_null_partitions_survive_a_foreign_rewrite(tmp_path: Path) -> None:
    import lance.namespace as lance_namespace

    ns = lp.PartitionedNamespace.create(
        str(tmp_path / "weak"), SCHEMA, SPEC, transaction_mode="weak"
    )
    ns.write(rows([1, 2], country=""))
    ns.write(rows([3], country=None))
    ns.write(rows([4], country="US"))
    lance_namespace.DirectoryNamespace(root=ns.root).create_namespace(
        lance_namespace.CreateNamespaceRequest(id=["scratch"])
    )
    reopened = lp.PartitionedNamespace.open(ns.root)
    assert reopened.missing_columns
    assert reopened.to_table("country = ''").num_rows == 2
    assert reopened.to_table("country IS NULL").num_rows == 1
    # every mutating call refuses until repaired, evolve included
    with pytest.raises(lp.CorruptNamespaceError, match="repair"):
        reopened.evolve(
            lp.PartitionSpec(
                [lp.PartitionField("country", source="country", transform=lp.Truncate(1))]
            )
        )
    with pytest.raises(lp.CorruptNamespaceError, match="repair"):
        reopened.delete("id = 1")
    reopened.repair()
    again = lp.PartitionedNamespace.open(ns.root)
    assert again.to_table("country = ''").num_rows == 2
    assert again.to_table("country IS NULL").num_rows == 1
    assert again.partitions().num_rows == 3
    again.write(rows([5], country=""))
    assert again.partitions().num_rows == 3
    assert again.to_table("country = ''").num_rows == 3


# -- 7./9. distributed commits ----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["strong", "weak"])
def test_committing_a_write_twice_is_a_no_op(tmp_path: Path, mode: Any) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC, transaction_mode=mode)
    ns.write(rows([0], country="FR"))
    dw = ns.distributed_write()
    m1 = dw.stage(rows(list(range(1, 6)), country="US"))
    m2 = dw.stage(rows(list(range(6, 11)), country="FR"))
    r = dw.commit([m1, m2, m1])  # a message passed twice counts once
    assert r.rows == 10
    assert not r.already_committed
    again = dw.commit([m1, m2])
    assert again.already_committed
    ns.refresh()
    assert ns.to_table().num_rows == 11
    assert sorted(ns.to_table()["id"].to_pylist()) == list(range(11))


def test_commit_after_cleanup_removed_the_staged_files_fails_cleanly(
    ns: lp.PartitionedNamespace,
) -> None:
    ns.write(rows([0]))
    dw = ns.distributed_write()
    msg = dw.stage(rows([1, 2]))
    msg_new = dw.stage(rows([3], country="DE"))
    ns.cleanup(older_than=dt.timedelta(0), retention_check=False)
    with pytest.raises(lp.CommitConflictError, match="no longer exist"):
        dw.commit([msg, msg_new])
    ns.refresh()
    assert ns.to_table()["id"].to_pylist() == [0]
    ns.write(rows([4]))
    assert sorted(ns.to_table()["id"].to_pylist()) == [0, 4]


# -- 8. transaction modes ---------------------------------------------------------------------


def test_modes_cannot_be_mixed(ns: lp.PartitionedNamespace, tmp_path: Path) -> None:
    ns.write(rows([1]))
    with pytest.raises(lp.InvalidArgumentError, match="strong mode"):
        ns.write(rows([2]), transaction_mode="weak")
    with pytest.raises(lp.InvalidArgumentError, match="strong mode"):
        ns.delete("id = 1", transaction_mode="weak")
    ns.write(rows([3]), transaction_mode="strong")
    assert sorted(ns.to_table()["id"].to_pylist()) == [1, 3]
    weak = lp.PartitionedNamespace.create(
        str(tmp_path / "weak"), SCHEMA, SPEC, transaction_mode="weak"
    )
    weak.write(rows([1]))
    with pytest.raises(lp.InvalidArgumentError, match="weak mode"):
        weak.write(rows([2]), transaction_mode="strong")
    v = weak.version
    weak.write(rows([2]))
    with pytest.raises(lp.InvalidArgumentError, match="as_of"):
        weak.to_table(as_of=v)


# -- 10. deep and wide filters ----------------------------------------------------------------


def test_wide_filters_work_and_deep_ones_raise(ns: lp.PartitionedNamespace) -> None:
    ns.write(rows(list(range(100))))
    wide = " OR ".join(f"id = {i}" for i in range(10_000))
    assert ns.to_table(wide).num_rows == 100
    assert ns.partitions(wide).num_rows == 1
    assert "kept 1 of 1" in ns.explain(wide)
    wide_and = " AND ".join(f"id <> {i}" for i in range(5_000, 15_000))
    assert ns.to_table(wide_and).num_rows == 100
    deep = "id" + " + 1" * 6_000 + " > 0"
    for call in (ns.to_table, ns.partitions, ns.explain, ns.delete):
        with pytest.raises(lp.ExpressionError, match="levels deep"):
            call(deep)
    assert ns.delete(wide).rows == 100


# -- 11. what create() accepts ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "spec", "error"),
    [
        ([pa.field("", pa.int64())], None, lp.SchemaMismatchError),
        ([pa.field("a.b", pa.int64())], None, lp.SchemaMismatchError),
        ([pa.field("x", pa.int64()), pa.field("x", pa.int64())], None, lp.SchemaMismatchError),
        ([], lp.PartitionSpec([]), lp.SpecError),
        (
            [],
            lp.PartitionSpec(
                [lp.PartitionField("rows", source="country", transform=lp.Identity())]
            ),
            lp.SpecError,
        ),
        (
            [],
            lp.PartitionSpec(
                [lp.PartitionField("object_id", source="country", transform=lp.Identity())]
            ),
            lp.SpecError,
        ),
    ],
)
def test_create_refuses_what_could_never_be_written(
    tmp_path: Path, fields: list[pa.Field[Any]], spec: lp.PartitionSpec | None, error: type
) -> None:
    schema = pa.schema([*SCHEMA, *fields])
    with pytest.raises(error):
        lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema, spec or SPEC)
    assert not (tmp_path / "ns" / "__manifest").exists()


def test_create_refuses_an_empty_root() -> None:
    with pytest.raises(lp.InvalidArgumentError):
        lp.PartitionedNamespace.create("", SCHEMA, SPEC)


# -- 12. partition explosion ------------------------------------------------------------------


def test_a_write_creating_too_many_partitions_is_refused(tmp_path: Path) -> None:
    spec = lp.PartitionSpec([lp.PartitionField("id", source="id", transform=lp.Identity())])
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, spec)
    many = rows(list(range(1_500)))
    with pytest.raises(lp.InvalidArgumentError, match="more than 1000 new partitions") as e:
        ns.write(many)
    assert "max_new_partitions" in str(e.value)
    assert "id" in str(e.value)
    assert ns.partitions().num_rows == 0
    r = ns.write(many, max_new_partitions=None)
    assert r.created == 1_500
    with pytest.raises(lp.InvalidArgumentError):
        ns.write(many, max_new_partitions=0)


# -- 13. the demo never deletes what it did not create ----------------------------------------


def test_demo_refuses_a_foreign_directory(tmp_path: Path, capsys: Any) -> None:
    from lance_partitioned import demo

    mine = tmp_path / "precious"
    mine.mkdir()
    (mine / "thesis.txt").write_text("do not delete")
    assert demo.main(["--root", str(mine)]) == 2
    assert (mine / "thesis.txt").read_text() == "do not delete"
    assert "not a lance-partitioned namespace" in capsys.readouterr().err
    ns_dir = tmp_path / "ns"
    lp.PartitionedNamespace.create(str(ns_dir), SCHEMA, SPEC)
    assert demo.main(["--root", str(ns_dir)]) == 2
    assert (ns_dir / "__manifest").is_dir()


# -- errors a user can act on -----------------------------------------------------------------


def test_exceptions_subclass_the_matching_builtins() -> None:
    assert issubclass(lp.InvalidArgumentError, ValueError)
    assert issubclass(lp.SchemaMismatchError, ValueError)
    assert issubclass(lp.NamespaceNotFoundError, FileNotFoundError)
    assert issubclass(lp.NamespaceExistsError, FileExistsError)
    assert issubclass(lp.UnsupportedTypeError, TypeError)
    warnings = {"PartitionGranularityWarning"}
    for name in lp.exceptions.__all__:
        cls = getattr(lp.exceptions, name)
        base = UserWarning if name in warnings else lp.LancePartitionedError
        assert issubclass(cls, base), name
        assert cls.__module__ == "lance_partitioned.exceptions"
    # A warning is never caught by ``except LancePartitionedError``.
    assert not issubclass(lp.PartitionGranularityWarning, lp.LancePartitionedError)


def test_bad_arguments_raise_our_errors(ns: lp.PartitionedNamespace) -> None:
    ns.write(rows([1, 2]))
    bad: list[tuple[Any, type]] = [
        (lambda: ns.to_table(as_of=-1), lp.InvalidArgumentError),
        (lambda: ns.to_table(as_of="1"), lp.InvalidArgumentError),
        (lambda: ns.write({"id": [1]}), lp.InvalidArgumentError),
        (lambda: ns.write("id,country"), lp.InvalidArgumentError),
        (lambda: ns.to_table(columns="id"), lp.InvalidArgumentError),
        (lambda: ns.to_table(columns=["nope"]), lp.InvalidArgumentError),
        (lambda: ns.to_table(pc.field("nope") == 1), lp.ExpressionError),
        (lambda: ns.to_table(filter=5), lp.InvalidArgumentError),
        (lambda: ns.write(rows([3]), concurrency=0), lp.InvalidArgumentError),
        (lambda: ns.write(rows([3]), route_threads=0), lp.InvalidArgumentError),
        (lambda: ns.write(rows([3]), max_rows_per_file=True), lp.InvalidArgumentError),
        (lambda: ns.write(rows([3]), mode="upsert"), lp.InvalidArgumentError),
        (lambda: ns.delete(""), lp.InvalidArgumentError),
        (lambda: ns.distributed_write().commit(b"abc"), lp.InvalidArgumentError),
        (lambda: ns.distributed_write().commit([b"not a message"]), lp.InvalidArgumentError),
        (lambda: ns.cleanup(older_than=5), lp.InvalidArgumentError),
        (
            lambda: lp.PartitionedNamespace.open(str(Path(ns.root) / "nope")),
            lp.NamespaceNotFoundError,
        ),
    ]
    for call, error in bad:
        with pytest.raises(error):
            call()


def test_a_missing_version_names_the_versions_that_exist(ns: lp.PartitionedNamespace) -> None:
    ns.write(rows([1]))
    with pytest.raises(lp.NamespaceNotFoundError, match=r"version 999 .* has versions 1-3"):
        ns.to_table(as_of=999)


def test_filters_are_validated_the_same_everywhere(ns: lp.PartitionedNamespace) -> None:
    ns.write(rows([1, 2]))
    for f in (
        "country = 5",
        "id IN (SELECT 1)",
        "count(id) > 0",
        "1 / 0 = 1",
        "id",
        "random() > 0",
    ):
        for call in (ns.to_table, ns.partitions, ns.explain, ns.delete):
            with pytest.raises(lp.ExpressionError):
                call(f)
    assert ns.to_table().num_rows == 2


def test_conflict_messages_name_partition_values(ns: lp.PartitionedNamespace) -> None:
    ns.write(rows([1]))
    dw = ns.distributed_write("overwrite")
    msg = dw.stage(rows([2]))
    ns.write(rows([3]))
    with pytest.raises(lp.CommitConflictError, match='country="US"'):
        dw.commit([msg])


def test_lance_errors_carry_no_rust_source_paths(ns: lp.PartitionedNamespace) -> None:
    ns.write(rows([1, 2]))
    leaf = Path(ns.root) / ns.partitions()["location"][0].as_py()
    for f in (leaf / "data").iterdir():
        os.remove(f)
    with raises_typed() as e:
        ns.to_table()
    assert ".rs:" not in str(e.value), str(e.value)


def test_explain_warns_about_tiny_partitions(tmp_path: Path) -> None:
    """Item 12: a spec that makes many tiny partitions is named in explain; big ones are not."""
    schema = pa.schema([pa.field("k", pa.int64()), pa.field("v", pa.int64())])
    spec = lp.PartitionSpec([lp.PartitionField("k", source="k", transform=lp.Identity())])
    ns = lp.PartitionedNamespace.create(str(tmp_path / "tiny"), schema=schema, spec=spec)
    n = snapshot.TINY_CHECK_MIN_PARTITIONS + 20
    ns.write(pa.table({"k": pa.array(range(n), pa.int64()), "v": pa.array(range(n), pa.int64())}))
    text = ns.explain()
    assert "warning: tiny partitions: median 1 rows" in text
    assert f"of {n} kept partitions" in text
    assert "warning" not in ns.explain(check_sizes=False)
    assert "warning" not in ns.explain("k < 10")  # too few kept partitions to matter

    big = lp.PartitionedNamespace.create(str(tmp_path / "big"), schema=schema, spec=spec)
    parts = snapshot.TINY_CHECK_MIN_PARTITIONS
    ks = [i % parts for i in range(snapshot.TINY_PARTITION_ROWS * parts)]
    big.write(pa.table({"k": pa.array(ks, pa.int64()), "v": pa.array(ks, pa.int64())}))
    assert "warning" not in big.explain()


def test_delete_by_columns_older_partitions_store_differently(tmp_path: Path) -> None:
    """A delete filter on a column an older partition lacks (added later), stores under an old
    name (renamed) or an old type (widened) means what a read of that column shows: NULL for
    the missing column, the renamed column's values, the widened values. A dropped and re-added
    name never matches the dropped data."""
    schema = pa.schema(
        [pa.field("k", pa.string()), pa.field("v", pa.int32()), pa.field("old", pa.int64())]
    )
    spec = lp.PartitionSpec([lp.PartitionField("k", source="k", transform=lp.Identity())])
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema=schema, spec=spec)
    ns.write(
        pa.table(
            {
                "k": ["a", "a", "b", "b"],
                "v": pa.array([1, 2, 3, 4], pa.int32()),
                "old": pa.array([10, 20, 30, 40], pa.int64()),
            }
        )
    )
    ns.add_columns([pa.field("x", pa.int64())])
    ns.rename_column("v", "w")
    ns.alter_column("w", pa.int64())
    ns.drop_columns(["old"])
    ns.add_columns([pa.field("old", pa.int64())])
    ns.write(
        pa.table(
            {
                "k": ["c", "c"],
                "w": pa.array([5, 6], pa.int64()),
                "x": pa.array([1, 2], pa.int64()),
                "old": pa.array([10, 20], pa.int64()),
            }
        )
    )

    def remaining() -> list[tuple[Any, ...]]:
        t = ns.to_table().sort_by("w")
        return list(zip(*(t[c].to_pylist() for c in ("k", "w", "x", "old")), strict=True))

    assert ns.delete("old = 10").rows == 1  # only the new column's 10, never the dropped data
    assert remaining() == [
        ("a", 1, None, None),
        ("a", 2, None, None),
        ("b", 3, None, None),
        ("b", 4, None, None),
        ("c", 6, 2, 20),
    ]
    assert ns.delete("w = 2 OR w > 5").rows == 2  # renamed and widened in a and b
    assert ns.delete("x IS NULL AND w = 3").rows == 1  # x is NULL where it was never written
    assert remaining() == [("a", 1, None, None), ("b", 4, None, None)]
    assert ns.delete("x IS NULL").rows == 2
    assert ns.to_table().num_rows == 0


def test_distributed_write_keeps_binary_and_nanosecond_keys_apart(tmp_path: Path) -> None:
    """Staged messages carry partition values exactly: b"ff" and b"\\xff" (whose string forms
    coincide) stay two partitions, and nanoseconds of a timestamp key are kept."""
    ts = pa.timestamp("ns", "UTC")
    schema = pa.schema([pa.field("b", pa.binary()), pa.field("t", ts), pa.field("v", pa.int64())])
    spec = lp.PartitionSpec(
        [
            lp.PartitionField("b", source="b", transform=lp.Identity()),
            lp.PartitionField("t", source="t", transform=lp.Identity()),
        ]
    )
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema=schema, spec=spec)
    t1, t2 = 1_718_454_645_123_456_789, 1_718_454_645_123_456_001
    data = pa.table(
        {
            "b": pa.array([b"ff", b"\xff", b"ff", b"\xff"], pa.binary()),
            "t": pa.array([t1, t1, t2, t2], ts),
            "v": pa.array([1, 2, 3, 4], pa.int64()),
        }
    )
    dw = ns.distributed_write()
    msgs = [dw.stage(data.slice(0, 2)), dw.stage(data.slice(2, 2))]
    res = dw.commit(msgs)
    assert (res.rows, res.created) == (4, 4)
    parts = ns.partitions().sort_by("rows")
    got = sorted(zip(parts["b"].to_pylist(), parts["t"].cast(pa.int64()).to_pylist(), strict=True))
    assert got == sorted([(b"ff", t1), (b"\xff", t1), (b"ff", t2), (b"\xff", t2)])
    for row in ns.to_table().to_pylist():
        assert ns.to_table(filter=pc.field("v") == row["v"]).num_rows == 1
