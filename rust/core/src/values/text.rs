//! The string form of one partition value (`to_string`) and its inverse (`from_string`), and
//! the exact text form used for identities inside one write.

use crate::arrow::array::{Array, ArrayRef, StringArray};
use crate::arrow::compute::kernels::cast::cast_with_options;
use crate::arrow::datatypes::{DataType, TimeUnit};
use crate::conform::strict_cast;
use crate::datafusion::scalar::ScalarValue;
use crate::error::{Error, Result};
use crate::values::civil::{write_date, write_time, MICROS_PER_DAY};

/// The string form of a partition value, or `None` for NULL and empty values (`''`, `b''`).
///
/// - integers in decimal; booleans `true`/`false`;
/// - floating point as Java's `Double.toString` (`0.0`, `-0.0`, `1.0E7`, `5.0E-324`, `NaN`,
///   `Infinity`), with the shortest digits that read back to the same value;
/// - decimals with every digit of their scale (`1.230000000000000000` for `DECIMAL(38,18)`);
/// - dates `YYYY-MM-DD`;
/// - timestamps with a zone: the UTC instant, `YYYY-MM-DDTHH:MM:SS.ffffffZ`; without a zone:
///   `YYYY-MM-DD HH:MM:SS.ffffff`; always six fractional digits, nine for nanosecond values
///   whose last three digits are not zero (so the text reads back to the same value);
/// - strings as they are;
/// - binary values as UTF-8 text, with `\` written `\\` and every byte that is not part of
///   valid UTF-8 written `\xHH` (lowercase hex): `X'FFFE'` is `\xff\xfe`. The
///   text is always valid, and reads back to the same bytes.
///
/// # Errors
/// `UnsupportedType` for types without a defined string form (nested types).
pub fn to_string(v: &ScalarValue) -> Result<Option<String>> {
    use ScalarValue as S;
    if v.is_null() {
        return Ok(None);
    }
    let s = match v {
        S::Boolean(Some(b)) => b.to_string(),
        S::Int8(Some(x)) => x.to_string(),
        S::Int16(Some(x)) => x.to_string(),
        S::Int32(Some(x)) => x.to_string(),
        S::Int64(Some(x)) => x.to_string(),
        S::UInt8(Some(x)) => x.to_string(),
        S::UInt16(Some(x)) => x.to_string(),
        S::UInt32(Some(x)) => x.to_string(),
        S::UInt64(Some(x)) => x.to_string(),
        S::Float32(Some(x)) => java_double(f64::from(*x), format!("{x:e}")),
        S::Float64(Some(x)) => java_double(*x, format!("{x:e}")),
        S::Utf8(Some(s)) | S::LargeUtf8(Some(s)) | S::Utf8View(Some(s)) => s.clone(),
        S::Binary(Some(b))
        | S::LargeBinary(Some(b))
        | S::BinaryView(Some(b))
        | S::FixedSizeBinary(_, Some(b)) => escape_binary(b),
        S::Decimal128(Some(x), _, scale) => decimal(&x.to_string(), *scale),
        S::Decimal256(Some(x), _, scale) => decimal(&x.to_string(), *scale),
        S::Date32(Some(d)) => {
            let mut out = String::with_capacity(10);
            write_date(&mut out, i64::from(*d));
            out
        }
        S::Date64(Some(ms)) => {
            let mut out = String::with_capacity(10);
            write_date(&mut out, ms.div_euclid(86_400_000));
            out
        }
        S::TimestampSecond(Some(_), tz)
        | S::TimestampMillisecond(Some(_), tz)
        | S::TimestampMicrosecond(Some(_), tz)
        | S::TimestampNanosecond(Some(_), tz) => {
            let (secs, nanos) = epoch_parts(v)?;
            timestamp_text(secs, nanos, tz.is_some())
        }
        S::Time32Second(_)
        | S::Time32Millisecond(_)
        | S::Time64Microsecond(_)
        | S::Time64Nanosecond(_) => display(v)?,
        other => {
            return Err(Error::UnsupportedType(format!(
                "partition values of type {} have no string form",
                other.data_type()
            )))
        }
    };
    Ok(if s.is_empty() { None } else { Some(s) })
}

/// Parses the string form back into a value of type `dt` (`None` reads as NULL).
///
/// # Errors
/// `Corrupt` when the text is not a value of `dt`.
pub fn from_string(text: Option<&str>, dt: &DataType) -> Result<ScalarValue> {
    let Some(text) = text else {
        return Ok(ScalarValue::try_from(dt)?);
    };
    let bad = |why: &str| Error::Corrupt(format!("partition value {text:?} is not a {dt}{why}"));
    match dt {
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => {
            let bytes = unescape_binary(text).ok_or_else(|| bad(": a lone '\\'"))?;
            binary_scalar(bytes, dt).ok_or_else(|| bad(": wrong length"))
        }
        DataType::Date32 => {
            let days = crate::values::civil::parse_date(text).ok_or_else(|| bad(""))?;
            let days = i32::try_from(days).map_err(|_| bad(": out of range"))?;
            Ok(ScalarValue::Date32(Some(days)))
        }
        DataType::Date64 => {
            let days = crate::values::civil::parse_date(text).ok_or_else(|| bad(""))?;
            Ok(ScalarValue::Date64(Some(days * 86_400_000)))
        }
        DataType::Timestamp(unit, tz) => {
            let (secs, nanos) = parse_timestamp(text, tz.is_some()).ok_or_else(|| bad(""))?;
            timestamp_scalar(secs, nanos, *unit, tz.clone()).ok_or_else(|| bad(": out of range"))
        }
        _ => {
            let arr: ArrayRef = std::sync::Arc::new(StringArray::from(vec![normalise(text, dt)]));
            let out = cast_with_options(&arr, dt, &strict_cast()).map_err(|e| {
                Error::Corrupt(format!("partition value {text:?} is not a {dt}: {e}"))
            })?;
            if out.is_null(0) {
                return Err(bad(""));
            }
            Ok(ScalarValue::try_from_array(&out, 0)?)
        }
    }
}

/// A lossless text form of a non-NULL value, for identities within one write (staged
/// messages, derived namespace ids): the string form, except binary values as lowercase hex
/// and timestamps as their integer in the type's unit.
///
/// # Errors
/// As [`to_string`].
pub fn to_exact_text(v: &ScalarValue) -> Result<String> {
    use ScalarValue as S;
    Ok(match v {
        S::Binary(Some(b))
        | S::LargeBinary(Some(b))
        | S::BinaryView(Some(b))
        | S::FixedSizeBinary(_, Some(b)) => b.iter().map(|x| format!("{x:02x}")).collect(),
        S::TimestampSecond(Some(x), _)
        | S::TimestampMillisecond(Some(x), _)
        | S::TimestampMicrosecond(Some(x), _)
        | S::TimestampNanosecond(Some(x), _) => x.to_string(),
        other => to_string(other)?.unwrap_or_default(),
    })
}

/// Parses [`to_exact_text`] back into a value of type `dt`.
///
/// # Errors
/// `InvalidArgument` when the text is not a value of `dt`.
pub fn from_exact_text(text: &str, dt: &DataType) -> Result<ScalarValue> {
    let bad = || Error::InvalidArgument(format!("{text:?} is not an exact {dt} value"));
    match dt {
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => {
            if !text.len().is_multiple_of(2) || !text.is_ascii() {
                return Err(bad());
            }
            let bytes = (0..text.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&text[i..i + 2], 16).map_err(|_| bad()))
                .collect::<Result<Vec<u8>>>()?;
            binary_scalar(bytes, dt).ok_or_else(bad)
        }
        DataType::Timestamp(unit, tz) => {
            let x: i64 = text.parse().map_err(|_| bad())?;
            Ok(integer_timestamp(x, *unit, tz.clone()))
        }
        _ => from_string(Some(text), dt).map_err(|e| Error::InvalidArgument(e.to_string())),
    }
}

/// A timestamp scalar of `unit` holding `x` (in that unit).
pub(crate) fn integer_timestamp(
    x: i64,
    unit: TimeUnit,
    tz: Option<std::sync::Arc<str>>,
) -> ScalarValue {
    match unit {
        TimeUnit::Second => ScalarValue::TimestampSecond(Some(x), tz),
        TimeUnit::Millisecond => ScalarValue::TimestampMillisecond(Some(x), tz),
        TimeUnit::Microsecond => ScalarValue::TimestampMicrosecond(Some(x), tz),
        TimeUnit::Nanosecond => ScalarValue::TimestampNanosecond(Some(x), tz),
    }
}

/// Seconds since the epoch and nanoseconds within the second of a timestamp scalar.
pub(crate) fn epoch_parts(v: &ScalarValue) -> Result<(i64, u32)> {
    let (x, per_sec) = match v {
        ScalarValue::TimestampSecond(Some(x), _) => (*x, 1),
        ScalarValue::TimestampMillisecond(Some(x), _) => (*x, 1_000),
        ScalarValue::TimestampMicrosecond(Some(x), _) => (*x, 1_000_000),
        ScalarValue::TimestampNanosecond(Some(x), _) => (*x, 1_000_000_000),
        _ => return Err(Error::Internal("not a timestamp".into())),
    };
    let nanos_per_unit = 1_000_000_000 / per_sec;
    let frac = u32::try_from(x.rem_euclid(per_sec) * nanos_per_unit).unwrap_or(0);
    Ok((x.div_euclid(per_sec), frac))
}

/// The timestamp scalar of `unit` at `secs` + `nanos` after the epoch; None when it does not
/// fit the unit, or `nanos` is finer than the unit.
pub(crate) fn timestamp_scalar(
    secs: i64,
    nanos: u32,
    unit: TimeUnit,
    tz: Option<std::sync::Arc<str>>,
) -> Option<ScalarValue> {
    let per_sec: i64 = match unit {
        TimeUnit::Second => 1,
        TimeUnit::Millisecond => 1_000,
        TimeUnit::Microsecond => 1_000_000,
        TimeUnit::Nanosecond => 1_000_000_000,
    };
    let nanos_per_unit = 1_000_000_000 / per_sec;
    if i64::from(nanos) % nanos_per_unit != 0 {
        return None;
    }
    let x = secs
        .checked_mul(per_sec)?
        .checked_add(i64::from(nanos) / nanos_per_unit)?;
    Some(integer_timestamp(x, unit, tz))
}

/// `YYYY-MM-DDTHH:MM:SS.ffffffZ` (zoned) or `YYYY-MM-DD HH:MM:SS.ffffff` (naive); nine
/// fractional digits when the nanoseconds are not whole microseconds.
pub(crate) fn timestamp_text(secs: i64, nanos: u32, zoned: bool) -> String {
    let mut out = String::with_capacity(30);
    write_date(&mut out, secs.div_euclid(86_400));
    out.push(if zoned { 'T' } else { ' ' });
    let micros_of_day = secs.rem_euclid(86_400) * 1_000_000 + i64::from(nanos / 1_000);
    debug_assert!(micros_of_day < MICROS_PER_DAY);
    write_time(&mut out, micros_of_day, true);
    if !nanos.is_multiple_of(1_000) {
        out.push_str(&format!("{:03}", nanos % 1_000));
    }
    if zoned {
        out.push('Z');
    }
    out
}

/// Parses [`timestamp_text`] (and the same without a fraction, or with fewer digits).
fn parse_timestamp(text: &str, zoned: bool) -> Option<(i64, u32)> {
    let body = if zoned { text.strip_suffix('Z')? } else { text };
    let sep = if zoned { 'T' } else { ' ' };
    let (date, time) = body.split_once(sep)?;
    crate::values::civil::parse_date_time(date, time)
}

fn binary_scalar(bytes: Vec<u8>, dt: &DataType) -> Option<ScalarValue> {
    Some(match dt {
        DataType::LargeBinary => ScalarValue::LargeBinary(Some(bytes)),
        DataType::BinaryView => ScalarValue::BinaryView(Some(bytes)),
        DataType::FixedSizeBinary(n) => {
            if usize::try_from(*n).ok()? != bytes.len() {
                return None;
            }
            ScalarValue::FixedSizeBinary(*n, Some(bytes))
        }
        _ => ScalarValue::Binary(Some(bytes)),
    })
}

/// Binary bytes as text: valid UTF-8 as it is with `\` doubled, other bytes as `\xHH`.
pub(crate) fn escape_binary(mut b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    while !b.is_empty() {
        let (valid, rest) = match std::str::from_utf8(b) {
            Ok(s) => (s, &b[b.len()..]),
            Err(e) => {
                let (ok, rest) = b.split_at(e.valid_up_to());
                // `ok` is valid UTF-8 by construction.
                (std::str::from_utf8(ok).unwrap_or_default(), rest)
            }
        };
        for c in valid.chars() {
            if c == '\\' {
                out.push_str("\\\\");
            } else {
                out.push(c);
            }
        }
        b = rest;
        // The first byte of `rest` (if any) starts an invalid sequence.
        if let Some((bad, tail)) = b.split_first() {
            out.push_str(&format!("\\x{bad:02x}"));
            b = tail;
        }
    }
    out
}

/// The inverse of [`escape_binary`]; None for a `\` that starts no escape.
fn unescape_binary(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        match bytes.get(i + 1) {
            Some(b'\\') => {
                out.push(b'\\');
                i += 2;
            }
            Some(b'x') => {
                let hex = text.get(i + 2..i + 4)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 4;
            }
            _ => return None,
        }
    }
    Some(out)
}

fn normalise(text: &str, dt: &DataType) -> String {
    match dt {
        DataType::Float16 | DataType::Float32 | DataType::Float64 => match text {
            "Infinity" => "inf".into(),
            "-Infinity" => "-inf".into(),
            t => t.to_string(),
        },
        _ => text.to_string(),
    }
}

fn display(v: &ScalarValue) -> Result<String> {
    let arr = v.to_array()?;
    Ok(crate::arrow::util::display::array_value_to_string(&arr, 0)?)
}

/// Java's `Double.toString`: plain notation in [1e-3, 1e7), computerized scientific notation
/// (`1.0E10`) elsewhere; shortest round-trip digits; `NaN`, `Infinity`, `-Infinity`.
pub(crate) fn java_double(x: f64, sci: String) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // `sci` is Rust's shortest form, e.g. "1.7976931348623157e308", "5e-324", "-1.5e0".
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (neg, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let sign = if neg { "-" } else { "" };
    if (-3..7).contains(&exp) {
        // Plain: place the decimal point exp + 1 digits in.
        let point = exp + 1;
        let body = if point <= 0 {
            format!("0.{}{}", "0".repeat((-point) as usize), digits)
        } else if (point as usize) >= digits.len() {
            format!("{}{}.0", digits, "0".repeat(point as usize - digits.len()))
        } else {
            format!(
                "{}.{}",
                &digits[..point as usize],
                &digits[point as usize..]
            )
        };
        format!("{sign}{body}")
    } else {
        let frac = if digits.len() > 1 { &digits[1..] } else { "0" };
        format!("{sign}{}.{}E{exp}", &digits[..1], frac)
    }
}

/// An unscaled integer string with `scale` digits after the point, always written out.
pub(crate) fn decimal(unscaled: &str, scale: i8) -> String {
    let (neg, digits) = match unscaled.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, unscaled),
    };
    let sign = if neg { "-" } else { "" };
    if scale <= 0 {
        return format!("{sign}{digits}{}", "0".repeat((-scale) as usize));
    }
    let scale = scale as usize;
    let padded = if digits.len() <= scale {
        format!("{}{}", "0".repeat(scale + 1 - digits.len()), digits)
    } else {
        digits.to_string()
    };
    let cut = padded.len() - scale;
    format!("{sign}{}.{}", &padded[..cut], &padded[cut..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn s(v: ScalarValue) -> Option<String> {
        to_string(&v).unwrap()
    }

    #[test]
    fn exact_text_keeps_every_value_apart_and_round_trips() {
        use ScalarValue as S;
        let values = [
            S::Binary(Some(b"ff".to_vec())),
            S::Binary(Some(vec![0xff])),
            S::Binary(Some(Vec::new())),
            S::LargeBinary(Some(vec![0, 1, 0xfe])),
            S::FixedSizeBinary(2, Some(vec![0xde, 0xad])),
            S::TimestampNanosecond(Some(1_718_454_645_123_456_789), Some("UTC".into())),
            S::TimestampNanosecond(Some(1_718_454_645_123_456_001), Some("UTC".into())),
            S::TimestampSecond(Some(-1), None),
            S::Utf8(Some(String::new())),
            S::Utf8(Some("ff".into())),
            S::Float64(Some(0.1)),
            S::Float64(Some(-0.0)),
            S::Decimal128(Some(-12345), 10, 3),
            S::Date32(Some(19_723)),
        ];
        let mut seen = std::collections::HashSet::new();
        for v in &values {
            let text = to_exact_text(v).unwrap();
            assert!(seen.insert((v.data_type(), text.clone())), "{v:?} merged");
            let back = from_exact_text(&text, &v.data_type()).unwrap();
            assert_eq!(&back, v, "{text:?}");
        }
        assert_ne!(
            to_exact_text(&values[0]).unwrap(),
            to_exact_text(&values[1]).unwrap()
        );
        assert!(from_exact_text("f", &DataType::Binary).is_err());
        assert!(from_exact_text("zz", &DataType::Binary).is_err());
    }

    #[test]
    fn serialization_vectors() {
        use ScalarValue as S;
        assert_eq!(s(S::Int32(Some(i32::MIN))).unwrap(), "-2147483648");
        assert_eq!(s(S::Int64(Some(i64::MAX))).unwrap(), "9223372036854775807");
        assert_eq!(s(S::Int8(Some(-128))).unwrap(), "-128");
        assert_eq!(s(S::Int32(None)), None);
        assert_eq!(s(S::Float64(Some(0.0))).unwrap(), "0.0");
        assert_eq!(s(S::Float64(Some(-0.0))).unwrap(), "-0.0");
        assert_eq!(
            s(S::Float64(Some(f64::MAX))).unwrap(),
            "1.7976931348623157E308"
        );
        assert_eq!(s(S::Float64(Some(5e-324))).unwrap(), "5.0E-324");
        assert_eq!(s(S::Float64(Some(f64::NAN))).unwrap(), "NaN");
        assert_eq!(s(S::Float64(Some(f64::INFINITY))).unwrap(), "Infinity");
        assert_eq!(s(S::Float64(Some(f64::NEG_INFINITY))).unwrap(), "-Infinity");
        assert_eq!(s(S::Float32(Some(f32::NAN))).unwrap(), "NaN");
        assert_eq!(s(S::Float64(Some(1234.5))).unwrap(), "1234.5");
        assert_eq!(s(S::Float64(Some(100.0))).unwrap(), "100.0");
        assert_eq!(s(S::Float64(Some(0.001))).unwrap(), "0.001");
        assert_eq!(s(S::Float64(Some(1e7))).unwrap(), "1.0E7");
        assert_eq!(s(S::Float32(Some(1.5))).unwrap(), "1.5");
        assert_eq!(s(S::Boolean(Some(true))).unwrap(), "true");
        assert_eq!(
            s(S::Decimal128(Some(0), 38, 18)).unwrap(),
            "0.000000000000000000"
        );
        assert_eq!(
            s(S::Decimal128(Some(1_230_000_000_000_000_000), 38, 18)).unwrap(),
            "1.230000000000000000"
        );
        assert_eq!(
            s(S::Decimal128(Some(-1_230_000_000_000_000_000), 38, 18)).unwrap(),
            "-1.230000000000000000"
        );
        assert_eq!(s(S::Date32(Some(19723))).unwrap(), "2024-01-01");
        assert_eq!(s(S::Date32(Some(0))).unwrap(), "1970-01-01");
        assert_eq!(s(S::Date32(Some(-719162))).unwrap(), "0001-01-01");
        assert_eq!(s(S::Date32(Some(2932896))).unwrap(), "9999-12-31");
        // 2024-06-15 12:30:45 America/Los_Angeles (PDT, UTC-7) = 19:30:45Z.
        let t = 1_718_479_845_000_000i64;
        assert_eq!(
            s(S::TimestampMicrosecond(Some(t), Some(Arc::from("UTC")))).unwrap(),
            "2024-06-15T19:30:45.000000Z"
        );
        assert_eq!(
            s(S::TimestampMicrosecond(Some(t + 999_999), None)).unwrap(),
            "2024-06-15 19:30:45.999999"
        );
        assert_eq!(
            s(S::TimestampSecond(Some(0), Some(Arc::from("+08:00")))).unwrap(),
            "1970-01-01T00:00:00.000000Z"
        );
        for (v, out) in [
            ("Serbia/srb%", Some("Serbia/srb%")),
            ("100%25", Some("100%25")),
            ("", None),
            (" ", Some(" ")),
            ("日本語", Some("日本語")),
            ("a&b+c$d;e,f", Some("a&b+c$d;e,f")),
            ("before\0after", Some("before\0after")),
        ] {
            assert_eq!(s(S::Utf8(Some(v.into()))).as_deref(), out);
        }
        assert_eq!(s(S::Binary(Some(b"HELLO".to_vec()))).unwrap(), "HELLO");
        assert_eq!(s(S::Binary(Some(vec![]))), None);
        // DE AD alone is valid UTF-8 (U+07AD); with BE EF it is not.
        assert_eq!(s(S::Binary(Some(vec![0xde, 0xad]))).unwrap(), "\u{7ad}");
        assert_eq!(
            s(S::Binary(Some(vec![0xde, 0xad, 0xbe, 0xef]))).unwrap(),
            "\u{7ad}\\xbe\\xef"
        );
        assert_eq!(s(S::Binary(Some(vec![0xff]))).unwrap(), "\\xff");
        assert_eq!(s(S::Binary(Some(b"a\\b".to_vec()))).unwrap(), "a\\\\b");
    }

    #[test]
    fn round_trips() {
        use ScalarValue as S;
        let tz = Some(Arc::from("UTC"));
        for v in [
            S::Int32(Some(-5)),
            S::Int64(Some(i64::MIN)),
            S::Float64(Some(f64::INFINITY)),
            S::Float64(Some(-0.5)),
            S::Boolean(Some(false)),
            S::Decimal128(Some(-123), 10, 2),
            S::Date32(Some(-719162)),
            S::TimestampMicrosecond(Some(1_718_479_845_123_456), tz.clone()),
            S::TimestampMicrosecond(Some(-1), None),
            S::Utf8(Some("a/b=c%d$e".into())),
            S::Binary(Some(vec![0xde, 0xad, b'\\', b'x', 0xbe])),
            S::TimestampNanosecond(Some(-1), Some(Arc::from("UTC"))),
            S::Date32(Some(5_000_000)),
        ] {
            let text = to_string(&v).unwrap();
            let back = from_string(text.as_deref(), &v.data_type()).unwrap();
            assert_eq!(back, v, "{text:?}");
        }
        assert!(from_string(Some("abc"), &DataType::Int32).is_err());
    }
}
