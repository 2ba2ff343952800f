//! The shared golden vectors (`tests/golden/vectors.json`, also read by pytest).

mod common;

use common::{array_of, data_type, golden};
use lance_partitioned_core::arrow::array::{Array, ArrayRef, AsArray};
use lance_partitioned_core::arrow::datatypes::Int32Type;
use lance_partitioned_core::hash;
use lance_partitioned_core::transform::Transform;
use serde_json::Value;

fn as_opt_i32(v: &Value) -> Option<i32> {
    v.as_i64().map(|x| x as i32)
}

#[test]
fn murmur3_and_bucket16_match_golden_vectors() {
    let g = golden();
    let rows = g["hash"].as_array().unwrap();
    assert!(rows.len() >= 28);
    for row in rows {
        let dt = data_type(&row["type"]);
        let a = array_of(&dt, &row["value"]);
        let h = hash::murmur3(a.as_ref()).unwrap();
        assert_eq!(
            h.value(0),
            row["murmur3"].as_i64().unwrap() as i32,
            "murmur3 {row}"
        );
        let b = hash::bucket(a.as_ref(), 16).unwrap();
        assert_eq!(
            b.value(0),
            row["bucket16"].as_i64().unwrap() as i32,
            "bucket16 {row}"
        );
    }
}

#[test]
fn murmur3_multi_matches_golden_vectors() {
    let g = golden();
    for row in g["multi"].as_array().unwrap() {
        let arrays: Vec<ArrayRef> = row["types"]
            .as_array()
            .unwrap()
            .iter()
            .zip(row["values"].as_array().unwrap())
            .map(|(t, v)| array_of(&data_type(t), v))
            .collect();
        let refs: Vec<&dyn Array> = arrays.iter().map(|a| a.as_ref()).collect();
        let h = hash::murmur3_multi(&refs).unwrap();
        let got = h.is_valid(0).then(|| h.value(0));
        assert_eq!(got, as_opt_i32(&row["murmur3"]), "multi {row}");
        let b = hash::multi_bucket(&refs, 16).unwrap();
        let got = b.is_valid(0).then(|| b.value(0));
        assert_eq!(got, as_opt_i32(&row["bucket16"]), "multi bucket16 {row}");
    }
}

#[test]
fn transforms_match_golden_vectors() {
    let g = golden();
    for row in g["transforms"].as_array().unwrap() {
        let dt = data_type(&row["type"]);
        let a = array_of(&dt, &row["value"]);
        let p = &row["params"];
        let t = match row["transform"].as_str().unwrap() {
            "year" => Transform::Year,
            "month" => Transform::Month,
            "day" => Transform::Day,
            "hour" => Transform::Hour,
            "truncate" => Transform::Truncate(p["width"].as_i64().unwrap() as i32),
            "bucket" => Transform::Bucket(p["num_buckets"].as_i64().unwrap() as i32),
            other => panic!("unknown transform {other}"),
        };
        let out = t.apply(&[a]).unwrap();
        let expected = &row["expected"];
        match out.data_type() {
            lance_partitioned_core::arrow::datatypes::DataType::Int32 if !expected.is_string() => {
                assert_eq!(
                    out.as_primitive::<Int32Type>().value(0) as i64,
                    expected.as_i64().unwrap(),
                    "{row}"
                );
            }
            dt => {
                let want = array_of(dt, expected);
                assert_eq!(out.as_ref(), want.as_ref(), "{row}");
            }
        }
    }
}
