"""Partition sources inside structs (`s.city`): the spec addresses sources by field id, and
struct children have ids. Specs, writes (struct inputs in any child order, without our field
metadata), pruning, schema evolution and Spark all follow the child."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lance_partitioned as lp
from lance_partitioned import exceptions as exc
from lance_partitioned import kernels as k
from lance_partitioned.spec import field_ids

LOC = pa.struct([("city", pa.string()), ("zip", pa.int32())])
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("loc", LOC)])
SPEC = lp.PartitionSpec(
    [
        lp.PartitionField("city", source="loc.city", transform=lp.Identity()),
        lp.PartitionField("zb", source="loc.zip", transform=lp.Bucket(4)),
    ]
)


def table(
    locs: list[dict[str, Any] | None], child_order: tuple[str, ...] = ("city", "zip")
) -> pa.Table:
    """Rows with `loc` built from `locs`; the struct's children in `child_order`, typed as a
    user would (no field ids)."""
    types = {"city": pa.string(), "zip": pa.int32()}
    typ = pa.struct([(c, types[c]) for c in child_order])
    return pa.table({"id": pa.array(range(len(locs)), pa.int64()), "loc": pa.array(locs, typ)})


def expected_keys(t: pa.Table) -> set[tuple[Any, Any]]:
    """The model: (city, bucket(zip)) per row, NULL wherever the struct or the child is."""
    loc = t["loc"].combine_chunks()
    city = pc.struct_field(loc, "city")
    zips = pc.struct_field(loc, "zip").cast(pa.int32())
    buckets = k.bucket(zips, 4)
    return set(zip(city.to_pylist(), buckets.to_pylist(), strict=True))


def stored_keys(ns: lp.PartitionedNamespace) -> set[tuple[Any, Any]]:
    p = ns.partitions()
    return set(zip(p["city"].to_pylist(), p["zb"].to_pylist(), strict=True))


def test_spec_resolves_struct_children_to_their_ids(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "n"), SCHEMA, SPEC)
    loc = ns.schema.field("loc").type
    ids = {loc.field(i).name: int(loc.field(i).metadata[b"lance:field_id"]) for i in range(2)}
    fields = ns.specs[1]["fields"]
    assert [f["source_ids"] for f in fields] == [[ids["city"]], [ids["zip"]]]
    assert field_ids(ns.schema)["loc.zip"] == ids["zip"]


def test_write_routes_by_struct_children_and_prunes(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "n"), SCHEMA, SPEC)
    locs: list[dict[str, Any] | None] = [
        {"city": "Paris", "zip": 75001},
        {"city": "Lyon", "zip": 69001},
        None,
        {"city": None, "zip": 5},
        {"city": "Paris", "zip": 75002},
    ]
    t = table(locs, child_order=("zip", "city"))  # another child order than the namespace
    ns.write(t)
    assert stored_keys(ns) == expected_keys(t)
    got = ns.scan().read_all().sort_by("id")
    assert got["loc"].to_pylist() == t["loc"].to_pylist()

    for sql, n_rows in [
        ("loc.city = 'Paris'", 2),
        ("loc['city'] IN ('Lyon')", 1),
        ("loc.city IS NULL", 2),
        ("loc.zip = 69001", 1),
    ]:
        plan = ns.explain(sql)
        kept = ns.partitions(sql).num_rows
        assert kept < ns.partitions().num_rows, (sql, plan)
        assert ns.scan(filter=sql).read_all().num_rows == n_rows, sql


def test_struct_inputs_are_checked_child_by_child(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "n"), SCHEMA, SPEC)
    # A missing nullable child reads as NULL.
    only_city = pa.table(
        {
            "id": pa.array([1], pa.int64()),
            "loc": pa.array([{"city": "Oslo"}], pa.struct([("city", pa.string())])),
        }
    )
    ns.write(only_city)
    assert stored_keys(ns) == {("Oslo", None)}
    # An unknown child is refused, naming it.
    extra = pa.table(
        {
            "id": pa.array([2], pa.int64()),
            "loc": pa.array([{"city": "x", "zip": 1, "street": "y"}]),
        }
    )
    with pytest.raises(exc.SchemaMismatchError, match="street"):
        ns.write(extra)
    # A lossy cast inside the struct is refused, naming the child.
    lossy = pa.table(
        {
            "id": pa.array([3], pa.int64()),
            "loc": pa.array(
                [{"city": "x", "zip": 2**40}],
                pa.struct([("city", pa.string()), ("zip", pa.int64())]),
            ),
        }
    )
    with pytest.raises(exc.SchemaMismatchError, match=r"loc\.zip"):
        ns.write(lossy)
    assert ns.scan().read_all().num_rows == 1


def test_sources_inside_lists_are_refused(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("tags", pa.list_(pa.struct([("k", pa.string())])))])
    schema = lp.assign_field_ids(schema)
    item = schema.field("tags").type.value_field
    kid = item.type.field(0)
    assert kid.metadata is None or b"lance:field_id" not in kid.metadata  # lists get no ids
    spec = lp.PartitionSpec([lp.PartitionField("t", source="tags.k", transform=lp.Identity())])
    with pytest.raises(exc.SpecError, match=r"tags\.k"):
        lp.PartitionedNamespace.create(str(tmp_path / "n"), schema, spec)


def test_evolution_keeps_struct_sources(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "n"), SCHEMA, SPEC)
    ns.write(table([{"city": "Rome", "zip": 1}]))
    with pytest.raises(exc.SchemaMismatchError, match="partition source"):
        ns.drop_columns("loc")
    ns.rename_column("loc", "place")
    ns.write(
        pa.table(
            {"id": pa.array([9], pa.int64()), "place": pa.array([{"city": "Rome", "zip": 2}], LOC)}
        )
    )
    assert ns.partitions("place.city = 'Rome'")["rows"].to_pylist() in ([1, 1], [2])
    assert ns.scan(filter="place.city = 'Rome'").read_all().num_rows == 2
    assert ns.partitions("place.city = 'Oslo'").num_rows == 0


locs_strategy = st.lists(
    st.one_of(
        st.none(),
        st.fixed_dictionaries(
            {
                "city": st.one_of(st.none(), st.sampled_from(["a", "b", "ß", ""])),
                "zip": st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)),
            }
        ),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=25, deadline=None)
@given(locs=locs_strategy, order=st.permutations(["city", "zip"]))
def test_partition_values_of_struct_children_match_the_model(
    tmp_path_factory: pytest.TempPathFactory, locs: list[dict[str, Any] | None], order: list[str]
) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path_factory.mktemp("h") / "n"), SCHEMA, SPEC)
    t = table(locs, tuple(order))
    ns.write(t)
    assert stored_keys(ns) == expected_keys(t)
    assert ns.scan().read_all().num_rows == len(locs)


@pytest.mark.spark
def test_spark_writes_and_reads_struct_sources(spark: Any, tmp_path: Path) -> None:
    import lance_partitioned.spark as lps

    uri = str(tmp_path / "n")
    lp.PartitionedNamespace.create(uri, SCHEMA, SPEC)
    locs = [{"city": c, "zip": z} for c in ("Paris", "Lyon", None) for z in range(20)] + [None]
    t = table(locs)
    df = spark.createDataFrame(t.to_pandas()).repartition(3)
    from lance_partitioned.spark.key import key_columns

    # identity(loc.city) is a Spark-native key column; bucket(loc.zip) needs our JVM function
    # (or, without it, our kernel in Python).
    ns = lp.PartitionedNamespace.open(uri)
    cols, complete = key_columns(ns, df, jvm=False)
    assert not complete
    assert len(cols) == 1
    assert key_columns(ns, df, jvm=True)[1]
    got_cities = {r[0] for r in df.select(cols[0]).distinct().collect()}
    assert got_cities == {"Paris", "Lyon", None}
    for clustered in (True, False):
        lps.write(df, uri, clustered=clustered)
    ns = lp.PartitionedNamespace.open(uri)
    assert stored_keys(ns) == expected_keys(t)
    assert ns.scan().read_all().num_rows == 2 * len(locs)
    got = lps.read(spark, uri, "loc.city = 'Lyon'")
    assert got.count() == 2 * 20
    via_source = (
        spark.read.format("lance-partitioned").load(uri).where("loc.city = 'Paris'").count()
    )
    assert via_source == 2 * 20
