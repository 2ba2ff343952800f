//! `murmur3` and `bucket` over whole Arrow arrays: which bytes each Arrow type hashes (see
//! the table in the [`crate::hash`] docs), dictionaries, nulls.
//!
//! An array is first classified into a [`Source`] (a fixed-width values buffer, an
//! offsets/values pair, views, or rendered display strings); fixed-width sources go to the
//! dispatched loops of `super::simd`, the others are hashed value by value here.

use std::sync::Arc;

use crate::arrow::array::{
    Array, ArrayRef, AsArray, GenericByteArray, GenericByteViewArray, Int32Array, StringArray,
};
use crate::arrow::buffer::{NullBuffer, ScalarBuffer};
use crate::arrow::datatypes::{
    ArrowDictionaryKeyType, ArrowNativeType, ByteArrayType, DataType, Int16Type, Int32Type,
    Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use crate::arrow::util::display::{ArrayFormatter, FormatOptions};
use crate::error::{invalid_arg, unsupported, Result};

use super::murmur::{bucket_of, murmur3_x86_32, FastRem, HashNative};
use super::simd::{bucket_fixed, hash_fixed};

// ------------------------------------------------------------------------------------------
// Classification of an Arrow array into the bytes its type hashes.
// ------------------------------------------------------------------------------------------

/// The raw values buffer of a primitive array, reinterpreted as unsigned words of the same
/// width. Zero copy; respects the array's offset.
fn raw_values<U: ArrowNativeType>(array: &dyn Array) -> Result<&[U]> {
    let buf: &crate::arrow::buffer::Buffer = crate::arrow::array::downcast_primitive_array!(
        array => { array.values().inner() }
        t => return Err(crate::error::Error::Internal(format!("{t} is not primitive")))
    );
    // SAFETY: every bit pattern is a valid unsigned integer; alignment is checked below.
    let (prefix, values, suffix) = unsafe { buf.as_slice().align_to::<U>() };
    if !prefix.is_empty() || !suffix.is_empty() {
        return Err(crate::error::Error::Internal(
            "values buffer is not aligned for its type".into(),
        ));
    }
    Ok(values)
}

/// How the bytes of one array are obtained.
pub(super) enum Source<'a> {
    W1(&'a [u8]),
    W2(&'a [u16]),
    W4(&'a [u32]),
    W8(&'a [u64]),
    Bytes32(&'a [i32], &'a [u8]),
    Bytes64(&'a [i64], &'a [u8]),
    View(ViewRef<'a>),
    /// Values rendered to their display strings (owned).
    Display(StringArray),
    /// All values are NULL.
    Null,
}

pub(super) enum ViewRef<'a> {
    Utf8(&'a GenericByteViewArray<crate::arrow::datatypes::StringViewType>),
    Binary(&'a GenericByteViewArray<crate::arrow::datatypes::BinaryViewType>),
}

impl ViewRef<'_> {
    #[inline]
    pub(super) fn bytes(&self, i: usize) -> &[u8] {
        match self {
            ViewRef::Utf8(a) => a.value(i).as_bytes(),
            ViewRef::Binary(a) => a.value(i),
        }
    }
}

fn byte_offsets<T: ByteArrayType>(a: &GenericByteArray<T>) -> (&[T::Offset], &[u8]) {
    (a.value_offsets(), a.value_data())
}

/// Renders every value with arrow's display formatter: the rule for the "other types"
/// (booleans, decimals, times, durations, fixed-size binaries), which hash their display
/// string.
fn display_strings(array: &dyn Array) -> Result<StringArray> {
    let opts = FormatOptions::default();
    let fmt = ArrayFormatter::try_new(array, &opts)?;
    let mut out = crate::arrow::array::StringBuilder::with_capacity(array.len(), array.len() * 8);
    let mut s = String::new();
    for i in 0..array.len() {
        if array.is_null(i) {
            out.append_null();
        } else {
            s.clear();
            use std::fmt::Write;
            write!(s, "{}", fmt.value(i))
                .map_err(|e| crate::error::Error::Internal(format!("formatting failed: {e}")))?;
            out.append_value(&s);
        }
    }
    Ok(out.finish())
}

/// Whether `dt` is hashable at all (and how, see the module docs).
pub fn is_hashable(dt: &DataType) -> bool {
    use DataType::*;
    match dt {
        Null
        | Boolean
        | Int8
        | Int16
        | Int32
        | Int64
        | UInt8
        | UInt16
        | UInt32
        | UInt64
        | Float16
        | Float32
        | Float64
        | Date32
        | Date64
        | Timestamp(_, _)
        | Time32(_)
        | Time64(_)
        | Duration(_)
        | Utf8
        | LargeUtf8
        | Utf8View
        | Binary
        | LargeBinary
        | BinaryView
        | FixedSizeBinary(_)
        | Decimal32(_, _)
        | Decimal64(_, _)
        | Decimal128(_, _)
        | Decimal256(_, _) => true,
        Dictionary(_, v) => is_hashable(v),
        _ => false,
    }
}

/// The bytes `array` hashes (dictionaries must be decoded or handled by the caller).
pub(super) fn classify(array: &dyn Array) -> Result<Source<'_>> {
    use DataType::*;
    Ok(match array.data_type() {
        Null => Source::Null,
        Int8 | UInt8 => Source::W1(raw_values::<u8>(array)?),
        Int16 | UInt16 | Float16 => Source::W2(raw_values::<u16>(array)?),
        Int32 | UInt32 | Float32 | Date32 => Source::W4(raw_values::<u32>(array)?),
        Int64 | UInt64 | Float64 | Date64 | Timestamp(_, _) => {
            Source::W8(raw_values::<u64>(array)?)
        }
        Utf8 => {
            let (o, v) = byte_offsets(array.as_string::<i32>());
            Source::Bytes32(o, v)
        }
        LargeUtf8 => {
            let (o, v) = byte_offsets(array.as_string::<i64>());
            Source::Bytes64(o, v)
        }
        Binary => {
            let (o, v) = byte_offsets(array.as_binary::<i32>());
            Source::Bytes32(o, v)
        }
        LargeBinary => {
            let (o, v) = byte_offsets(array.as_binary::<i64>());
            Source::Bytes64(o, v)
        }
        Utf8View => Source::View(ViewRef::Utf8(array.as_string_view())),
        BinaryView => Source::View(ViewRef::Binary(array.as_binary_view())),
        Boolean
        | Time32(_)
        | Time64(_)
        | Duration(_)
        | FixedSizeBinary(_)
        | Decimal32(_, _)
        | Decimal64(_, _)
        | Decimal128(_, _)
        | Decimal256(_, _) => Source::Display(display_strings(array)?),
        Dictionary(_, _) => {
            return Err(crate::error::Error::Internal(
                "dictionary arrays must be decoded before classification".into(),
            ))
        }
        other => return unsupported!("cannot hash values of type {other}"),
    })
}

// ------------------------------------------------------------------------------------------
// Hashing the classified values.
// ------------------------------------------------------------------------------------------

/// Maps every value of an offsets/values pair through `f(murmur3(bytes))`.
#[inline]
fn bytes_loop<O: ArrowNativeType>(
    offsets: &[O],
    values: &[u8],
    f: impl Fn(u32) -> i32,
) -> Vec<i32> {
    let mut out = crate::mem::zeroed::<i32>(offsets.len().saturating_sub(1));
    for (d, w) in out.iter_mut().zip(offsets.windows(2)) {
        let (s, e) = (w[0].as_usize(), w[1].as_usize());
        *d = f(murmur3_x86_32(values.get(s..e).unwrap_or_default(), 0));
    }
    out
}

/// Hashes every value that is not fixed-width, mapping each hash through `f`.
fn hash_var_values(src: Source<'_>, n: usize, f: impl Fn(u32) -> i32) -> Vec<i32> {
    match src {
        Source::Bytes32(o, v) => bytes_loop(o, v, f),
        Source::Bytes64(o, v) => bytes_loop(o, v, f),
        Source::View(v) => (0..n).map(|i| f(murmur3_x86_32(v.bytes(i), 0))).collect(),
        Source::Display(s) => bytes_loop(s.value_offsets(), s.value_data(), f),
        Source::Null => vec![0; n],
        Source::W1(v) => v.iter().map(|x| f(x.murmur())).collect(),
        Source::W2(v) => v.iter().map(|x| f(x.murmur())).collect(),
        Source::W4(v) => v.iter().map(|x| f(x.murmur())).collect(),
        Source::W8(v) => v.iter().map(|x| f(x.murmur())).collect(),
    }
}

/// Hash values (nulls ignored: the caller attaches the validity).
fn hash_values(array: &dyn Array) -> Result<Vec<i32>> {
    let n = array.len();
    Ok(match classify(array)? {
        Source::W1(v) => hash_fixed(v),
        Source::W2(v) => hash_fixed(v),
        Source::W4(v) => hash_fixed(v),
        Source::W8(v) => hash_fixed(v),
        other => hash_var_values(other, n, |h| h as i32),
    })
}

pub(super) fn with_nulls(values: Vec<i32>, nulls: Option<NullBuffer>) -> Int32Array {
    Int32Array::new(ScalarBuffer::from(values), nulls)
}

/// Hash of each dictionary value, gathered through the keys (values hashed once).
fn dictionary_hash(array: &dyn Array, bucket: Option<&FastRem>) -> Result<Int32Array> {
    fn go<K: ArrowDictionaryKeyType>(
        array: &dyn Array,
        bucket: Option<&FastRem>,
    ) -> Result<Int32Array> {
        let dict = array.as_dictionary::<K>();
        let values = dict.values();
        let hashed = match bucket {
            Some(r) => bucket_array(values.as_ref(), r)?,
            None => murmur3(values.as_ref())?,
        };
        let nv = hashed.len();
        let mut out = Vec::with_capacity(dict.len());
        for k in dict.keys().values().iter() {
            let k = k.as_usize();
            // Keys of null slots may be arbitrary; clamp to stay in bounds.
            out.push(if k < nv { hashed.value(k) } else { 0 });
        }
        Ok(with_nulls(out, dict.logical_nulls()))
    }
    use DataType::*;
    match array.data_type() {
        Dictionary(k, _) => match k.as_ref() {
            Int8 => go::<Int8Type>(array, bucket),
            Int16 => go::<Int16Type>(array, bucket),
            Int32 => go::<Int32Type>(array, bucket),
            Int64 => go::<Int64Type>(array, bucket),
            UInt8 => go::<UInt8Type>(array, bucket),
            UInt16 => go::<UInt16Type>(array, bucket),
            UInt32 => go::<UInt32Type>(array, bucket),
            UInt64 => go::<UInt64Type>(array, bucket),
            other => unsupported!("unsupported dictionary key type {other}"),
        },
        _ => Err(crate::error::Error::Internal("not a dictionary".into())),
    }
}

pub(super) fn check_hashable(array: &dyn Array) -> Result<()> {
    if !is_hashable(array.data_type()) {
        return unsupported!(
            "murmur3 does not support Arrow type {} (supported: integers, floats, dates, \
             times, timestamps, durations, decimals, strings, binaries, booleans, dictionaries \
             of those)",
            array.data_type()
        );
    }
    Ok(())
}

/// `murmur3(x)`: the MurmurHash3 x86_32 (seed 0) of each value, as int32; NULL stays NULL.
///
/// # Errors
/// `UnsupportedType` for nested types (list, struct, map, union) and intervals.
pub fn murmur3(array: &dyn Array) -> Result<Int32Array> {
    check_hashable(array)?;
    if matches!(array.data_type(), DataType::Dictionary(_, _)) {
        return dictionary_hash(array, None);
    }
    let values = hash_values(array)?;
    Ok(with_nulls(values, array.logical_nulls()))
}

fn bucket_array(array: &dyn Array, r: &FastRem) -> Result<Int32Array> {
    check_hashable(array)?;
    if matches!(array.data_type(), DataType::Dictionary(_, _)) {
        return dictionary_hash(array, Some(r));
    }
    let nulls = array.logical_nulls();
    let n = array.len();
    let values = match classify(array)? {
        Source::W1(v) => bucket_fixed(v, r),
        Source::W2(v) => bucket_fixed(v, r),
        Source::W4(v) => bucket_fixed(v, r),
        Source::W8(v) => bucket_fixed(v, r),
        other if r.is_pow2() => hash_var_values(other, n, |h| bucket_of::<true>(h, r)),
        other => hash_var_values(other, n, |h| bucket_of::<false>(h, r)),
    };
    Ok(with_nulls(values, nulls))
}

/// The reciprocal for `n` buckets, checking that `n` is in `1..=i32::MAX`.
pub(super) fn check_buckets(n: i64) -> Result<FastRem> {
    if n <= 0 || n > i32::MAX as i64 {
        return invalid_arg!("num_buckets must be in 1..=2147483647, got {n}");
    }
    FastRem::new(n as u32)
}

/// `bucket(x, n)`: `|murmur3(x)| mod n`, an int32 in `[0, n)`. The absolute value is taken
/// in i64, so a hash of `i32::MIN` lands in bucket `2^31 mod n` (see docs/design.md,
/// "Bucket arithmetic").
///
/// # Errors
/// `InvalidArgument` when `n <= 0`; `UnsupportedType` as for [`murmur3`].
pub fn bucket(array: &dyn Array, n: i64) -> Result<Int32Array> {
    let r = check_buckets(n)?;
    bucket_array(array, &r)
}

/// Convenience: hash an [`ArrayRef`] (used by the DataFusion UDFs).
pub fn murmur3_ref(array: &ArrayRef) -> Result<ArrayRef> {
    Ok(Arc::new(murmur3(array.as_ref())?))
}
