//! The merge source, held in memory: its namespace columns conformed to the namespace types
//! (as a write conforms them), its key columns indexed. A source row whose key has a NULL
//! matches nothing (as in SQL); two source rows with one key are refused, naming the key.

use std::collections::HashSet;
use std::sync::Arc;

use crate::arrow::array::{make_comparator, RecordBatch, UInt32Array};
use crate::arrow::compute::{concat_batches, take_record_batch, SortOptions};
use crate::arrow::datatypes::{Field, Schema, SchemaRef};
use crate::conform::to_namespace_type;
use crate::error::{Error, Result};

use super::key_index::SourceIndex;
use super::keys::{key_column, KeyEncoder, KeyIndex, KeyPath};

/// The merge source: see the module docs.
pub(crate) struct Source {
    /// Every source row: namespace columns in namespace types, then the extra columns.
    pub(crate) batch: RecordBatch,
    /// Which of `batch`'s columns are namespace columns.
    pub(crate) ns_columns: HashSet<String>,
    /// Key -> source row, for rows without a NULL key.
    pub(crate) index: SourceIndex,
}

impl Source {
    /// Conforms and indexes the source. Columns outside the namespace schema are refused
    /// unless `extra` names them (columns a condition or an update reads). With
    /// `keep_last_by`, of the rows sharing a key only the one with the greatest value of that
    /// column stays (the later row on a tie; NULL is the least).
    ///
    /// # Errors
    /// `SchemaMismatch` for an unknown, repeated or unconvertible column or a missing key;
    /// `DuplicateKey` for two rows with one key (without `keep_last_by`).
    pub(crate) fn new(
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
        ns: &Schema,
        encoder: &KeyEncoder,
        extra: &HashSet<String>,
        keep_last_by: Option<&str>,
    ) -> Result<Self> {
        let raw = concat_batches(&schema, &batches)?;
        drop(batches);
        let mut seen = HashSet::new();
        let mut fields = Vec::with_capacity(raw.num_columns());
        let mut cols = Vec::with_capacity(raw.num_columns());
        let mut ns_columns = HashSet::new();
        for (f, c) in schema.fields().iter().zip(raw.columns()) {
            if !seen.insert(f.name().clone()) {
                return Err(Error::SchemaMismatch(format!(
                    "the source has two columns named {:?}",
                    f.name()
                )));
            }
            match ns.field_with_name(f.name()) {
                Ok(want) => {
                    let conformed = to_namespace_type(c, want.data_type(), f.name())
                        .map_err(|e| Error::SchemaMismatch(e.to_string()))?;
                    fields.push(Field::new(f.name(), want.data_type().clone(), true));
                    cols.push(conformed);
                    ns_columns.insert(f.name().clone());
                }
                Err(_) if extra.contains(f.name()) => {
                    fields.push(f.as_ref().clone().with_nullable(true));
                    cols.push(Arc::clone(c));
                }
                Err(_) => {
                    return Err(Error::SchemaMismatch(format!(
                        "source column {:?} is not in the namespace schema (columns: {}); a \
                         source column outside it may only be read by a condition or an \
                         update expression",
                        f.name(),
                        ns.fields()
                            .iter()
                            .map(|f| f.name().as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )))
                }
            }
        }
        let batch = RecordBatch::try_new_with_options(
            Arc::new(Schema::new(fields)),
            cols,
            &crate::arrow::array::RecordBatchOptions::new().with_row_count(Some(raw.num_rows())),
        )?;
        let batch = match keep_last_by {
            Some(seq) => last_per_key(batch, encoder, seq)?,
            None => batch,
        };
        let index = match SourceIndex::build(encoder, &batch)? {
            Ok(index) => index,
            Err((first, second)) => return Err(duplicate(&batch, encoder.keys(), first, second)),
        };
        Ok(Self {
            batch,
            ns_columns,
            index,
        })
    }

    /// Rows in the source.
    pub(crate) fn rows(&self) -> usize {
        self.batch.num_rows()
    }
}

/// The rows of `batch` that are the last change of their key by the column `seq` (rows with
/// a NULL key all stay: they match nothing).
fn last_per_key(batch: RecordBatch, encoder: &KeyEncoder, seq: &str) -> Result<RecordBatch> {
    let col = batch.column_by_name(seq).ok_or_else(|| {
        Error::SchemaMismatch(format!("the source has no sequence column {seq:?}"))
    })?;
    let cmp = make_comparator(col.as_ref(), col.as_ref(), SortOptions::default())?;
    let keys = encoder.encode(&batch)?;
    let mut last: KeyIndex<&[u8], usize> =
        KeyIndex::with_capacity_and_hasher(batch.num_rows(), Default::default());
    let mut keep: Vec<u32> = Vec::new();
    for i in 0..batch.num_rows() {
        if !keys.valid[i] {
            keep.push(i as u32);
            continue;
        }
        let slot = last.entry(keys.rows.row(i).data()).or_insert(i);
        if cmp(i, *slot) != std::cmp::Ordering::Less {
            *slot = i;
        }
    }
    keep.extend(last.into_values().map(|i| i as u32));
    keep.sort_unstable();
    Ok(take_record_batch(&batch, &UInt32Array::from(keep))?)
}

/// The error for source rows `a` and `b` sharing a key.
fn duplicate(batch: &RecordBatch, keys: &[KeyPath], a: usize, b: usize) -> Error {
    let shown: Vec<String> = keys
        .iter()
        .map(|k| {
            let v = key_column(batch, k)
                .ok()
                .and_then(|c| {
                    crate::arrow::util::display::array_value_to_string(c.as_ref(), b).ok()
                })
                .unwrap_or_else(|| "?".into());
            format!("{} = {v}", k.name)
        })
        .collect();
    Error::DuplicateKey(format!(
        "source rows {a} and {b} have the same key ({}); a merge takes one source row per \
         key (apply_changes keeps the last change per key by sequence_by)",
        shown.join(", ")
    ))
}
