//! The statistics of Arrow data: what a write records for the rows it adds. Strings and binary
//! values are bounded by a prefix of at most [`PREFIX_BYTES`] bytes: the lower bound is the
//! prefix of the least value, the upper bound the prefix of the greatest with its last
//! character (byte) incremented, so it still sorts after every value (none when no character
//! can be incremented). Floating point bounds are unknown when there is a NaN, and a bound of
//! zero is widened to both zeros (SQL and Arrow's total order disagree on `-0.0 < 0.0`).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use crate::arrow::array::{
    make_array, Array, ArrayRef, ArrowNativeTypeOp, AsArray, GenericByteArray, PrimitiveArray,
    RecordBatch,
};
use crate::arrow::buffer::NullBuffer;
use crate::arrow::datatypes::{ArrowNativeType, ArrowPrimitiveType, ByteArrayType};
use crate::arrow::datatypes::{DataType, Field, Float32Type, Float64Type};
use crate::datafusion::functions_aggregate::min_max::{MaxAccumulator, MinAccumulator};
use crate::datafusion::logical_expr::Accumulator;
use crate::datafusion::scalar::ScalarValue;
use crate::field_ids::{field_id, LEAF_FIELD_ID_KEY};

use super::{ColumnStats, LeafColumnStats};

/// Longest string or binary bound recorded, in bytes.
pub const PREFIX_BYTES: usize = 16;

impl LeafColumnStats {
    /// The statistics of `batch`, a batch of a leaf or namespace schema (columns are matched
    /// by their field id; columns without one, and of types without an order, are left out).
    #[must_use]
    pub fn of_batch(batch: &RecordBatch) -> Self {
        Self::of_batch_except(batch, &HashSet::new())
    }

    /// [`Self::of_batch`] without the columns whose field id is in `skip`.
    #[must_use]
    pub fn of_batch_except(batch: &RecordBatch, skip: &HashSet<i32>) -> Self {
        let mut columns = BTreeMap::new();
        for (f, a) in batch.schema().fields().iter().zip(batch.columns()) {
            collect(f, a, skip, &mut columns);
        }
        Self {
            rows: batch.num_rows() as u64,
            columns,
        }
    }
}

/// Adds the statistics of column `a` (field `f`) to `columns`, and those of its struct
/// children at every depth: a child's value is NULL where it or any struct above it is.
fn collect(f: &Field, a: &ArrayRef, skip: &HashSet<i32>, columns: &mut BTreeMap<i32, ColumnStats>) {
    if let Some(id) = namespace_field_id(f).filter(|id| !skip.contains(id)) {
        if let Some(s) = of_array(a) {
            columns.insert(id, s);
        }
    }
    let (DataType::Struct(kids), Some(parent)) = (f.data_type(), a.as_struct_opt()) else {
        return;
    };
    let parent_nulls = parent.logical_nulls().filter(|n| n.null_count() > 0);
    for (kid, child) in kids.iter().zip(parent.columns()) {
        let child = match &parent_nulls {
            None => Arc::clone(child),
            Some(n) => match with_nulls(child, n) {
                Some(c) => c,
                None => continue,
            },
        };
        collect(kid, &child, skip, columns);
    }
}

/// `a` with its NULLs and those of `outer` (the struct holding it).
fn with_nulls(a: &ArrayRef, outer: &NullBuffer) -> Option<ArrayRef> {
    let nulls = NullBuffer::union(Some(outer), a.logical_nulls().as_ref());
    let data = a.to_data().into_builder().nulls(nulls).build().ok()?;
    Some(make_array(data))
}

fn namespace_field_id(f: &Field) -> Option<i32> {
    match f.metadata().get(LEAF_FIELD_ID_KEY) {
        Some(id) => id.trim().parse().ok(),
        None => field_id(f),
    }
}

/// Whether statistics are taken for columns of type `ty`.
fn ordered(ty: &DataType) -> bool {
    use DataType as D;
    matches!(
        ty,
        D::Boolean
            | D::Int8
            | D::Int16
            | D::Int32
            | D::Int64
            | D::UInt8
            | D::UInt16
            | D::UInt32
            | D::UInt64
            | D::Float32
            | D::Float64
            | D::Decimal128(..)
            | D::Date32
            | D::Date64
            | D::Time32(_)
            | D::Time64(_)
            | D::Timestamp(..)
            | D::Duration(_)
            | D::Utf8
            | D::LargeUtf8
            | D::Utf8View
            | D::Binary
            | D::LargeBinary
            | D::BinaryView
    )
}

fn of_array(a: &ArrayRef) -> Option<ColumnStats> {
    let ty = a.data_type();
    if !ordered(ty) {
        return None;
    }
    let nulls = a.logical_null_count() as u64;
    let (min, max, nans) = match ty {
        DataType::Float32 => {
            let (lo, hi, nans) = float_bounds(a.as_primitive::<Float32Type>().iter().flatten());
            let f = |v: Option<f32>| v.map(|v| ScalarValue::Float32(Some(v)));
            (f(lo), f(hi), nans)
        }
        DataType::Float64 => {
            let (lo, hi, nans) = float_bounds(a.as_primitive::<Float64Type>().iter().flatten());
            let f = |v: Option<f64>| v.map(|v| ScalarValue::Float64(Some(v)));
            (f(lo), f(hi), nans)
        }
        _ => {
            let (lo, hi) = match byte_extremes(a).or_else(|| primitive_extremes(a)) {
                Some(found) => found,
                None => extremes(a).ok()?,
            };
            (lo.and_then(lower_prefix), hi.and_then(upper_prefix), 0)
        }
    };
    Some(ColumnStats {
        data_type: ty.clone(),
        min,
        max,
        nulls,
        nans,
    })
}

/// The bounds of a string or binary column in one pass over its bytes (`None` for other
/// types): one comparison per value, no value copied but the two bounds.
fn byte_extremes(a: &ArrayRef) -> Option<(Option<ScalarValue>, Option<ScalarValue>)> {
    use ScalarValue as S;
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let pair = |lo: Option<S>, hi: Option<S>| Some((lo, hi));
    Some(match a.data_type() {
        DataType::Utf8 => {
            let (lo, hi) = offset_bounds(a.as_string::<i32>());
            pair(
                lo.map(|b| S::Utf8(Some(text(b)))),
                hi.map(|b| S::Utf8(Some(text(b)))),
            )?
        }
        DataType::LargeUtf8 => {
            let (lo, hi) = offset_bounds(a.as_string::<i64>());
            let f = |b: &[u8]| S::LargeUtf8(Some(text(b)));
            pair(lo.map(f), hi.map(f))?
        }
        DataType::Utf8View => {
            let (lo, hi) = bounds(a.as_string_view().iter().flatten().map(str::as_bytes));
            let f = |b: &[u8]| S::Utf8View(Some(text(b)));
            pair(lo.map(f), hi.map(f))?
        }
        DataType::Binary => {
            let (lo, hi) = offset_bounds(a.as_binary::<i32>());
            pair(
                lo.map(|b| S::Binary(Some(b.to_vec()))),
                hi.map(|b| S::Binary(Some(b.to_vec()))),
            )?
        }
        DataType::LargeBinary => {
            let (lo, hi) = offset_bounds(a.as_binary::<i64>());
            let f = |b: &[u8]| S::LargeBinary(Some(b.to_vec()));
            pair(lo.map(f), hi.map(f))?
        }
        DataType::BinaryView => {
            let (lo, hi) = bounds(a.as_binary_view().iter().flatten());
            let f = |b: &[u8]| S::BinaryView(Some(b.to_vec()));
            pair(lo.map(f), hi.map(f))?
        }
        _ => return None,
    })
}

/// Values whose first [`PREFIX_BYTES`] bytes are the least and the greatest (bytewise, as Arrow
/// orders strings and binary; ties at that length broken by the shorter value): what the
/// bounds are cut from. Comparing fixed-width keys instead of whole values keeps this to a few
/// nanoseconds per value.
fn bounds<'a>(values: impl Iterator<Item = &'a [u8]>) -> (Option<&'a [u8]>, Option<&'a [u8]>) {
    let mut lo: Option<((u128, usize), &[u8])> = None;
    let mut hi: Option<((u128, usize), &[u8])> = None;
    for v in values {
        let k = order_key(v);
        match (&mut lo, &mut hi) {
            (Some(l), Some(h)) => {
                if k < l.0 {
                    *l = (k, v);
                } else if k > h.0 {
                    *h = (k, v);
                }
            }
            _ => (lo, hi) = (Some((k, v)), Some((k, v))),
        }
    }
    (lo.map(|l| l.1), hi.map(|h| h.1))
}

/// `v`'s first [`PREFIX_BYTES`] bytes as a big-endian number (zero-padded), then its length
/// up to one past them: ordered as the prefixes are.
fn order_key(v: &[u8]) -> (u128, usize) {
    let mut buf = [0u8; PREFIX_BYTES];
    let n = v.len().min(PREFIX_BYTES);
    buf[..n].copy_from_slice(&v[..n]);
    (u128::from_be_bytes(buf), v.len().min(PREFIX_BYTES + 1))
}

/// [`bounds`] of the values of a string or binary array with offsets, read in place: each
/// value's key is one 16-byte load from the values buffer, the bytes past the value masked
/// off (the copy of [`order_key`] only for the last values of the buffer), and a NULL is
/// skipped by its validity bit. The same bounds as [`bounds`] over the non-NULL values, at 2-4
/// ns per value (docs/design.md, "Column statistics").
fn offset_bounds<T: ByteArrayType>(a: &GenericByteArray<T>) -> (Option<&[u8]>, Option<&[u8]>) {
    let offsets = a.value_offsets();
    let data = a.value_data();
    let valid = |i: usize| a.nulls().is_none_or(|n| n.is_valid(i));
    let key = |i: usize| key_at(data, offsets[i].as_usize(), offsets[i + 1].as_usize());
    let Some(first) = (0..a.len()).find(|&i| valid(i)) else {
        return (None, None);
    };
    let (mut lo, mut hi) = ((key(first), first), (key(first), first));
    for i in first + 1..a.len() {
        let k = key(i);
        // Most values lie strictly between the bounds' prefixes: one test each way.
        if (k.0 > lo.0 .0 && k.0 < hi.0 .0) || !valid(i) {
            continue;
        }
        if k < lo.0 {
            lo = (k, i);
        } else if k > hi.0 {
            hi = (k, i);
        }
    }
    let value = |i: usize| &data[offsets[i].as_usize()..offsets[i + 1].as_usize()];
    (Some(value(lo.1)), Some(value(hi.1)))
}

/// `KEEP[n]`: the mask of the top `n` bytes of a big-endian 16-byte word.
const KEEP: [u128; PREFIX_BYTES + 1] = {
    let mut masks = [u128::MAX; PREFIX_BYTES + 1];
    let mut n = 0;
    while n < PREFIX_BYTES {
        masks[n] = !(u128::MAX >> (8 * n));
        n += 1;
    }
    masks
};

/// [`order_key`] of `data[start..end]`.
#[inline]
fn key_at(data: &[u8], start: usize, end: usize) -> (u128, usize) {
    let len = end - start;
    let Some(word) = data
        .get(start..start + PREFIX_BYTES)
        .and_then(|w| <[u8; PREFIX_BYTES]>::try_from(w).ok())
    else {
        return order_key(&data[start..end]);
    };
    // Keep the value's own leading bytes: the top `len` bytes of the big-endian word.
    let key = u128::from_be_bytes(word) & KEEP[len.min(PREFIX_BYTES)];
    (key, len.min(PREFIX_BYTES + 1))
}

/// The least and greatest values of a primitive array in one pass over its values (`None` for
/// other types, and for floats, which [`float_bounds`] handles): the comparison of the values'
/// own type, which is Arrow's order for every primitive type but floats.
fn primitive_extremes(a: &ArrayRef) -> Option<(Option<ScalarValue>, Option<ScalarValue>)> {
    if matches!(
        a.data_type(),
        DataType::Float16 | DataType::Float32 | DataType::Float64
    ) {
        return None;
    }
    crate::arrow::array::downcast_primitive_array!(
        a => primitive_pair(a),
        _ => None
    )
}

/// [`native_extremes`] as scalars (both `None` when every value is NULL; `None` when the
/// type has no scalar).
fn primitive_pair<T: ArrowPrimitiveType>(
    a: &PrimitiveArray<T>,
) -> Option<(Option<ScalarValue>, Option<ScalarValue>)> {
    let Some((lo, hi)) = native_extremes(a) else {
        return Some((None, None));
    };
    let scalar = |v| ScalarValue::new_primitive::<T>(Some(v), a.data_type()).ok();
    Some((Some(scalar(lo)?), Some(scalar(hi)?)))
}

/// The least and greatest non-NULL values (`None` when there is none).
fn native_extremes<T: ArrowPrimitiveType>(a: &PrimitiveArray<T>) -> Option<(T::Native, T::Native)> {
    let pick = |(lo, hi): (T::Native, T::Native), v: T::Native| {
        (
            if v.is_lt(lo) { v } else { lo },
            if hi.is_lt(v) { v } else { hi },
        )
    };
    if a.null_count() == 0 {
        let (&first, rest) = a.values().split_first()?;
        return Some(rest.iter().copied().fold((first, first), pick));
    }
    let mut values = a.iter().flatten();
    let first = values.next()?;
    Some(values.fold((first, first), pick))
}

/// The least and greatest non-NULL values (`None` when every value is NULL).
fn extremes(
    a: &ArrayRef,
) -> crate::datafusion::error::Result<(Option<ScalarValue>, Option<ScalarValue>)> {
    let mut lo = MinAccumulator::try_new(a.data_type())?;
    let mut hi = MaxAccumulator::try_new(a.data_type())?;
    lo.update_batch(std::slice::from_ref(a))?;
    hi.update_batch(std::slice::from_ref(a))?;
    let some = |v: ScalarValue| (!v.is_null()).then_some(v);
    Ok((some(lo.evaluate()?), some(hi.evaluate()?)))
}

/// Bounds of the non-NaN values (both unknown when there is a NaN) and the NaN count.
fn float_bounds<F: num_like::Float>(
    values: impl Iterator<Item = F>,
) -> (Option<F>, Option<F>, u64) {
    let (mut lo, mut hi, mut nans) = (None::<F>, None::<F>, 0u64);
    for v in values {
        if v.is_nan() {
            nans += 1;
            continue;
        }
        lo = Some(match lo {
            Some(l) if l.le(v) => l,
            _ => v,
        });
        hi = Some(match hi {
            Some(h) if h.ge(v) => h,
            _ => v,
        });
    }
    if nans > 0 {
        return (None, None, nans);
    }
    (lo.map(F::widen_down), hi.map(F::widen_up), 0)
}

/// The float operations [`float_bounds`] needs, for `f32` and `f64`.
mod num_like {
    pub trait Float: Copy {
        fn is_nan(self) -> bool;
        fn le(self, o: Self) -> bool;
        fn ge(self, o: Self) -> bool;
        /// `-0.0` for either zero, else itself.
        fn widen_down(self) -> Self;
        /// `0.0` for either zero, else itself.
        fn widen_up(self) -> Self;
    }
    macro_rules! float {
        ($t:ty) => {
            impl Float for $t {
                fn is_nan(self) -> bool {
                    <$t>::is_nan(self)
                }
                fn le(self, o: Self) -> bool {
                    self <= o
                }
                fn ge(self, o: Self) -> bool {
                    self >= o
                }
                fn widen_down(self) -> Self {
                    if self == 0.0 {
                        -0.0
                    } else {
                        self
                    }
                }
                fn widen_up(self) -> Self {
                    if self == 0.0 {
                        0.0
                    } else {
                        self
                    }
                }
            }
        };
    }
    float!(f32);
    float!(f64);
}

/// A lower bound of `v` at most [`PREFIX_BYTES`] long (its prefix).
fn lower_prefix(v: ScalarValue) -> Option<ScalarValue> {
    use ScalarValue as S;
    Some(match v {
        S::Utf8(Some(s)) => S::Utf8(Some(str_prefix(&s).to_string())),
        S::LargeUtf8(Some(s)) => S::LargeUtf8(Some(str_prefix(&s).to_string())),
        S::Utf8View(Some(s)) => S::Utf8View(Some(str_prefix(&s).to_string())),
        S::Binary(Some(b)) => S::Binary(Some(b[..b.len().min(PREFIX_BYTES)].to_vec())),
        S::LargeBinary(Some(b)) => S::LargeBinary(Some(b[..b.len().min(PREFIX_BYTES)].to_vec())),
        S::BinaryView(Some(b)) => S::BinaryView(Some(b[..b.len().min(PREFIX_BYTES)].to_vec())),
        other => other,
    })
}

/// An upper bound of `v` at most [`PREFIX_BYTES`] long: `v` itself when short enough, else its
/// prefix with the last character (byte) that can be incremented incremented.
fn upper_prefix(v: ScalarValue) -> Option<ScalarValue> {
    use ScalarValue as S;
    Some(match v {
        S::Utf8(Some(s)) => S::Utf8(Some(str_upper(s)?)),
        S::LargeUtf8(Some(s)) => S::LargeUtf8(Some(str_upper(s)?)),
        S::Utf8View(Some(s)) => S::Utf8View(Some(str_upper(s)?)),
        S::Binary(Some(b)) => S::Binary(Some(bytes_upper(b)?)),
        S::LargeBinary(Some(b)) => S::LargeBinary(Some(bytes_upper(b)?)),
        S::BinaryView(Some(b)) => S::BinaryView(Some(bytes_upper(b)?)),
        other => other,
    })
}

fn str_prefix(s: &str) -> &str {
    let mut end = s.len().min(PREFIX_BYTES);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn str_upper(s: String) -> Option<String> {
    if s.len() <= PREFIX_BYTES {
        return Some(s);
    }
    let mut chars: Vec<char> = str_prefix(&s).chars().collect();
    while let Some(c) = chars.pop() {
        let next = match c as u32 {
            0xD7FF => Some('\u{E000}'),
            n => char::from_u32(n + 1),
        };
        if let Some(n) = next {
            chars.push(n);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

fn bytes_upper(b: Vec<u8>) -> Option<Vec<u8>> {
    if b.len() <= PREFIX_BYTES {
        return Some(b);
    }
    let mut p = b[..PREFIX_BYTES].to_vec();
    while let Some(last) = p.pop() {
        if last < u8::MAX {
            p.push(last + 1);
            return Some(p);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_strings_are_bounded_by_prefixes_that_still_bound_them() {
        let long = "a".repeat(PREFIX_BYTES) + "zzz";
        assert_eq!(str_prefix(&long), "a".repeat(PREFIX_BYTES));
        let up = str_upper(long.clone()).expect("bound");
        assert!(
            up.len() <= PREFIX_BYTES && up.as_str() > long.as_str(),
            "{up}"
        );
        // A multi-byte character straddling the cut is dropped, not split.
        let wide = "é".repeat(PREFIX_BYTES);
        assert!(str_prefix(&wide).len() <= PREFIX_BYTES);
        assert!(str_upper(wide.clone()).expect("bound").as_str() > wide.as_str());
        // Nothing can be incremented: no upper bound.
        assert_eq!(str_upper("\u{10FFFF}".repeat(PREFIX_BYTES)), None);
        assert_eq!(bytes_upper(vec![0xff; PREFIX_BYTES + 1]), None);
        let b = [vec![1u8; PREFIX_BYTES - 1], vec![0xff, 0xff]].concat();
        assert!(bytes_upper(b.clone()).expect("bound") > b);
    }

    proptest::proptest! {
        /// The in-place bounds equal the reference ones over the non-NULL values, for values
        /// shorter and longer than the prefix, at the end of the buffer, NULLs, and slices.
        #[test]
        fn in_place_bounds_equal_the_reference(
            values in proptest::collection::vec(
                proptest::option::weighted(
                    0.9,
                    proptest::collection::vec(
                        proptest::sample::select(vec![0u8, 1, b'a', b'b', 0x7f, 0x80, 0xff]),
                        0..24,
                    ),
                ),
                0..40,
            ),
            cut in 0usize..8,
        ) {
            use crate::arrow::array::BinaryArray;
            let array = BinaryArray::from_iter(values.iter().map(|v| v.as_deref()));
            let from = cut.min(array.len());
            let sliced = array.slice(from, array.len() - from);
            let expected = bounds(sliced.iter().flatten());
            proptest::prop_assert_eq!(offset_bounds(&sliced), expected);
        }
    }

    #[test]
    fn nan_makes_float_bounds_unknown_and_zeros_widen() {
        let (lo, hi, nans) = float_bounds([1.0f64, f64::NAN, 2.0].into_iter());
        assert_eq!((lo, hi, nans), (None, None, 1));
        let (lo, hi, _) = float_bounds([0.0f64, 0.0].into_iter());
        assert!(lo.expect("lo").is_sign_negative() && hi.expect("hi").is_sign_positive());
    }
}
