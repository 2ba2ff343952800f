//! `year`, `month`, `day` and `hour`: DataFusion's `date_part` on dates and timestamps, in
//! the timezone of the timestamp type (naive timestamps as UTC); see docs/design.md,
//! "Temporal transforms".
//!
//! Dates and timestamps take an integer-arithmetic fast path ([`temporal_fast`]): naive and
//! fixed-offset timestamps add a constant, named zones with daylight-saving rules look their
//! offsets up in a table of the zone's transitions (`zoned`). Values far outside the usual
//! range use arrow's `date_part` kernel.

use std::sync::Arc;

use crate::arrow::array::{Array, ArrayRef, AsArray};
use crate::arrow::compute::kernels::aggregate::{max, min};
use crate::arrow::compute::kernels::temporal::{date_part, DatePart};
use crate::arrow::datatypes::{ArrowPrimitiveType, DataType};
use crate::error::{unsupported, Result};

use super::zoned::Intervals;

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

/// The first day of [`civil_table`]: 1900-01-01.
const CIVIL_FIRST: i64 = -25_567;
/// Days in [`civil_table`]: 1900-01-01 to 2100-12-31.
const CIVIL_DAYS: usize = 73_414;

/// `(year << 9) | (month << 5) | day` of every day from 1900 to 2100, so that the dates
/// values usually have cost one lookup instead of [`civil_from_days`]'s divisions.
fn civil_table() -> &'static [u32] {
    static TABLE: std::sync::OnceLock<Vec<u32>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        (0..CIVIL_DAYS as i64)
            .map(|k| {
                let (y, m, d) = civil_from_days(CIVIL_FIRST + k);
                ((y as u32) << 9) | ((m as u32) << 5) | d as u32
            })
            .collect()
    })
}

/// [`civil_from_days`], from `table` ([`civil_table`]) when the day is in it.
#[inline(always)]
fn civil(table: &[u32], days: i64) -> (i64, i64, i64) {
    match table.get(days.wrapping_sub(CIVIL_FIRST) as u64 as usize) {
        Some(&p) => (
            i64::from(p >> 9),
            i64::from((p >> 5) & 15),
            i64::from(p & 31),
        ),
        None => civil_from_days(days),
    }
}

/// Day counts inside which the fast path is used: well within chrono's date range, so the
/// results equal arrow's (and DataFusion's) `date_part`, which the property tests check.
const FAST_DAYS: std::ops::RangeInclusive<i64> = -90_000_000..=90_000_000;

/// The fast `date_part` loop, monomorphised per unit so every division is by a constant;
/// `local(i, v)` is value `i` (`v`) in local time (`None`: use the general kernel).
#[inline]
fn fast_loop<T: Copy, const PER_DAY: i64, const PER_HOUR: i64>(
    vals: &[T],
    to_i64: impl Fn(T) -> i64,
    mut local: impl FnMut(usize, i64) -> Option<i64>,
    part: DatePart,
) -> Option<Vec<i32>> {
    let mut out = vec![0i32; vals.len()];
    let table = civil_table();
    for (i, (o, v)) in out.iter_mut().zip(vals).enumerate() {
        let local = local(i, to_i64(*v))?;
        let days = local.div_euclid(PER_DAY);
        if !FAST_DAYS.contains(&days) {
            return None;
        }
        *o = match part {
            DatePart::Hour if PER_HOUR > 0 => (local.rem_euclid(PER_DAY) / PER_HOUR) as i32,
            DatePart::Year => civil(table, days).0 as i32,
            DatePart::Month => civil(table, days).1 as i32,
            DatePart::Day => civil(table, days).2 as i32,
            _ => return None,
        };
    }
    Some(out)
}

/// `date_part` of a timestamp array of type `T` (`PER_SEC` values per second) in timezone
/// `tz`: naive and fixed-offset ones add a constant; named zones look their offset up per
/// UTC day in a table of the zone's transitions ([`Intervals`]).
fn timestamp_loop<T, const PER_DAY: i64, const PER_HOUR: i64, const PER_SEC: i64>(
    a: &dyn Array,
    tz: Option<&str>,
    part: DatePart,
) -> Option<Vec<i32>>
where
    T: ArrowPrimitiveType<Native = i64>,
{
    let arr = a.as_primitive::<T>();
    let vals = arr.values();
    let id = |x: i64| x;
    let fixed = match tz {
        None => Some(0),
        Some(name) => fixed_offset_seconds(name),
    };
    if let Some(off) = fixed {
        let off = off.checked_mul(PER_SEC)?;
        return fast_loop::<i64, PER_DAY, PER_HOUR>(vals, id, |_, v| v.checked_add(off), part);
    }
    let (Some(min), Some(max)) = (min(arr), max(arr)) else {
        return Some(vec![0; vals.len()]); // every value is NULL
    };
    let zone = Intervals::of(tz?, min, max, PER_SEC)?;
    let nulls = arr.nulls();
    let day = |v: i64| v.div_euclid(PER_DAY);
    let outside = |i: usize| nulls.is_some_and(|n| n.is_null(i));
    if !clustered::<PER_SEC, PER_DAY>(vals, &zone) {
        // Scattered values: every value looks its UTC day up.
        let local = |i: usize, v: i64| match zone.interval::<PER_SEC>(v, day(v)) {
            Some((_, _, off)) => v.checked_add(off),
            // A value under a NULL, outside the valid values' range: any result.
            None if outside(i) => Some(0),
            None => None,
        };
        return fast_loop::<i64, PER_DAY, PER_HOUR>(vals, id, local, part);
    }
    // Clustered values (event times) mostly stay in the interval of the value before: (start,
    // end, offset), empty at first.
    let mut cur = (1i64, 0i64, 0i64);
    let local = |i: usize, v: i64| {
        if v < cur.0 || v >= cur.1 {
            match zone.interval::<PER_SEC>(v, day(v)) {
                Some(found) => cur = found,
                None if outside(i) => return Some(0),
                None => return None,
            }
        }
        v.checked_add(cur.2)
    };
    fast_loop::<i64, PER_DAY, PER_HOUR>(vals, id, local, part)
}

/// Whether consecutive values of `vals` mostly share an offset interval of `zone` (judged on
/// the first 256): then remembering the last interval beats looking every value up.
fn clustered<const PER_SEC: i64, const PER_DAY: i64>(vals: &[i64], zone: &Intervals) -> bool {
    let probe = &vals[..vals.len().min(256)];
    let mut cur = (1i64, 0i64);
    let mut changes = 0usize;
    for &v in probe {
        if v < cur.0 || v >= cur.1 {
            changes += 1;
            if let Some((start, end, _)) = zone.interval::<PER_SEC>(v, v.div_euclid(PER_DAY)) {
                cur = (start, end);
            }
        }
    }
    changes * 8 <= probe.len()
}

/// Integer-arithmetic `date_part` for dates and timestamps (no per-value timezone
/// conversion). `None` when the type or a value needs the general kernel.
fn temporal_fast(a: &dyn Array, part: DatePart) -> Option<ArrayRef> {
    use crate::arrow::array::Int32Array;
    use crate::arrow::datatypes::{
        Date32Type, Date64Type, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
        TimestampNanosecondType, TimestampSecondType,
    };
    const DAY: i64 = 86_400;
    const HOUR: i64 = 3_600;
    let out = match a.data_type() {
        DataType::Date32 => fast_loop::<i32, 1, 0>(
            a.as_primitive::<Date32Type>().values(),
            |x| x as i64,
            |_, v| Some(v),
            part,
        )?,
        DataType::Date64 => fast_loop::<i64, { DAY * 1_000 }, 0>(
            a.as_primitive::<Date64Type>().values(),
            |x| x,
            |_, v| Some(v),
            part,
        )?,
        DataType::Timestamp(unit, tz) => {
            let tz = tz.as_deref();
            match unit {
                TimeUnit::Second => {
                    timestamp_loop::<TimestampSecondType, DAY, HOUR, 1>(a, tz, part)?
                }
                TimeUnit::Millisecond => timestamp_loop::<
                    TimestampMillisecondType,
                    { DAY * 1_000 },
                    { HOUR * 1_000 },
                    1_000,
                >(a, tz, part)?,
                TimeUnit::Microsecond => timestamp_loop::<
                    TimestampMicrosecondType,
                    { DAY * 1_000_000 },
                    { HOUR * 1_000_000 },
                    1_000_000,
                >(a, tz, part)?,
                TimeUnit::Nanosecond => timestamp_loop::<
                    TimestampNanosecondType,
                    { DAY * 1_000_000_000 },
                    { HOUR * 1_000_000_000 },
                    1_000_000_000,
                >(a, tz, part)?,
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
    fn the_civil_table_equals_the_arithmetic() {
        let table = civil_table();
        assert_eq!(civil(table, CIVIL_FIRST), (1900, 1, 1));
        assert_eq!(
            civil(table, CIVIL_FIRST + CIVIL_DAYS as i64 - 1),
            (2100, 12, 31)
        );
        for days in (CIVIL_FIRST - 400..CIVIL_FIRST + CIVIL_DAYS as i64 + 400).step_by(7) {
            assert_eq!(civil(table, days), civil_from_days(days), "{days}");
        }
    }

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
        // Named zones take the fast path (a table of their transitions), across the
        // 2024 changes of New York and Lord Howe (30-minute daylight saving).
        let edges = TimestampMillisecondArray::from(
            (0..2_000)
                .map(|i| Some(1_710_050_000_000 + i * 7_000))
                .chain([None, Some(1_730_610_000_000), Some(1_712_415_600_000)])
                .collect::<Vec<_>>(),
        );
        for zone in ["America/New_York", "Australia/Lord_Howe"] {
            let ts = edges.clone().with_timezone(zone);
            for part in [
                DatePart::Year,
                DatePart::Month,
                DatePart::Day,
                DatePart::Hour,
            ] {
                let fast = temporal_fast(&ts, part).expect("named zones take the fast path");
                assert_eq!(fast.as_ref(), date_part(&ts, part).unwrap().as_ref());
            }
        }
        // out-of-range values use arrow's kernel
        let far = Date32Array::from(vec![i32::MAX]);
        assert!(temporal_fast(&far, DatePart::Year).is_none());
        assert_eq!(
            year(&far).unwrap().as_ref(),
            date_part(&far, DatePart::Year).unwrap().as_ref()
        );
    }
}
