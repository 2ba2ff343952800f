//! [`to_strings`]: the string form of every value of an array at once. Integers, dates and
//! timestamps are formatted by integer arithmetic straight into one preallocated values
//! buffer: every value gets a fixed-size slot to write into (its widest text), the next value
//! starts where the last one ended, so there is no per-value allocation, growth check or
//! overflow check (the whole buffer's size is checked once). Other types go value by value
//! through [`to_string`].

use crate::arrow::array::{Array, AsArray, StringArray};
use crate::arrow::buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use crate::arrow::datatypes::{
    ArrowPrimitiveType, DataType, Date32Type, Int16Type, Int32Type, Int64Type, Int8Type, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use crate::datafusion::scalar::ScalarValue;
use crate::error::{Error, Result};
use crate::values::civil::civil_from_days_fast;
use crate::values::text::to_string;

/// The widest date text: `+5881580-07-11` (Date32's range).
const DATE_SLOT: usize = 16;
/// A timestamp's slot: a date, then 20 bytes for `THH:MM:SS.fffffffffZ` (19 + 1 used).
const TIMESTAMP_SLOT: usize = DATE_SLOT + 20;

/// The string form of every value of `array`: NULL where the value is NULL or empty.
///
/// # Errors
/// `UnsupportedType` for types without a string form; `InvalidArgument` when the text of
/// the array would exceed 2 GiB (split it).
pub fn to_strings(array: &dyn Array) -> Result<StringArray> {
    match array.data_type() {
        DataType::Int8 => format_primitive::<Int8Type, _>(array, Ints),
        DataType::Int16 => format_primitive::<Int16Type, _>(array, Ints),
        DataType::Int32 => format_primitive::<Int32Type, _>(array, Ints),
        DataType::Int64 => format_primitive::<Int64Type, _>(array, Ints),
        DataType::UInt8 => format_primitive::<UInt8Type, _>(array, Ints),
        DataType::UInt16 => format_primitive::<UInt16Type, _>(array, Ints),
        DataType::UInt32 => format_primitive::<UInt32Type, _>(array, Ints),
        DataType::UInt64 => format_primitive::<UInt64Type, _>(array, Ints),
        DataType::Date32 => format_primitive::<Date32Type, _>(array, Dates::default()),
        DataType::Timestamp(unit, tz) => {
            let zoned = tz.is_some();
            match unit {
                TimeUnit::Second => {
                    format_primitive::<TimestampSecondType, _>(array, Timestamps::<1>::new(zoned))
                }
                TimeUnit::Millisecond => format_primitive::<TimestampMillisecondType, _>(
                    array,
                    Timestamps::<1_000>::new(zoned),
                ),
                TimeUnit::Microsecond => format_primitive::<TimestampMicrosecondType, _>(
                    array,
                    Timestamps::<1_000_000>::new(zoned),
                ),
                TimeUnit::Nanosecond => format_primitive::<TimestampNanosecondType, _>(
                    array,
                    Timestamps::<1_000_000_000>::new(zoned),
                ),
            }
        }
        DataType::Utf8 => {
            let s = array.as_string::<i32>();
            let nulls = NullBuffer::union(s.nulls(), Some(&non_empty(s.offsets())));
            Ok(StringArray::new(
                s.offsets().clone(),
                s.values().clone(),
                nulls,
            ))
        }
        _ => one_by_one(array),
    }
}

/// A validity buffer: false where the value between two offsets is empty.
fn non_empty(offsets: &OffsetBuffer<i32>) -> NullBuffer {
    NullBuffer::from_iter(offsets.windows(2).map(|w| w[1] > w[0]))
}

/// Any other type: value by value.
fn one_by_one(array: &dyn Array) -> Result<StringArray> {
    let mut out = Vec::with_capacity(array.len());
    for i in 0..array.len() {
        let v = ScalarValue::try_from_array(array, i)?;
        out.push(to_string(&v)?);
    }
    Ok(StringArray::from(out))
}

/// How one kind of value is written: its exact length, and its text into a slot of `W`
/// bytes (returning the length). Cloned per thread (it may cache, like [`DateCache`]).
trait Format<N>: Clone + Send {
    fn len(&mut self, x: N) -> usize;
    fn write(&mut self, slot: &mut [u8; W_MAX], x: N) -> usize;
    /// The one length every value in `values` has, when one scan for their range tells
    /// (then the first pass only counts valid values). NULL slots count too, which only
    /// makes this answer `None` more often.
    fn uniform_len(&self, _values: &[N]) -> Option<usize> {
        None
    }
}

/// The smallest and largest of `values` (None when empty).
fn range<N: Copy + Ord>(values: &[N]) -> Option<(N, N)> {
    let first = *values.first()?;
    Some(
        values
            .iter()
            .fold((first, first), |(lo, hi), &x| (lo.min(x), hi.max(x))),
    )
}

/// The widest slot any format needs.
const W_MAX: usize = TIMESTAMP_SLOT;

/// Arrays shorter than this are formatted on the calling thread.
const PARALLEL_MIN: usize = 1 << 16;

/// How a formatting splits an array of `n` values: `chunk` values per thread.
#[derive(Clone, Copy)]
struct Chunks {
    n: usize,
    chunk: usize,
}

impl Chunks {
    fn new(n: usize) -> Self {
        let threads = if n < PARALLEL_MIN {
            1
        } else {
            std::thread::available_parallelism().map_or(1, |t| t.get().min(8))
        };
        Self {
            n,
            chunk: n.div_ceil(threads).max(1),
        }
    }

    fn count(self) -> usize {
        self.n.div_ceil(self.chunk)
    }

    /// The values of chunk `c`: `lo..hi`.
    fn bounds(self, c: usize) -> (usize, usize) {
        (c * self.chunk, ((c + 1) * self.chunk).min(self.n))
    }
}

fn failed() -> Error {
    Error::Internal("a formatting thread failed".into())
}

/// Formats every valid value of a primitive array with `fmt` in two passes: the bytes each
/// chunk of the array needs (a sum of exact lengths), then the text and the offsets straight
/// into one buffer of exactly that size. Both passes split the array across the machine's
/// cores; every thread writes only its own range of offsets and bytes.
fn format_primitive<T: ArrowPrimitiveType, F: Format<T::Native>>(
    array: &dyn Array,
    fmt: F,
) -> Result<StringArray>
where
    T::Native: Send + Sync,
{
    let a = array.as_primitive::<T>();
    let n = a.len();
    let nulls = a.nulls().filter(|m| m.null_count() > 0);
    let chunks = Chunks::new(n);
    let values: &[T::Native] = a.values();
    let totals = chunk_bytes(values, nulls, &fmt, chunks)?;
    let mut bases = Vec::with_capacity(totals.len());
    let mut total = 0usize;
    for t in &totals {
        bases.push(total);
        total = total.saturating_add(*t);
    }
    if i32::try_from(total).is_err() {
        return Err(Error::InvalidArgument(
            "the text of this array exceeds 2 GiB: convert it in slices".into(),
        ));
    }
    // Both from the recycled buffers: every byte of them is written by `write_chunks`.
    let mut buf = crate::mem::recycled::take(total);
    let mut offsets = crate::mem::recycled::take((n + 1) * std::mem::size_of::<i32>());
    let offsets_mut = offsets.typed_data_mut::<i32>();
    offsets_mut[0] = 0;
    let layout = (&totals[..], &bases[..]);
    write_chunks(
        values,
        nulls,
        &fmt,
        chunks,
        layout,
        buf.as_slice_mut(),
        &mut offsets_mut[1..],
    )?;
    let offsets = ScalarBuffer::new(crate::mem::recycled::share(offsets), 0, n + 1);
    // SAFETY: offsets[0] = 0 and every later one is its chunk's base plus a running position
    // that only grows, chunk bases being running sums: monotonic, ending at `buf.len()`.
    let offsets = unsafe { OffsetBuffer::new_unchecked(offsets) };
    // SAFETY: every format writes ASCII only (digits, '-', '+', ':', '.', ' ', 'T', 'Z'), so
    // the values are valid UTF-8 and every offset falls on a character boundary; offsets are
    // monotonic by construction and end at `buf.len()` (every chunk filled its range exactly,
    // checked by `write_chunks`).
    let strings = unsafe {
        StringArray::new_unchecked(
            offsets,
            crate::mem::recycled::share(buf),
            a.nulls().cloned(),
        )
    };
    Ok(strings)
}

/// Pass 1: the bytes of every chunk (a sum of lengths: no writes), or valid values times the
/// length they all have.
fn chunk_bytes<N: Copy + Send + Sync, F: Format<N>>(
    values: &[N],
    nulls: Option<&NullBuffer>,
    fmt: &F,
    chunks: Chunks,
) -> Result<Vec<usize>> {
    if let Some(len) = fmt.uniform_len(values) {
        return Ok((0..chunks.count())
            .map(|c| {
                let (lo, hi) = chunks.bounds(c);
                len * nulls.map_or(hi - lo, |m| m.inner().slice(lo, hi - lo).count_set_bits())
            })
            .collect());
    }
    let valid = |i: usize| nulls.is_none_or(|m| m.is_valid(i));
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..chunks.count())
            .map(|c| {
                let mut fmt = fmt.clone();
                let valid = &valid;
                s.spawn(move || {
                    let (lo, hi) = chunks.bounds(c);
                    let mut bytes = 0usize;
                    for (k, &v) in values[lo..hi].iter().enumerate() {
                        if valid(lo + k) {
                            bytes += fmt.len(v);
                        }
                    }
                    bytes
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().map_err(|_| failed()))
            .collect::<Result<Vec<usize>>>()
    })
}

/// Pass 2: the text of every value into its chunk's range of `buf` (`totals` bytes from
/// `bases`), and the end offset of every value (`ends`, one per value).
fn write_chunks<N: Copy + Send + Sync, F: Format<N>>(
    values: &[N],
    nulls: Option<&NullBuffer>,
    fmt: &F,
    chunks: Chunks,
    (totals, bases): (&[usize], &[usize]),
    buf: &mut [u8],
    ends: &mut [i32],
) -> Result<()> {
    let valid = |i: usize| nulls.is_none_or(|m| m.is_valid(i));
    std::thread::scope(|s| {
        let mut rest: &mut [u8] = buf;
        let mut handles = Vec::with_capacity(totals.len());
        for (c, ends) in ends.chunks_mut(chunks.chunk).enumerate() {
            let (region, tail) = std::mem::take(&mut rest).split_at_mut(totals[c]);
            rest = tail;
            let mut fmt = fmt.clone();
            let valid = &valid;
            let base = bases[c];
            handles.push(s.spawn(move || {
                let mut slot = [0u8; W_MAX];
                let mut pos = 0usize;
                for (k, end) in ends.iter_mut().enumerate() {
                    let i = c * chunks.chunk + k;
                    if valid(i) {
                        pos += match region.get_mut(pos..pos + W_MAX) {
                            // Room for a whole slot: write in place (the bytes past this
                            // value are overwritten by the next ones).
                            Some(direct) => {
                                fmt.write(direct.try_into().map_err(|_| failed())?, values[i])
                            }
                            None => {
                                let len = fmt.write(&mut slot, values[i]);
                                region
                                    .get_mut(pos..pos + len)
                                    .ok_or_else(failed)?
                                    .copy_from_slice(&slot[..len]);
                                len
                            }
                        };
                    }
                    *end = (base + pos) as i32;
                }
                // `len` and `write` agree (tested), so every chunk fills its range exactly.
                if pos == region.len() {
                    Ok(())
                } else {
                    Err(failed())
                }
            }));
        }
        handles
            .into_iter()
            .try_for_each(|h| h.join().map_err(|_| failed())?)
    })
}

/// Two decimal digits of every number below 100.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

#[inline(always)]
fn pair(out: &mut [u8], at: usize, v: u32) {
    let k = (v as usize % 100) * 2;
    out[at] = PAIRS[k];
    out[at + 1] = PAIRS[k + 1];
}

/// Integers of every width: (negative, magnitude).
trait Integer: Copy + Send + Sync {
    fn split(self) -> (bool, u64);
}

macro_rules! signed {
    ($($t:ty),*) => {$(
        impl Integer for $t {
            #[inline(always)]
            fn split(self) -> (bool, u64) {
                (self < 0, i64::from(self).unsigned_abs())
            }
        }
    )*};
}
macro_rules! unsigned {
    ($($t:ty),*) => {$(
        impl Integer for $t {
            #[inline(always)]
            fn split(self) -> (bool, u64) {
                (false, u64::from(self))
            }
        }
    )*};
}
signed!(i8, i16, i32, i64);
unsigned!(u8, u16, u32, u64);

/// Decimal integers.
#[derive(Clone, Copy)]
struct Ints;

impl<N: Integer> Format<N> for Ints {
    #[inline(always)]
    fn len(&mut self, x: N) -> usize {
        let (neg, m) = x.split();
        usize::from(neg) + digits(m)
    }

    #[inline(always)]
    fn write(&mut self, slot: &mut [u8; W_MAX], x: N) -> usize {
        let (neg, m) = x.split();
        let len = usize::from(neg) + digits(m);
        slot[0] = b'-';
        write_digits(&mut slot[..len], m);
        len
    }
}

#[inline(always)]
fn digits(m: u64) -> usize {
    m.checked_ilog10().map_or(1, |l| l as usize + 1)
}

/// The digits of `m`, right-aligned in `out` (which is at least as long as they are): eight
/// digits at a time in 32-bit arithmetic, two at a time from a table.
#[inline(always)]
fn write_digits(out: &mut [u8], mut m: u64) {
    let mut end = out.len();
    while m >= 100_000_000 {
        let low = (m % 100_000_000) as u32;
        m /= 100_000_000;
        end -= 8;
        eight(&mut out[end..end + 8], low);
    }
    let mut m = m as u32;
    while m >= 100 {
        end -= 2;
        pair(out, end, m % 100);
        m /= 100;
    }
    if m >= 10 {
        pair(out, end - 2, m);
    } else {
        out[end - 1] = b'0' + m as u8;
    }
}

/// Exactly eight digits of `v` (< 10^8), computed in all lanes of one word at once: two
/// 4-digit halves in 32-bit lanes, split into 2-digit values in 16-bit lanes, then one digit
/// per byte (the divisions by 100 and 10 are multiplications by 10486 / 2^20 and 103 / 2^10,
/// exact in these ranges).
#[inline(always)]
fn eight(out: &mut [u8], v: u32) {
    let merged = u64::from(v / 10_000) | (u64::from(v % 10_000) << 32);
    let top = ((merged * 10_486) >> 20) & 0x0000_007F_0000_007F;
    let hundreds = top | ((merged - top * 100) << 16);
    let tens = ((hundreds * 103) >> 10) & 0x000F_000F_000F_000F;
    let digits = tens | ((hundreds - tens * 10) << 8);
    out[..8].copy_from_slice(&(digits | 0x3030_3030_3030_3030).to_le_bytes());
}

/// Days since the epoch of 0000-01-01 and 9999-12-31: dates between them have 10 characters.
const FOUR_DIGIT_YEARS: std::ops::RangeInclusive<i64> = -719_528..=2_932_896;

/// The length of a date's text.
fn date_len(days: i64) -> usize {
    if FOUR_DIGIT_YEARS.contains(&days) {
        10
    } else {
        date_text(&mut [0u8; DATE_SLOT], days)
    }
}

/// Dates (`Date32`).
#[derive(Clone, Default)]
struct Dates(DateCache);

impl Format<i32> for Dates {
    #[inline(always)]
    fn len(&mut self, d: i32) -> usize {
        date_len(i64::from(d))
    }

    fn uniform_len(&self, values: &[i32]) -> Option<usize> {
        let (lo, hi) = range(values)?;
        let four = |d: i32| FOUR_DIGIT_YEARS.contains(&i64::from(d));
        (four(lo) && four(hi)).then_some(10)
    }

    #[inline(always)]
    fn write(&mut self, slot: &mut [u8; W_MAX], d: i32) -> usize {
        self.0.write(slot, i64::from(d))
    }
}

/// Timestamps of `PER_SEC` units per second, with or without a zone.
#[derive(Clone)]
struct Timestamps<const PER_SEC: i64> {
    dates: DateCache,
    zoned: bool,
}

impl<const PER_SEC: i64> Timestamps<PER_SEC> {
    fn new(zoned: bool) -> Self {
        Self {
            dates: DateCache::default(),
            zoned,
        }
    }
}

impl<const PER_SEC: i64> Format<i64> for Timestamps<PER_SEC> {
    #[inline(always)]
    fn len(&mut self, x: i64) -> usize {
        let secs = x.div_euclid(PER_SEC);
        let nanos = x.rem_euclid(PER_SEC) * (1_000_000_000 / PER_SEC);
        date_len(secs.div_euclid(86_400))
            + 16
            + if nanos % 1_000 != 0 { 3 } else { 0 }
            + usize::from(self.zoned)
    }

    #[inline(always)]
    fn write(&mut self, slot: &mut [u8; W_MAX], x: i64) -> usize {
        write_timestamp::<PER_SEC>(slot, &mut self.dates, x, self.zoned)
    }

    /// Seconds, milliseconds and microseconds never have digits past the sixth: with every
    /// day between years 0 and 9999, every text has the same length.
    fn uniform_len(&self, values: &[i64]) -> Option<usize> {
        if PER_SEC > 1_000_000 {
            return None;
        }
        let (lo, hi) = range(values)?;
        let four = |x: i64| FOUR_DIGIT_YEARS.contains(&x.div_euclid(PER_SEC).div_euclid(86_400));
        (four(lo) && four(hi)).then_some(10 + 16 + usize::from(self.zoned))
    }
}

/// The text of the last day formatted, reused while consecutive values share it.
#[derive(Clone, Default)]
struct DateCache {
    day: Option<i64>,
    text: [u8; DATE_SLOT],
    len: usize,
}

impl DateCache {
    /// Writes the date `days` since the epoch at the start of `out`; returns its length.
    #[inline(always)]
    fn write(&mut self, out: &mut [u8], days: i64) -> usize {
        if self.day != Some(days) {
            self.len = date_text(&mut self.text, days);
            self.day = Some(days);
        }
        out[..DATE_SLOT].copy_from_slice(&self.text);
        self.len
    }
}

/// `YYYY-MM-DD` (years outside 0..=9999 with a sign and at least 4 digits).
fn date_text(out: &mut [u8; DATE_SLOT], days: i64) -> usize {
    let (y, m, d) = civil_from_days_fast(days);
    let mut at = if (0..=9999).contains(&y) {
        let y = y as u32;
        pair(out, 0, y / 100);
        pair(out, 2, y % 100);
        4
    } else {
        let text = format!("{}{:04}", if y < 0 { '-' } else { '+' }, y.unsigned_abs());
        let n = text.len().min(DATE_SLOT - 6);
        out[..n].copy_from_slice(&text.as_bytes()[..n]);
        n
    };
    out[at] = b'-';
    pair(out, at + 1, m);
    out[at + 3] = b'-';
    pair(out, at + 4, d);
    at += 6;
    at
}

/// One timestamp of `PER_SEC` units per second, as `to_string` writes it; returns its length.
#[inline(always)]
fn write_timestamp<const PER_SEC: i64>(
    slot: &mut [u8; W_MAX],
    dates: &mut DateCache,
    x: i64,
    zoned: bool,
) -> usize {
    let secs = x.div_euclid(PER_SEC);
    let nanos = (x.rem_euclid(PER_SEC) * (1_000_000_000 / PER_SEC)) as u32;
    let at = dates.write(slot, secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400) as u32;
    let mut t = [0u8; 20];
    t[0] = if zoned { b'T' } else { b' ' };
    pair(&mut t, 1, s / 3_600);
    t[3] = b':';
    pair(&mut t, 4, s / 60 % 60);
    t[6] = b':';
    pair(&mut t, 7, s % 60);
    t[9] = b'.';
    let micros = nanos / 1_000;
    pair(&mut t, 10, micros / 10_000);
    pair(&mut t, 12, micros / 100 % 100);
    pair(&mut t, 14, micros % 100);
    let mut n = 16;
    let sub_micros = nanos % 1_000;
    if sub_micros != 0 {
        t[16] = b'0' + (sub_micros / 100) as u8;
        pair(&mut t, 17, sub_micros % 100);
        n = 19;
    }
    if zoned {
        t[n] = b'Z';
        n += 1;
    }
    // A date is at most DATE_SLOT bytes: the 20 bytes after it are inside the slot.
    slot[at..at + 20].copy_from_slice(&t);
    at + n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrow::array::{
        ArrayRef, Date32Array, Int64Array, Int8Array, TimestampMicrosecondArray,
        TimestampNanosecondArray, UInt64Array,
    };
    use std::sync::Arc;

    /// `to_strings` agrees with `to_string` value by value (NULL included).
    fn agrees(array: ArrayRef) {
        let texts = to_strings(array.as_ref()).expect("to_strings");
        assert_eq!(texts.len(), array.len());
        for i in 0..array.len() {
            let v = ScalarValue::try_from_array(array.as_ref(), i).expect("scalar");
            let want = to_string(&v).expect("to_string");
            let got = texts.is_valid(i).then(|| texts.value(i).to_string());
            assert_eq!(got, want, "value {i} of {}", array.data_type());
        }
    }

    fn edges() -> Vec<i64> {
        let mut v = vec![i64::MIN, i64::MAX, 0, -1, 1, 9, 10, 99, 100, -100];
        for p in [8u32, 9, 15, 16, 17, 18] {
            let x = 10i64.pow(p);
            v.extend([x - 1, x, x + 1, -x, -(x - 1)]);
        }
        v
    }

    #[test]
    fn integers() {
        agrees(Arc::new(Int64Array::from(edges())));
        agrees(Arc::new(UInt64Array::from(vec![
            u64::MAX,
            0,
            10u64.pow(19),
            10u64.pow(19) - 1,
        ])));
        agrees(Arc::new(Int8Array::from(vec![
            Some(i8::MIN),
            None,
            Some(i8::MAX),
        ])));
    }

    #[test]
    fn dates_and_timestamps_in_every_range() {
        agrees(Arc::new(Date32Array::from(vec![
            Some(i32::MIN),
            Some(i32::MAX),
            Some(-719_529),
            Some(-719_528),
            Some(2_932_896),
            Some(2_932_897),
            None,
            Some(0),
        ])));
        let micros: Vec<Option<i64>> = edges().into_iter().map(Some).chain([None]).collect();
        agrees(Arc::new(TimestampMicrosecondArray::from(micros.clone())));
        agrees(Arc::new(
            TimestampMicrosecondArray::from(micros).with_timezone("UTC"),
        ));
        agrees(Arc::new(TimestampNanosecondArray::from(vec![
            1,
            999,
            1_000,
            -1,
            i64::MIN,
            i64::MAX,
        ])));
    }

    #[test]
    fn long_arrays_split_across_threads() {
        // Past PARALLEL_MIN, with NULLs and values of every length, so chunk ends fall on
        // values of every width (the in-place and the copied path).
        let n = PARALLEL_MIN * 3 + 17;
        let values: Vec<Option<i64>> = (0..n)
            .map(|i| {
                let x = (i as i64).wrapping_mul(0x9E37_79B9_7F4A_7C15_u64 as i64);
                (i % 7 != 3).then_some(x >> (i % 64))
            })
            .collect();
        agrees(Arc::new(Int64Array::from(values.clone())));
        agrees(Arc::new(
            TimestampNanosecondArray::from(values).with_timezone("+00:00"),
        ));
    }

    #[test]
    fn values_of_one_length_skip_the_first_pass() {
        // Years 1 to 9999 in milliseconds and days, with NULLs: every text has one length.
        let n = PARALLEL_MIN * 2 + 5;
        let span = 2_932_896i64 + 719_000;
        let days: Vec<Option<i32>> = (0..n as i64)
            .map(|i| (i % 5 != 1).then_some(((i * 7_919) % span - 719_000) as i32))
            .collect();
        let millis: Vec<Option<i64>> = days
            .iter()
            .enumerate()
            .map(|(i, d)| d.map(|d| i64::from(d) * 86_400_000 + (i as i64 * 1_237) % 86_400_000))
            .collect();
        assert_eq!(
            Dates::default().uniform_len(&[-719_000, 2_932_896]),
            Some(10)
        );
        assert_eq!(
            Timestamps::<1_000>::new(true).uniform_len(&[0, 1]),
            Some(27)
        );
        assert_eq!(
            Timestamps::<1_000_000_000>::new(false).uniform_len(&[0]),
            None
        );
        agrees(Arc::new(Date32Array::from(days)));
        agrees(Arc::new(
            crate::arrow::array::TimestampMillisecondArray::from(millis).with_timezone("UTC"),
        ));
    }
}
