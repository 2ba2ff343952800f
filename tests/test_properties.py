"""Property tests: hashes equal an independent MurmurHash3 (mmh3) over the bytes
docs/design.md ("Hashed bytes per type") prescribes; bucket is |h| mod n; route returns a
partition of the input rows."""

from __future__ import annotations

import struct

import mmh3
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from lance_partitioned import kernels as k

ints = st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), max_size=60)
texts = st.lists(st.one_of(st.none(), st.text(max_size=30)), max_size=60)


def ref(data: bytes) -> int:
    return mmh3.hash(data, 0, signed=True)


@settings(max_examples=150, deadline=None)
@given(ints, st.integers(0, 5), st.integers(1, 2**31 - 1))
def test_int64_hash_and_bucket(values: list[int | None], offset: int, n: int) -> None:
    arr = pa.array(values, pa.int64())[offset:]
    h = k.murmur3(arr).to_pylist()
    b = k.bucket(arr, n).to_pylist()
    for v, hv, bv in zip(arr.to_pylist(), h, b, strict=True):
        if v is None:
            assert hv is None
            assert bv is None
        else:
            assert hv == ref(struct.pack("<q", v))
            assert bv == abs(hv) % n


@settings(max_examples=150, deadline=None)
@given(texts, st.sampled_from([pa.string(), pa.large_string(), pa.string_view()]))
def test_string_hash(values: list[str | None], typ: pa.DataType) -> None:
    arr = pa.array(values, typ)
    h = k.murmur3(arr).to_pylist()
    assert h == [None if v is None else ref(v.encode()) for v in values]


@settings(max_examples=100, deadline=None)
@given(texts, ints, st.integers(1, 1000))
def test_multi_hash(a: list[str | None], b: list[int | None], n: int) -> None:
    size = min(len(a), len(b))
    x, y = pa.array(a[:size], pa.string()), pa.array(b[:size], pa.int64())
    got = k.murmur3_multi(x, y).to_pylist()
    gotb = k.multi_bucket([x, y], n).to_pylist()
    for s, i, hv, bv in zip(a[:size], b[:size], got, gotb, strict=True):
        data = (s.encode() if s is not None else b"") + (
            struct.pack("<q", i) if i is not None else b""
        )
        if s is None and i is None:
            assert hv is None
            assert bv is None
        else:
            assert hv == ref(data)
            assert bv == abs(hv) % n


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["a", "b", "é", "", None]), st.integers(-3, 3)), max_size=80)
)
def test_route_is_a_partition_of_the_rows(rows: list[tuple[str | None, int]]) -> None:
    batch = pa.RecordBatch.from_pydict(
        {"row": list(range(len(rows))), "s": [r[0] for r in rows], "i": [r[1] for r in rows]}
    )
    routed = k.route(batch, [batch.column("s"), batch.column("i")])
    seen: list[int] = []
    keys = routed.keys.to_pylist()
    assert len({(d["key0"], d["key1"]) for d in keys}) == len(keys)  # distinct keys
    for key, part in zip(keys, routed.batches, strict=True):
        ids = part.column("row").to_pylist()
        assert ids == sorted(ids)  # stable order inside a group
        for r in ids:
            assert rows[r] == (key["key0"], key["key1"])  # every row with its key
        seen.extend(ids)
    assert sorted(seen) == list(range(len(rows)))  # no row lost or duplicated
