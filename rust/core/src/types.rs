//! `JsonArrowDataType` / `JsonArrowSchema` (the lance-namespace client models) and their
//! conversion to and from Arrow types.
//!
//! The base encoding is upstream Lance's (`{"type": "int32"}`, `"bool"`, decimals as
//! `length = precision * 1000 + scale`, `fixed_size_binary` with `length`, nested types with
//! `fields`), so upstream readers understand what we write. Upstream drops the unit and
//! timezone of temporal types; to round-trip every type (`docs/design.md`, "JSON types") we
//! add two optional keys that upstream readers ignore: `unit` (`"s"`, `"ms"`, `"us"`, `"ns"`) for timestamp, time32,
//! time64 and duration, and `timezone` for timestamp. Absent keys decode to upstream's
//! defaults (timestamp and duration in microseconds, no timezone).

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::arrow::datatypes::{DataType, Field, Fields, Schema, TimeUnit};
use crate::error::{spec_err, unsupported, Result};

// Kept at their old path for the spec model and the namespace code that imports them here.
pub use crate::field_ids::{field_id, FIELD_ID_KEY};

/// An Arrow data type in JSON (lance-namespace `JsonArrowDataType`, plus `unit`/`timezone`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JsonDataType {
    /// Type name (`"int32"`, `"utf8"`, `"timestamp"`, ...).
    #[serde(rename = "type")]
    pub type_name: String,
    /// Children of nested types.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub fields: Option<Vec<JsonField>>,
    /// Size of fixed-size types; `precision * 1000 + scale` for decimals.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub length: Option<i64>,
    /// Time unit of timestamp/time/duration types (extension).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub unit: Option<String>,
    /// Timezone of timestamp types (extension).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub timezone: Option<String>,
}

/// A field in JSON (lance-namespace `JsonArrowField`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JsonField {
    /// Field name.
    pub name: String,
    /// Whether the field is nullable.
    #[serde(default = "default_true")]
    pub nullable: bool,
    /// Field type.
    #[serde(rename = "type")]
    pub data_type: JsonDataType,
    /// Field metadata (holds `lance:field_id`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub metadata: Option<HashMap<String, String>>,
}

fn default_true() -> bool {
    true
}

/// A schema in JSON (lance-namespace `JsonArrowSchema`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JsonSchema {
    /// Top-level fields.
    pub fields: Vec<JsonField>,
    /// Schema metadata.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub metadata: Option<HashMap<String, String>>,
}

fn unit_str(u: &TimeUnit) -> &'static str {
    match u {
        TimeUnit::Second => "s",
        TimeUnit::Millisecond => "ms",
        TimeUnit::Microsecond => "us",
        TimeUnit::Nanosecond => "ns",
    }
}

fn parse_unit(u: Option<&str>, default: TimeUnit) -> Result<TimeUnit> {
    Ok(match u {
        None => default,
        Some("s") => TimeUnit::Second,
        Some("ms") => TimeUnit::Millisecond,
        Some("us") => TimeUnit::Microsecond,
        Some("ns") => TimeUnit::Nanosecond,
        Some(other) => return spec_err!("unknown time unit {other:?} (expected s, ms, us, ns)"),
    })
}

impl JsonDataType {
    /// A type with just a name.
    pub fn named(name: &str) -> Self {
        Self {
            type_name: name.to_string(),
            ..Default::default()
        }
    }

    /// Encodes an Arrow type.
    ///
    /// # Errors
    /// `UnsupportedType` for unions, intervals, run-end encoded and list-view types.
    pub fn from_arrow(dt: &DataType) -> Result<Self> {
        use DataType::*;
        let decimal = |name: &str, p: u8, s: i8| Self {
            length: Some(p as i64 * 1000 + s as i64),
            ..Self::named(name)
        };
        let nested = |name: &str, fields: Vec<JsonField>, length: Option<i64>| Self {
            fields: Some(fields),
            length,
            ..Self::named(name)
        };
        Ok(match dt {
            Null => Self::named("null"),
            Boolean => Self::named("bool"),
            Int8 => Self::named("int8"),
            Int16 => Self::named("int16"),
            Int32 => Self::named("int32"),
            Int64 => Self::named("int64"),
            UInt8 => Self::named("uint8"),
            UInt16 => Self::named("uint16"),
            UInt32 => Self::named("uint32"),
            UInt64 => Self::named("uint64"),
            Float16 => Self::named("float16"),
            Float32 => Self::named("float32"),
            Float64 => Self::named("float64"),
            Decimal32(p, s) => decimal("decimal32", *p, *s),
            Decimal64(p, s) => decimal("decimal64", *p, *s),
            Decimal128(p, s) => decimal("decimal128", *p, *s),
            Decimal256(p, s) => decimal("decimal256", *p, *s),
            Date32 => Self::named("date32"),
            Date64 => Self::named("date64"),
            Time32(u) => Self {
                unit: Some(unit_str(u).into()),
                ..Self::named("time32")
            },
            Time64(u) => Self {
                unit: Some(unit_str(u).into()),
                ..Self::named("time64")
            },
            Timestamp(u, tz) => Self {
                unit: Some(unit_str(u).into()),
                timezone: tz.as_ref().map(|t| t.to_string()),
                ..Self::named("timestamp")
            },
            Duration(u) => Self {
                unit: Some(unit_str(u).into()),
                ..Self::named("duration")
            },
            Utf8 => Self::named("utf8"),
            LargeUtf8 => Self::named("large_utf8"),
            Utf8View => Self::named("utf8_view"),
            Binary => Self::named("binary"),
            LargeBinary => Self::named("large_binary"),
            BinaryView => Self::named("binary_view"),
            FixedSizeBinary(n) => Self {
                length: Some(*n as i64),
                ..Self::named("fixed_size_binary")
            },
            List(f) => nested("list", vec![JsonField::from_arrow(f)?], None),
            LargeList(f) => nested("large_list", vec![JsonField::from_arrow(f)?], None),
            FixedSizeList(f, n) => nested(
                "fixed_size_list",
                vec![JsonField::from_arrow(f)?],
                Some(*n as i64),
            ),
            Struct(fs) => nested(
                "struct",
                fs.iter()
                    .map(|f| JsonField::from_arrow(f))
                    .collect::<Result<_>>()?,
                None,
            ),
            Map(f, false) => nested("map", vec![JsonField::from_arrow(f)?], None),
            Dictionary(_, v) => Self::from_arrow(v)?,
            other => return unsupported!("type {other} has no JSON encoding"),
        })
    }

    /// Decodes to an Arrow type.
    ///
    /// # Errors
    /// `Spec` for unknown names or malformed parameters.
    pub fn to_arrow(&self) -> Result<DataType> {
        use DataType::*;
        let name = self.type_name.to_ascii_lowercase();
        if let Some(t) = primitive(&name) {
            return Ok(t);
        }
        let decimal = || self.decimal_params(&name);
        let child = || self.child_field(&name);
        Ok(match name.as_str() {
            "decimal32" => decimal().map(|(p, s)| Decimal32(p, s))?,
            "decimal64" => decimal().map(|(p, s)| Decimal64(p, s))?,
            "decimal128" => decimal().map(|(p, s)| Decimal128(p, s))?,
            "decimal256" => decimal().map(|(p, s)| Decimal256(p, s))?,
            "time32" => match parse_unit(self.unit.as_deref(), TimeUnit::Millisecond)? {
                u @ (TimeUnit::Second | TimeUnit::Millisecond) => Time32(u),
                u => return spec_err!("time32 cannot have unit {}", unit_str(&u)),
            },
            "time64" => match parse_unit(self.unit.as_deref(), TimeUnit::Microsecond)? {
                u @ (TimeUnit::Microsecond | TimeUnit::Nanosecond) => Time64(u),
                u => return spec_err!("time64 cannot have unit {}", unit_str(&u)),
            },
            "timestamp" => Timestamp(
                parse_unit(self.unit.as_deref(), TimeUnit::Microsecond)?,
                self.timezone.as_ref().map(|t| t.as_str().into()),
            ),
            "duration" => Duration(parse_unit(self.unit.as_deref(), TimeUnit::Microsecond)?),
            "fixed_size_binary" => match self.length {
                Some(n) if (0..=i32::MAX as i64).contains(&n) => FixedSizeBinary(n as i32),
                _ => return spec_err!("fixed_size_binary needs a non-negative length"),
            },
            "list" => List(child()?),
            "large_list" => LargeList(child()?),
            "fixed_size_list" => match self.length {
                Some(n) if (0..=i32::MAX as i64).contains(&n) => FixedSizeList(child()?, n as i32),
                _ => return spec_err!("fixed_size_list needs a non-negative length"),
            },
            "struct" => Struct(Fields::from(
                self.fields
                    .as_deref()
                    .unwrap_or_default()
                    .iter()
                    .map(|f| f.to_arrow())
                    .collect::<Result<Vec<_>>>()?,
            )),
            "map" => Map(child()?, false),
            other => return spec_err!("unknown Arrow type {other:?}"),
        })
    }
}

impl JsonDataType {
    /// `(precision, scale)` of a decimal type, encoded in `length` as
    /// `precision * 1000 + scale`.
    fn decimal_params(&self, name: &str) -> Result<(u8, i8)> {
        let Some(enc) = self.length else {
            return spec_err!("{name} needs length = precision * 1000 + scale");
        };
        let p = (enc + 128).div_euclid(1000);
        let s = enc - p * 1000;
        if !(1..=76).contains(&p) || !(-128..=127).contains(&s) {
            return spec_err!("{name} has invalid length {enc}");
        }
        Ok((p as u8, s as i8))
    }

    /// The one child field of a list or map type.
    fn child_field(&self, name: &str) -> Result<Arc<Field>> {
        match self.fields.as_deref() {
            Some([f]) => Ok(Arc::new(f.to_arrow()?)),
            _ => spec_err!("{name} needs exactly one child field"),
        }
    }
}

/// The types named by their name alone (no unit, length or children).
fn primitive(name: &str) -> Option<DataType> {
    use DataType::*;
    Some(match name {
        "null" => Null,
        "bool" | "boolean" => Boolean,
        "int8" => Int8,
        "int16" => Int16,
        "int32" => Int32,
        "int64" => Int64,
        "uint8" => UInt8,
        "uint16" => UInt16,
        "uint32" => UInt32,
        "uint64" => UInt64,
        "float16" => Float16,
        "float32" => Float32,
        "float64" => Float64,
        "date32" => Date32,
        "date64" => Date64,
        "utf8" | "string" => Utf8,
        "large_utf8" | "large_string" => LargeUtf8,
        "utf8_view" | "string_view" => Utf8View,
        "binary" => Binary,
        "large_binary" => LargeBinary,
        "binary_view" => BinaryView,
        _ => return None,
    })
}

impl JsonField {
    /// Encodes an Arrow field.
    ///
    /// # Errors
    /// As [`JsonDataType::from_arrow`].
    pub fn from_arrow(f: &Field) -> Result<Self> {
        Ok(Self {
            name: f.name().clone(),
            nullable: f.is_nullable(),
            data_type: JsonDataType::from_arrow(f.data_type())?,
            metadata: (!f.metadata().is_empty()).then(|| f.metadata().clone()),
        })
    }

    /// Decodes to an Arrow field.
    ///
    /// # Errors
    /// As [`JsonDataType::to_arrow`].
    pub fn to_arrow(&self) -> Result<Field> {
        Ok(
            Field::new(&self.name, self.data_type.to_arrow()?, self.nullable)
                .with_metadata(self.metadata.clone().unwrap_or_default()),
        )
    }
}

impl JsonSchema {
    /// Encodes an Arrow schema.
    ///
    /// # Errors
    /// As [`JsonDataType::from_arrow`].
    pub fn from_arrow(s: &Schema) -> Result<Self> {
        Ok(Self {
            fields: s
                .fields()
                .iter()
                .map(|f| JsonField::from_arrow(f))
                .collect::<Result<_>>()?,
            metadata: (!s.metadata().is_empty()).then(|| s.metadata().clone()),
        })
    }

    /// Decodes to an Arrow schema.
    ///
    /// # Errors
    /// As [`JsonDataType::to_arrow`].
    pub fn to_arrow(&self) -> Result<Schema> {
        Ok(Schema::new_with_metadata(
            self.fields
                .iter()
                .map(|f| f.to_arrow())
                .collect::<Result<Vec<_>>>()?,
            self.metadata.clone().unwrap_or_default(),
        ))
    }
}

/// Parses a schema from its JSON text.
///
/// # Errors
/// `Spec` for malformed JSON or types.
pub fn schema_from_json(text: &str) -> Result<Schema> {
    let js: JsonSchema = serde_json::from_str(text)
        .map_err(|e| crate::error::Error::Spec(format!("malformed schema JSON: {e}")))?;
    js.to_arrow()
}

/// The type a namespace stores for `dt`: view layouts as their plain equivalents
/// (`Utf8View` as `Utf8`, `BinaryView` as `Binary`, `ListView`s as lists) and dictionaries as
/// their value type, at every depth. They hold the same values; Lance stores them as the plain
/// types and Spark reads only those, so a namespace created from a polars or Parquet schema
/// must not keep them (every append would otherwise see a leaf "of another type" and rewrite
/// the partition).
pub fn storage_type(dt: &DataType) -> DataType {
    use DataType::*;
    let field = |f: &Arc<Field>| Arc::new(storage_field(f));
    match dt {
        Utf8View => Utf8,
        BinaryView => Binary,
        Dictionary(_, v) => storage_type(v),
        ListView(f) => List(field(f)),
        LargeListView(f) => LargeList(field(f)),
        List(f) => List(field(f)),
        LargeList(f) => LargeList(field(f)),
        FixedSizeList(f, n) => FixedSizeList(field(f), *n),
        Map(f, sorted) => Map(field(f), *sorted),
        Struct(kids) => Struct(kids.iter().map(|k| storage_field(k)).collect()),
        other => other.clone(),
    }
}

/// `f` as a namespace stores it: [`storage_type`], and without the `PARQUET:` metadata
/// (`PARQUET:field_id`) that pyarrow copies from a Parquet schema: the namespace's own field
/// ids are `lance:field_id`, and a second id beside them would be read by other tools.
pub fn storage_field(f: &Field) -> Field {
    let md: HashMap<String, String> = f
        .metadata()
        .iter()
        .filter(|(k, _)| !k.starts_with("PARQUET:"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    f.clone()
        .with_data_type(storage_type(f.data_type()))
        .with_metadata(md)
}

/// `schema` as a namespace stores it (see [`storage_field`]).
pub fn storage_schema(schema: &Schema) -> Schema {
    Schema::new_with_metadata(
        schema
            .fields()
            .iter()
            .map(|f| storage_field(f))
            .collect::<Vec<_>>(),
        schema.metadata().clone(),
    )
}

/// Whether values of `from` can always be represented in `to` (a widening).
pub fn is_widening(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    if from == to {
        return true;
    }
    let int_rank = |t: &DataType| match t {
        Int8 => Some((true, 8)),
        Int16 => Some((true, 16)),
        Int32 => Some((true, 32)),
        Int64 => Some((true, 64)),
        UInt8 => Some((false, 8)),
        UInt16 => Some((false, 16)),
        UInt32 => Some((false, 32)),
        UInt64 => Some((false, 64)),
        _ => None,
    };
    match (from, to) {
        (a, b) if int_rank(a).is_some() && int_rank(b).is_some() => {
            let ((sa, wa), (sb, wb)) = (
                int_rank(a).unwrap_or_default(),
                int_rank(b).unwrap_or_default(),
            );
            (sa == sb && wb > wa) || (!sa && sb && wb > wa)
        }
        (Float16, Float32 | Float64) | (Float32, Float64) => true,
        (Decimal128(p1, s1), Decimal128(p2, s2)) => s1 == s2 && p2 >= p1,
        (Decimal128(p1, s1), Decimal256(p2, s2)) => s1 == s2 && p2 >= p1,
        (Decimal256(p1, s1), Decimal256(p2, s2)) => s1 == s2 && p2 >= p1,
        (Utf8, LargeUtf8 | Utf8View) | (Binary, LargeBinary | BinaryView) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_supported_type() {
        use DataType::*;
        let types = vec![
            Null,
            Boolean,
            Int8,
            Int16,
            Int32,
            Int64,
            UInt8,
            UInt16,
            UInt32,
            UInt64,
            Float16,
            Float32,
            Float64,
            Decimal32(9, 2),
            Decimal64(18, -3),
            Decimal128(38, 10),
            Decimal256(76, 0),
            Date32,
            Date64,
            Time32(TimeUnit::Second),
            Time32(TimeUnit::Millisecond),
            Time64(TimeUnit::Microsecond),
            Time64(TimeUnit::Nanosecond),
            Timestamp(TimeUnit::Second, None),
            Timestamp(TimeUnit::Nanosecond, Some("+08:00".into())),
            Timestamp(TimeUnit::Microsecond, Some("America/New_York".into())),
            Duration(TimeUnit::Millisecond),
            Utf8,
            LargeUtf8,
            Utf8View,
            Binary,
            LargeBinary,
            BinaryView,
            FixedSizeBinary(16),
            List(Arc::new(Field::new("item", Int32, true))),
            LargeList(Arc::new(Field::new("item", Utf8, false))),
            FixedSizeList(Arc::new(Field::new("item", Float32, true)), 3),
            Struct(Fields::from(vec![
                Field::new("a", Int32, true),
                Field::new(
                    "b",
                    Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
                    true,
                ),
            ])),
        ];
        for t in types {
            let js = JsonDataType::from_arrow(&t).unwrap();
            let text = serde_json::to_string(&js).unwrap();
            let back: JsonDataType = serde_json::from_str(&text).unwrap();
            assert_eq!(back.to_arrow().unwrap(), t, "{text}");
        }
    }

    #[test]
    fn reads_upstream_forms() {
        let t: JsonDataType = serde_json::from_str(r#"{"type":"timestamp"}"#).unwrap();
        assert_eq!(
            t.to_arrow().unwrap(),
            DataType::Timestamp(TimeUnit::Microsecond, None)
        );
        let t: JsonDataType =
            serde_json::from_str(r#"{"type":"decimal128","length":10002}"#).unwrap();
        assert_eq!(t.to_arrow().unwrap(), DataType::Decimal128(10, 2));
        let t: JsonDataType = serde_json::from_str(r#"{"type":"nope"}"#).unwrap();
        assert!(t.to_arrow().is_err());
    }
}
