"""The shared golden vectors, through the Python API (the same file `cargo test` reads)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from golden_data import GOLDEN, array_of
from lance_partitioned import kernels as k


@pytest.mark.parametrize("row", GOLDEN["hash"], ids=lambda r: f"{r['type']['type']}:{r['value']}")
def test_murmur3_and_bucket16(row: dict[str, Any]) -> None:
    a = array_of(row["type"], row["value"])
    assert k.murmur3(a).to_pylist() == [row["murmur3"]]
    assert k.bucket(a, 16).to_pylist() == [row["bucket16"]]


@pytest.mark.parametrize("row", GOLDEN["multi"], ids=lambda r: str(r["values"]))
def test_murmur3_multi(row: dict[str, Any]) -> None:
    arrays = [array_of(t, v) for t, v in zip(row["types"], row["values"], strict=True)]
    assert k.murmur3_multi(*arrays).to_pylist() == [row["murmur3"]]
    assert k.multi_bucket(arrays, 16).to_pylist() == [row["bucket16"]]


@pytest.mark.parametrize(
    "row", GOLDEN["transforms"], ids=lambda r: f"{r['transform']}:{r['type']['type']}:{r['value']}"
)
def test_transforms(row: dict[str, Any]) -> None:
    a = array_of(row["type"], row["value"])
    t, p = row["transform"], row["params"]
    out: pa.Array
    if t == "truncate":
        out = k.truncate(a, p["width"])
        assert out.type == a.type
        assert out.equals(array_of(row["type"], row["expected"]))
        return
    out = k.bucket(a, p["num_buckets"]) if t == "bucket" else getattr(k, t)(a)
    assert out.type == pa.int32()
    assert out.to_pylist() == [row["expected"]]
