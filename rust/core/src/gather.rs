//! Gathering rows of a set of columns by index, many times over (output row `i` is input
//! row `indices[i]`): what a join does with its build side's columns for every probe batch.
//!
//! The columns are prepared once. Byte columns (strings, binary) whose values are all short
//! (names, codes, ids: up to 32 bytes) are copied into fixed-size slots with their lengths
//! beside them. A gather then reads one slot per row, with one fixed-size copy, where arrow's
//! `take` reads two offsets and the bytes (three scattered loads) and calls `memcpy` per value;
//! the output offsets come from the lengths alone, a table that stays in cache. Other columns
//! use arrow's `take`.

use std::sync::Arc;

use crate::arrow::array::{Array, ArrayRef, AsArray, GenericByteArray, UInt32Array};
use crate::arrow::buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use crate::arrow::compute::take;
use crate::arrow::datatypes::{
    ArrowNativeType, BinaryType, ByteArrayType, DataType, LargeBinaryType, LargeUtf8Type, Utf8Type,
};
use crate::error::{Error, Result};

/// Columns prepared for gathers.
pub(crate) struct Gather {
    columns: Vec<Prepared>,
}

enum Prepared {
    /// A byte column whose values all fit `width` bytes.
    Short(ShortBytes),
    /// Anything else: arrow's `take`.
    Take(ArrayRef),
}

impl Gather {
    /// Prepares `columns` (all of the same length).
    pub(crate) fn new(columns: &[ArrayRef]) -> Self {
        let columns = columns
            .iter()
            .map(|c| match ShortBytes::of(c) {
                Some(s) => Prepared::Short(s),
                None => Prepared::Take(Arc::clone(c)),
            })
            .collect();
        Self { columns }
    }

    /// Every column gathered by `indices`; a NULL index gives a NULL row.
    ///
    /// # Errors
    /// An index past the columns' end; gathered bytes too many for a column's offset type.
    pub(crate) fn rows(&self, indices: &UInt32Array) -> Result<Vec<ArrayRef>> {
        self.columns
            .iter()
            .map(|c| match c {
                Prepared::Short(s) => s.gather(indices),
                Prepared::Take(a) => Ok(take(a.as_ref(), indices, None)?),
            })
            .collect()
    }
}

/// A byte column in fixed-size slots: value `i` is `slots[i * width..][..lens[i]]`.
struct ShortBytes {
    data_type: DataType,
    width: usize,
    slots: Vec<u8>,
    lens: Vec<u8>,
    nulls: Option<NullBuffer>,
}

/// The slot sizes tried, smallest first: values longer than the last stay with `take`.
const WIDTHS: [usize; 2] = [16, 32];

impl ShortBytes {
    fn of(column: &ArrayRef) -> Option<Self> {
        match column.data_type() {
            DataType::Utf8 => Self::slots::<Utf8Type>(column.as_ref()),
            DataType::LargeUtf8 => Self::slots::<LargeUtf8Type>(column.as_ref()),
            DataType::Binary => Self::slots::<BinaryType>(column.as_ref()),
            DataType::LargeBinary => Self::slots::<LargeBinaryType>(column.as_ref()),
            _ => None,
        }
    }

    fn slots<T: ByteArrayType>(a: &dyn Array) -> Option<Self> {
        let arr = a.as_bytes::<T>();
        let offsets = arr.value_offsets();
        let data = arr.value_data();
        let len = |i: usize| offsets[i + 1].as_usize() - offsets[i].as_usize();
        let longest = (0..arr.len()).map(len).max().unwrap_or(0);
        let width = *WIDTHS.iter().find(|&&w| longest <= w)?;
        let mut slots = vec![0u8; arr.len() * width];
        let mut lens = Vec::with_capacity(arr.len());
        for (i, slot) in slots.chunks_exact_mut(width).enumerate() {
            let s = offsets[i].as_usize();
            let n = len(i);
            slot[..n].copy_from_slice(&data[s..s + n]);
            lens.push(n as u8);
        }
        Some(Self {
            data_type: a.data_type().clone(),
            width,
            slots,
            lens,
            nulls: arr.nulls().filter(|n| n.null_count() > 0).cloned(),
        })
    }

    fn gather(&self, indices: &UInt32Array) -> Result<ArrayRef> {
        match self.data_type {
            DataType::Utf8 => self.build::<Utf8Type>(indices),
            DataType::LargeUtf8 => self.build::<LargeUtf8Type>(indices),
            DataType::Binary => self.build::<BinaryType>(indices),
            _ => self.build::<LargeBinaryType>(indices),
        }
    }

    /// Copies the slot of every row (`W` bytes, a constant so the copy is a few vector moves)
    /// one after another, each starting where the previous value ended.
    fn copy_slots<const W: usize>(
        &self,
        idx: &[u32],
        row: &impl Fn(usize, u32) -> Option<usize>,
        out: &mut [u8],
    ) {
        let mut pos = 0;
        for (k, &i) in idx.iter().enumerate() {
            if let Some(r) = row(k, i) {
                out[pos..pos + W].copy_from_slice(&self.slots[r * W..r * W + W]);
                pos += usize::from(self.lens[r]);
            }
        }
    }

    fn build<T: ByteArrayType>(&self, indices: &UInt32Array) -> Result<ArrayRef> {
        let idx = indices.values();
        let rows = self.lens.len();
        let past_end =
            |i: u32| Error::Internal(format!("gather: row {i} of a column of {rows} rows"));
        let too_many = |total: usize| {
            Error::InvalidArgument(format!(
                "gather: {total} bytes do not fit the offsets of a {} column",
                self.data_type
            ))
        };
        let index_nulls = indices.nulls().filter(|n| n.null_count() > 0);
        // A NULL index reads row 0's slot with length 0 (and is NULL in the output).
        let row = |k: usize, i: u32| match index_nulls {
            Some(n) if n.is_null(k) => None,
            _ => Some(i as usize),
        };
        // First pass: output offsets from the lengths, every index checked.
        let mut offsets: Vec<T::Offset> = Vec::with_capacity(idx.len() + 1);
        offsets.push(T::Offset::default());
        let mut total = 0usize;
        for (k, &i) in idx.iter().enumerate() {
            if let Some(r) = row(k, i) {
                total += usize::from(*self.lens.get(r).ok_or_else(|| past_end(i))?);
            }
            offsets.push(T::Offset::from_usize(total).ok_or_else(|| too_many(total))?);
        }
        // Second pass: one slot-sized copy per row into a buffer with room for the last.
        let mut out = vec![0u8; total + self.width];
        match self.width {
            16 => self.copy_slots::<16>(idx, &row, &mut out),
            _ => self.copy_slots::<32>(idx, &row, &mut out),
        }
        out.truncate(total);
        let nulls = match (&self.nulls, index_nulls) {
            (None, None) => None,
            (values, _) => Some(NullBuffer::from_iter(idx.iter().enumerate().map(
                |(k, &i)| row(k, i).is_some_and(|r| values.as_ref().is_none_or(|v| v.is_valid(r))),
            ))),
        };
        // SAFETY: the offsets start at 0 and grow by each row's value length up to
        // `out.len()`; each row's bytes are a whole value of the prepared column (valid UTF-8
        // for strings): the slot copy's bytes past the value were overwritten by the next row
        // or cut off by the truncation.
        Ok(Arc::new(unsafe {
            GenericByteArray::<T>::new_unchecked(
                OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets)),
                Buffer::from_vec(out),
                nulls,
            )
        }))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::arrow::array::{BinaryArray, Int32Array, LargeStringArray, StringArray};

    fn columns(v: &[Option<String>]) -> Vec<ArrayRef> {
        vec![
            Arc::new(StringArray::from(v.to_vec())),
            Arc::new(LargeStringArray::from(v.to_vec())),
            Arc::new(BinaryArray::from(
                v.iter()
                    .map(|s| s.as_deref().map(str::as_bytes))
                    .collect::<Vec<_>>(),
            )),
            Arc::new(Int32Array::from(
                v.iter()
                    .map(|s| s.as_ref().map(|s| s.len() as i32))
                    .collect::<Vec<_>>(),
            )),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]
        /// Columns (sliced, with NULL values and NULL indices, values of every length around
        /// the slot sizes) gather exactly as arrow's `take`.
        #[test]
        fn equals_take(
            values in prop::collection::vec(prop::option::weighted(0.8, "[a-zé]{0,3}"), 1..60),
            long in 0usize..40,
            picks in prop::collection::vec(prop::option::weighted(0.9, any::<prop::sample::Index>()), 0..80),
            skip in 0usize..5,
        ) {
            let mut values = values;
            values[0] = Some("x".repeat(long));
            let skip = skip.min(values.len() - 1);
            let cols: Vec<ArrayRef> = columns(&values)
                .iter()
                .map(|c| c.slice(skip, values.len() - skip))
                .collect();
            let n = values.len() - skip;
            let idx: UInt32Array =
                picks.iter().map(|p| p.map(|p| p.index(n) as u32)).collect();
            let ours = Gather::new(&cols).rows(&idx).unwrap();
            for (o, c) in ours.iter().zip(&cols) {
                o.to_data().validate_full().unwrap();
                prop_assert_eq!(o, &take(c.as_ref(), &idx, None).unwrap());
            }
        }
    }

    #[test]
    fn short_values_use_slots_and_long_ones_take() {
        let short: ArrayRef = Arc::new(StringArray::from(vec!["a"; 3]));
        let long: ArrayRef = Arc::new(StringArray::from(vec!["y".repeat(33)]));
        assert!(matches!(
            Gather::new(&[short]).columns[..],
            [Prepared::Short(ShortBytes { width: 16, .. })]
        ));
        assert!(matches!(
            Gather::new(&[long]).columns[..],
            [Prepared::Take(_)]
        ));
    }

    #[test]
    fn an_index_past_the_end_is_an_error() {
        let col: ArrayRef = Arc::new(StringArray::from(vec!["a", "b"]));
        let err = Gather::new(&[col])
            .rows(&UInt32Array::from(vec![0, 2]))
            .unwrap_err();
        assert!(
            err.to_string().contains("row 2 of a column of 2 rows"),
            "{err}"
        );
    }
}
