//! The manifest format: column names, object types, the Arrow schema of `__manifest`, and
//! conversions between manifest rows and their columns (properties, object ids, versions).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, ListBuilder, RecordBatch, StringArray, StringBuilder,
    UInt64Array,
};
use crate::arrow::compute::cast;
use crate::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use crate::datafusion::scalar::ScalarValue;
use crate::error::{corrupt, Error, Result};
use crate::ns::PARTITION_COLUMN_PREFIX;
use crate::spec::PartitionSpec;

/// `object_id` column (primary key; `$`-separated path).
pub const OBJECT_ID: &str = "object_id";
/// `object_type` column: `namespace`, `table` or `table_version`.
pub const OBJECT_TYPE: &str = "object_type";
/// `location` column: table directory relative to the root.
pub const LOCATION: &str = "location";
/// `metadata` column: JSON object of string properties.
pub const METADATA: &str = "metadata";
/// `base_objects` column (DirectoryNamespace V2).
pub const BASE_OBJECTS: &str = "base_objects";
/// `read_version` column (strong mode).
pub const READ_VERSION: &str = "read_version";

/// Object type of namespaces.
pub const NAMESPACE: &str = "namespace";
/// Object type of tables.
pub const TABLE: &str = "table";
/// Object type of recorded table versions.
pub const TABLE_VERSION: &str = "table_version";

/// The manifest column holding partition field `fid`.
pub fn partition_column(fid: &str) -> String {
    format!("{PARTITION_COLUMN_PREFIX}{fid}")
}

/// The DirectoryNamespace V2 columns plus `read_version`.
pub fn base_fields() -> Vec<Field> {
    vec![
        // DirectoryNamespace V2 marks object_id as the (unenforced) primary key; without it
        // pylance adds the marker in a commit of its own the first time it opens the manifest.
        Field::new(OBJECT_ID, DataType::Utf8, false).with_metadata(HashMap::from([(
            "lance-schema:unenforced-primary-key:position".to_string(),
            "0".to_string(),
        )])),
        Field::new(OBJECT_TYPE, DataType::Utf8, false),
        Field::new(LOCATION, DataType::Utf8, true),
        Field::new(METADATA, DataType::Utf8, true),
        Field::new(
            BASE_OBJECTS,
            DataType::List(Arc::new(Field::new("object_id", DataType::Utf8, true))),
            true,
        ),
        Field::new(READ_VERSION, DataType::UInt64, true),
    ]
}

/// The manifest schema for a set of specs: base columns, then one partition column per
/// distinct field id, in order of first appearance.
pub fn manifest_schema<'a>(specs: impl IntoIterator<Item = &'a PartitionSpec>) -> Result<Schema> {
    let mut fields = base_fields();
    let mut seen = HashMap::new();
    for spec in specs {
        for f in &spec.fields {
            let dt = f.result_type.to_arrow()?;
            match seen.get(&f.field_id) {
                Some(prev) if prev != &dt => {
                    return corrupt!(
                    "partition field {:?} has result_type {prev} in one spec and {dt} in another",
                    f.field_id
                )
                }
                Some(_) => {}
                None => {
                    seen.insert(f.field_id.clone(), dt.clone());
                    fields.push(Field::new(partition_column(&f.field_id), dt, true));
                }
            }
        }
    }
    Ok(Schema::new(fields))
}

/// `table_version` property naming the distributed write that committed the version (so a
/// second commit of the same write is recognised and becomes a no-op).
pub const WRITE_ID_KEY: &str = "write_id";
/// The longest write id a commit records (every `table_version` row of the commit carries it).
pub const MAX_WRITE_ID_LEN: usize = 512;

/// Refuses an empty or oversized write id.
///
/// # Errors
/// `InvalidArgument`.
pub fn check_write_id(id: &str) -> Result<()> {
    if id.is_empty() || id.len() > MAX_WRITE_ID_LEN {
        return Err(Error::InvalidArgument(format!(
            "a write id must have 1 to {MAX_WRITE_ID_LEN} bytes, not {}",
            id.len()
        )));
    }
    Ok(())
}

/// Refuses a caller's write id `id` when it cannot be checked: a malformed id, or weak mode
/// (whose commits are not atomic, so a repeated write cannot be recognised as a whole).
///
/// # Errors
/// `InvalidArgument`.
pub fn check_repeatable(id: &str, strong: bool) -> Result<()> {
    if !strong {
        return Err(Error::InvalidArgument(
            "a write id needs strong mode: weak-mode commits are not atomic, so a repeated \
             write cannot be recognised as a whole (use transaction_mode=\"strong\")"
                .into(),
        ));
    }
    check_write_id(id)
}

/// Property of a `table_version` row: the rows that version wrote or deleted.
pub const ROWS_KEY: &str = "rows";

/// Parses a `metadata` cell (JSON object of strings; non-string values are kept as JSON).
pub fn parse_props(text: Option<&str>) -> Result<HashMap<String, String>> {
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        return Ok(HashMap::new());
    };
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| Error::Corrupt(format!("malformed metadata JSON {text:?}: {e}")))?;
    let serde_json::Value::Object(map) = v else {
        return corrupt!("metadata is not a JSON object: {text:?}");
    };
    Ok(map
        .into_iter()
        .filter_map(|(k, v)| match v {
            serde_json::Value::String(s) => Some((k, s)),
            serde_json::Value::Null => None,
            other => Some((k, other.to_string())),
        })
        .collect())
}

/// Serialises properties as a JSON object with sorted keys.
pub fn props_json(props: &HashMap<String, String>) -> String {
    let sorted: BTreeMap<&String, &String> = props.iter().collect();
    serde_json::to_string(&sorted).unwrap_or_else(|_| "{}".into())
}

/// A string column of `batch` (cast to Utf8), `None` when absent.
pub(super) fn string_column(batch: &RecordBatch, name: &str) -> Result<Option<StringArray>> {
    match batch.column_by_name(name) {
        None => Ok(None),
        Some(c) => {
            let c = cast(c, &DataType::Utf8)?;
            Ok(Some(c.as_string::<i32>().clone()))
        }
    }
}

/// The string column `name` of `batch` (cast to Utf8).
///
/// # Errors
/// `Corrupt` when the manifest lacks it.
pub(crate) fn required_string(batch: &RecordBatch, name: &str) -> Result<StringArray> {
    string_column(batch, name)?
        .ok_or_else(|| Error::Corrupt(format!("the manifest has no {name} column")))
}

/// The `table_version` rows among the columns `ids` and `types`: (row, table object id,
/// version).
pub(super) fn version_rows<'a>(
    ids: &'a StringArray,
    types: &'a StringArray,
) -> impl Iterator<Item = (usize, &'a str, u64)> + 'a {
    (0..ids.len()).filter_map(move |r| {
        if types.value(r) != TABLE_VERSION {
            return None;
        }
        let (table, ver) = ids.value(r).rsplit_once('$')?;
        Some((r, table, parse_version(ver)?))
    })
}

/// The `columns` of the rows of the manifest version `ds` that match `filter`.
///
/// # Errors
/// `Lance` for I/O errors or columns the manifest lacks.
pub(crate) async fn scan_rows(
    ds: &lance::dataset::Dataset,
    columns: &[&str],
    filter: &str,
) -> Result<RecordBatch> {
    let mut scan = ds.scan();
    scan.project(columns)?;
    scan.filter(filter)?;
    Ok(scan.try_into_batch().await?)
}

/// Parses a version segment (`7`, or zero-padded to 20 digits).
pub fn parse_version(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The spec id of a `v<N>...` object id.
pub fn spec_of(object_id: &str) -> Option<i32> {
    let first = object_id.split('$').next()?;
    first.strip_prefix('v')?.parse().ok()
}

/// A manifest row to insert or update.
#[derive(Debug, Clone, Default)]
pub struct Row {
    /// `object_id`.
    pub object_id: String,
    /// `object_type`.
    pub object_type: String,
    /// `location` (tables).
    pub location: Option<String>,
    /// Properties (`metadata`).
    pub props: HashMap<String, String>,
    /// `read_version`.
    pub read_version: Option<u64>,
    /// Partition values by field id.
    pub values: Vec<(String, ScalarValue)>,
}

/// Builds a batch of `rows` with the manifest `schema`.
///
/// # Errors
/// `Internal` when a value does not fit its column.
pub fn rows_to_batch(schema: &SchemaRef, rows: &[Row]) -> Result<RecordBatch> {
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    for f in schema.fields() {
        let col: ArrayRef = match f.name().as_str() {
            OBJECT_ID => Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| &r.object_id),
            )),
            OBJECT_TYPE => Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| &r.object_type),
            )),
            LOCATION => Arc::new(StringArray::from_iter(
                rows.iter().map(|r| r.location.as_deref()),
            )),
            METADATA => Arc::new(StringArray::from_iter(
                rows.iter().map(|r| Some(props_json(&r.props))),
            )),
            READ_VERSION => Arc::new(UInt64Array::from_iter(rows.iter().map(|r| r.read_version))),
            BASE_OBJECTS => {
                let mut b =
                    ListBuilder::new(StringBuilder::new()).with_field(match f.data_type() {
                        DataType::List(inner) => Arc::clone(inner),
                        _ => Arc::new(Field::new("object_id", DataType::Utf8, true)),
                    });
                for _ in rows {
                    b.append_null();
                }
                let arr: ArrayRef = Arc::new(b.finish());
                if arr.data_type() == f.data_type() {
                    arr
                } else {
                    new_null_array(f.data_type(), rows.len())
                }
            }
            name => match name.strip_prefix(PARTITION_COLUMN_PREFIX) {
                Some(fid) => {
                    let vals = rows
                        .iter()
                        .map(|r| {
                            r.values
                                .iter()
                                .find(|(k, _)| k == fid)
                                .map(|(_, v)| v.cast_to(f.data_type()))
                                .unwrap_or_else(|| ScalarValue::try_from(f.data_type()))
                        })
                        .collect::<std::result::Result<Vec<_>, _>>()?;
                    if vals.is_empty() {
                        new_null_array(f.data_type(), 0)
                    } else {
                        ScalarValue::iter_to_array(vals)?
                    }
                }
                None => new_null_array(f.data_type(), rows.len()),
            },
        };
        columns.push(col);
    }
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(schema),
        columns,
        &crate::arrow::array::RecordBatchOptions::new().with_row_count(Some(rows.len())),
    )?)
}
