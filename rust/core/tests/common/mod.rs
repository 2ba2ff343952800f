//! Shared helpers for the integration tests: reading `tests/golden/vectors.json` and building
//! one-value Arrow arrays from its typed JSON values.

#![allow(dead_code)]

use std::sync::Arc;

use lance_partitioned_core::arrow::array::*;
use lance_partitioned_core::arrow::compute::kernels::cast::cast;
use lance_partitioned_core::arrow::datatypes::*;
use lance_partitioned_core::types::JsonDataType;
use serde_json::Value;

pub fn golden() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/golden/vectors.json"
    );
    let text = std::fs::read_to_string(path).expect("golden vectors file");
    serde_json::from_str(&text).expect("golden vectors JSON")
}

pub fn data_type(v: &Value) -> DataType {
    let jt: JsonDataType = serde_json::from_value(v.clone()).expect("type");
    jt.to_arrow().expect("arrow type")
}

fn hex(v: &Value) -> Vec<u8> {
    let s = v["hex"].as_str().expect("hex");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

/// A one-element array of type `dt` holding the JSON value `v` (NULL for JSON null).
pub fn array_of(dt: &DataType, v: &Value) -> ArrayRef {
    if v.is_null() {
        return new_null_array(dt, 1);
    }
    use DataType::*;
    match dt {
        Int8 | Int16 | Int32 | Int64 => {
            cast(&Int64Array::from(vec![v.as_i64().expect("int")]), dt).expect("cast")
        }
        UInt8 | UInt16 | UInt32 | UInt64 => {
            cast(&UInt64Array::from(vec![v.as_u64().expect("uint")]), dt).expect("cast")
        }
        Float16 | Float32 | Float64 => {
            cast(&Float64Array::from(vec![v.as_f64().expect("float")]), dt).expect("cast")
        }
        Date32 => Arc::new(Date32Array::from(vec![v.as_i64().expect("days") as i32])),
        Date64 => Arc::new(Date64Array::from(vec![v.as_i64().expect("ms")])),
        Timestamp(unit, tz) => {
            let raw = Int64Array::from(vec![v.as_i64().expect("ts")]);
            cast(&raw, &Timestamp(*unit, tz.clone())).expect("cast")
        }
        Time32(TimeUnit::Second) => {
            Arc::new(Time32SecondArray::from(vec![v.as_i64().unwrap() as i32]))
        }
        Time32(_) => Arc::new(Time32MillisecondArray::from(vec![
            v.as_i64().unwrap() as i32
        ])),
        Time64(TimeUnit::Microsecond) => {
            Arc::new(Time64MicrosecondArray::from(vec![v.as_i64().unwrap()]))
        }
        Time64(_) => Arc::new(Time64NanosecondArray::from(vec![v.as_i64().unwrap()])),
        Utf8 | LargeUtf8 | Utf8View => {
            cast(&StringArray::from(vec![v.as_str().expect("str")]), dt).expect("cast")
        }
        Binary | LargeBinary | BinaryView => {
            let b = hex(v);
            cast(&BinaryArray::from(vec![b.as_slice()]), dt).expect("cast")
        }
        FixedSizeBinary(n) => {
            let b = hex(v);
            assert_eq!(b.len(), *n as usize);
            Arc::new(FixedSizeBinaryArray::try_from_iter(std::iter::once(b)).expect("fsb"))
        }
        Boolean => Arc::new(BooleanArray::from(vec![v.as_bool().expect("bool")])),
        Decimal128(_, _) | Decimal256(_, _) => {
            cast(&StringArray::from(vec![v.as_str().expect("decimal")]), dt).expect("decimal")
        }
        other => panic!("no golden builder for {other}"),
    }
}
