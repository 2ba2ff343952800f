//! Partition values in a namespace's properties: `partition.<field_id>` holds the string form
//! ([`crate::values`]; docs/design.md, "Partition values as strings"), from which a manifest
//! stripped of its partition columns is rebuilt.
//!
//! NULL and the empty string (and empty binary) have no string form: the typed manifest
//! column keeps them apart, and a marker property keeps them apart in the properties.

use crate::arrow::datatypes::DataType;
use crate::datafusion::scalar::ScalarValue;
use crate::error::Result;
use crate::values::{from_string, to_string};

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
