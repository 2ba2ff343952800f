//! [`to_strings`]: the string form of every value of an array at once. Integers, dates and
//! timestamps are formatted by integer arithmetic straight into one values buffer (no
//! per-value allocation); other types go value by value through [`to_string`].

use crate::arrow::array::{Array, AsArray, StringArray};
use crate::arrow::buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use crate::arrow::datatypes::{
    ArrowPrimitiveType, DataType, Date32Type, Int16Type, Int32Type, Int64Type, Int8Type, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use crate::datafusion::scalar::ScalarValue;
use crate::error::{Error, Result};
use crate::values::civil::{civil_from_days, MICROS_PER_DAY};
use crate::values::text::to_string;

/// The string form of every value of `array`: NULL where the value is NULL or empty.
///
/// # Errors
/// `UnsupportedType` for types without a string form; `InvalidArgument` when the text of
/// the array would exceed 2 GiB (split it).
pub fn to_strings(array: &dyn Array) -> Result<StringArray> {
    macro_rules! ints {
        ($t:ty) => {
            format_primitive::<$t>(array, 20, |out, x| {
                out.extend_from_slice(itoa::Buffer::new().format(x).as_bytes())
            })
        };
    }
    match array.data_type() {
        DataType::Int8 => ints!(Int8Type),
        DataType::Int16 => ints!(Int16Type),
        DataType::Int32 => ints!(Int32Type),
        DataType::Int64 => ints!(Int64Type),
        DataType::UInt8 => ints!(UInt8Type),
        DataType::UInt16 => ints!(UInt16Type),
        DataType::UInt32 => ints!(UInt32Type),
        DataType::UInt64 => ints!(UInt64Type),
        DataType::Date32 => {
            let mut dates = DateCache::default();
            format_primitive::<Date32Type>(array, 10, |out, d| dates.write(out, i64::from(d)))
        }
        DataType::Timestamp(unit, tz) => {
            let zoned = tz.is_some();
            let mut dates = DateCache::default();
            macro_rules! ts {
                ($t:ty, $per_sec:expr) => {
                    format_primitive::<$t>(array, 30, |out, x| {
                        write_timestamp(out, &mut dates, x, $per_sec, zoned)
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

/// Formats every valid value of a primitive array with `write` into one buffer.
fn format_primitive<T: ArrowPrimitiveType>(
    array: &dyn Array,
    width: usize,
    mut write: impl FnMut(&mut Vec<u8>, T::Native),
) -> Result<StringArray> {
    let a = array.as_primitive::<T>();
    let mut values: Vec<u8> = Vec::with_capacity(a.len() * width);
    let mut offsets: Vec<i32> = Vec::with_capacity(a.len() + 1);
    offsets.push(0);
    match a.nulls().filter(|n| n.null_count() > 0) {
        None => {
            for &x in a.values() {
                write(&mut values, x);
                offsets.push(offset(values.len())?);
            }
        }
        Some(nulls) => {
            for (i, &x) in a.values().iter().enumerate() {
                if nulls.is_valid(i) {
                    write(&mut values, x);
                }
                offsets.push(offset(values.len())?);
            }
        }
    }
    let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
    // SAFETY: every writer above emits ASCII only (digits, '-', ':', '.', ' ', 'T', 'Z',
    // '+'), so the values are valid UTF-8 and every offset falls on a character boundary;
    // offsets are monotonic by construction.
    let strings = unsafe {
        StringArray::new_unchecked(offsets, Buffer::from_vec(values), a.nulls().cloned())
    };
    Ok(strings)
}

fn offset(len: usize) -> Result<i32> {
    i32::try_from(len).map_err(|_| {
        Error::InvalidArgument("the text of this array exceeds 2 GiB: convert it in slices".into())
    })
}

/// `YYYY-MM-DD` of the last day formatted, reused while consecutive values share it.
#[derive(Default)]
struct DateCache {
    day: Option<i64>,
    text: Vec<u8>,
}

impl DateCache {
    fn write(&mut self, out: &mut Vec<u8>, days: i64) {
        if self.day != Some(days) {
            self.text.clear();
            let (y, m, d) = civil_from_days(days);
            if (0..=9999).contains(&y) {
                let y = y as u32;
                push4(&mut self.text, y);
            } else {
                let sign = if y < 0 { '-' } else { '+' };
                self.text
                    .extend_from_slice(format!("{sign}{:04}", y.unsigned_abs()).as_bytes());
            }
            self.text.push(b'-');
            push2(&mut self.text, m);
            self.text.push(b'-');
            push2(&mut self.text, d);
            self.day = Some(days);
        }
        out.extend_from_slice(&self.text);
    }
}

#[inline]
fn push2(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&[b'0' + (v / 10) as u8, b'0' + (v % 10) as u8]);
}

#[inline]
fn push4(out: &mut Vec<u8>, v: u32) {
    push2(out, v / 100);
    push2(out, v % 100);
}

/// One timestamp of `per_sec` units per second: as `to_string` writes it.
#[inline]
fn write_timestamp(out: &mut Vec<u8>, dates: &mut DateCache, x: i64, per_sec: i64, zoned: bool) {
    let secs = x.div_euclid(per_sec);
    let nanos = x.rem_euclid(per_sec) * (1_000_000_000 / per_sec);
    dates.write(out, secs.div_euclid(86_400));
    out.push(if zoned { b'T' } else { b' ' });
    let micros_of_day = secs.rem_euclid(86_400) * 1_000_000 + nanos / 1_000;
    debug_assert!(micros_of_day < MICROS_PER_DAY);
    let s = (micros_of_day / 1_000_000) as u32;
    push2(out, s / 3_600);
    out.push(b':');
    push2(out, s / 60 % 60);
    out.push(b':');
    push2(out, s % 60);
    out.push(b'.');
    let f = (micros_of_day % 1_000_000) as u32;
    push2(out, f / 10_000);
    push4(out, f % 10_000);
    let sub_micros = (nanos % 1_000) as u32;
    if sub_micros != 0 {
        out.push(b'0' + (sub_micros / 100) as u8);
        push2(out, sub_micros % 100);
    }
    if zoned {
        out.push(b'Z');
    }
}
