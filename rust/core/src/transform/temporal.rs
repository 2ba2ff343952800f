//! `year`, `month`, `day` and `hour`: DataFusion's `date_part` on dates and timestamps, in
//! the timezone of the timestamp type (naive timestamps as UTC); see docs/design.md,
//! "Temporal transforms".
//!
//! Dates and naive or fixed-offset timestamps take an integer-arithmetic fast path
//! ([`temporal_fast`]); named zones with daylight-saving rules and values far outside the
//! usual range use arrow's `date_part` kernel.

use std::sync::Arc;

use crate::arrow::array::{Array, ArrayRef, AsArray};
use crate::arrow::compute::kernels::temporal::{date_part, DatePart};
use crate::arrow::datatypes::DataType;
use crate::error::{unsupported, Result};

/// Whether `t` is a date or a timestamp.
pub(super) fn is_temporal(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Date32 | DataType::Date64 | DataType::Timestamp(_, _)
    )
}

/// `date_part(part, a)` for a date or timestamp array.
pub(super) fn temporal(a: &dyn Array, part: DatePart) -> Result<ArrayRef> {
    if !is_temporal(a.data_type()) {
        return unsupported!("cannot extract {part:?} from {}", a.data_type());
    }
    if let Some(out) = temporal_fast(a, part) {
        return Ok(out);
    }
    Ok(date_part(a, part)?)
}

/// The offset in seconds of a fixed-offset timezone name (`UTC`, `Z`, `+08:00`, `-0530`,
/// `+05`); `None` for named zones with daylight-saving rules.
fn fixed_offset_seconds(tz: &str) -> Option<i64> {
    match tz {
        "UTC" | "Z" | "Etc/UTC" | "GMT" | "Etc/GMT" | "+00:00" | "-00:00" => return Some(0),
        _ => {}
    }
    let (sign, rest) = match tz.as_bytes().first()? {
        b'+' => (1, &tz[1..]),
        b'-' => (-1, &tz[1..]),
        _ => return None,
    };
    let digits: String = rest.chars().filter(|c| *c != ':').collect();
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (h, m) = match digits.len() {
        2 => (digits.parse::<i64>().ok()?, 0),
        4 => (
            digits[..2].parse::<i64>().ok()?,
            digits[2..].parse::<i64>().ok()?,
        ),
        _ => return None,
    };
    (h <= 23 && m <= 59).then_some(sign * (h * 3600 + m * 60))
}

/// Civil date (year, month, day) of a day count since 1970-01-01 (proleptic Gregorian).
#[inline(always)]
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + (m <= 2) as i64, m, d)
}

/// Day counts inside which the fast path is used: well within chrono's date range, so the
/// results equal arrow's (and DataFusion's) `date_part`, which the property tests check.
const FAST_DAYS: std::ops::RangeInclusive<i64> = -90_000_000..=90_000_000;

/// The fast `date_part` loop, monomorphised per unit so every division is by a constant.
#[inline]
fn fast_loop<T: Copy, const PER_DAY: i64, const PER_HOUR: i64>(
    vals: &[T],
    to_i64: impl Fn(T) -> i64,
    offset: i64,
    part: DatePart,
) -> Option<Vec<i32>> {
    let mut out = vec![0i32; vals.len()];
    for (o, v) in out.iter_mut().zip(vals) {
        let local = to_i64(*v).checked_add(offset)?;
        let days = local.div_euclid(PER_DAY);
        if !FAST_DAYS.contains(&days) {
            return None;
        }
        *o = match part {
            DatePart::Hour if PER_HOUR > 0 => (local.rem_euclid(PER_DAY) / PER_HOUR) as i32,
            DatePart::Year => civil_from_days(days).0 as i32,
            DatePart::Month => civil_from_days(days).1 as i32,
            DatePart::Day => civil_from_days(days).2 as i32,
            _ => return None,
        };
    }
    Some(out)
}

/// Integer-arithmetic `date_part` for dates and for naive or fixed-offset timestamps (no
/// per-value timezone lookup). `None` when the type or a value needs the general kernel.
fn temporal_fast(a: &dyn Array, part: DatePart) -> Option<ArrayRef> {
    use crate::arrow::array::Int32Array;
    use crate::arrow::datatypes::{
        Date32Type, Date64Type, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
        TimestampNanosecondType, TimestampSecondType,
    };
    const DAY: i64 = 86_400;
    const HOUR: i64 = 3_600;
    let id = |x: i64| x;
    let out = match a.data_type() {
        DataType::Date32 => fast_loop::<i32, 1, 0>(
            a.as_primitive::<Date32Type>().values(),
            |x| x as i64,
            0,
            part,
        )?,
        DataType::Date64 => fast_loop::<i64, { DAY * 1_000 }, 0>(
            a.as_primitive::<Date64Type>().values(),
            id,
            0,
            part,
        )?,
        DataType::Timestamp(unit, tz) => {
            let off = match tz {
                None => 0,
                Some(tz) => fixed_offset_seconds(tz)?,
            };
            match unit {
                TimeUnit::Second => fast_loop::<i64, DAY, HOUR>(
                    a.as_primitive::<TimestampSecondType>().values(),
                    id,
                    off,
                    part,
                )?,
                TimeUnit::Millisecond => fast_loop::<i64, { DAY * 1_000 }, { HOUR * 1_000 }>(
                    a.as_primitive::<TimestampMillisecondType>().values(),
                    id,
                    off.checked_mul(1_000)?,
                    part,
                )?,
                TimeUnit::Microsecond => {
                    fast_loop::<i64, { DAY * 1_000_000 }, { HOUR * 1_000_000 }>(
                        a.as_primitive::<TimestampMicrosecondType>().values(),
                        id,
                        off.checked_mul(1_000_000)?,
                        part,
                    )?
                }
                TimeUnit::Nanosecond => {
                    fast_loop::<i64, { DAY * 1_000_000_000 }, { HOUR * 1_000_000_000 }>(
                        a.as_primitive::<TimestampNanosecondType>().values(),
                        id,
                        off.checked_mul(1_000_000_000)?,
                        part,
                    )?
                }
            }
        }
        _ => return None,
    };
    Some(Arc::new(Int32Array::new(out.into(), a.logical_nulls())))
}

/// `year(x)`: calendar year of a date or timestamp.
pub fn year(a: &dyn Array) -> Result<ArrayRef> {
    temporal(a, DatePart::Year)
}
/// `month(x)`: month 1-12 of a date or timestamp.
pub fn month(a: &dyn Array) -> Result<ArrayRef> {
    temporal(a, DatePart::Month)
}
/// `day(x)`: day of month 1-31 of a date or timestamp.
pub fn day(a: &dyn Array) -> Result<ArrayRef> {
    temporal(a, DatePart::Day)
}
/// `hour(x)`: hour 0-23 of a timestamp, in the timestamp type's timezone (naive timestamps
/// as UTC).
///
/// # Errors
/// `UnsupportedType` for anything but a timestamp.
pub fn hour(a: &dyn Array) -> Result<ArrayRef> {
    if !matches!(a.data_type(), DataType::Timestamp(_, _)) {
        return unsupported!("hour needs a timestamp, got {}", a.data_type());
    }
    temporal(a, DatePart::Hour)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporal_fast_path_equals_arrow_date_part() {
        use crate::arrow::array::{Date32Array, TimestampMillisecondArray};
        let days = Date32Array::from(vec![
            Some(-719_528),
            Some(-1),
            Some(0),
            Some(11_016), // 2000-02-29
            Some(19_723),
            None,
            Some(2_932_896), // 9999-12-31
        ]);
        let ms = TimestampMillisecondArray::from(vec![
            Some(-62_135_596_800_000),
            Some(-1),
            Some(0),
            Some(951_782_399_999),
            Some(1_735_689_599_999),
            None,
        ]);
        for tz in [
            None,
            Some("UTC"),
            Some("+08:00"),
            Some("-0530"),
            Some("+14"),
        ] {
            let ts = ms.clone().with_timezone_opt(tz);
            for part in [
                DatePart::Year,
                DatePart::Month,
                DatePart::Day,
                DatePart::Hour,
            ] {
                let fast = temporal_fast(&ts, part).expect("fixed offsets take the fast path");
                assert_eq!(
                    fast.as_ref(),
                    date_part(&ts, part).unwrap().as_ref(),
                    "{tz:?} {part:?}"
                );
            }
        }
        for part in [DatePart::Year, DatePart::Month, DatePart::Day] {
            let fast = temporal_fast(&days, part).unwrap();
            assert_eq!(fast.as_ref(), date_part(&days, part).unwrap().as_ref());
        }
        // named zones and out-of-range values use arrow's kernel
        let ny = ms.clone().with_timezone("America/New_York");
        assert!(temporal_fast(&ny, DatePart::Year).is_none());
        let far = Date32Array::from(vec![i32::MAX]);
        assert!(temporal_fast(&far, DatePart::Year).is_none());
        assert_eq!(
            year(&far).unwrap().as_ref(),
            date_part(&far, DatePart::Year).unwrap().as_ref()
        );
    }
}
