"""The kernel API: input forms (PyCapsule protocol, chunked, sliced), outputs and semantics."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pytest

from lance_partitioned import kernels as k
from lance_partitioned.exceptions import InvalidArgumentError


class CapsuleArray:
    """A foreign array that only speaks the Arrow PyCapsule protocol (like arro3/nanoarrow)."""

    def __init__(self, arr: pa.Array) -> None:
        self._arr = arr

    def __arrow_c_array__(self, requested_schema: Any = None) -> Any:
        return self._arr.__arrow_c_array__(requested_schema)


class CapsuleStream:
    """A foreign chunked array that only exposes ``__arrow_c_stream__`` (like polars.Series)."""

    def __init__(self, arr: pa.ChunkedArray) -> None:
        self._arr = arr

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self._arr.__arrow_c_stream__(requested_schema)


def test_capsule_inputs_are_accepted() -> None:
    arr = pa.array(["US", "FR", None])
    expected = k.murmur3(arr)
    assert k.murmur3(CapsuleArray(arr)).equals(expected)
    out = k.murmur3(CapsuleStream(pa.chunked_array([arr[:1], arr[1:]])))
    assert isinstance(out, pa.ChunkedArray)
    assert out.num_chunks == 2
    assert out.combine_chunks().equals(expected)


def test_chunked_array_keeps_chunks_and_empty_chunked_is_typed() -> None:
    ca = pa.chunked_array([pa.array([1, 2], pa.int64()), pa.array([3], pa.int64())])
    out = k.bucket(ca, 8)
    assert isinstance(out, pa.ChunkedArray)
    assert out.num_chunks == 2
    assert out.to_pylist() == k.bucket(pa.array([1, 2, 3], pa.int64()), 8).to_pylist()
    empty = k.year(pa.chunked_array([], type=pa.date32()))
    assert empty.type == pa.int32()
    assert len(empty) == 0


def test_sliced_input_respects_offset() -> None:
    arr = pa.array(list(range(100)), pa.int64())
    assert k.murmur3(arr.slice(37, 10)).equals(k.murmur3(pa.array(list(range(37, 47)), pa.int64())))
    s = pa.array([f"v{i}" for i in range(50)])
    assert k.truncate(s.slice(10, 5), 2).to_pylist() == ["v1"] * 5


def test_nulls_hash_to_null_and_multi_skips_nulls() -> None:
    a = pa.array([None, 5], pa.int32())
    assert k.murmur3(a).to_pylist() == [None, 236698494]
    b = pa.array([None, None], pa.string())
    assert k.murmur3_multi(a, b).to_pylist() == [None, 236698494]
    assert k.multi_bucket([a, b], 16).to_pylist() == [None, 14]


def test_dictionary_hashes_like_its_values() -> None:
    plain = pa.array(["a", "b", None, "a"])
    assert k.murmur3(plain.dictionary_encode()).equals(k.murmur3(plain))
    assert k.bucket(plain.dictionary_encode(), 5).equals(k.bucket(plain, 5))


def test_bucket_range_and_d3_case() -> None:
    vals = pa.array(list(range(-5000, 5000)), pa.int64())
    for n in (1, 2, 3, 7, 16, 1000, 2**31 - 1):
        b = k.bucket(vals, n).to_pylist()
        assert all(0 <= x < n for x in b)
    # murmur3(int32 -2089875627) == i32::MIN: |h| = 2**31, not an error
    # (docs/design.md, "Bucket arithmetic")
    m = pa.array([-2089875627], pa.int32())
    assert k.murmur3(m).to_pylist() == [-(2**31)]
    assert k.bucket(m, 10).to_pylist() == [2**31 % 10]


def test_temporal_kernels_use_type_timezone() -> None:
    ts = pa.array([0], pa.timestamp("us", tz="+08:00"))
    assert k.hour(ts).to_pylist() == [8]
    assert k.hour(ts.cast(pa.timestamp("us"))).to_pylist() == [0]
    d = pa.array([dt.date(2024, 2, 29)])
    assert (k.year(d).to_pylist(), k.month(d).to_pylist(), k.day(d).to_pylist()) == (
        [2024],
        [2],
        [29],
    )


def test_identity_returns_pyarrow() -> None:
    arr = pa.array([1, 2])
    assert k.identity(arr) is arr
    assert k.identity(CapsuleArray(arr)).equals(arr)


def test_evaluate_and_evaluate_scalar() -> None:
    out = k.evaluate("concat(col0, '/', left(col1, 2))", [pa.array(["US"]), pa.array(["Boston"])])
    assert out.to_pylist() == ["US/Bo"]
    assert k.evaluate("murmur3(col0)", [pa.array(["hello"])]).to_pylist() == [613153351]
    y = k.evaluate_scalar("date_part('year', col0)", [pa.scalar(dt.date(2025, 12, 10))])
    assert y.as_py() == 2025
    assert k.evaluate_scalar("abs(murmur3(col0)) % 16", ["US"]).as_py() == 4
    assert k.expression_type("col0 + 1", [pa.int32()]) == pa.int64()
    assert k.expression_type("date_part('year', col0)", [pa.date32()]) == pa.int32()


SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), metadata={"lance:field_id": "0"}),
        pa.field("event_ts", pa.timestamp("us", tz="UTC"), metadata={"lance:field_id": "1"}),
        pa.field("country", pa.string(), metadata={"lance:field_id": "2"}),
        pa.field("city", pa.string(), metadata={"lance:field_id": "3"}),
    ]
)

SPEC = {
    "id": 1,
    "fields": [
        {
            "field_id": "event_year",
            "source_ids": [1],
            "transform": {"type": "year"},
            "result_type": {"type": "int32"},
        },
        {
            "field_id": "country",
            "source_ids": [2],
            "transform": {"type": "identity"},
            "result_type": {"type": "utf8"},
        },
        {
            "field_id": "id_bucket",
            "source_ids": [0],
            "transform": {"type": "bucket", "num_buckets": 16},
            "result_type": {"type": "int32"},
        },
        {
            "field_id": "region",
            "source_ids": [2, 3],
            "expression": "concat(col0, '/', left(col1, 2))",
            "result_type": {"type": "utf8"},
        },
    ],
}


EST = dt.timezone(dt.timedelta(hours=-5))


def test_partition_values_casts_to_namespace_types_first() -> None:
    batch = pa.RecordBatch.from_pydict(
        {
            # id arrives as int32 and the timestamp in another zone and unit: both are cast to
            # the namespace types first.
            "id": pa.array([5, 0], pa.int32()),
            "event_ts": pa.array(
                [
                    dt.datetime(2024, 12, 31, 20, 0, tzinfo=EST),
                    dt.datetime(2024, 12, 31, 18, 0, tzinfo=EST),
                ],
                pa.timestamp("ms", tz="-05:00"),
            ),
            "country": pa.array(["US", None], pa.large_string()),
            "city": ["Boston", "Paris"],
        }
    )
    out = k.partition_values(batch, SPEC, SCHEMA)
    assert isinstance(out, pa.RecordBatch)
    assert out.schema.names == ["event_year", "country", "id_bucket", "region"]
    assert out.schema.types == [pa.int32(), pa.string(), pa.int32(), pa.string()]
    # 2024-12-31T20:00-05:00 is 2025-01-01T01:00Z: the namespace type (UTC) decides the year
    assert out.column("event_year").to_pylist() == [2025, 2024]
    assert out.column("country").to_pylist() == ["US", None]
    assert (
        out.column("id_bucket").to_pylist()
        == k.bucket(pa.array([5, 0], pa.int64()), 16).to_pylist()
    )
    # DataFusion concat skips NULL arguments
    assert out.column("region").to_pylist() == ["US/Bo", "/Pa"]
    table = pa.Table.from_batches([batch, batch])
    tout = k.partition_values(table, SPEC, SCHEMA)
    assert isinstance(tout, pa.Table)
    assert tout.num_rows == 4


def test_partition_values_missing_column_reads_as_null() -> None:
    batch = pa.RecordBatch.from_pydict({"id": pa.array([1], pa.int64())})
    out = k.partition_values(batch, SPEC, SCHEMA)
    assert out.column("country").to_pylist() == [None]
    assert out.column("event_year").to_pylist() == [None]


def test_validate_spec_round_trips() -> None:
    assert k.validate_spec(SPEC, SCHEMA) == SPEC


def test_route_groups_rows_stably() -> None:
    batch = pa.RecordBatch.from_pydict(
        {"v": list(range(8)), "c": ["a", "b", "a", None, "b", "a", None, "c"]}
    )
    r = k.route(batch, [batch.column("c")])
    assert r.keys.column(0).to_pylist() == ["a", "b", None, "c"]
    assert [b.column("v").to_pylist() for b in r.batches] == [[0, 2, 5], [1, 4], [3, 6], [7]]
    assert len(r) == 4
    assert r.offsets == [0, 3, 5, 7, 8]


def test_route_by_partition_values_and_empty_batch() -> None:
    batch = pa.RecordBatch.from_pydict(
        {
            "id": pa.array(range(100), pa.int64()),
            "event_ts": pa.array([dt.datetime(2025, 1, 1)] * 100, pa.timestamp("us", tz="UTC")),
            "country": ["US", "FR"] * 50,
            "city": ["x"] * 100,
        }
    )
    keys = k.partition_values(batch, SPEC, SCHEMA)
    r = k.route(batch, keys)
    assert sum(b.num_rows for b in r.batches) == 100
    assert r.keys.schema.names == keys.schema.names
    empty = k.route(batch.slice(0, 0), keys.slice(0, 0))
    assert len(empty) == 0
    assert empty.keys.num_rows == 0


def test_route_threads_give_identical_results() -> None:
    n = 5000
    batch = pa.RecordBatch.from_pydict(
        {
            "id": pa.array(range(n), pa.int64()),
            "s": [f"v{i % 37}" * (i % 3) if i % 11 else None for i in range(n)],
            "b": pa.array([i % 2 == 0 for i in range(n)]),
            "l": pa.array([[i] * (i % 3) for i in range(n)]),
        }
    )
    keys = [pa.array([i % 13 for i in range(n)], pa.int32())]
    one = k.route(batch, keys, threads=1)
    many = k.route(batch, keys, threads=4)
    assert one.offsets == many.offsets
    assert one.permuted.equals(many.permuted)
    assert one.keys.equals(many.keys)
    with pytest.raises(InvalidArgumentError):
        k.route(batch, keys, threads=0)
