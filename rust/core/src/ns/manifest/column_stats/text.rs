//! The recorded form of a bound: integers (and the temporal types, by their stored integer),
//! decimals by their unscaled integer, floating point numbers in Rust's shortest round-trip
//! form, strings as they are, binary values in lowercase hex, booleans as `true`/`false`. The
//! type is recorded beside the bound, so the text needs no tag.

use std::fmt::Write;

use crate::arrow::datatypes::{DataType, TimeUnit};
use crate::datafusion::scalar::ScalarValue;

/// The recorded form of `v`; `None` for a NULL or a type without statistics.
pub(super) fn to_text(v: &ScalarValue) -> Option<String> {
    use ScalarValue as S;
    let int = |x: Option<i64>| x.map(|x| x.to_string());
    Some(match v {
        S::Boolean(b) => b.as_ref()?.to_string(),
        S::Int8(x) => int(x.map(i64::from))?,
        S::Int16(x) => int(x.map(i64::from))?,
        S::Int32(x) => int(x.map(i64::from))?,
        S::Int64(x) => int(*x)?,
        S::UInt8(x) => x.as_ref()?.to_string(),
        S::UInt16(x) => x.as_ref()?.to_string(),
        S::UInt32(x) => x.as_ref()?.to_string(),
        S::UInt64(x) => x.as_ref()?.to_string(),
        S::Float32(x) => x.as_ref()?.to_string(),
        S::Float64(x) => x.as_ref()?.to_string(),
        S::Decimal128(x, _, _) => x.as_ref()?.to_string(),
        S::Date32(x) | S::Time32Second(x) | S::Time32Millisecond(x) => int(x.map(i64::from))?,
        S::Date64(x)
        | S::Time64Microsecond(x)
        | S::Time64Nanosecond(x)
        | S::TimestampSecond(x, _)
        | S::TimestampMillisecond(x, _)
        | S::TimestampMicrosecond(x, _)
        | S::TimestampNanosecond(x, _)
        | S::DurationSecond(x)
        | S::DurationMillisecond(x)
        | S::DurationMicrosecond(x)
        | S::DurationNanosecond(x) => int(*x)?,
        S::Utf8(s) | S::LargeUtf8(s) | S::Utf8View(s) => s.clone()?,
        S::Binary(b) | S::LargeBinary(b) | S::BinaryView(b) => {
            let mut out = String::new();
            for byte in b.as_ref()? {
                let _ = write!(out, "{byte:02x}");
            }
            out
        }
        _ => return None,
    })
}

/// The bound of type `ty` recorded as `s`; `None` when `s` is not one.
pub(super) fn from_text(s: &str, ty: &DataType) -> Option<ScalarValue> {
    use DataType as D;
    use ScalarValue as S;
    let tz = |t: &Option<std::sync::Arc<str>>| t.clone();
    Some(match ty {
        D::Boolean => S::Boolean(Some(s.parse().ok()?)),
        D::Int8 => S::Int8(Some(s.parse().ok()?)),
        D::Int16 => S::Int16(Some(s.parse().ok()?)),
        D::Int32 => S::Int32(Some(s.parse().ok()?)),
        D::Int64 => S::Int64(Some(s.parse().ok()?)),
        D::UInt8 => S::UInt8(Some(s.parse().ok()?)),
        D::UInt16 => S::UInt16(Some(s.parse().ok()?)),
        D::UInt32 => S::UInt32(Some(s.parse().ok()?)),
        D::UInt64 => S::UInt64(Some(s.parse().ok()?)),
        D::Float32 => S::Float32(Some(s.parse().ok()?)),
        D::Float64 => S::Float64(Some(s.parse().ok()?)),
        D::Decimal128(p, sc) => S::Decimal128(Some(s.parse().ok()?), *p, *sc),
        D::Date32 => S::Date32(Some(s.parse().ok()?)),
        D::Date64 => S::Date64(Some(s.parse().ok()?)),
        D::Time32(TimeUnit::Second) => S::Time32Second(Some(s.parse().ok()?)),
        D::Time32(TimeUnit::Millisecond) => S::Time32Millisecond(Some(s.parse().ok()?)),
        D::Time64(TimeUnit::Microsecond) => S::Time64Microsecond(Some(s.parse().ok()?)),
        D::Time64(TimeUnit::Nanosecond) => S::Time64Nanosecond(Some(s.parse().ok()?)),
        D::Timestamp(TimeUnit::Second, t) => S::TimestampSecond(Some(s.parse().ok()?), tz(t)),
        D::Timestamp(TimeUnit::Millisecond, t) => {
            S::TimestampMillisecond(Some(s.parse().ok()?), tz(t))
        }
        D::Timestamp(TimeUnit::Microsecond, t) => {
            S::TimestampMicrosecond(Some(s.parse().ok()?), tz(t))
        }
        D::Timestamp(TimeUnit::Nanosecond, t) => {
            S::TimestampNanosecond(Some(s.parse().ok()?), tz(t))
        }
        D::Duration(TimeUnit::Second) => S::DurationSecond(Some(s.parse().ok()?)),
        D::Duration(TimeUnit::Millisecond) => S::DurationMillisecond(Some(s.parse().ok()?)),
        D::Duration(TimeUnit::Microsecond) => S::DurationMicrosecond(Some(s.parse().ok()?)),
        D::Duration(TimeUnit::Nanosecond) => S::DurationNanosecond(Some(s.parse().ok()?)),
        D::Utf8 => S::Utf8(Some(s.to_string())),
        D::LargeUtf8 => S::LargeUtf8(Some(s.to_string())),
        D::Utf8View => S::Utf8View(Some(s.to_string())),
        D::Binary => S::Binary(Some(unhex(s)?)),
        D::LargeBinary => S::LargeBinary(Some(unhex(s)?)),
        D::BinaryView => S::BinaryView(Some(unhex(s)?)),
        _ => return None,
    })
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_recorded_bound_reads_back_as_itself() {
        let utc = Some(std::sync::Arc::from("Europe/Paris"));
        let values = [
            S::Boolean(Some(false)),
            S::Int8(Some(-128)),
            S::UInt64(Some(u64::MAX)),
            S::Int64(Some(i64::MIN)),
            S::Float32(Some(-0.0)),
            S::Float64(Some(f64::INFINITY)),
            S::Float64(Some(1e-300)),
            S::Decimal128(Some(-123_456_789_012_345_678_901_234), 38, 9),
            S::Date32(Some(-719_162)),
            S::TimestampNanosecond(Some(1), utc),
            S::Time64Nanosecond(Some(86_399_999_999_999)),
            S::Utf8(Some("é\u{10FFFF}".into())),
            S::Binary(Some(vec![0, 0xff, 0x10])),
        ];
        for v in values {
            let t = to_text(&v).expect("recorded");
            assert_eq!(from_text(&t, &v.data_type()), Some(v.clone()), "{t}");
        }
    }

    #[test]
    fn malformed_text_is_no_bound() {
        assert_eq!(from_text("x", &DataType::Int32), None);
        assert_eq!(from_text("300", &DataType::Int8), None);
        assert_eq!(from_text("abc", &DataType::Binary), None);
        assert_eq!(from_text("1", &DataType::Float16), None);
    }

    use ScalarValue as S;
}
