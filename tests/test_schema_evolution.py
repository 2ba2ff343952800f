"""Schema evolution by field id: add, rename, drop, widen; reads of older partitions follow the
read rules, appends to them rewrite them once, partition specs keep working through renames."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from typed import raises_typed

import lance_partitioned as lp
from lance_partitioned import exceptions as exc

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("country", pa.string()),
        pa.field("qty", pa.int32()),
        pa.field("note", pa.string()),
    ]
)
SPEC = lp.PartitionSpec([lp.PartitionField("country", source="country", transform=lp.Identity())])


def rows(ids: range, **extra: pa.Array) -> pa.Table:
    n = len(ids)
    cols: dict[str, pa.Array] = {
        "id": pa.array(ids, pa.int64()),
        "country": pa.array(["US" if i % 2 else "FR" for i in ids]),
        "qty": pa.array([i for i in ids], pa.int32()),
    }
    cols.update(extra)
    del n
    return pa.table(cols)


@pytest.fixture
def ns(tmp_path: Path) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "s"), SCHEMA, SPEC)
    ns.write(rows(range(10)))
    return ns


def test_add_rename_drop_widen(ns: lp.PartitionedNamespace) -> None:
    v_before = ns.version
    ns.add_columns([pa.field("price", pa.float64())])
    assert ns.schema.names == ["id", "country", "qty", "note", "price"]
    ids = [int(f.metadata[b"lance:field_id"]) for f in ns.schema]
    assert ids == [0, 1, 2, 3, 4]
    # older partitions read the new column as NULL
    t = ns.to_table().sort_by("id")
    assert t["price"].null_count == 10
    ns.rename_column("country", "land")
    ns.alter_column("qty", pa.int64())
    ns.drop_columns(["note"])
    assert ns.schema.names == ["id", "land", "qty", "price"]
    assert ns.schema.field("qty").type == pa.int64()
    # a dropped id is never reused
    ns.add_columns([pa.field("note2", pa.string())])
    assert int(ns.schema.field("note2").metadata[b"lance:field_id"]) == 5
    t = ns.to_table().sort_by("id")
    assert t.column_names == ["id", "land", "qty", "price", "note2"]
    assert t["qty"].type == pa.int64()
    assert t["qty"].to_pylist() == list(range(10))
    assert t["land"].to_pylist() == ["US" if i % 2 else "FR" for i in range(10)]
    # the partition spec follows the rename (it refers to field ids): pruning and filters work
    assert ns.partitions("land = 'US'").num_rows == 1
    assert sorted(ns.to_table("land = 'US'")["id"].to_pylist()) == [1, 3, 5, 7, 9]
    # new writes use the new names; appending to an old partition rewrites it once
    new = pa.table(
        {
            "id": pa.array([100, 101], pa.int64()),
            "land": ["US", "DE"],
            "qty": pa.array([2**40, 7], pa.int64()),
            "price": [1.5, 2.5],
        }
    )
    res = ns.write(new)
    assert res.rewritten == 1
    assert res.created == 1
    t = ns.to_table().sort_by("id")
    assert t.num_rows == 12
    assert t.filter(pa.compute.field("id") == 100)["qty"].to_pylist() == [2**40]
    assert t.filter(pa.compute.field("id") == 3)["land"].to_pylist() == ["US"]
    # a second append to the same partition does not rewrite again
    res = ns.write(new.slice(0, 1).set_column(0, "id", pa.array([102], pa.int64())))
    assert res.rewritten == 0
    assert ns.to_table().num_rows == 13
    # snapshots from before the changes still read with their own schema's data
    old = ns.to_table(as_of=v_before)
    assert old.num_rows == 10


def test_appends_do_not_rewrite_without_schema_changes(ns: lp.PartitionedNamespace) -> None:
    res = ns.write(rows(range(10, 20)))
    assert res.rewritten == 0
    assert res.created == 0


def test_refused_changes(ns: lp.PartitionedNamespace) -> None:
    with pytest.raises(exc.SchemaMismatchError, match="partition source"):
        ns.drop_columns(["country"])
    with pytest.raises(exc.SchemaMismatchError, match="partition source"):
        ns.alter_column("country", pa.large_string())
    with pytest.raises(exc.SchemaMismatchError, match="qty"):
        ns.alter_column("qty", pa.int16())
    with pytest.raises(exc.SchemaMismatchError, match="nullable"):
        ns.add_columns([pa.field("must", pa.int32(), nullable=False)])
    with pytest.raises(exc.SchemaMismatchError, match="twice"):
        ns.rename_column("qty", "note")
    with pytest.raises(exc.InvalidArgumentError):
        ns.rename_column("nope", "x")
    assert ns.schema.names == SCHEMA.names


def test_write_with_old_column_name_is_refused_after_rename(ns: lp.PartitionedNamespace) -> None:
    ns.rename_column("note", "remark")
    with pytest.raises(exc.SchemaMismatchError, match="note"):
        ns.write(rows(range(50, 52), note=pa.array(["a", "b"])))


def test_filters_on_a_new_column_skip_partitions_written_before_it(
    ns: lp.PartitionedNamespace,
) -> None:
    """Partitions written before ``price`` existed hold only NULL prices: a filter that is
    never TRUE on NULL (``price IS NOT NULL``, ``price > 1``, ...) skips them without reading
    their data. Proven by removing their data files: the filtered read still works."""
    ns.add_columns([pa.field("price", pa.float64())])
    new = rows(range(100, 110)).append_column("price", pa.array([float(i) for i in range(10)]))
    ns.write(new.set_column(1, "country", pa.array(["DE"] * 10)))
    scan = ns.snapshot()._s.scan("price IS NOT NULL", None, None, None)
    got = pa.Table.from_batches(list(scan), schema=scan.schema)
    assert sorted(got["id"].to_pylist()) == list(range(100, 110))
    assert scan.leaves_skipped == 2  # FR and US, written before price
    assert scan.leaves_opened == 1
    # Never TRUE on NULL: skipped; possibly TRUE on NULL (IS NULL, OR, coalesce): read.
    for sql, skipped in [
        ("price > 3", 2),
        ("price = 1 AND qty > 0", 2),
        ("price IS NULL", 0),
        ("price > 3 OR id < 5", 0),
        ("coalesce(price, 0) = 0", 0),
    ]:
        s = ns.snapshot()._s.scan(sql, None, None, None)
        rows_read = sum(b.num_rows for b in s)
        assert s.leaves_skipped == skipped, sql
        assert rows_read == ns.to_table().filter(pc_filter(sql)).num_rows, sql
    # The skipped leaves' data is never read: remove it and read again.
    manifest = ns.snapshot().manifest()
    old = [
        loc
        for loc, kind, c in zip(
            manifest["location"].to_pylist(),
            manifest["object_type"].to_pylist(),
            manifest["partition_field_country"].to_pylist(),
            strict=True,
        )
        if kind == "table" and c in ("FR", "US")
    ]
    assert len(old) == 2
    for loc in old:
        for f in (Path(ns.root) / loc / "data").iterdir():
            f.unlink()
    assert sorted(ns.to_table("price IS NOT NULL")["id"].to_pylist()) == list(range(100, 110))
    with raises_typed():
        ns.to_table()


def pc_filter(sql: str) -> Any:
    """The pyarrow expression of the few SQL filters above (the model to compare with)."""
    import pyarrow.compute as pc

    price, qty, ident = pc.field("price"), pc.field("qty"), pc.field("id")
    return {
        "price > 3": price > 3,
        "price = 1 AND qty > 0": (price == 1) & (qty > 0),
        "price IS NULL": price.is_null(),
        "price > 3 OR id < 5": (price > 3) | (ident < 5),
        "coalesce(price, 0) = 0": pc.coalesce(price, 0.0) == 0,
    }[sql]
