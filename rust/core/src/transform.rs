//! The well-known partition transforms as vectorised kernels.
//!
//! Each transform has an array path (used by writes) and, through [`Transform::apply_scalar`],
//! a scalar path (used by pruning: the transform evaluated on a query literal).
//!
//! Semantics follow DESIGN.md:
//! - `identity`: the value itself.
//! - `year`, `month`, `day`, `hour` (D4): DataFusion `date_part` semantics: calendar year,
//!   month 1-12, day of month 1-31, hour 0-23, as int32, in the timezone of the timestamp type
//!   (naive timestamps as UTC). `hour` needs a timestamp.
//! - `bucket`, `multi_bucket` (D3): see [`crate::hash`].
//! - `truncate` (D5): strings keep the first W Unicode characters; integers and decimals use
//!   `v - (v % W)` with a truncated remainder (−7, W=5 → −5); the result type is the source
//!   type.

use std::sync::Arc;

use crate::arrow::array::{
    Array, ArrayRef, ArrowPrimitiveType, AsArray, GenericStringArray, GenericStringBuilder,
    OffsetSizeTrait, PrimitiveArray, StringViewBuilder,
};
use crate::arrow::compute::kernels::temporal::{date_part, DatePart};
use crate::arrow::datatypes::{
    i256, DataType, Decimal128Type, Decimal256Type, Decimal32Type, Decimal64Type, Int16Type,
    Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use crate::datafusion::scalar::ScalarValue;
use crate::error::{invalid_arg, unsupported, Error, Result};
use crate::hash;

/// A well-known partition transform (the spec's `transform` object, validated).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Transform {
    /// `col0`
    Identity,
    /// `date_part('year', col0)`
    Year,
    /// `date_part('month', col0)`
    Month,
    /// `date_part('day', col0)`
    Day,
    /// `date_part('hour', col0)`
    Hour,
    /// `abs(murmur3(col0)) % n`
    Bucket(i32),
    /// `abs(murmur3_multi(col0, col1, ...)) % n`
    MultiBucket(i32),
    /// `left(col0, w)` or `col0 - (col0 % w)`
    Truncate(i32),
}

impl Transform {
    /// The spec's name of this transform (`"identity"`, `"bucket"`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Transform::Identity => "identity",
            Transform::Year => "year",
            Transform::Month => "month",
            Transform::Day => "day",
            Transform::Hour => "hour",
            Transform::Bucket(_) => "bucket",
            Transform::MultiBucket(_) => "multi_bucket",
            Transform::Truncate(_) => "truncate",
        }
    }

    /// How many source columns the transform reads: `Some(1)` for single-column transforms,
    /// `None` for `multi_bucket` (one or more).
    pub fn arity(&self) -> Option<usize> {
        match self {
            Transform::MultiBucket(_) => None,
            _ => Some(1),
        }
    }

    /// The derived DataFusion expression of the spec's transform table, for sources of the
    /// given types (`truncate` derives `left(col0, W)` for strings).
    pub fn derived_expression(&self, sources: &[DataType]) -> String {
        let num_sources = sources.len();
        match self {
            Transform::Identity => "col0".to_string(),
            Transform::Year => "date_part('year', col0)".to_string(),
            Transform::Month => "date_part('month', col0)".to_string(),
            Transform::Day => "date_part('day', col0)".to_string(),
            Transform::Hour => "date_part('hour', col0)".to_string(),
            Transform::Bucket(n) => format!("abs(murmur3(col0)) % {n}"),
            Transform::MultiBucket(n) => {
                let cols: Vec<String> = (0..num_sources).map(|i| format!("col{i}")).collect();
                format!("abs(murmur3_multi({})) % {n}", cols.join(", "))
            }
            Transform::Truncate(w) => match sources.first() {
                Some(DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) => {
                    format!("left(col0, {w})")
                }
                _ => format!("col0 - (col0 % {w})"),
            },
        }
    }

    /// The result type for the given source types, or an error if the transform does not
    /// accept them.
    ///
    /// # Errors
    /// `UnsupportedType` when a source type is not accepted, `InvalidArgument` for a bad
    /// parameter or number of sources.
    pub fn result_type(&self, sources: &[DataType]) -> Result<DataType> {
        self.check_params()?;
        match self.arity() {
            Some(n) if sources.len() != n => {
                return invalid_arg!(
                    "transform {} takes exactly {n} source column(s), got {}",
                    self.name(),
                    sources.len()
                )
            }
            None if sources.is_empty() => {
                return invalid_arg!("transform multi_bucket needs at least one source column")
            }
            _ => {}
        }
        let t = &sources[0];
        match self {
            Transform::Identity => Ok(t.clone()),
            Transform::Year | Transform::Month | Transform::Day => {
                if is_temporal(t) || matches!(t, DataType::Null) {
                    Ok(DataType::Int32)
                } else {
                    unsupported!(
                        "transform {} needs a date or timestamp source, got {t}",
                        self.name()
                    )
                }
            }
            Transform::Hour => {
                if matches!(t, DataType::Timestamp(_, _) | DataType::Null) {
                    Ok(DataType::Int32)
                } else {
                    unsupported!("transform hour needs a timestamp source, got {t}")
                }
            }
            Transform::Bucket(_) | Transform::MultiBucket(_) => {
                for s in sources {
                    if !hash::is_hashable(s) {
                        return unsupported!(
                            "transform {} cannot hash values of type {s}",
                            self.name()
                        );
                    }
                }
                Ok(DataType::Int32)
            }
            Transform::Truncate(_) => {
                if truncatable(t) || matches!(t, DataType::Null) {
                    Ok(t.clone())
                } else {
                    unsupported!(
                        "transform truncate needs a string, integer or decimal source, got {t}"
                    )
                }
            }
        }
    }

    fn check_params(&self) -> Result<()> {
        match self {
            Transform::Bucket(n) | Transform::MultiBucket(n) if *n <= 0 => {
                invalid_arg!("num_buckets must be positive, got {n}")
            }
            Transform::Truncate(w) if *w <= 0 => invalid_arg!("width must be positive, got {w}"),
            _ => Ok(()),
        }
    }

    /// Applies the transform to whole arrays (one per source column).
    ///
    /// # Errors
    /// As [`Transform::result_type`], plus length mismatches between sources.
    pub fn apply(&self, sources: &[ArrayRef]) -> Result<ArrayRef> {
        let types: Vec<DataType> = sources.iter().map(|a| a.data_type().clone()).collect();
        let out_type = self.result_type(&types)?;
        let a = &sources[0];
        if matches!(a.data_type(), DataType::Null) && self.arity() == Some(1) {
            return Ok(crate::arrow::array::new_null_array(&out_type, a.len()));
        }
        Ok(match self {
            Transform::Identity => Arc::clone(a),
            Transform::Year => temporal(a.as_ref(), DatePart::Year)?,
            Transform::Month => temporal(a.as_ref(), DatePart::Month)?,
            Transform::Day => temporal(a.as_ref(), DatePart::Day)?,
            Transform::Hour => temporal(a.as_ref(), DatePart::Hour)?,
            Transform::Bucket(n) => Arc::new(hash::bucket(a.as_ref(), *n as i64)?),
            Transform::MultiBucket(n) => {
                let refs: Vec<&dyn Array> = sources.iter().map(|a| a.as_ref()).collect();
                Arc::new(hash::multi_bucket(&refs, *n as i64)?)
            }
            Transform::Truncate(w) => truncate(a.as_ref(), *w)?,
        })
    }

    /// Applies the transform to one value per source (the pruning path).
    ///
    /// # Errors
    /// As [`Transform::apply`].
    pub fn apply_scalar(&self, values: &[ScalarValue]) -> Result<ScalarValue> {
        let arrays = values
            .iter()
            .map(|v| v.to_array_of_size(1))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let out = self.apply(&arrays)?;
        Ok(ScalarValue::try_from_array(out.as_ref(), 0)?)
    }
}

fn is_temporal(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Date32 | DataType::Date64 | DataType::Timestamp(_, _)
    )
}

fn truncatable(t: &DataType) -> bool {
    use DataType::*;
    match t {
        Utf8 | LargeUtf8 | Utf8View | Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32
        | UInt64 => true,
        Decimal32(_, s) | Decimal64(_, s) | Decimal128(_, s) | Decimal256(_, s) => *s >= 0,
        _ => false,
    }
}

fn temporal(a: &dyn Array, part: DatePart) -> Result<ArrayRef> {
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

/// `year(x)`: calendar year of a date or timestamp (D4).
pub fn year(a: &dyn Array) -> Result<ArrayRef> {
    temporal(a, DatePart::Year)
}
/// `month(x)`: month 1-12 of a date or timestamp (D4).
pub fn month(a: &dyn Array) -> Result<ArrayRef> {
    temporal(a, DatePart::Month)
}
/// `day(x)`: day of month 1-31 of a date or timestamp (D4).
pub fn day(a: &dyn Array) -> Result<ArrayRef> {
    temporal(a, DatePart::Day)
}
/// `hour(x)`: hour 0-23 of a timestamp, in the timestamp type's timezone (D4).
///
/// # Errors
/// `UnsupportedType` for anything but a timestamp.
pub fn hour(a: &dyn Array) -> Result<ArrayRef> {
    if !matches!(a.data_type(), DataType::Timestamp(_, _)) {
        return unsupported!("hour needs a timestamp, got {}", a.data_type());
    }
    temporal(a, DatePart::Hour)
}

/// `truncate(x, w)` (D5).
///
/// # Errors
/// `InvalidArgument` when `w <= 0`; `UnsupportedType` for other source types.
pub fn truncate(a: &dyn Array, w: i32) -> Result<ArrayRef> {
    if w <= 0 {
        return invalid_arg!("width must be positive, got {w}");
    }
    use DataType::*;
    Ok(match a.data_type() {
        Utf8 => Arc::new(truncate_str::<i32>(a.as_string::<i32>(), w as usize)),
        LargeUtf8 => Arc::new(truncate_str::<i64>(a.as_string::<i64>(), w as usize)),
        Utf8View => {
            let s = a.as_string_view();
            let mut b = StringViewBuilder::with_capacity(s.len());
            for v in s.iter() {
                b.append_option(v.map(|v| prefix_chars(v, w as usize)));
            }
            Arc::new(b.finish())
        }
        Int8 => trunc_int::<Int8Type>(a, w, |v, w| (v as i64 - (v as i64 % w)) as i8),
        Int16 => trunc_int::<Int16Type>(a, w, |v, w| (v as i64 - (v as i64 % w)) as i16),
        Int32 => trunc_int::<Int32Type>(a, w, |v, w| (v as i64 - (v as i64 % w)) as i32),
        Int64 => trunc_int::<Int64Type>(a, w, |v, w| v - (v % w)),
        UInt8 => trunc_int::<UInt8Type>(a, w, |v, w| (v as i64 - (v as i64 % w)) as u8),
        UInt16 => trunc_int::<UInt16Type>(a, w, |v, w| (v as i64 - (v as i64 % w)) as u16),
        UInt32 => trunc_int::<UInt32Type>(a, w, |v, w| (v as i64 - (v as i64 % w)) as u32),
        UInt64 => trunc_int::<UInt64Type>(a, w, |v, w| v - (v % w as u64)),
        Decimal32(_, s) => trunc_decimal::<Decimal32Type>(a, w, *s, |v, w| {
            let (v, w) = (v as i128, w);
            (v - (v % w)) as i32
        })?,
        Decimal64(_, s) => trunc_decimal::<Decimal64Type>(a, w, *s, |v, w| {
            let (v, w) = (v as i128, w);
            (v - (v % w)) as i64
        })?,
        Decimal128(_, s) => trunc_decimal::<Decimal128Type>(a, w, *s, |v, w| v - (v % w))?,
        Decimal256(_, s) => trunc_decimal256(a, w, *s)?,
        Null => crate::arrow::array::new_null_array(&Null, a.len()),
        other => {
            return unsupported!(
                "truncate needs a string, integer or decimal (scale >= 0), got {other}"
            )
        }
    })
}

/// The first `w` Unicode scalar values of `s` (DataFusion's `left`).
#[inline]
fn prefix_chars(s: &str, w: usize) -> &str {
    if s.len() <= w {
        return s;
    }
    match s.char_indices().nth(w) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

fn truncate_str<O: OffsetSizeTrait>(s: &GenericStringArray<O>, w: usize) -> GenericStringArray<O> {
    let mut b = GenericStringBuilder::<O>::with_capacity(s.len(), s.value_data().len());
    for v in s.iter() {
        b.append_option(v.map(|v| prefix_chars(v, w)));
    }
    b.finish()
}

fn trunc_int<T>(a: &dyn Array, w: i32, f: impl Fn(T::Native, i64) -> T::Native) -> ArrayRef
where
    T: ArrowPrimitiveType,
{
    let p = a.as_primitive::<T>();
    let w = w as i64;
    let out: PrimitiveArray<T> = p.unary(|v| f(v, w));
    Arc::new(out)
}

/// W expressed in the unscaled units of a decimal with `scale`; `None` when it does not fit
/// (every value then truncates to 0, as `v % W == v`).
fn scaled_width(w: i32, scale: i8) -> Option<i128> {
    10i128
        .checked_pow(scale as u32)
        .and_then(|p| p.checked_mul(w as i128))
}

fn trunc_decimal<T>(
    a: &dyn Array,
    w: i32,
    scale: i8,
    f: impl Fn(T::Native, i128) -> T::Native,
) -> Result<ArrayRef>
where
    T: crate::arrow::datatypes::DecimalType,
{
    if scale < 0 {
        return unsupported!("truncate does not support decimals with a negative scale");
    }
    let p = a.as_primitive::<T>();
    let out: PrimitiveArray<T> = match scaled_width(w, scale) {
        Some(ws) => p.unary(|v| f(v, ws)),
        None => p.unary(|_| T::Native::default()),
    };
    Ok(Arc::new(out.with_data_type(a.data_type().clone())))
}

fn trunc_decimal256(a: &dyn Array, w: i32, scale: i8) -> Result<ArrayRef> {
    if scale < 0 {
        return unsupported!("truncate does not support decimals with a negative scale");
    }
    let p = a.as_primitive::<Decimal256Type>();
    let ws = i256::from_i128(w as i128).checked_mul(
        i256::from_i128(10)
            .checked_pow(scale as u32)
            .ok_or_else(|| Error::Internal("10^scale overflows i256".into()))?,
    );
    let out: PrimitiveArray<Decimal256Type> = match ws {
        Some(ws) => p.unary(|v| v.wrapping_sub(v.wrapping_rem(ws))),
        None => p.unary(|_| i256::ZERO),
    };
    Ok(Arc::new(out.with_data_type(a.data_type().clone())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrow::array::{Int32Array, Int64Array, StringArray};

    #[test]
    fn truncate_examples() {
        let a = Int64Array::from(vec![Some(-7), Some(17), None, Some(i64::MIN)]);
        let t = truncate(&a, 5).unwrap();
        let t = t.as_primitive::<Int64Type>();
        assert_eq!(t.value(0), -5);
        assert_eq!(t.value(1), 15);
        assert!(t.is_null(2));
        assert_eq!(t.value(3), i64::MIN - (i64::MIN % 5));
        let s = StringArray::from(vec!["héllo", "日本語テキスト", "ab"]);
        let t = truncate(&s, 2).unwrap();
        let t = t.as_string::<i32>();
        assert_eq!(t.value(0), "hé");
        assert_eq!(t.value(1), "日本");
        assert_eq!(t.value(2), "ab");
        assert!(truncate(&Int32Array::from(vec![1]), 0).is_err());
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
