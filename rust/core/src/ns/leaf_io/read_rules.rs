//! The read rules: how a leaf written under any schema version reads as the namespace
//! schema. Columns are matched by field id (a leaf column without one, written by another
//! tool, by name); the namespace type wins and is cast to; a column missing from a leaf reads
//! as NULL; a leaf column unknown to the namespace is ignored; an impossible cast is an error.
//! Writers use the same rules to rewrite a partition written under an older schema.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::arrow::array::{new_null_array, ArrayRef, RecordBatch, RecordBatchOptions};
use crate::arrow::datatypes::{Schema, SchemaRef};
use crate::conform::to_namespace_type;
use crate::error::{Error, Result};
use crate::field_ids::{field_id, LEAF_FIELD_ID_KEY};

/// How a leaf column maps to a namespace column.
pub(crate) fn leaf_columns(leaf: &Schema, ns: &Schema) -> HashMap<String, String> {
    // namespace name -> leaf name. A leaf column that carries a field id belongs to that id
    // only: a dropped column's data never comes back under a new column of the same name,
    // and a renamed column's old name never feeds a new column that took it. Only leaf
    // columns without an id (written by another tool) are matched by name.
    let mut by_id: HashMap<i32, String> = HashMap::new();
    let mut unnumbered: HashSet<&str> = HashSet::new();
    for f in leaf.fields() {
        match f
            .metadata()
            .get(LEAF_FIELD_ID_KEY)
            .and_then(|s| s.parse().ok())
        {
            Some(id) => {
                by_id.insert(id, f.name().clone());
            }
            None => {
                unnumbered.insert(f.name().as_str());
            }
        }
    }
    let mut out = HashMap::new();
    for f in ns.fields() {
        let by_fid = field_id(f).and_then(|id| by_id.get(&id).cloned());
        let name = by_fid.or_else(|| {
            unnumbered
                .contains(f.name().as_str())
                .then(|| f.name().clone())
        });
        if let Some(n) = name {
            out.insert(f.name().clone(), n);
        }
    }
    out
}

/// Adapts a leaf batch to `out` (namespace fields): rename, cast, fill NULLs.
pub(crate) fn adapt(
    batch: &RecordBatch,
    out: &SchemaRef,
    map: &HashMap<String, String>,
) -> Result<RecordBatch> {
    let rows = batch.num_rows();
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(out.fields().len());
    for f in out.fields() {
        let col = match map.get(f.name()).and_then(|l| batch.column_by_name(l)) {
            Some(c) => to_namespace_type(c, f.data_type(), f.name()).map_err(|e| {
                Error::SchemaMismatch(format!(
                    "a partition's column cannot be read as the namespace type: {e}"
                ))
            })?,
            None => new_null_array(f.data_type(), rows),
        };
        cols.push(col);
    }
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(out),
        cols,
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )?)
}

/// Whether a leaf stored with `leaf` (Arrow schema of the Lance dataset) has exactly the
/// columns of the namespace's leaf schema `current` (names, types, field ids, nullability).
pub fn leaf_is_current(leaf: &Schema, current: &Schema) -> bool {
    let key = LEAF_FIELD_ID_KEY;
    leaf.fields().len() == current.fields().len()
        && leaf.fields().iter().zip(current.fields()).all(|(a, b)| {
            a.name() == b.name()
                && a.data_type() == b.data_type()
                && a.is_nullable() == b.is_nullable()
                && a.metadata().get(key) == b.metadata().get(key)
        })
}
