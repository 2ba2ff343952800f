//! The join planner against the spec's rules and Appendix F.

use std::collections::{BTreeMap, HashMap};

use crate::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use crate::datafusion::scalar::ScalarValue;
use crate::field_ids::FIELD_ID_KEY;
use crate::spec::{PartitionField, PartitionSpec, TransformJson};
use crate::transform::Transform;
use crate::types::JsonDataType;

use super::{plan_join, JoinSide};

fn schema(cols: &[(&str, DataType, i32)]) -> Schema {
    Schema::new(
        cols.iter()
            .map(|(n, t, id)| {
                Field::new(*n, t.clone(), true)
                    .with_metadata(HashMap::from([(FIELD_ID_KEY.to_string(), id.to_string())]))
            })
            .collect::<Vec<_>>(),
    )
}

fn field(name: &str, source: i32, kind: &str, n: Option<i64>) -> PartitionField {
    PartitionField {
        field_id: name.into(),
        source_ids: vec![source],
        transform: Some(TransformJson {
            kind: kind.into(),
            num_buckets: n.filter(|_| kind.contains("bucket")),
            width: n.filter(|_| kind == "truncate"),
        }),
        expression: None,
        result_type: JsonDataType::named("int32"),
    }
}

fn specs(versions: Vec<Vec<PartitionField>>) -> BTreeMap<i32, PartitionSpec> {
    versions
        .into_iter()
        .enumerate()
        .map(|(i, fields)| {
            let id = i as i32 + 1;
            (id, PartitionSpec { id, fields })
        })
        .collect()
}

fn i32s(v: &[Option<i32>]) -> Vec<ScalarValue> {
    v.iter().map(|x| ScalarValue::Int32(*x)).collect()
}

/// Leaves of spec v1 with one partition value each, named `<prefix><value>`.
fn leaves(
    prefix: &str,
    values: impl IntoIterator<Item = ScalarValue>,
) -> Vec<(String, i32, Vec<ScalarValue>)> {
    values
        .into_iter()
        .map(|v| (format!("{prefix}{v}"), 1, vec![v]))
        .collect()
}

fn int32s(range: std::ops::Range<i32>) -> impl Iterator<Item = ScalarValue> {
    range.map(|b| ScalarValue::Int32(Some(b)))
}

fn int64s(xs: &[i64]) -> impl Iterator<Item = ScalarValue> + '_ {
    xs.iter().map(|x| ScalarValue::Int64(Some(*x)))
}

/// (left ids, right ids) of every group.
fn sides(plan: &super::JoinPlan) -> Vec<(Vec<String>, Vec<String>)> {
    plan.groups
        .iter()
        .map(|g| (g.left.clone(), g.right.clone()))
        .collect()
}

fn ids(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|s| s.to_string()).collect()
}

/// Appendix F verbatim: orders bucket(customer_id, 16) x customers bucket(id, 8): 8 groups,
/// customers bucket i against orders buckets {i, i + 8}.
#[test]
fn appendix_f_orders_by_customers() {
    let orders_schema = schema(&[
        ("order_id", DataType::Int64, 0),
        ("customer_id", DataType::Int64, 1),
    ]);
    let customers_schema = schema(&[("id", DataType::Int64, 0), ("name", DataType::Utf8, 1)]);
    let orders_specs = specs(vec![vec![field("customer_bucket", 1, "bucket", Some(16))]]);
    let customers_specs = specs(vec![vec![field("id_bucket", 0, "bucket", Some(8))]]);
    let orders = JoinSide {
        schema: &orders_schema,
        specs: &orders_specs,
        leaves: leaves("o", int32s(0..16)),
    };
    let customers = JoinSide {
        schema: &customers_schema,
        specs: &customers_specs,
        leaves: leaves("c", int32s(0..8)),
    };
    let plan = plan_join(&orders, &customers, &[("customer_id".into(), "id".into())]).unwrap();
    assert!(plan.compatible, "{:?}", plan.reason);
    assert_eq!(plan.groups.len(), 8);
    for (i, g) in plan.groups.iter().enumerate() {
        let mut want = vec![format!("o{i}"), format!("o{}", i + 8)];
        want.sort();
        assert_eq!(g.left, want);
        assert_eq!(g.right, vec![format!("c{i}")]);
    }
    assert_eq!(
        plan.components,
        vec!["bucket(customer_id) % 8 = bucket(id) % 8".to_string()]
    );
}

#[test]
fn bucket_counts_that_do_not_divide_fall_back_with_a_reason() {
    let s = schema(&[("k", DataType::Int64, 0)]);
    let a = specs(vec![vec![field("kb", 0, "bucket", Some(6))]]);
    let b = specs(vec![vec![field("kb", 0, "bucket", Some(4))]]);
    let left = JoinSide {
        schema: &s,
        specs: &a,
        leaves: vec![("l".into(), 1, i32s(&[Some(1)]))],
    };
    let right = JoinSide {
        schema: &s,
        specs: &b,
        leaves: vec![("r".into(), 1, i32s(&[Some(1)]))],
    };
    let plan = plan_join(&left, &right, &[("k".into(), "k".into())]).unwrap();
    assert!(!plan.compatible);
    assert!(plan.groups.is_empty());
    let reason = plan.reason.unwrap();
    assert!(
        reason.contains("bucket(k, 6)") && reason.contains("bucket(k, 4)"),
        "{reason}"
    );
}

#[test]
fn time_hierarchy_groups_days_into_months_and_null_keys_stand_alone() {
    let s = schema(&[("ts", DataType::Timestamp(TimeUnit::Microsecond, None), 0)]);
    let days = specs(vec![vec![
        field("y", 0, "year", None),
        field("m", 0, "month", None),
        field("d", 0, "day", None),
    ]]);
    let months = specs(vec![vec![
        field("y", 0, "year", None),
        field("m", 0, "month", None),
    ]]);
    let left = JoinSide {
        schema: &s,
        specs: &days,
        leaves: vec![
            ("d1".into(), 1, i32s(&[Some(2024), Some(1), Some(1)])),
            ("d2".into(), 1, i32s(&[Some(2024), Some(1), Some(2)])),
            ("d3".into(), 1, i32s(&[Some(2024), Some(2), Some(1)])),
            ("dn".into(), 1, i32s(&[None, None, None])),
        ],
    };
    let right = JoinSide {
        schema: &s,
        specs: &months,
        leaves: vec![
            ("m1".into(), 1, i32s(&[Some(2024), Some(1)])),
            ("m3".into(), 1, i32s(&[Some(2024), Some(3)])),
        ],
    };
    let plan = plan_join(&left, &right, &[("ts".into(), "ts".into())]).unwrap();
    assert!(plan.compatible);
    let got = sides(&plan);
    assert_eq!(
        got,
        vec![
            (ids(&["d1", "d2"]), ids(&["m1"])),
            (ids(&["d3"]), ids(&[])),
            (ids(&[]), ids(&["m3"])),
            (ids(&["dn"]), ids(&[])),
        ]
    );
}

#[test]
fn evolution_plans_every_version_or_falls_back() {
    let s = schema(&[("k", DataType::Int64, 0), ("c", DataType::Utf8, 1)]);
    // Left: v1 bucket(16), v2 country x bucket(32); right bucket(8): bucket % 8 on all.
    let left_specs = specs(vec![
        vec![field("kb", 0, "bucket", Some(16))],
        vec![
            field("c", 1, "identity", None),
            field("kb", 0, "bucket", Some(32)),
        ],
    ]);
    let right_specs = specs(vec![vec![field("kb", 0, "bucket", Some(8))]]);
    let left = JoinSide {
        schema: &s,
        specs: &left_specs,
        leaves: vec![
            ("v1b3".into(), 1, i32s(&[Some(3)])),
            ("v1b11".into(), 1, i32s(&[Some(11)])),
            (
                "v2us27".into(),
                2,
                vec![
                    ScalarValue::Utf8(Some("US".into())),
                    ScalarValue::Int32(Some(27)),
                ],
            ),
        ],
    };
    let right = JoinSide {
        schema: &s,
        specs: &right_specs,
        leaves: vec![("r3".into(), 1, i32s(&[Some(3)]))],
    };
    let plan = plan_join(&left, &right, &[("k".into(), "k".into())]).unwrap();
    assert!(plan.compatible);
    assert_eq!(plan.groups.len(), 1);
    assert_eq!(plan.groups[0].left, ids(&["v1b11", "v1b3", "v2us27"]));
    // A version without a field on the key cannot be aligned: fall back, naming it.
    let unaligned = specs(vec![
        vec![field("kb", 0, "bucket", Some(16))],
        vec![field("c", 1, "identity", None)],
    ]);
    let left = JoinSide {
        schema: &s,
        specs: &unaligned,
        leaves: vec![
            ("a".into(), 1, i32s(&[Some(3)])),
            ("b".into(), 2, vec![ScalarValue::Utf8(Some("US".into()))]),
        ],
    };
    let plan = plan_join(&left, &right, &[("k".into(), "k".into())]).unwrap();
    assert!(!plan.compatible);
    assert!(plan.reason.unwrap().contains("v2 has no field on k"));
}

#[test]
fn identity_meets_a_transform_by_applying_it() {
    let s = schema(&[("k", DataType::Int64, 0)]);
    let ident = specs(vec![vec![field("k", 0, "identity", None)]]);
    let bucketed = specs(vec![vec![field("kb", 0, "bucket", Some(4))]]);
    let values = [1i64, 2, 3, 42, 77];
    let left = JoinSide {
        schema: &s,
        specs: &ident,
        leaves: leaves("k", int64s(&values)),
    };
    let right = JoinSide {
        schema: &s,
        specs: &bucketed,
        leaves: leaves("b", int32s(0..4)),
    };
    let plan = plan_join(&left, &right, &[("k".into(), "k".into())]).unwrap();
    assert!(plan.compatible);
    for g in &plan.groups {
        let b = match &g.key[0] {
            ScalarValue::Int32(Some(b)) => *b,
            k => panic!("bucket key expected, got {k:?}"),
        };
        assert_eq!(g.right, vec![format!("b{b}")]);
        for l in &g.left {
            let v: i64 = l[1..].parse().unwrap();
            let want = Transform::Bucket(4)
                .apply_scalar(&[ScalarValue::Int64(Some(v))])
                .unwrap();
            assert_eq!(want, ScalarValue::Int32(Some(b)));
        }
    }
    assert_eq!(
        plan.groups.iter().map(|g| g.left.len()).sum::<usize>(),
        values.len()
    );
}

#[test]
fn truncate_widths_coarsen_toward_zero_and_strings_by_prefix() {
    let s = schema(&[("x", DataType::Int64, 0), ("s", DataType::Utf8, 1)]);
    let t10 = specs(vec![vec![field("xt", 0, "truncate", Some(10))]]);
    let t20 = specs(vec![vec![field("xt", 0, "truncate", Some(20))]]);
    let left = JoinSide {
        schema: &s,
        specs: &t10,
        leaves: leaves("l", int64s(&[-20i64, -10, 0, 10, 20])),
    };
    let right = JoinSide {
        schema: &s,
        specs: &t20,
        leaves: leaves("r", int64s(&[-20i64, 0, 20])),
    };
    let plan = plan_join(&left, &right, &[("x".into(), "x".into())]).unwrap();
    let got = sides(&plan);
    // Toward zero: -10 (values -19..=-10) truncates to 0 at width 20 (values -19..=19).
    assert_eq!(
        got,
        vec![
            (ids(&["l-20"]), ids(&["r-20"])),
            (ids(&["l-10", "l0", "l10"]), ids(&["r0"])),
            (ids(&["l20"]), ids(&["r20"])),
        ]
    );
    let p2 = specs(vec![vec![field("st", 1, "truncate", Some(2))]]);
    let p3 = specs(vec![vec![field("st", 1, "truncate", Some(3))]]);
    let text = |xs: &[&str]| -> Vec<(String, i32, Vec<ScalarValue>)> {
        xs.iter()
            .map(|v| {
                (
                    format!("p{v}"),
                    1,
                    vec![ScalarValue::Utf8(Some(v.to_string()))],
                )
            })
            .collect()
    };
    let left = JoinSide {
        schema: &s,
        specs: &p2,
        leaves: text(&["ab", "ac"]),
    };
    let right = JoinSide {
        schema: &s,
        specs: &p3,
        leaves: text(&["abc", "abd", "acx", "b"]),
    };
    let plan = plan_join(&left, &right, &[("s".into(), "s".into())]).unwrap();
    let got = sides(&plan);
    assert_eq!(
        got,
        vec![
            (ids(&["pab"]), ids(&["pabc", "pabd"])),
            (ids(&["pac"]), ids(&["pacx"])),
            (ids(&[]), ids(&["pb"])),
        ]
    );
}

#[test]
fn bad_keys_are_typed_errors() {
    let s = schema(&[("k", DataType::Int64, 0), ("t", DataType::Int32, 1)]);
    let sp = specs(vec![vec![field("kb", 0, "bucket", Some(4))]]);
    let side = JoinSide {
        schema: &s,
        specs: &sp,
        leaves: vec![],
    };
    for on in [
        vec![("nope".to_string(), "k".to_string())],
        vec![("k".to_string(), "t".to_string())],
        vec![],
    ] {
        let err = plan_join(&side, &side, &on).unwrap_err();
        assert!(
            matches!(err, crate::error::Error::InvalidArgument(_)),
            "{err}"
        );
    }
}
