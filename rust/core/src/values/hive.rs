//! Hive-style directory names (`name=value`) and the URI encoding of relative paths: steps 3
//! and 4 of the serialization of partition values (docs/partition-values.md).
//!
//! - [`hive_escape`]: `%XX` (uppercase hex) for the characters Spark and Hive escape in
//!   directory names: NUL to 0x1F, `"`, `#`, `%`, `'`, `*`, `/`, `:`, `=`, `?`, `\`, 0x7F,
//!   `{`, `[`, `]`, `^`. Everything else (space, `}`, `<`, `|`, non-ASCII) stays as it is.
//! - [`uri_escape`]: the extra encoding of a relative path inside a URI: `%` and the
//!   characters a URI path cannot hold raw (controls, space, `"`, `#`, `<`, `>`, `?`, `[`,
//!   `\`, `]`, `^`, `` ` ``, `{`, `|`, `}`) become `%XX`; `/` separates segments; non-ASCII
//!   stays.
//! - [`hive_segment`] / [`parse_hive_segment`]: one `name=value` directory of a typed value.

use chrono::{DateTime, LocalResult, NaiveDateTime, TimeZone};

use crate::arrow::array::timezone::Tz;
use crate::arrow::datatypes::DataType;
use crate::datafusion::scalar::ScalarValue;
use crate::error::{Error, Result};
use crate::values::civil::{parse_date_time, write_date, write_time};
use crate::values::text::{epoch_parts, from_string, timestamp_scalar, to_string};

/// The directory value of NULL and empty values.
pub const HIVE_DEFAULT_PARTITION: &str = "__HIVE_DEFAULT_PARTITION__";

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// The ASCII bytes an encoding writes as `%XX`: every control byte up to `controls_to`
/// (inclusive), DEL, and `others`.
const fn escaped(controls_to: u8, others: &[u8]) -> [bool; 128] {
    let mut table = [false; 128];
    let mut b = 0;
    while b <= controls_to as usize {
        table[b] = true;
        b += 1;
    }
    table[0x7F] = true;
    let mut i = 0;
    while i < others.len() {
        table[others[i] as usize] = true;
        i += 1;
    }
    table
}

/// Directory names (step 3): controls, `"#%'*/:=?\{[]^` and DEL.
const HIVE_ESCAPED: [bool; 128] = escaped(0x1F, b"\"#%'*/:=?\\{[]^");
/// URI paths (step 4): controls and space, `"#%<>?[\]^`{|}` and DEL.
const URI_ESCAPED: [bool; 128] = escaped(0x20, b"\"#%<>?[\\]^`{|}");

fn escape_with(text: &str, escaped: &[bool; 128]) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match u8::try_from(c) {
            Ok(b) if b.is_ascii() && escaped[usize::from(b)] => {
                out.push('%');
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 0xF)]));
            }
            _ => out.push(c),
        }
    }
    out
}

/// Step 3: the directory-name encoding of a string form.
pub fn hive_escape(text: &str) -> String {
    escape_with(text, &HIVE_ESCAPED)
}

/// Step 4: the URI encoding of a relative path (segments kept apart by `/`).
pub fn uri_escape(path: &str) -> String {
    escape_with(path, &URI_ESCAPED)
}

/// The inverse of [`hive_escape`] (and of any `%XX` encoding): every `%` followed by two hex
/// digits is that byte; the bytes must make UTF-8.
///
/// # Errors
/// `InvalidArgument` when the decoded bytes are not UTF-8.
pub fn hive_unescape(text: &str) -> Result<String> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |j: usize| b.get(j).and_then(|c| char::from(*c).to_digit(16));
        match (b[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| {
        Error::InvalidArgument(format!(
            "directory name {text:?} does not decode to UTF-8 text"
        ))
    })
}

/// A time zone by IANA name (`America/Los_Angeles`) or fixed offset (`+07:00`).
///
/// # Errors
/// `InvalidArgument` for anything else.
pub fn parse_timezone(name: &str) -> Result<Tz> {
    name.parse::<Tz>()
        .map_err(|e| Error::InvalidArgument(format!("unknown time zone {name:?}: {e}")))
}

/// The text a value shows in a directory name, before escaping; None for NULL and empty
/// values. Timestamps with a zone are shown as local time in `tz`, without a zone as they
/// are: `YYYY-MM-DD HH:MM:SS`, then the fraction of the second without trailing zeros.
///
/// # Errors
/// `InvalidArgument` for values no directory can name: a NUL character, binary values that
/// are not UTF-8 text. `UnsupportedType` as [`to_string`].
pub fn directory_text(v: &ScalarValue, tz: &Tz) -> Result<Option<String>> {
    use ScalarValue as S;
    let text = match v {
        _ if v.is_null() => return Ok(None),
        S::TimestampSecond(_, zone)
        | S::TimestampMillisecond(_, zone)
        | S::TimestampMicrosecond(_, zone)
        | S::TimestampNanosecond(_, zone) => {
            let (secs, nanos) = epoch_parts(v)?;
            let (secs, nanos) = match zone {
                Some(_) => local_parts(secs, nanos, tz)?,
                None => (secs, nanos),
            };
            Some(local_text(secs, nanos))
        }
        S::Binary(Some(b))
        | S::LargeBinary(Some(b))
        | S::BinaryView(Some(b))
        | S::FixedSizeBinary(_, Some(b)) => match std::str::from_utf8(b) {
            Ok(s) => (!s.is_empty()).then(|| s.to_string()),
            Err(_) => {
                return Err(Error::InvalidArgument(format!(
                    "binary partition value {} is not UTF-8 text: no directory can name it",
                    to_string(v)?.unwrap_or_default()
                )))
            }
        },
        other => to_string(other)?,
    };
    if let Some(t) = &text {
        if t.contains('\0') {
            return Err(Error::InvalidArgument(format!(
                "partition value {t:?} holds a NUL character: no directory can name it"
            )));
        }
    }
    Ok(text)
}

/// `name=<escaped value>`, or `name=__HIVE_DEFAULT_PARTITION__` for NULL and empty values.
///
/// # Errors
/// As [`directory_text`].
pub fn hive_segment(name: &str, v: &ScalarValue, tz: &Tz) -> Result<String> {
    let value = match directory_text(v, tz)? {
        Some(t) => hive_escape(&t),
        None => HIVE_DEFAULT_PARTITION.to_string(),
    };
    Ok(format!("{}={value}", hive_escape(name)))
}

/// The inverse of [`hive_segment`]: the field name and the value of type `dt`.
/// `__HIVE_DEFAULT_PARTITION__` is NULL. A local time that a zone's clock shows twice (the
/// hour a daylight-saving change repeats) reads as the earlier instant, as Spark and Java do.
///
/// # Errors
/// `InvalidArgument` for a segment without `=`, a value that is not a `dt`, or a local time
/// the zone's clock skips.
pub fn parse_hive_segment(segment: &str, dt: &DataType, tz: &Tz) -> Result<(String, ScalarValue)> {
    let (name, value) = segment.split_once('=').ok_or_else(|| {
        Error::InvalidArgument(format!("{segment:?} is not a name=value directory"))
    })?;
    let name = hive_unescape(name)?;
    if value == HIVE_DEFAULT_PARTITION {
        return Ok((name, ScalarValue::try_from(dt)?));
    }
    let text = hive_unescape(value)?;
    Ok((name, from_directory_text(&text, dt, tz)?))
}

/// A value of type `dt` from its directory text (unescaped).
///
/// # Errors
/// `InvalidArgument` when the text is not a `dt` (as [`parse_hive_segment`]).
pub fn from_directory_text(text: &str, dt: &DataType, tz: &Tz) -> Result<ScalarValue> {
    let bad = |why: &str| Error::InvalidArgument(format!("{text:?} is not a {dt}{why}"));
    match dt {
        DataType::Timestamp(unit, zone) => {
            let (date, time) = text.split_once(' ').ok_or_else(|| bad(""))?;
            let (secs, nanos) = parse_date_time(date, time).ok_or_else(|| bad(""))?;
            let (secs, nanos) = match zone {
                Some(_) => utc_parts(secs, nanos, tz)
                    .ok_or_else(|| bad(&format!(": the clocks of {tz} skip that local time")))?,
                None => (secs, nanos),
            };
            timestamp_scalar(secs, nanos, *unit, zone.clone())
                .ok_or_else(|| bad(": out of range or finer than the type"))
        }
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => {
            let v = ScalarValue::Binary(Some(text.as_bytes().to_vec()));
            v.cast_to(dt).map_err(|e| bad(&format!(": {e}")))
        }
        _ => from_string(Some(text), dt).map_err(|e| Error::InvalidArgument(e.to_string())),
    }
}

/// Local seconds and nanoseconds in `tz` of the UTC instant `secs` + `nanos`.
fn local_parts(secs: i64, nanos: u32, tz: &Tz) -> Result<(i64, u32)> {
    let utc = DateTime::from_timestamp(secs, nanos)
        .ok_or_else(|| Error::InvalidArgument(format!("timestamp {secs}s out of range")))?;
    let local = utc.with_timezone(tz).naive_local().and_utc();
    Ok((local.timestamp(), local.timestamp_subsec_nanos()))
}

/// The UTC instant of the local time `secs` + `nanos` in `tz` (the earlier one when the local
/// time occurs twice; None when it does not occur).
fn utc_parts(secs: i64, nanos: u32, tz: &Tz) -> Option<(i64, u32)> {
    let naive: NaiveDateTime = DateTime::from_timestamp(secs, nanos)?.naive_utc();
    let instant = match tz.from_local_datetime(&naive) {
        LocalResult::Single(t) => t,
        LocalResult::Ambiguous(earlier, _) => earlier,
        LocalResult::None => return None,
    };
    Some((instant.timestamp(), instant.timestamp_subsec_nanos()))
}

/// `YYYY-MM-DD HH:MM:SS[.fraction without trailing zeros]`.
fn local_text(secs: i64, nanos: u32) -> String {
    let mut out = String::with_capacity(29);
    write_date(&mut out, secs.div_euclid(86_400));
    out.push(' ');
    write_time(&mut out, secs.rem_euclid(86_400) * 1_000_000, false);
    if nanos > 0 {
        let frac = format!("{nanos:09}");
        out.push('.');
        out.push_str(frac.trim_end_matches('0'));
    }
    out
}
