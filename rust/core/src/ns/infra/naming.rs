//! Which names a namespace accepts, checked where names enter (`create`, `evolve`, schema
//! updates), so that nothing is created that could never be written or listed.
//!
//! - Columns: non-empty, without `.` (Lance and DataFusion read it as a path into a struct),
//!   unique (also inside structs).
//! - Partition fields: at least one per spec; `field_id`s non-empty, made of letters, digits,
//!   `_` and `-` (they name manifest columns and property keys), unique, and none of the columns
//!   `partitions()` adds itself ([`RESERVED_FIELD_IDS`]).

use std::collections::HashSet;

use crate::arrow::datatypes::{DataType, Field, Schema};
use crate::error::{schema_err, spec_err, Result};
use crate::spec::PartitionSpec;

/// Columns of the `partitions()` listing that partition field ids may not take.
pub const RESERVED_FIELD_IDS: [&str; 5] =
    ["object_id", "location", "read_version", "spec_id", "rows"];

/// Checks the column names of a namespace schema.
///
/// # Errors
/// `SchemaMismatch` naming the column.
pub fn check_column_names(schema: &Schema) -> Result<()> {
    fn walk(fields: &[&Field], path: &str) -> Result<()> {
        let mut seen = HashSet::new();
        for f in fields {
            let name = f.name();
            if name.is_empty() {
                return schema_err!("a column name is empty{path}");
            }
            if name.contains('.') {
                return schema_err!(
                    "column {name:?}{path}: names may not contain '.' (it addresses struct \
                     fields in filters and in Lance)"
                );
            }
            if !seen.insert(name.as_str()) {
                return schema_err!("column {name:?}{path} appears twice");
            }
            if let DataType::Struct(kids) = f.data_type() {
                let kids: Vec<&Field> = kids.iter().map(|k| k.as_ref()).collect();
                walk(&kids, &format!(" (inside {name:?})"))?;
            }
        }
        Ok(())
    }
    let top: Vec<&Field> = schema.fields().iter().map(|f| f.as_ref()).collect();
    walk(&top, "")
}

/// Checks the partition fields of a spec.
///
/// # Errors
/// `Spec` naming the field.
pub fn check_spec_fields(spec: &PartitionSpec) -> Result<()> {
    if spec.fields.is_empty() {
        return spec_err!(
            "a partition spec needs at least one field (an unpartitioned table is a plain Lance \
             dataset)"
        );
    }
    let mut seen = HashSet::new();
    for f in &spec.fields {
        let id = f.field_id.as_str();
        if id.is_empty()
            || !id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return spec_err!(
                "partition field_id {id:?} must be non-empty and made of letters, digits, '_' \
                 and '-'"
            );
        }
        if RESERVED_FIELD_IDS.contains(&id) {
            return spec_err!(
                "partition field_id {id:?} is reserved (partitions() lists {}); choose another \
                 name",
                RESERVED_FIELD_IDS.join(", ")
            );
        }
        if !seen.insert(id) {
            return spec_err!("partition field_id {id:?} appears twice");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_unusable_names() {
        let s = |names: &[&str]| {
            Schema::new(
                names
                    .iter()
                    .map(|n| Field::new(*n, DataType::Int32, true))
                    .collect::<Vec<_>>(),
            )
        };
        assert!(check_column_names(&s(&["a", "b"])).is_ok());
        assert!(check_column_names(&s(&[""])).is_err());
        assert!(check_column_names(&s(&["a.b"])).is_err());
        assert!(check_column_names(&s(&["a", "a"])).is_err());
        let spec = |ids: &[&str]| {
            let fields: Vec<String> = ids
                .iter()
                .map(|i| {
                    format!(
                        r#"{{"field_id":"{i}","source_ids":[0],"transform":{{"type":"identity"}},"result_type":{{"type":"int32"}}}}"#
                    )
                })
                .collect();
            PartitionSpec::from_json(&format!(r#"{{"id":1,"fields":[{}]}}"#, fields.join(",")))
                .unwrap()
        };
        assert!(check_spec_fields(&spec(&["a"])).is_ok());
        assert!(check_spec_fields(&spec(&[])).is_err());
        assert!(check_spec_fields(&spec(&["rows"])).is_err());
        assert!(check_spec_fields(&spec(&["a$b"])).is_err());
        assert!(check_spec_fields(&spec(&["a", "a"])).is_err());
    }
}
