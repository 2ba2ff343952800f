//! Input alignment: every batch is matched to the namespace schema on its own (columns by
//! name, lossless casts only), and leaf tables are written with the namespace schema plus
//! the namespace field ids under their own metadata key.

use std::collections::HashSet;
use std::sync::Arc;

use crate::arrow::array::{new_null_array, Array, ArrayRef, RecordBatch, RecordBatchOptions};
use crate::arrow::datatypes::{DataType, Schema, SchemaRef};
use crate::conform::to_namespace_type;
use crate::error::{schema_err, Error, Result};
use crate::ns::leaf_io::leaf_schema;

/// Checks an input *schema* against the namespace schema before any row is read (for a
/// distributed write's driver): what [`align`] would refuse for every batch (an unknown or
/// repeated column, a missing non-nullable one, a type that does not cast), and, with
/// `typed_text`, a text column for a namespace column that is not text (its values would
/// only fail, if they do, inside the tasks: a caller that can cast upstream should).
///
/// # Errors
/// `SchemaMismatch` naming the column.
pub fn check_input_schema(input: &SchemaRef, ns: &Schema, typed_text: bool) -> Result<()> {
    align(
        &RecordBatch::new_empty(Arc::clone(input)),
        ns,
        &leaf_schema(ns),
    )?;
    if !typed_text {
        return Ok(());
    }
    let text =
        |t: &DataType| matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View);
    for f in input.fields() {
        let Ok(want) = ns.field_with_name(f.name()) else {
            continue;
        };
        if text(f.data_type()) && !text(want.data_type()) {
            return schema_err!(
                "column {:?} is text in the input and {} in the namespace: cast it before \
                 writing (in Spark: col({:?}).cast(...)), so that a value that is not a {} \
                 fails where it is, not inside the write's tasks",
                f.name(),
                want.data_type(),
                f.name(),
                want.data_type()
            );
        }
    }
    Ok(())
}

/// Aligns an input batch to the namespace schema (write schema rules): columns match by
/// name; an unknown column is an error; a missing nullable column is NULL, a missing
/// non-nullable one an error; types are cast when lossless, otherwise an error.
///
/// # Errors
/// `SchemaMismatch` naming the column.
pub fn align(batch: &RecordBatch, ns: &Schema, out_schema: &SchemaRef) -> Result<RecordBatch> {
    let mut seen = HashSet::with_capacity(batch.num_columns());
    for f in batch.schema().fields() {
        if !seen.insert(f.name().as_str()) {
            return schema_err!(
                "the input has two columns named {:?}; each column may appear once",
                f.name()
            );
        }
        if ns.field_with_name(f.name()).is_err() {
            return schema_err!(
                "column {:?} is not in the namespace schema (columns: {})",
                f.name(),
                ns.fields()
                    .iter()
                    .map(|f| f.name().as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    let rows = batch.num_rows();
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(ns.fields().len());
    for (f, out) in ns.fields().iter().zip(out_schema.fields()) {
        // The leaf's type: the namespace type with the field ids of struct children under
        // the leaf key.
        let col = match batch.column_by_name(f.name()) {
            Some(c) => to_namespace_type(c, out.data_type(), f.name())
                .map_err(|e| Error::SchemaMismatch(e.to_string()))?,
            None if f.is_nullable() => new_null_array(out.data_type(), rows),
            None => {
                return schema_err!(
                    "column {:?} is missing from the input and is not nullable",
                    f.name()
                )
            }
        };
        if !f.is_nullable() && col.null_count() > 0 {
            return schema_err!(
                "column {:?} is not nullable but the input has {} NULLs",
                f.name(),
                col.null_count()
            );
        }
        cols.push(col);
    }
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(out_schema),
        cols,
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )?)
}
