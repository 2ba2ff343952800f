//! Field ids: every field of a namespace schema carries a `lance:field_id` (nested fields
//! too). Ids are assigned by the namespace, never reused (the largest id ever assigned is a
//! root property), and they are what matches a leaf column to a namespace column across
//! renames and drops. Leaves keep the id under their own key because Lance renumbers the
//! `lance:field_id`s it stores.
//!
//! This module depends on Arrow only, so the partition spec model and every part of the
//! namespace can use it.

use crate::arrow::datatypes::{DataType, Field, Schema};
use crate::error::{Error, Result};

/// The metadata key holding a field's id.
pub const FIELD_ID_KEY: &str = "lance:field_id";
/// Leaf field metadata key carrying the namespace field id (Lance renumbers its own ids).
pub const LEAF_FIELD_ID_KEY: &str = "lance_partitioned:field_id";
/// Root property holding the largest field id ever assigned.
pub const LAST_FIELD_ID_KEY: &str = "lance_partitioned.last_field_id";

/// The `lance:field_id` of a field, if it has a valid one.
pub fn field_id(f: &Field) -> Option<i32> {
    f.metadata().get(FIELD_ID_KEY)?.trim().parse().ok()
}

/// The field ids of `f` and of its struct children at every depth.
pub fn ids_within(f: &Field) -> Vec<i32> {
    fn walk(f: &Field, out: &mut Vec<i32>) {
        if let Some(id) = field_id(f) {
            out.push(id);
        }
        if let DataType::Struct(kids) = f.data_type() {
            for k in kids {
                walk(k, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(f, &mut out);
    out
}

/// The largest field id in `schema` (nested fields included), -1 without any.
pub fn max_field_id(schema: &Schema) -> i32 {
    schema
        .fields()
        .iter()
        .flat_map(|f| ids_within(f))
        .max()
        .unwrap_or(-1)
}

/// Assigns `lance:field_id`s to every field (nested ones too) that lacks one, continuing
/// after the largest id present; ids are never reused.
///
/// # Errors
/// `Spec` when two fields carry the same id.
pub fn assign_field_ids(schema: &Schema, floor: i32) -> Result<Schema> {
    fn assign(f: &Field, next: &mut i32) -> Field {
        let mut f = f.clone();
        if field_id(&f).is_none() {
            let mut md = f.metadata().clone();
            md.insert(FIELD_ID_KEY.to_string(), next.to_string());
            *next += 1;
            f = f.with_metadata(md);
        }
        if let DataType::Struct(children) = f.data_type() {
            let kids: Vec<Field> = children.iter().map(|c| assign(c, next)).collect();
            f = f.with_data_type(DataType::Struct(kids.into()));
        }
        f
    }
    let ids: Vec<i32> = schema.fields().iter().flat_map(|f| ids_within(f)).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::Spec(format!(
            "field id {} is used by more than one field",
            w[0]
        )));
    }
    let mut next = ids.iter().copied().max().map_or(0, |m| m + 1).max(floor);
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| assign(f, &mut next))
        .collect();
    Ok(Schema::new(fields).with_metadata(schema.metadata().clone()))
}
