//! MurmurHash3 (x86, 32-bit, seed 0) over whole Arrow arrays, and the `bucket` /
//! `multi_bucket` transforms built on it.
//!
//! The bytes hashed for each Arrow type follow DESIGN.md decision D1 (upstream Lance's
//! encoding):
//!
//! | Arrow type | bytes hashed |
//! |---|---|
//! | int8..int64, uint8..uint64, float16/32/64, date32, date64, timestamp (any unit, any tz) | the value's native-width little-endian bytes (timestamps: the raw i64 in its unit, timezone ignored) |
//! | utf8, large_utf8, utf8_view | the UTF-8 bytes |
//! | binary, large_binary, binary_view | the raw bytes |
//! | dictionary | the hash of the value the key points to |
//! | boolean, decimal32/64/128/256, time32/64, duration, fixed_size_binary | arrow's display string (`true`, `1.23`, `13:45:00`, lowercase hex, ...) |
//!
//! NULL hashes to NULL. `murmur3_multi` hashes the concatenation of the non-NULL arguments'
//! bytes and is NULL only when every argument is NULL.
//!
//! `bucket(x, N)` is `|murmur3(x)| mod N` computed in i64 (decision D3): it equals upstream
//! Lance's `abs(murmur3(x)) % N` for every hash except `i32::MIN`, where upstream's checked
//! `abs` fails and we return `2147483648 mod N`.
//!
//! The fixed-width paths hash straight from the values buffer in a branch-free loop that the
//! compiler vectorises; on x86-64 a second copy of each loop is compiled for AVX2 and picked at
//! run time. Hashing and the modulo are fused, and the modulo uses a precomputed
//! multiply-shift reciprocal instead of a division.

use std::sync::Arc;

use crate::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, GenericByteArray, GenericByteViewArray, Int32Array,
    StringArray,
};
use crate::arrow::buffer::{NullBuffer, ScalarBuffer};
use crate::arrow::compute::kernels::cast::cast;
use crate::arrow::datatypes::{
    ArrowDictionaryKeyType, ArrowNativeType, ByteArrayType, DataType, Int16Type, Int32Type,
    Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use crate::arrow::util::display::{ArrayFormatter, FormatOptions};
use crate::error::{invalid_arg, unsupported, Result};

// MurmurHash3 x86_32 constants, shared with the SIMD loops (`sse2`, `avx2x`).
pub(crate) const C1: u32 = 0xcc9e_2d51;
pub(crate) const C2: u32 = 0x1b87_3593;
pub(crate) const N1: u32 = 0xe654_6b64;
pub(crate) const F1: u32 = 0x85eb_ca6b;
pub(crate) const F2: u32 = 0xc2b2_ae35;

#[inline(always)]
fn mix_k1(k: u32) -> u32 {
    k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2)
}

#[inline(always)]
fn mix_h1(h: u32, k: u32) -> u32 {
    (h ^ mix_k1(k))
        .rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(N1)
}

#[inline(always)]
fn fmix(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(F1);
    h ^= h >> 13;
    h = h.wrapping_mul(F2);
    h ^= h >> 16;
    h
}

/// MurmurHash3 x86_32 of `data` with `seed`, as an unsigned 32-bit value.
///
/// Byte-for-byte equal to the reference implementation (the `murmur3` crate's
/// `murmur3_32`), which the tests check.
///
/// # Examples
/// ```
/// use lance_partitioned_core::hash::murmur3_x86_32;
/// assert_eq!(murmur3_x86_32(b"hello", 0) as i32, 613153351);
/// ```
#[inline]
pub fn murmur3_x86_32(data: &[u8], seed: u32) -> u32 {
    let mut h = seed;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        h = mix_h1(h, u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        let mut k = 0u32;
        for (i, b) in tail.iter().enumerate() {
            k |= (*b as u32) << (8 * i);
        }
        h ^= mix_k1(k);
    }
    fmix(h ^ data.len() as u32)
}

/// MurmurHash3 of a 64-bit value's little-endian bytes.
#[inline(always)]
pub(crate) fn murmur_u64(v: u64) -> u32 {
    v.murmur()
}

/// MurmurHash3 of a 32-bit value's little-endian bytes.
#[inline(always)]
pub(crate) fn murmur_u32(v: u32) -> u32 {
    v.murmur()
}

/// A fixed-width value whose little-endian bytes are hashed (D1).
pub(crate) trait HashNative: Copy + 'static {
    fn murmur(self) -> u32;

    /// The explicit SSE2 loop for this width, when there is one (non-AVX2 x86-64).
    fn sse2_hash(_src: &[Self]) -> Option<Vec<i32>> {
        None
    }

    /// The explicit SSE2 bucket loop for this width, when there is one.
    fn sse2_bucket(_src: &[Self], _r: &FastRem) -> Option<Vec<i32>> {
        None
    }

    /// An explicit AVX2 hash loop for this width, when the compiler's is not good enough.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    unsafe fn avx2_hash(_src: &[Self]) -> Option<Vec<i32>> {
        None
    }

    /// An explicit AVX2 bucket loop for this width.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    unsafe fn avx2_bucket(_src: &[Self], _r: &FastRem) -> Option<Vec<i32>> {
        None
    }
}

impl HashNative for u8 {
    #[inline(always)]
    fn murmur(self) -> u32 {
        fmix(mix_k1(self as u32) ^ 1)
    }
}
impl HashNative for u16 {
    #[inline(always)]
    fn murmur(self) -> u32 {
        fmix(mix_k1(self as u32) ^ 2)
    }
}
impl HashNative for u32 {
    #[inline(always)]
    fn murmur(self) -> u32 {
        fmix(mix_h1(0, self) ^ 4)
    }
    #[cfg(target_arch = "x86_64")]
    fn sse2_hash(src: &[Self]) -> Option<Vec<i32>> {
        Some(crate::sse2::hash_u32(src))
    }
    #[cfg(target_arch = "x86_64")]
    fn sse2_bucket(src: &[Self], r: &FastRem) -> Option<Vec<i32>> {
        Some(crate::sse2::bucket_u32(src, r))
    }
}
impl HashNative for u64 {
    #[inline(always)]
    fn murmur(self) -> u32 {
        let h = mix_h1(0, self as u32);
        let h = mix_h1(h, (self >> 32) as u32);
        fmix(h ^ 8)
    }
    #[cfg(target_arch = "x86_64")]
    fn sse2_hash(src: &[Self]) -> Option<Vec<i32>> {
        Some(crate::sse2::hash_u64(src))
    }
    #[cfg(target_arch = "x86_64")]
    fn sse2_bucket(src: &[Self], r: &FastRem) -> Option<Vec<i32>> {
        Some(crate::sse2::bucket_u64(src, r))
    }
    #[cfg(target_arch = "x86_64")]
    unsafe fn avx2_hash(src: &[Self]) -> Option<Vec<i32>> {
        // SAFETY: forwarded from the caller.
        Some(unsafe { crate::avx2x::hash_u64(src) })
    }
    #[cfg(target_arch = "x86_64")]
    unsafe fn avx2_bucket(src: &[Self], r: &FastRem) -> Option<Vec<i32>> {
        // SAFETY: forwarded from the caller.
        Some(unsafe { crate::avx2x::bucket_u64(src, r) })
    }
}

/// `n mod d` for a fixed divisor `d` without a division instruction.
///
/// Uses the round-up multiply-shift reciprocal with a 33-bit multiplier (stored as 32 bits
/// plus an add-and-halve step), exact for every `u32` dividend. Powers of two use a mask.
#[derive(Clone, Copy, Debug)]
pub struct FastRem {
    d: u32,
    magic: u32,
    shift: u32,
    pow2: bool,
}

impl FastRem {
    /// A reciprocal for divisor `d`.
    ///
    /// # Errors
    /// `InvalidArgument` when `d` is 0.
    pub fn new(d: u32) -> Result<Self> {
        if d == 0 {
            return invalid_arg!("divisor must be positive");
        }
        if d.is_power_of_two() {
            return Ok(Self {
                d,
                magic: 0,
                shift: 0,
                pow2: true,
            });
        }
        // 2^k < d < 2^(k+1)
        let k = 31 - d.leading_zeros();
        let num = 1u64 << (32 + k);
        let mut m = (num / d as u64) as u32;
        let rem = (num % d as u64) as u32;
        m = m.wrapping_add(m);
        let twice_rem = rem.wrapping_add(rem);
        if twice_rem >= d || twice_rem < rem {
            m = m.wrapping_add(1);
        }
        Ok(Self {
            d,
            magic: m.wrapping_add(1),
            shift: k,
            pow2: false,
        })
    }

    /// The divisor.
    pub fn divisor(&self) -> u32 {
        self.d
    }

    /// `(divisor, magic, shift, is_power_of_two)`, for the SIMD loops.
    pub(crate) fn parts(&self) -> (u32, u32, u32, bool) {
        (self.d, self.magic, self.shift, self.pow2)
    }

    #[inline(always)]
    fn rem_generic<const POW2: bool>(&self, n: u32) -> u32 {
        if POW2 {
            n & (self.d - 1)
        } else {
            let q = ((self.magic as u64 * n as u64) >> 32) as u32;
            let t = ((n - q) >> 1).wrapping_add(q);
            let quot = t >> self.shift;
            n.wrapping_sub(quot.wrapping_mul(self.d))
        }
    }

    /// The bucket of a hash: `|h| mod d` with `h` read as i32 (D3). The scalar tails of the
    /// SIMD loops use it.
    #[inline]
    pub(crate) fn bucket_of_hash(&self, h: u32) -> i32 {
        self.rem((h as i32).unsigned_abs()) as i32
    }

    /// `n mod d`.
    #[inline]
    pub fn rem(&self, n: u32) -> u32 {
        if self.pow2 {
            self.rem_generic::<true>(n)
        } else {
            self.rem_generic::<false>(n)
        }
    }
}

/// `|h| mod n` in i64 (D3), for a hash read as i32.
#[inline(always)]
fn bucket_of<const POW2: bool>(h: u32, r: &FastRem) -> i32 {
    r.rem_generic::<POW2>((h as i32).unsigned_abs()) as i32
}

// ------------------------------------------------------------------------------------------
// Fixed-width loops, compiled twice on x86-64 (baseline and AVX2) and dispatched at run time.
// ------------------------------------------------------------------------------------------

// The loops write into a zeroed `Vec` (calloc: the zero pages come from the OS lazily, so
// zeroing is free) through a slice; collecting from an iterator measured 3x slower here
// because the per-element length update blocks vectorisation.

#[inline(always)]
fn hash_loop<T: HashNative>(src: &[T]) -> Vec<i32> {
    let mut out = crate::mem::zeroed::<i32>(src.len());
    for (d, s) in out.iter_mut().zip(src) {
        *d = s.murmur() as i32;
    }
    out
}

#[inline(always)]
fn bucket_loop<T: HashNative, const POW2: bool>(src: &[T], r: &FastRem) -> Vec<i32> {
    let mut out = crate::mem::zeroed::<i32>(src.len());
    for (d, s) in out.iter_mut().zip(src) {
        *d = bucket_of::<POW2>(s.murmur(), r);
    }
    out
}

#[inline(always)]
fn rem_loop<const POW2: bool>(vals: &mut [i32], r: &FastRem) {
    for v in vals.iter_mut() {
        *v = bucket_of::<POW2>(*v as u32, r);
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{FastRem, HashNative};

    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn hash_loop<T: HashNative>(src: &[T]) -> Vec<i32> {
        super::hash_loop(src)
    }

    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn bucket_loop<T: HashNative, const POW2: bool>(
        src: &[T],
        r: &FastRem,
    ) -> Vec<i32> {
        super::bucket_loop::<T, POW2>(src, r)
    }

    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn rem_loop<const POW2: bool>(vals: &mut [i32], r: &FastRem) {
        super::rem_loop::<POW2>(vals, r)
    }
}

/// Whether the AVX2 loops are used: detected once per process at run time. Setting
/// `LANCE_PARTITIONED_PORTABLE=1` forces the portable loops (for benchmarks and tests).
#[inline]
fn has_avx2() -> bool {
    static AVX2: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVX2.get_or_init(|| {
        if std::env::var_os("LANCE_PARTITIONED_PORTABLE").is_some_and(|v| v == "1") {
            return false;
        }
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx2")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
}

/// Which SIMD level the fixed-width loops run at on this machine (for benchmarks and logs).
pub fn simd_level() -> &'static str {
    if has_avx2() {
        "avx2"
    } else {
        "portable"
    }
}

fn hash_fixed<T: HashNative>(src: &[T]) -> Vec<i32> {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: AVX2 support was just detected at run time.
        return unsafe { T::avx2_hash(src).unwrap_or_else(|| avx2::hash_loop(src)) };
    }
    if let Some(out) = T::sse2_hash(src) {
        return out;
    }
    hash_loop(src)
}

fn bucket_fixed<T: HashNative>(src: &[T], r: &FastRem) -> Vec<i32> {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: AVX2 support was just detected at run time.
        return unsafe {
            if let Some(out) = T::avx2_bucket(src, r) {
                out
            } else if r.pow2 {
                avx2::bucket_loop::<T, true>(src, r)
            } else {
                avx2::bucket_loop::<T, false>(src, r)
            }
        };
    }
    if let Some(out) = T::sse2_bucket(src, r) {
        return out;
    }
    if r.pow2 {
        bucket_loop::<T, true>(src, r)
    } else {
        bucket_loop::<T, false>(src, r)
    }
}

fn rem_in_place(vals: &mut [i32], r: &FastRem) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: AVX2 support was just detected at run time.
        unsafe {
            if r.pow2 {
                avx2::rem_loop::<true>(vals, r)
            } else {
                avx2::rem_loop::<false>(vals, r)
            }
        }
        return;
    }
    if r.pow2 {
        rem_loop::<true>(vals, r)
    } else {
        rem_loop::<false>(vals, r)
    }
}

// ------------------------------------------------------------------------------------------
// Classification of an Arrow array into the byte source D1 prescribes.
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
enum Source<'a> {
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

enum ViewRef<'a> {
    Utf8(&'a GenericByteViewArray<crate::arrow::datatypes::StringViewType>),
    Binary(&'a GenericByteViewArray<crate::arrow::datatypes::BinaryViewType>),
}

impl ViewRef<'_> {
    #[inline]
    fn bytes(&self, i: usize) -> &[u8] {
        match self {
            ViewRef::Utf8(a) => a.value(i).as_bytes(),
            ViewRef::Binary(a) => a.value(i),
        }
    }
}

fn byte_offsets<T: ByteArrayType>(a: &GenericByteArray<T>) -> (&[T::Offset], &[u8]) {
    (a.value_offsets(), a.value_data())
}

/// Renders every value with arrow's display formatter (D1's rule for "other types").
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

fn classify(array: &dyn Array) -> Result<Source<'_>> {
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

fn with_nulls(values: Vec<i32>, nulls: Option<NullBuffer>) -> Int32Array {
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

fn check_hashable(array: &dyn Array) -> Result<()> {
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
        other if r.pow2 => hash_var_values(other, n, |h| bucket_of::<true>(h, r)),
        other => hash_var_values(other, n, |h| bucket_of::<false>(h, r)),
    };
    Ok(with_nulls(values, nulls))
}

fn check_buckets(n: i64) -> Result<FastRem> {
    if n <= 0 || n > i32::MAX as i64 {
        return invalid_arg!("num_buckets must be in 1..=2147483647, got {n}");
    }
    FastRem::new(n as u32)
}

/// `bucket(x, n)`: `|murmur3(x)| mod n` computed in i64 (D3), an int32 in `[0, n)`.
///
/// # Errors
/// `InvalidArgument` when `n <= 0`; `UnsupportedType` as for [`murmur3`].
pub fn bucket(array: &dyn Array, n: i64) -> Result<Int32Array> {
    let r = check_buckets(n)?;
    bucket_array(array, &r)
}

// ------------------------------------------------------------------------------------------
// murmur3_multi: a streaming hasher over the columns (no scratch copy of the row bytes).
// ------------------------------------------------------------------------------------------

/// Per-row streaming MurmurHash3 state.
#[derive(Clone, Copy, Default)]
struct Stream {
    h: u32,
    tail: u32,
    tail_len: u32,
    len: u32,
}

impl Stream {
    #[inline]
    fn feed(&mut self, mut data: &[u8]) {
        self.len = self.len.wrapping_add(data.len() as u32);
        if self.tail_len != 0 {
            let need = (4 - self.tail_len) as usize;
            if data.len() < need {
                for b in data {
                    self.tail |= (*b as u32) << (8 * self.tail_len);
                    self.tail_len += 1;
                }
                return;
            }
            for (i, b) in data[..need].iter().enumerate() {
                self.tail |= (*b as u32) << (8 * (self.tail_len as usize + i));
            }
            self.h = mix_h1(self.h, self.tail);
            data = &data[need..];
        }
        let mut chunks = data.chunks_exact(4);
        for c in &mut chunks {
            self.h = mix_h1(self.h, u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
        }
        let rem = chunks.remainder();
        let mut k = 0u32;
        for (i, b) in rem.iter().enumerate() {
            k |= (*b as u32) << (8 * i);
        }
        self.tail = k;
        self.tail_len = rem.len() as u32;
    }

    #[inline]
    fn feed_u32(&mut self, v: u32) {
        if self.tail_len == 0 {
            self.h = mix_h1(self.h, v);
            self.len = self.len.wrapping_add(4);
        } else {
            self.feed(&v.to_le_bytes());
        }
    }

    #[inline]
    fn feed_u64(&mut self, v: u64) {
        if self.tail_len == 0 {
            self.h = mix_h1(mix_h1(self.h, v as u32), (v >> 32) as u32);
            self.len = self.len.wrapping_add(8);
        } else {
            self.feed(&v.to_le_bytes());
        }
    }

    #[inline]
    fn finish(&self) -> u32 {
        let mut h = self.h;
        if self.tail_len > 0 {
            h ^= mix_k1(self.tail);
        }
        fmix(h ^ self.len)
    }
}

/// Decodes dictionaries (to their value type) so every column is a plain array.
fn undictionary(array: &dyn Array) -> Result<ArrayRef> {
    match array.data_type() {
        DataType::Dictionary(_, v) => Ok(cast(array, v)?),
        _ => Ok(crate::arrow::array::make_array(array.to_data())),
    }
}

fn feed_column(states: &mut [Stream], any: &mut [bool], array: &dyn Array) -> Result<()> {
    let nulls = array.logical_nulls().filter(|n| n.null_count() > 0);
    let src = classify(array)?;
    // The null check is hoisted out of the loop for columns without nulls.
    macro_rules! each {
        ($f:expr) => {
            match &nulls {
                None => {
                    any.fill(true);
                    for (i, s) in states.iter_mut().enumerate() {
                        #[allow(clippy::redundant_closure_call)]
                        $f(s, i);
                    }
                }
                Some(n) => {
                    for (i, s) in states.iter_mut().enumerate() {
                        if n.is_valid(i) {
                            any[i] = true;
                            #[allow(clippy::redundant_closure_call)]
                            $f(s, i);
                        }
                    }
                }
            }
        };
    }
    match src {
        Source::Null => {}
        Source::W1(v) => each!(|s: &mut Stream, i: usize| s.feed(&[v[i]])),
        Source::W2(v) => each!(|s: &mut Stream, i: usize| s.feed(&v[i].to_le_bytes())),
        Source::W4(v) => each!(|s: &mut Stream, i: usize| s.feed_u32(v[i])),
        Source::W8(v) => each!(|s: &mut Stream, i: usize| s.feed_u64(v[i])),
        Source::Bytes32(o, v) => {
            each!(|s: &mut Stream, i: usize| s.feed(&v[o[i] as usize..o[i + 1] as usize]))
        }
        Source::Bytes64(o, v) => {
            each!(|s: &mut Stream, i: usize| s.feed(&v[o[i] as usize..o[i + 1] as usize]))
        }
        Source::View(v) => each!(|s: &mut Stream, i: usize| s.feed(v.bytes(i))),
        Source::Display(d) => {
            let o = d.value_offsets();
            let v = d.value_data();
            each!(|s: &mut Stream, i: usize| s.feed(&v[o[i] as usize..o[i + 1] as usize]))
        }
    }
    Ok(())
}

fn check_multi(arrays: &[&dyn Array]) -> Result<usize> {
    let Some(first) = arrays.first() else {
        return invalid_arg!("murmur3_multi needs at least one column");
    };
    let n = first.len();
    for (i, a) in arrays.iter().enumerate() {
        if a.len() != n {
            return invalid_arg!(
                "all columns must have the same length: column 0 has {n} rows, column {i} has {}",
                a.len()
            );
        }
        check_hashable(*a)?;
    }
    Ok(n)
}

/// `murmur3_multi(x0, x1, ...)`: MurmurHash3 of the concatenated bytes of the non-NULL
/// arguments of each row; NULL when every argument is NULL.
///
/// # Errors
/// `InvalidArgument` for no columns or columns of different lengths; `UnsupportedType` as
/// for [`murmur3`].
pub fn murmur3_multi(arrays: &[&dyn Array]) -> Result<Int32Array> {
    let n = check_multi(arrays)?;
    let mut states = vec![Stream::default(); n];
    let mut any = vec![false; n];
    for a in arrays {
        let a = undictionary(*a)?;
        feed_column(&mut states, &mut any, a.as_ref())?;
    }
    let values: Vec<i32> = states.iter().map(|s| s.finish() as i32).collect();
    let nulls = NullBuffer::from(BooleanArray::from(any).values().clone());
    let nulls = (nulls.null_count() > 0).then_some(nulls);
    Ok(with_nulls(values, nulls))
}

/// `multi_bucket([x0, x1, ...], n)`: `|murmur3_multi(x0, x1, ...)| mod n` (D3).
///
/// # Errors
/// As for [`murmur3_multi`] and [`bucket`].
pub fn multi_bucket(arrays: &[&dyn Array], n: i64) -> Result<Int32Array> {
    let r = check_buckets(n)?;
    let hashed = murmur3_multi(arrays)?;
    let (_, values, nulls) = hashed.into_parts();
    let mut v: Vec<i32> = values.into();
    rem_in_place(&mut v, &r);
    Ok(with_nulls(v, nulls))
}

/// The compute limit of the int64 kernel: hashes a raw `u64` buffer into `out` with the same
/// dispatched loop (no Arrow, no nulls, no allocation). For benchmarks.
pub fn raw_hash_u64_into(src: &[u64], out: &mut [i32]) {
    #[inline(always)]
    fn body(src: &[u64], out: &mut [i32]) {
        for (o, s) in out.iter_mut().zip(src) {
            *o = s.murmur() as i32;
        }
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn body_avx2(src: &[u64], out: &mut [i32]) {
        body(src, out)
    }
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: AVX2 support was just detected at run time.
        unsafe { body_avx2(src, out) };
        return;
    }
    body(src, out)
}

/// Convenience: hash an [`ArrayRef`] (used by the DataFusion UDFs).
pub fn murmur3_ref(array: &ArrayRef) -> Result<ArrayRef> {
    Ok(Arc::new(murmur3(array.as_ref())?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(data: &[u8]) -> u32 {
        murmur3::murmur3_32(&mut std::io::Cursor::new(data), 0).unwrap()
    }

    #[test]
    fn scalar_matches_reference_for_all_lengths() {
        let data: Vec<u8> = (0..64u32).map(|i| (i * 37 + 11) as u8).collect();
        for len in 0..data.len() {
            assert_eq!(
                murmur3_x86_32(&data[..len], 0),
                reference(&data[..len]),
                "len {len}"
            );
        }
    }

    #[test]
    fn fixed_width_paths_match_byte_path() {
        for v in [0u64, 1, 5, u64::MAX, 0x0123_4567_89ab_cdef] {
            assert_eq!(v.murmur(), reference(&v.to_le_bytes()));
            assert_eq!((v as u32).murmur(), reference(&(v as u32).to_le_bytes()));
            assert_eq!((v as u16).murmur(), reference(&(v as u16).to_le_bytes()));
            assert_eq!((v as u8).murmur(), reference(&[(v as u8)]));
        }
    }

    #[test]
    fn streaming_equals_concatenation() {
        let parts: [&[u8]; 5] = [b"a", b"bcd", b"", b"efghijk", b"lm"];
        let mut s = Stream::default();
        let mut all = Vec::new();
        for p in parts {
            s.feed(p);
            all.extend_from_slice(p);
        }
        assert_eq!(s.finish(), reference(&all));
        let mut s = Stream::default();
        s.feed(b"xyz");
        s.feed_u64(42);
        s.feed_u32(7);
        let mut all = b"xyz".to_vec();
        all.extend_from_slice(&42u64.to_le_bytes());
        all.extend_from_slice(&7u32.to_le_bytes());
        assert_eq!(s.finish(), reference(&all));
    }

    #[test]
    fn fast_rem_is_exact() {
        let divisors = [
            1u32,
            2,
            3,
            5,
            6,
            7,
            10,
            16,
            17,
            100,
            641,
            1000,
            65_537,
            (1 << 31) - 1,
            1 << 31,
            u32::MAX,
        ];
        let mut dividends = vec![
            0u32,
            1,
            2,
            3,
            1 << 31,
            (1 << 31) - 1,
            u32::MAX,
            u32::MAX - 1,
        ];
        let mut x = 0x9e37_79b9u32;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            dividends.push(x);
        }
        for d in divisors {
            let r = FastRem::new(d).unwrap();
            for &n in &dividends {
                assert_eq!(r.rem(n), n % d, "{n} mod {d}");
            }
        }
        assert!(FastRem::new(0).is_err());
    }
}
