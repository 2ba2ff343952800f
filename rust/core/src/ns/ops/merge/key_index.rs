//! The source's keys, indexed for the lookup of every target row a merge reads.
//!
//! A key of one integer-like column (integers, dates, times, timestamps, durations) is
//! indexed by its value as an `i64`, looked up straight from the column's buffer; any other
//! key by its bytes in Arrow's row format. Source and target are read in the namespace's
//! types, so both sides map a key the same way. A merge into 10M rows does 10M lookups, and
//! by value each skips encoding the target's row and hashing and comparing its bytes
//! (`benches/merge.py` measures the merge as a whole; BENCHMARKS.md, "Upserts").

use crate::arrow::array::{Array, ArrayRef, RecordBatch};
use crate::arrow::buffer::NullBuffer;
use crate::arrow::datatypes::DataType;
use crate::error::{Error, Result};

use super::keys::{key_column, KeyEncoder, KeyIndex};

/// Key -> source row, for the source rows whose key has no NULL.
pub(crate) enum SourceIndex {
    /// One integer-like key column, by value.
    Int(KeyIndex<i64, u32>),
    /// Any other key, by its encoded row.
    Rows(KeyIndex<Box<[u8]>, u32>),
}

/// What the target rows of one batch found in the source.
#[derive(Default)]
pub(crate) struct Matches {
    /// Target rows that matched, in order.
    pub(crate) target: Vec<u32>,
    /// The source row each of them matched.
    pub(crate) source: Vec<u32>,
    /// Target rows that matched nothing (a NULL key matches nothing), when asked for.
    pub(crate) unmatched: Vec<u32>,
    keep_unmatched: bool,
}

impl Matches {
    fn push(&mut self, row: usize, hit: Option<&u32>) {
        match hit {
            Some(&s) => {
                self.target.push(row as u32);
                self.source.push(s);
            }
            None if self.keep_unmatched => self.unmatched.push(row as u32),
            None => {}
        }
    }
}

impl SourceIndex {
    /// Indexes the keys of `batch` (the conformed source); `Ok(Err((a, b)))` when its rows
    /// `a` and `b` share a key.
    ///
    /// # Errors
    /// `SchemaMismatch` when a key column is missing; `Arrow` when encoding fails.
    pub(crate) fn build(
        encoder: &KeyEncoder,
        batch: &RecordBatch,
    ) -> Result<std::result::Result<Self, (usize, usize)>> {
        if let Some((values, nulls)) = int_key(encoder, batch)? {
            let mut index = KeyIndex::with_capacity_and_hasher(values.len(), Default::default());
            for (i, v) in values.iter().enumerate() {
                if nulls.as_ref().is_some_and(|n| n.is_null(i)) {
                    continue;
                }
                if let Some(&first) = index.get(v) {
                    return Ok(Err((first as usize, i)));
                }
                index.insert(*v, i as u32);
            }
            return Ok(Ok(Self::Int(index)));
        }
        let keys = encoder.encode(batch)?;
        let mut index = KeyIndex::with_capacity_and_hasher(batch.num_rows(), Default::default());
        for i in (0..batch.num_rows()).filter(|&i| keys.valid[i]) {
            let row = keys.rows.row(i);
            if let Some(&first) = index.get(row.as_ref()) {
                return Ok(Err((first as usize, i)));
            }
            index.insert(row.as_ref().into(), i as u32);
        }
        Ok(Ok(Self::Rows(index)))
    }

    /// The source rows indexed (those whose key has no NULL), in no order.
    pub(crate) fn rows(&self) -> Vec<u32> {
        match self {
            Self::Int(m) => m.values().copied().collect(),
            Self::Rows(m) => m.values().copied().collect(),
        }
    }

    /// Looks up the key of every row of `target` (namespace column names and types); the
    /// rows that match nothing are listed when `unmatched` asks for them.
    ///
    /// # Errors
    /// `SchemaMismatch` when a key column is missing; `Arrow` when encoding fails.
    pub(crate) fn find(
        &self,
        encoder: &KeyEncoder,
        target: &RecordBatch,
        unmatched: bool,
    ) -> Result<Matches> {
        let mut out = Matches {
            keep_unmatched: unmatched,
            ..Matches::default()
        };
        match self {
            Self::Int(index) => {
                let (values, nulls) = int_key(encoder, target)?.ok_or_else(|| {
                    Error::Internal("an integer merge key read as another type".into())
                })?;
                for (r, v) in values.iter().enumerate() {
                    let valid = nulls.as_ref().is_none_or(|n| n.is_valid(r));
                    out.push(r, valid.then(|| index.get(v)).flatten());
                }
            }
            Self::Rows(index) => {
                let keys = encoder.encode(target)?;
                for r in 0..target.num_rows() {
                    let hit = keys.valid[r]
                        .then(|| index.get(keys.rows.row(r).as_ref()))
                        .flatten();
                    out.push(r, hit);
                }
            }
        }
        Ok(out)
    }
}

/// The values of a one-column integer-like key of `batch` as `i64`, with the key's NULLs;
/// `None` for any other key.
fn int_key(
    encoder: &KeyEncoder,
    batch: &RecordBatch,
) -> Result<Option<(Vec<i64>, Option<NullBuffer>)>> {
    let [key] = encoder.keys() else {
        return Ok(None);
    };
    if !is_int_like(&key.data_type) {
        return Ok(None);
    }
    let col = key_column(batch, key)?;
    Ok(Some((as_i64(&col), col.logical_nulls())))
}

/// Whether a key of type `t` is indexed by its value as an `i64`: every type whose values
/// are integers of at most 64 bits (an unsigned 64-bit value keeps its bits).
fn is_int_like(t: &DataType) -> bool {
    use DataType::*;
    matches!(
        t,
        Int8 | Int16
            | Int32
            | Int64
            | UInt8
            | UInt16
            | UInt32
            | UInt64
            | Date32
            | Date64
            | Time32(_)
            | Time64(_)
            | Timestamp(..)
            | Duration(_)
    )
}

/// The values of an integer-like column as `i64` (see [`is_int_like`]), NULL slots included.
fn as_i64(col: &ArrayRef) -> Vec<i64> {
    fn widen<T: Copy>(v: &[T], f: impl Fn(T) -> i64) -> Vec<i64> {
        v.iter().map(|&x| f(x)).collect()
    }
    let data = col.to_data();
    match (col.data_type(), col.data_type().primitive_width()) {
        (DataType::UInt64, _) => widen(data.buffer::<u64>(0), |x| x as i64),
        (_, Some(8)) => data.buffer::<i64>(0).to_vec(),
        (DataType::UInt32, _) => widen(data.buffer::<u32>(0), i64::from),
        (_, Some(4)) => widen(data.buffer::<i32>(0), i64::from),
        (DataType::UInt16, _) => widen(data.buffer::<u16>(0), i64::from),
        (_, Some(2)) => widen(data.buffer::<i16>(0), i64::from),
        (DataType::UInt8, _) => widen(data.buffer::<u8>(0), i64::from),
        _ => widen(data.buffer::<i8>(0), i64::from),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::arrow::array::{
        Date32Array, Int16Array, Int8Array, Time32SecondArray, TimestampMicrosecondArray,
        UInt32Array, UInt64Array,
    };
    use crate::arrow::datatypes::{Field, Schema};
    use crate::ns::ops::merge::keys::KeyPath;

    fn batch(col: ArrayRef) -> RecordBatch {
        let schema = Schema::new(vec![Field::new("k", col.data_type().clone(), true)]);
        RecordBatch::try_new(Arc::new(schema), vec![col]).expect("batch")
    }

    fn encoder(t: &DataType) -> KeyEncoder {
        KeyEncoder::new(vec![KeyPath {
            name: "k".into(),
            path: vec!["k".into()],
            data_type: t.clone(),
            field_id: None,
        }])
        .expect("encoder")
    }

    /// The index by value against the index of encoded rows (Arrow's row format, the
    /// independent path): the same pairs for every target row, NULLs matching nothing.
    fn same_as_rows(source: ArrayRef, target: ArrayRef) {
        let enc = encoder(source.data_type());
        let (src, tgt) = (batch(source), batch(target));
        let by_value = SourceIndex::build(&enc, &src)
            .expect("build")
            .expect("unique");
        assert!(matches!(by_value, SourceIndex::Int(_)));
        let keys = enc.encode(&src).expect("encode");
        let mut rows = KeyIndex::with_capacity_and_hasher(8, Default::default());
        for i in (0..src.num_rows()).filter(|&i| keys.valid[i]) {
            rows.insert(Box::<[u8]>::from(keys.rows.row(i).as_ref()), i as u32);
        }
        let by_rows = SourceIndex::Rows(rows);
        let (a, b) = (
            by_value.find(&enc, &tgt, true).expect("find"),
            by_rows.find(&enc, &tgt, true).expect("find"),
        );
        assert_eq!(
            (&a.target, &a.source, &a.unmatched),
            (&b.target, &b.source, &b.unmatched)
        );
        assert!(!a.target.is_empty() && !a.unmatched.is_empty());
    }

    #[test]
    fn integer_like_keys_match_as_their_encoded_rows_do() {
        same_as_rows(
            Arc::new(UInt64Array::from(vec![
                Some(u64::MAX),
                Some(1),
                None,
                Some(1 << 63),
            ])),
            Arc::new(UInt64Array::from(vec![
                Some(u64::MAX),
                None,
                Some(2),
                Some(1 << 63),
            ])),
        );
        same_as_rows(
            Arc::new(Int8Array::from(vec![Some(-128), Some(127), None])),
            Arc::new(Int8Array::from(vec![Some(127), Some(-1), None, Some(-128)])),
        );
        same_as_rows(
            Arc::new(Int16Array::from(vec![Some(-300), Some(300)])),
            Arc::new(Int16Array::from(vec![Some(300), Some(-301)])),
        );
        same_as_rows(
            Arc::new(UInt32Array::from(vec![Some(u32::MAX), Some(0)])),
            Arc::new(UInt32Array::from(vec![None, Some(u32::MAX), Some(7)])),
        );
        same_as_rows(
            Arc::new(Date32Array::from(vec![Some(-719_162), Some(19_723), None])),
            Arc::new(Date32Array::from(vec![Some(19_723), Some(19_724), None])),
        );
        same_as_rows(
            Arc::new(Time32SecondArray::from(vec![Some(0), Some(86_399)])),
            Arc::new(Time32SecondArray::from(vec![Some(86_399), Some(1)])),
        );
        let ts = |v: Vec<Option<i64>>| {
            Arc::new(TimestampMicrosecondArray::from(v).with_timezone("America/New_York"))
        };
        same_as_rows(
            ts(vec![Some(i64::MIN), Some(-1), None]),
            ts(vec![Some(-1), Some(i64::MIN), Some(0), None]),
        );
    }

    #[test]
    fn a_key_sliced_from_a_larger_array_reads_its_own_values() {
        let whole = UInt64Array::from(vec![9, 8, 7, 6, 5]);
        same_as_rows(Arc::new(whole.slice(1, 3)), Arc::new(whole.slice(2, 3)));
    }

    #[test]
    fn two_source_rows_with_one_key_are_named() {
        let src = batch(Arc::new(Int16Array::from(vec![
            Some(1),
            None,
            Some(2),
            None,
            Some(1),
        ])));
        let got = SourceIndex::build(&encoder(&DataType::Int16), &src).expect("build");
        assert!(matches!(got, Err((0, 4))));
    }
}
