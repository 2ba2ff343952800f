//! The unique-key join against DataFusion's hash join (`hash`) on random groups: every kind
//! of join, NULL keys, several key types, direct and hashed key maps, batch borders.

use std::sync::Arc;

use proptest::prelude::*;

use crate::arrow::array::{
    ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray,
    UInt64Array,
};
use crate::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use crate::datafusion::scalar::ScalarValue;

use super::request::JoinHow;
use super::side::Side;
use super::{hash, unique};

const HOWS: [JoinHow; 6] = [
    JoinHow::Inner,
    JoinHow::Left,
    JoinHow::Right,
    JoinHow::Full,
    JoinHow::Semi,
    JoinHow::Anti,
];

/// A key column of `kind` from small key numbers: 0 Int64, 1 Int32, 2 UInt64 near the top
/// of its range, 3 timestamps, 4 Int64 spread far apart (a hashed map).
fn key_column(kind: u8, keys: &[Option<u8>]) -> (DataType, ArrayRef) {
    let k = |f: &dyn Fn(u8) -> i64| keys.iter().map(|v| v.map(f)).collect::<Vec<_>>();
    match kind {
        0 => (
            DataType::Int64,
            Arc::new(Int64Array::from(k(&|x| i64::from(x) - 5))),
        ),
        1 => (
            DataType::Int32,
            Arc::new(Int32Array::from(
                keys.iter()
                    .map(|v| v.map(|x| i32::MIN + i32::from(x)))
                    .collect::<Vec<_>>(),
            )),
        ),
        2 => (
            DataType::UInt64,
            Arc::new(UInt64Array::from(
                keys.iter()
                    .map(|v| v.map(|x| u64::MAX - u64::from(x) * 3))
                    .collect::<Vec<_>>(),
            )),
        ),
        3 => (
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            Arc::new(
                TimestampMicrosecondArray::from(k(&|x| i64::from(x) * 86_400_000_000))
                    .with_timezone("UTC"),
            ),
        ),
        _ => (
            DataType::Int64,
            Arc::new(Int64Array::from(k(&|x| (i64::from(x) - 6) * 1_000_000_007))),
        ),
    }
}

/// One side: key, a row number and a text column, split into batches at `cuts`.
fn side(kind: u8, keys: &[Option<u8>], cuts: &[usize], tag: &str) -> Side {
    let (kt, key) = key_column(kind, keys);
    let n = keys.len();
    let num = Arc::new(Int64Array::from_iter_values(0..n as i64)) as ArrayRef;
    let text: StringArray = (0..n)
        .map(|i| (i % 4 != 3).then(|| format!("{tag}{i}")))
        .collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new(format!("{tag}_num"), DataType::Int64, false),
        Field::new(format!("{tag}_key"), kt, true),
        Field::new(format!("{tag}_text"), DataType::Utf8, true),
    ]));
    let whole = RecordBatch::try_new(Arc::clone(&schema), vec![num, key, Arc::new(text)]).unwrap();
    let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (n + 1)).collect();
    bounds.extend([0, n]);
    bounds.sort_unstable();
    bounds.dedup();
    let batches = bounds
        .windows(2)
        .map(|w| whole.slice(w[0], w[1] - w[0]))
        .collect();
    Side {
        schema,
        batches,
        keys: vec![1],
    }
}

fn copy(s: &Side) -> Side {
    Side {
        schema: Arc::clone(&s.schema),
        batches: s.batches.clone(),
        keys: s.keys.clone(),
    }
}

/// Every row as text, sorted: the multiset of rows.
fn rows(batches: &[RecordBatch]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = batches
        .iter()
        .flat_map(|b| {
            (0..b.num_rows()).map(move |i| {
                b.columns()
                    .iter()
                    .map(|c| format!("{:?}", ScalarValue::try_from_array(c, i).unwrap()))
                    .collect()
            })
        })
        .collect();
    out.sort();
    out
}

fn unique_keys(keys: &[Option<u8>]) -> bool {
    let mut seen = std::collections::HashSet::new();
    keys.iter().flatten().all(|k| seen.insert(*k))
}

fn keys(max_len: usize) -> impl Strategy<Value = Vec<Option<u8>>> {
    prop::collection::vec(prop::option::weighted(0.85, 0u8..14), 0..max_len)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    #[test]
    fn equals_datafusion_hash_join(
        kind in 0u8..5,
        left in keys(40),
        right in prop::sample::subsequence((0u8..14).collect::<Vec<_>>(), 0..14)
            .prop_map(|k| k.into_iter().map(|x| (x % 5 != 4).then_some(x)).collect::<Vec<_>>()),
        right_repeats in any::<bool>(),
        left_cuts in prop::collection::vec(0usize..41, 0..4),
        right_cuts in prop::collection::vec(0usize..41, 0..3),
        batch_size in 1usize..9,
    ) {
        let mut right = right;
        if right_repeats && !right.is_empty() {
            right.push(right[0]);
        }
        let l = side(kind, &left, &left_cuts, "l");
        let r = side(kind, &right, &right_cuts, "r");
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let build_unique = if right.len() <= left.len() {
            unique_keys(&right)
        } else {
            unique_keys(&left)
        };
        for how in HOWS {
            let fast = unique::join(how, &l, &r, batch_size).unwrap();
            prop_assert_eq!(fast.is_some(), build_unique, "{:?}", how);
            let Some(fast) = fast else { continue };
            prop_assert!(fast.iter().all(|b| b.num_rows() <= batch_size.max(40)));
            let slow = rt.block_on(hash::join(how, copy(&l), copy(&r), Some(batch_size))).unwrap();
            prop_assert_eq!(rows(&fast), rows(&slow), "{:?}", how);
        }
    }
}

#[test]
fn other_key_types_and_several_keys_go_to_datafusion() {
    let f = Side {
        schema: Arc::new(Schema::new(vec![Field::new("k", DataType::Utf8, true)])),
        batches: Vec::new(),
        keys: vec![0],
    };
    assert!(unique::join(JoinHow::Inner, &f, &copy(&f), 8)
        .unwrap()
        .is_none());
    let two = side(0, &[Some(1)], &[], "x");
    let two = Side {
        keys: vec![1, 0],
        ..two
    };
    assert!(unique::join(JoinHow::Inner, &two, &copy(&two), 8)
        .unwrap()
        .is_none());
}
