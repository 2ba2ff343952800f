//! Offsets of a named timezone (daylight-saving rules) as a table of transitions with one
//! entry per UTC day (its offset, and the second it changes at, if it does), so that
//! `year`/`month`/`day`/`hour` in that zone cost one lookup per value instead of a timezone
//! conversion.
//!
//! The offsets come from the same source as arrow's and DataFusion's `date_part`
//! (chrono-tz's `offset_from_utc_datetime`), so the results are equal. A table is found by
//! asking for the offset every [`STEP`] seconds over a range of whole years and, where two
//! probes differ, searching the exact second of every change between them. An offset that
//! changed and changed back within [`STEP`] would be missed; the time zone database has no such
//! pair, and the property tests compare against arrow's kernel across daylight-saving edges of
//! several zones. Tables are cached per zone and grow to cover the values seen.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use chrono::{DateTime, Offset, TimeZone};

use crate::arrow::array::timezone::Tz;

/// Seconds between two probes of the offset.
const STEP: i64 = 3_600;

/// Seconds in a (long) year: tables cover whole multiples of it.
const YEAR: i64 = 366 * 86_400;

/// Widest range a table covers: 400 years of hourly probes (about 3.5 million, once per
/// zone); arrays reaching further use the general kernel.
const MAX_SPAN: i64 = 400 * YEAR;

/// Seconds in a day.
const DAY: i64 = 86_400;

/// The offset intervals of a zone over `[lo, hi)` seconds since the epoch (whole days).
#[derive(Debug)]
struct ZoneTable {
    lo: i64,
    hi: i64,
    /// Start of every interval (the first is `lo`), ascending.
    starts: Vec<i64>,
    /// The offset of each interval from UTC, in seconds.
    offsets: Vec<i64>,
    /// Every UTC day from `lo`: see [`Day`].
    days: Arc<Vec<Day>>,
}

/// One UTC day of a zone table: the interval holding its first second, and when the offset
/// changes during the day.
#[derive(Debug, Clone, Copy)]
struct Day {
    /// Index of the interval holding the day's first second.
    first: u32,
    /// Second of the day at which the next interval starts; [`DAY`] when the offset does not
    /// change that day, [`SEVERAL`] when it changes more than once.
    change: u32,
}

/// [`Day::change`] of a day with more than one change.
const SEVERAL: u32 = u32::MAX;

/// The offset in seconds at `t` seconds since the epoch.
fn offset_at(tz: &Tz, t: i64) -> Option<i64> {
    let utc = DateTime::from_timestamp(t, 0)?.naive_utc();
    Some(i64::from(
        tz.offset_from_utc_datetime(&utc).fix().local_minus_utc(),
    ))
}

/// The first second in `(lo, hi]` whose offset differs from `at_lo`, given that the offset at
/// `hi` differs.
fn first_change(tz: &Tz, mut lo: i64, mut hi: i64, at_lo: i64) -> Option<i64> {
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if offset_at(tz, mid)? == at_lo {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(hi)
}

impl ZoneTable {
    /// The table of `tz` over `[lo, hi)` seconds.
    fn build(tz: &Tz, lo: i64, hi: i64) -> Option<Self> {
        let mut starts = vec![lo];
        let mut offsets = vec![offset_at(tz, lo)?];
        let mut t = lo;
        let last = hi - 1;
        while t < last {
            let next = (t + STEP).min(last);
            let at_next = offset_at(tz, next)?;
            let mut cur = *offsets.last()?;
            let mut from = t;
            // Every change between the two probes.
            while at_next != cur {
                let change = first_change(tz, from, next, cur)?;
                cur = offset_at(tz, change)?;
                starts.push(change);
                offsets.push(cur);
                from = change;
            }
            t = next;
        }
        let n = (hi - lo) / DAY;
        let mut days = Vec::with_capacity(n as usize);
        let mut i = 0usize;
        for d in 0..n {
            let t = lo + d * DAY;
            while i + 1 < starts.len() && starts[i + 1] <= t {
                i += 1;
            }
            let changes = starts[i + 1..].iter().take_while(|&&s| s < t + DAY).count();
            let change = match changes {
                0 => DAY as u32,
                1 => u32::try_from(starts[i + 1] - t).ok()?,
                _ => SEVERAL,
            };
            days.push(Day {
                first: u32::try_from(i).ok()?,
                change,
            });
        }
        Some(Self {
            lo,
            hi,
            starts,
            offsets,
            days: Arc::new(days),
        })
    }
}

/// Tables by zone name.
fn cache() -> &'static Mutex<HashMap<String, Arc<ZoneTable>>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<ZoneTable>>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// A table of zone `name` covering `[lo, hi]` seconds (from the cache, or built over whole
/// years around it, together with what the cache covered); `None` when the range is too wide
/// or the zone unknown.
fn table(name: &str, lo: i64, hi: i64) -> Option<Arc<ZoneTable>> {
    let cached = cache().lock().ok()?.get(name).cloned();
    if let Some(t) = cached.as_ref().filter(|t| t.lo <= lo && hi < t.hi) {
        return Some(Arc::clone(t));
    }
    let (mut from, mut to) = (
        lo.div_euclid(YEAR).checked_mul(YEAR)?,
        hi.div_euclid(YEAR).checked_add(1)?.checked_mul(YEAR)?,
    );
    if let Some(t) = &cached {
        (from, to) = (from.min(t.lo), to.max(t.hi));
    }
    if to.checked_sub(from)? > MAX_SPAN {
        return None;
    }
    let tz: Tz = name.parse().ok()?;
    let built = Arc::new(ZoneTable::build(&tz, from, to)?);
    cache()
        .lock()
        .ok()?
        .insert(name.to_string(), Arc::clone(&built));
    Some(built)
}

/// The offset intervals of a zone over the values `[min, max]` of one array, in the unit of
/// the values.
#[derive(Debug, Clone)]
pub(super) struct Intervals {
    /// Start of every interval, ascending.
    starts: Vec<i64>,
    /// The offset of each interval, in the unit of the values.
    offsets: Vec<i64>,
    /// One past the last value covered.
    end: i64,
    /// Values per second.
    per_sec: i64,
    /// The UTC day (since the epoch) of `days[0]`.
    first_day: i64,
    /// See [`ZoneTable::days`].
    days: Arc<Vec<Day>>,
}

impl Intervals {
    /// The intervals of zone `name` over values `[min, max]` counted in units of
    /// `1 / per_sec` seconds; `None` when the zone is unknown or the range too wide.
    pub(super) fn of(name: &str, min: i64, max: i64, per_sec: i64) -> Option<Self> {
        let t = table(name, min.div_euclid(per_sec), max.div_euclid(per_sec))?;
        let starts = t
            .starts
            .iter()
            .map(|s| s.checked_mul(per_sec))
            .collect::<Option<Vec<_>>>()?;
        let offsets = t
            .offsets
            .iter()
            .map(|o| o.checked_mul(per_sec))
            .collect::<Option<Vec<_>>>()?;
        Some(Self {
            starts,
            offsets,
            end: t.hi.checked_mul(per_sec)?,
            per_sec,
            first_day: t.lo / DAY,
            days: Arc::clone(&t.days),
        })
    }

    /// The interval holding `v` (`PER_SEC` values per second, the unit of the table), whose
    /// UTC day since the epoch is `day`: (its start, its end, its offset), from one lookup of
    /// the day; `None` outside the table.
    #[inline(always)]
    pub(super) fn interval<const PER_SEC: i64>(&self, v: i64, day: i64) -> Option<(i64, i64, i64)> {
        debug_assert_eq!(PER_SEC, self.per_sec);
        let d = *self.days.get(usize::try_from(day - self.first_day).ok()?)?;
        if d.change == SEVERAL {
            return self.find(v, day);
        }
        // Within the day: the interval of its first second, or the next one.
        let i = d.first as usize
            + usize::from(v - day * DAY * PER_SEC >= i64::from(d.change) * PER_SEC);
        let end = self.starts.get(i + 1).copied().unwrap_or(self.end);
        Some((self.starts[i], end, self.offsets[i]))
    }

    /// The interval holding `v`, whose UTC day since the epoch is `day`: (its start, its
    /// end, its offset); `None` outside the table.
    #[inline]
    pub(super) fn find(&self, v: i64, day: i64) -> Option<(i64, i64, i64)> {
        if v < self.starts[0] || v >= self.end {
            return None;
        }
        let d = usize::try_from(day - self.first_day).ok()?;
        let mut i = self.days.get(d)?.first as usize;
        while i + 1 < self.starts.len() && self.starts[i + 1] <= v {
            i += 1;
        }
        let end = self.starts.get(i + 1).copied().unwrap_or(self.end);
        Some((self.starts[i], end, self.offsets[i]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_york_changes_twice_a_year_at_the_exact_second() {
        // 2024-01-01T00:00:00Z .. 2024-12-31T23:59:59Z
        let (lo, hi) = (1_704_067_200, 1_735_689_599);
        let t = Intervals::of("America/New_York", lo, hi, 1).unwrap();
        // 2024-03-10 07:00:00Z (02:00 EST -> 03:00 EDT) and 2024-11-03 06:00:00Z.
        let day = |s: i64| s.div_euclid(86_400);
        let find = |s: i64| t.find(s, day(s)).unwrap();
        assert_eq!(find(1_710_054_000), (1_710_054_000, 1_730_613_600, -14_400));
        assert_eq!(find(1_710_053_999).2, -18_000);
        assert_eq!(find(1_730_613_600).2, -18_000);
        assert_eq!(find(1_730_613_599).2, -14_400);
        for s in [
            1_710_053_999,
            1_710_054_000,
            1_730_613_599,
            1_730_613_600,
            lo,
            hi,
        ] {
            assert_eq!(t.interval::<1>(s, day(s)), Some(find(s)), "{s}");
        }
        assert_eq!(t.interval::<1>(0, i64::MAX / 86_400), None);
        // Milliseconds: the same instants, scaled.
        let ms = Intervals::of("America/New_York", lo * 1000, hi * 1000 + 999, 1000).unwrap();
        assert_eq!(
            ms.find(1_710_054_000_000, day(1_710_054_000)).unwrap(),
            (1_710_054_000_000, 1_730_613_600_000, -14_400_000)
        );
        assert!(ms.find(i64::MAX, i64::MAX / 86_400_000).is_none());
        assert!(ms.find(i64::MIN, i64::MIN / 86_400_000).is_none());
    }

    #[test]
    fn refused_ranges_and_zones() {
        assert!(Intervals::of("Europe/Paris", i64::MIN / 2, i64::MAX / 2, 1).is_none());
        assert!(Intervals::of("Not/AZone", 0, 10, 1).is_none());
    }
}
