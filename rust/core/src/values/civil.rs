//! Calendar arithmetic for the text forms: days since 1970-01-01 to and from a proleptic
//! Gregorian date (the algorithms of H. Hinnant's "chrono-compatible low-level date
//! algorithms"), and fixed-width time of day. Integer only: the vectorised kernels format
//! tens of millions of values per second with it.

/// Microseconds in a day.
pub(crate) const MICROS_PER_DAY: i64 = 86_400_000_000;

/// Shift of the fast conversion: 82 periods of 400 years, so every day from year -32800 on
/// maps to a non-negative 32-bit count.
const FAST_ERAS: u32 = 82;
const FAST_SHIFT: i64 = 719_468 + 146_097 * FAST_ERAS as i64;
/// Days the fast conversion takes: `4 * (days + FAST_SHIFT) + 3` must fit a `u32`.
const FAST_DAYS: std::ops::Range<i64> = -FAST_SHIFT..(1 << 30) - 1 - FAST_SHIFT;

/// (year, month, day) of `days` since 1970-01-01: the 32-bit Euclidean affine form of
/// C. Neri and L. Schneider ("Euclidean affine functions and their application to calendar
/// algorithms", 2022) for the years -32800 to about 2.9 million, [`civil_from_days`]
/// elsewhere. Same results (tested against it).
#[inline(always)]
pub(crate) fn civil_from_days_fast(days: i64) -> (i64, u32, u32) {
    if !FAST_DAYS.contains(&days) {
        return civil_from_days(days);
    }
    let n = (days + FAST_SHIFT) as u32;
    let n1 = 4 * n + 3;
    let century = n1 / 146_097;
    let nc = n1 % 146_097 / 4;
    let n2 = 4 * nc + 3;
    let p2 = 2_939_745u64 * u64::from(n2);
    let z = (p2 >> 32) as u32;
    let ny = (p2 as u32) / 2_939_745 / 4;
    let year = 100 * century + z;
    let n3 = 2_141 * ny + 197_913;
    let month = n3 >> 16;
    let day = (n3 & 0xFFFF) / 2_141 + 1;
    let january_or_february = ny >= 306;
    let y = i64::from(year) - 400 * i64::from(FAST_ERAS) + i64::from(january_or_february);
    let m = if january_or_february {
        month - 12
    } else {
        month
    };
    (y, m, day)
}

/// (year, month, day) of `days` since 1970-01-01.
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Days since 1970-01-01 of a valid (year, month, day).
pub(crate) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(y) => 29,
        _ => 28,
    }
}

/// Two ASCII digits of `v` (< 100).
#[inline]
pub(crate) fn push2(out: &mut String, v: u32) {
    out.push(char::from(b'0' + (v / 10) as u8));
    out.push(char::from(b'0' + (v % 10) as u8));
}

/// `YYYY-MM-DD` of `days` since the epoch; years outside 0..=9999 get a sign (`+10000`,
/// `-0001`), as ISO 8601's expanded years.
pub(crate) fn write_date(out: &mut String, days: i64) {
    let (y, m, d) = civil_from_days(days);
    if (0..=9999).contains(&y) {
        let y = y as u32;
        push2(out, y / 100);
        push2(out, y % 100);
    } else {
        out.push_str(&format!(
            "{}{:04}",
            if y < 0 { '-' } else { '+' },
            y.unsigned_abs()
        ));
    }
    out.push('-');
    push2(out, m);
    out.push('-');
    push2(out, d);
}

/// `HH:MM:SS` of `micros` since midnight, then `.ffffff` when `fraction`.
pub(crate) fn write_time(out: &mut String, micros: i64, fraction: bool) {
    let secs = (micros / 1_000_000) as u32;
    push2(out, secs / 3_600);
    out.push(':');
    push2(out, secs / 60 % 60);
    out.push(':');
    push2(out, secs % 60);
    if fraction {
        let f = (micros % 1_000_000) as u32;
        out.push('.');
        push2(out, f / 10_000);
        push2(out, f / 100 % 100);
        push2(out, f % 100);
    }
}

fn digits(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Days since the epoch of `YYYY-MM-DD` (years of four or more digits, an optional sign).
pub(crate) fn parse_date(date: &str) -> Option<i64> {
    let (sign, rest) = match date.as_bytes().first()? {
        b'-' => (-1, &date[1..]),
        b'+' => (1, &date[1..]),
        _ => (1, date),
    };
    let mut it = rest.splitn(3, '-');
    let (y, m, d) = (it.next()?, it.next()?, it.next()?);
    if y.len() < 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    let y = sign * i64::from(digits(y)?);
    let (m, d) = (digits(m)?, digits(d)?);
    if !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) {
        return None;
    }
    Some(days_from_civil(y, m, d))
}

/// Seconds since midnight and nanoseconds of `HH:MM:SS[.f{1,9}]`.
pub(crate) fn parse_time(time: &str) -> Option<(i64, u32)> {
    let (hms, frac) = match time.split_once('.') {
        Some((hms, frac)) => (hms, Some(frac)),
        None => (time, None),
    };
    let mut it = hms.splitn(3, ':');
    let (h, m, s) = (it.next()?, it.next()?, it.next()?);
    if h.len() != 2 || m.len() != 2 || s.len() != 2 {
        return None;
    }
    let (h, m, s) = (digits(h)?, digits(m)?, digits(s)?);
    if h > 23 || m > 59 || s > 59 {
        return None;
    }
    let nanos = match frac {
        None => 0,
        Some(f) if (1..=9).contains(&f.len()) => digits(f)? * 10u32.pow(9 - f.len() as u32),
        Some(_) => return None,
    };
    Some((i64::from(h * 3_600 + m * 60 + s), nanos))
}

/// Seconds since the epoch and nanoseconds of a date and a time of day.
pub(crate) fn parse_date_time(date: &str, time: &str) -> Option<(i64, u32)> {
    let days = parse_date(date)?;
    let (secs, nanos) = parse_time(time)?;
    Some((days.checked_mul(86_400)?.checked_add(secs)?, nanos))
}

#[cfg(test)]
mod fast_tests {
    use super::*;

    #[test]
    fn the_fast_conversion_agrees_everywhere() {
        let mut days: Vec<i64> = (-1_000_000..3_000_000).collect();
        for edge in [FAST_DAYS.start, FAST_DAYS.end] {
            days.extend(edge - 3..edge + 3);
        }
        days.extend([
            i64::from(i32::MIN),
            i64::from(i32::MAX),
            -719_528,
            2_932_896,
        ]);
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..1_000_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            days.push((x % (1 << 31)) as i64 - (1 << 30));
        }
        for d in days {
            assert_eq!(civil_from_days_fast(d), civil_from_days(d), "day {d}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip_across_the_range() {
        for days in (-800_000i64..3_000_000)
            .step_by(997)
            .chain([-719_162, 0, 2_932_896])
        {
            let mut s = String::new();
            write_date(&mut s, days);
            assert_eq!(parse_date(&s), Some(days), "{s}");
        }
        let mut s = String::new();
        write_date(&mut s, 19_723);
        assert_eq!(s, "2024-01-01");
        assert_eq!(parse_date("2023-02-29"), None);
        assert_eq!(parse_date("2024-02-29"), Some(19_782));
        assert_eq!(parse_date("2024-1-01"), None);
    }

    #[test]
    fn times() {
        let mut s = String::new();
        write_time(&mut s, 45_045_123_456, true);
        assert_eq!(s, "12:30:45.123456");
        assert_eq!(parse_time("12:30:45.123456"), Some((45_045, 123_456_000)));
        assert_eq!(parse_time("12:30:45.5"), Some((45_045, 500_000_000)));
        assert_eq!(parse_time("24:00:00"), None);
        assert_eq!(parse_time("12:30:45."), None);
    }
}
