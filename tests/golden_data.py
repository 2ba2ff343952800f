"""Reads tests/golden/vectors.json (shared with `cargo test`) into pyarrow values."""

from __future__ import annotations

import decimal
import json
from pathlib import Path
from typing import Any

import pyarrow as pa

GOLDEN = json.loads((Path(__file__).parent / "golden" / "vectors.json").read_text())


def arrow_type(t: dict[str, Any]) -> pa.DataType:
    name = t["type"]
    simple = {
        "int8": pa.int8(),
        "int16": pa.int16(),
        "int32": pa.int32(),
        "int64": pa.int64(),
        "uint8": pa.uint8(),
        "uint16": pa.uint16(),
        "uint32": pa.uint32(),
        "uint64": pa.uint64(),
        "float16": pa.float16(),
        "float32": pa.float32(),
        "float64": pa.float64(),
        "date32": pa.date32(),
        "date64": pa.date64(),
        "utf8": pa.string(),
        "large_utf8": pa.large_string(),
        "utf8_view": pa.string_view(),
        "binary": pa.binary(),
        "large_binary": pa.large_binary(),
        "binary_view": pa.binary_view(),
        "bool": pa.bool_(),
    }
    if name in simple:
        return simple[name]
    if name == "timestamp":
        return pa.timestamp(t.get("unit", "us"), tz=t.get("timezone"))
    if name == "time32":
        return pa.time32(t.get("unit", "ms"))
    if name == "time64":
        return pa.time64(t.get("unit", "us"))
    if name in ("decimal128", "decimal256"):
        enc = t["length"]
        p = (enc + 128) // 1000
        s = enc - p * 1000
        return pa.decimal128(p, s) if name == "decimal128" else pa.decimal256(p, s)
    if name == "fixed_size_binary":
        return pa.binary(t["length"])
    raise ValueError(f"no golden type {name}")


def array_of(t: dict[str, Any], value: Any) -> pa.Array:
    typ = arrow_type(t)
    if value is None:
        return pa.nulls(1, type=typ)
    if isinstance(value, dict):
        return pa.array([bytes.fromhex(value["hex"])], type=typ)
    if pa.types.is_decimal(typ):
        return pa.array([decimal.Decimal(value)], type=typ)
    if pa.types.is_float16(typ):
        return pa.array([value], type=pa.float32()).cast(typ)
    if pa.types.is_timestamp(typ) or pa.types.is_date(typ) or pa.types.is_time(typ):
        storage = pa.int32() if typ.bit_width == 32 else pa.int64()
        return pa.array([value], type=storage).cast(typ)
    return pa.array([value], type=typ)
