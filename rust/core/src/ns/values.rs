//! Partition values as strings (`partition-value-serialization.md`): the `partition.<field_id>`
//! runtime properties (docs/design.md, "Partition values as strings"), lineage facets and Hive-style paths all use this form.
//!
//! NULL and the empty string (and empty binary) have no string form (`None`): the typed
//! manifest column keeps them apart.

use crate::arrow::array::{Array, ArrayRef, StringArray};
use crate::arrow::compute::kernels::cast::cast_with_options;
use crate::arrow::datatypes::{DataType, TimeUnit};
use crate::datafusion::scalar::ScalarValue;
use crate::error::{Error, Result};
use crate::spec::strict_cast;

/// Prefix of the namespace property that marks an empty partition value (`''` or `b''`) of
/// field `<field_id>`: the string form (`partition.<field_id>`) has no text for an empty value
/// nor for NULL, so without the marker a manifest rebuilt from the properties could not tell
/// them apart.
pub const EMPTY_VALUE_KEY_PREFIX: &str = "lance_partitioned.empty.";

/// The properties that describe partition value `v` of field `field_id`: `partition.<id>` with
/// its string form, or the empty-value marker for `''`/`b''`; nothing for NULL.
///
/// # Errors
/// As [`to_string`].
pub fn properties(field_id: &str, v: &ScalarValue) -> Result<Vec<(String, String)>> {
    Ok(match to_string(v)? {
        Some(s) => vec![(format!("partition.{field_id}"), s)],
        None if v.is_null() => Vec::new(),
        None => vec![(format!("{EMPTY_VALUE_KEY_PREFIX}{field_id}"), "true".into())],
    })
}

/// The value of field `field_id` of type `dt` described by a namespace's properties (the
/// inverse of [`properties`]).
///
/// # Errors
/// `Corrupt` for a malformed value.
pub fn from_properties(
    props: &std::collections::HashMap<String, String>,
    field_id: &str,
    dt: &DataType,
) -> Result<ScalarValue> {
    if let Some(s) = props.get(&format!("partition.{field_id}")) {
        return from_string(Some(s), dt);
    }
    if props.contains_key(&format!("{EMPTY_VALUE_KEY_PREFIX}{field_id}")) {
        return from_string(Some(""), dt);
    }
    from_string(None, dt)
}

/// The string form of a partition value, or `None` for NULL and empty values.
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
        | S::FixedSizeBinary(_, Some(b)) => match std::str::from_utf8(b) {
            Ok(s) => s.to_string(),
            // Not UTF-8: lowercase hex, never invalid text.
            Err(_) => b.iter().map(|x| format!("{x:02x}")).collect(),
        },
        S::Decimal128(Some(x), _, scale) => decimal(&x.to_string(), *scale),
        S::Decimal256(Some(x), _, scale) => decimal(&x.to_string(), *scale),
        S::Date32(Some(_)) | S::Date64(Some(_)) => display(v)?,
        S::TimestampSecond(Some(_), tz)
        | S::TimestampMillisecond(Some(_), tz)
        | S::TimestampMicrosecond(Some(_), tz)
        | S::TimestampNanosecond(Some(_), tz) => timestamp(v, tz.is_some())?,
        other => display(other)?,
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
    let arr: ArrayRef = std::sync::Arc::new(StringArray::from(vec![normalise(text, dt)]));
    let target = match dt {
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => dt.clone(),
        _ => dt.clone(),
    };
    let out = cast_with_options(&arr, &target, &strict_cast())
        .map_err(|e| Error::Corrupt(format!("partition value {text:?} is not a {dt}: {e}")))?;
    if out.is_null(0) {
        return Err(Error::Corrupt(format!(
            "partition value {text:?} is not a {dt}"
        )));
    }
    Ok(ScalarValue::try_from_array(&out, 0)?)
}

/// A lossless text form of a non-NULL value, for identities within one write (staged
/// messages, derived namespace ids): the string form, except binary values as lowercase hex
/// (the string form shows valid UTF-8 as text, so `b"ff"` and `b"\xff"` would meet) and
/// timestamps as their integer in the type's unit (the string form keeps microseconds).
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
            Ok(match dt {
                DataType::LargeBinary => ScalarValue::LargeBinary(Some(bytes)),
                DataType::BinaryView => ScalarValue::BinaryView(Some(bytes)),
                DataType::FixedSizeBinary(n) => ScalarValue::FixedSizeBinary(*n, Some(bytes)),
                _ => ScalarValue::Binary(Some(bytes)),
            })
        }
        DataType::Timestamp(unit, tz) => {
            let x: i64 = text.parse().map_err(|_| bad())?;
            let tz = tz.clone();
            Ok(match unit {
                TimeUnit::Second => ScalarValue::TimestampSecond(Some(x), tz),
                TimeUnit::Millisecond => ScalarValue::TimestampMillisecond(Some(x), tz),
                TimeUnit::Microsecond => ScalarValue::TimestampMicrosecond(Some(x), tz),
                TimeUnit::Nanosecond => ScalarValue::TimestampNanosecond(Some(x), tz),
            })
        }
        _ => from_string(Some(text), dt).map_err(|e| Error::InvalidArgument(e.to_string())),
    }
}

fn normalise(text: &str, dt: &DataType) -> String {
    match dt {
        DataType::Float32 | DataType::Float64 => match text {
            "Infinity" => "inf".into(),
            "-Infinity" => "-inf".into(),
            "NaN" => "NaN".into(),
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
fn java_double(x: f64, sci: String) -> String {
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
fn decimal(unscaled: &str, scale: i8) -> String {
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

/// Timestamps with a zone: UTC ISO-8601 with microseconds and `Z`; naive timestamps:
/// `YYYY-MM-DD HH:MM:SS.ffffff`.
fn timestamp(v: &ScalarValue, zoned: bool) -> Result<String> {
    let micros: i64 = match v {
        ScalarValue::TimestampSecond(Some(x), _) => x.saturating_mul(1_000_000),
        ScalarValue::TimestampMillisecond(Some(x), _) => x.saturating_mul(1_000),
        ScalarValue::TimestampMicrosecond(Some(x), _) => *x,
        ScalarValue::TimestampNanosecond(Some(x), _) => x.div_euclid(1_000),
        _ => return Err(Error::Internal("not a timestamp".into())),
    };
    let naive = ScalarValue::TimestampMicrosecond(Some(micros), None);
    let arr = naive.to_array()?;
    let arr = cast_with_options(
        &arr,
        &DataType::Timestamp(TimeUnit::Microsecond, None),
        &strict_cast(),
    )?;
    let text = crate::arrow::util::display::array_value_to_string(&arr, 0)?;
    // arrow displays "2024-06-15T19:30:45" or "2024-06-15T19:30:45.123456".
    let (date, time) = text.split_once('T').unwrap_or((&text, "00:00:00"));
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let frac = format!("{frac:0<6}");
    Ok(if zoned {
        format!("{date}T{hms}.{}Z", &frac[..6])
    } else {
        format!("{date} {hms}.{}", &frac[..6])
    })
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
            "deadbeef"
        );
        assert_eq!(s(S::Binary(Some(vec![0xff]))).unwrap(), "ff");
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
        ] {
            let text = to_string(&v).unwrap();
            let back = from_string(text.as_deref(), &v.data_type()).unwrap();
            assert_eq!(back, v, "{text:?}");
        }
        assert!(from_string(Some("abc"), &DataType::Int32).is_err());
    }
}
