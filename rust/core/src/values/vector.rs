//! [`to_strings`]: the string form of every value of an array at once. Integers, dates and
//! timestamps are formatted by integer arithmetic straight into one preallocated values
//! buffer: every value gets a fixed-size slot to write into (its widest text), the next value
//! starts where the last one ended, so there is no per-value allocation, growth check or
//! overflow check (the whole buffer's size is checked once). Other types go value by value
//! through [`to_string`].

use crate::arrow::array::{Array, AsArray, StringArray};
use crate::arrow::buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use crate::arrow::datatypes::{
    ArrowPrimitiveType, DataType, Date32Type, Int16Type, Int32Type, Int64Type, Int8Type, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use crate::datafusion::scalar::ScalarValue;
use crate::error::{Error, Result};
use crate::values::civil::civil_from_days;
use crate::values::text::to_string;

/// The widest integer text: `-9223372036854775808` and `18446744073709551615` are 20 bytes.
const INT_SLOT: usize = 20;
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
    macro_rules! ints {
        ($t:ty, $wide:ty) => {
            format_primitive::<$t, INT_SLOT>(array, |slot, x| write_int(slot, <$wide>::from(x)))
        };
    }
    match array.data_type() {
        DataType::Int8 => ints!(Int8Type, i64),
        DataType::Int16 => ints!(Int16Type, i64),
        DataType::Int32 => ints!(Int32Type, i64),
        DataType::Int64 => ints!(Int64Type, i64),
        DataType::UInt8 => ints!(UInt8Type, u64),
        DataType::UInt16 => ints!(UInt16Type, u64),
        DataType::UInt32 => ints!(UInt32Type, u64),
        DataType::UInt64 => ints!(UInt64Type, u64),
        DataType::Date32 => {
            let mut dates = DateCache::default();
            format_primitive::<Date32Type, DATE_SLOT>(array, |slot, d| {
                dates.write(slot, i64::from(d))
            })
        }
        DataType::Timestamp(unit, tz) => {
            let zoned = tz.is_some();
            let mut dates = DateCache::default();
            macro_rules! ts {
                ($t:ty, $per_sec:expr) => {
                    format_primitive::<$t, TIMESTAMP_SLOT>(array, |slot, x| {
                        write_timestamp::<$per_sec>(slot, &mut dates, x, zoned)
                    })
                };
            }
            match unit {
                TimeUnit::Second => ts!(TimestampSecondType, 1),
                TimeUnit::Millisecond => ts!(TimestampMillisecondType, 1_000),
                TimeUnit::Microsecond => ts!(TimestampMicrosecondType, 1_000_000),
                TimeUnit::Nanosecond => ts!(TimestampNanosecondType, 1_000_000_000),
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

/// Formats every valid value of a primitive array with `write`, which gets a slot of `W`
/// bytes and returns how many it wrote (at most `W`).
fn format_primitive<T: ArrowPrimitiveType, const W: usize>(
    array: &dyn Array,
    mut write: impl FnMut(&mut [u8; W], T::Native) -> usize,
) -> Result<StringArray> {
    let a = array.as_primitive::<T>();
    let n = a.len();
    // Value i starts at or before i * W, so n * W bytes hold every slot; offsets then fit
    // an i32 without checking each one.
    let capacity = n
        .checked_mul(W)
        .filter(|&c| i32::try_from(c).is_ok())
        .ok_or_else(|| {
            Error::InvalidArgument(
                "the text of this array may exceed 2 GiB: convert it in slices".into(),
            )
        })?;
    let mut values: Vec<u8> = crate::mem::zeroed(capacity);
    let mut offsets: Vec<i32> = crate::mem::zeroed(n + 1);
    let mut pos = 0usize;
    let nulls = a.nulls().filter(|n| n.null_count() > 0);
    for (i, (&x, end)) in a.values().iter().zip(&mut offsets[1..]).enumerate() {
        if nulls.is_none_or(|m| m.is_valid(i)) {
            let slot: &mut [u8; W] = (&mut values[pos..pos + W])
                .try_into()
                .map_err(|_| Error::Internal("value slot out of range".into()))?;
            pos += write(slot, x);
        }
        *end = pos as i32;
    }
    values.truncate(pos);
    let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
    // SAFETY: every writer above emits ASCII only (digits, '-', '+', ':', '.', ' ', 'T',
    // 'Z'), so the values are valid UTF-8 and every offset falls on a character boundary;
    // offsets are monotonic by construction and end at `values.len()`.
    let strings = unsafe {
        StringArray::new_unchecked(offsets, Buffer::from_vec(values), a.nulls().cloned())
    };
    Ok(strings)
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

/// Signed or unsigned integers, widened.
trait Integer: Copy {
    /// (negative, magnitude).
    fn split(self) -> (bool, u64);
}

impl Integer for i64 {
    #[inline(always)]
    fn split(self) -> (bool, u64) {
        (self < 0, self.unsigned_abs())
    }
}

impl Integer for u64 {
    #[inline(always)]
    fn split(self) -> (bool, u64) {
        (false, self)
    }
}

/// Decimal text of `x`; returns its length.
#[inline(always)]
fn write_int<I: Integer>(slot: &mut [u8; INT_SLOT], x: I) -> usize {
    let (neg, mut m) = x.split();
    let sign = usize::from(neg);
    slot[0] = b'-';
    let digits = m.checked_ilog10().map_or(1, |l| l as usize + 1);
    let len = sign + digits;
    let mut at = len;
    while m >= 100 {
        at -= 2;
        pair(slot, at, (m % 100) as u32);
        m /= 100;
    }
    if m >= 10 {
        pair(slot, at - 2, m as u32);
    } else {
        slot[at - 1] = b'0' + m as u8;
    }
    len
}

/// The text of the last day formatted, reused while consecutive values share it.
#[derive(Default)]
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
    let (y, m, d) = civil_from_days(days);
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
    slot: &mut [u8; TIMESTAMP_SLOT],
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
