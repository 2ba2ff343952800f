//! The merge source, held in memory: its namespace columns conformed to the namespace types
//! (as a write conforms them), its key columns indexed. A source row whose key has a NULL
//! matches nothing (as in SQL); two source rows with one key are refused, naming the key.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::arrow::array::{
    make_array, make_comparator, Array, ArrayRef, AsArray, RecordBatch, UInt32Array,
};
use crate::arrow::buffer::NullBuffer;
use crate::arrow::compute::{concat_batches, take_record_batch, SortOptions};
use crate::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use crate::arrow::row::{RowConverter, Rows, SortField};
use crate::conform::to_namespace_type;
use crate::error::{Error, Result};

use super::key_index::SourceIndex;

/// A hash map over encoded keys with a fast hasher (foldhash, seeded per map): a merge looks
/// up every target row's key in the source's index.
pub(crate) type KeyIndex<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// One key column: a namespace column or a child of a struct column.
#[derive(Debug, Clone)]
pub(crate) struct KeyPath {
    /// As the user named it.
    pub(crate) name: String,
    /// The namespace column, then the struct children down to the key.
    pub(crate) path: Vec<String>,
    /// The key's type (the namespace's).
    pub(crate) data_type: DataType,
    /// The key's field id (from the namespace schema).
    pub(crate) field_id: Option<i32>,
}

impl KeyPath {
    /// The namespace column the key is in.
    pub(crate) fn column(&self) -> &str {
        &self.path[0]
    }
}

/// Resolves the key names against the namespace schema: a column name, or `a.b` for the child
/// `b` of the struct column `a` (a column whose own name has a dot wins).
///
/// # Errors
/// `InvalidArgument` for an unknown or repeated key, or one of a type keys cannot have.
pub(crate) fn key_paths(on: &[String], ns: &Schema) -> Result<Vec<KeyPath>> {
    let mut out: Vec<KeyPath> = Vec::with_capacity(on.len());
    for name in on {
        if out.iter().any(|k| &k.name == name) {
            return Err(Error::InvalidArgument(format!(
                "key column {name:?} is named twice in on=[...]"
            )));
        }
        let (field, path) = match ns.field_with_name(name) {
            Ok(f) => (f.clone(), vec![name.clone()]),
            Err(_) => resolve_nested(name, ns)?,
        };
        if matches!(
            field.data_type(),
            DataType::List(_)
                | DataType::LargeList(_)
                | DataType::FixedSizeList(..)
                | DataType::Map(..)
                | DataType::Struct(_)
        ) {
            return Err(Error::InvalidArgument(format!(
                "key column {name:?} is a {}; a key is a scalar column (name a struct's \
                 child as \"{name}.child\")",
                field.data_type()
            )));
        }
        out.push(KeyPath {
            name: name.clone(),
            path,
            data_type: field.data_type().clone(),
            field_id: crate::field_ids::field_id(&field),
        });
    }
    Ok(out)
}

fn resolve_nested(name: &str, ns: &Schema) -> Result<(Field, Vec<String>)> {
    let unknown = || {
        Error::InvalidArgument(format!(
            "key column {name:?} is not in the namespace schema (columns: {})",
            ns.fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    };
    let mut parts = name.split('.');
    let first = parts.next().ok_or_else(unknown)?;
    let mut field = ns.field_with_name(first).map_err(|_| unknown())?.clone();
    let mut path = vec![first.to_string()];
    for p in parts {
        let DataType::Struct(kids) = field.data_type() else {
            return Err(unknown());
        };
        let (_, kid) = kids.find(p).ok_or_else(unknown)?;
        field = kid.as_ref().clone();
        path.push(p.to_string());
    }
    Ok((field, path))
}

/// The key's values in `batch` (namespace column names): NULL where the key or any struct
/// above it is NULL.
///
/// # Errors
/// `SchemaMismatch` when the batch lacks the key's column.
pub(crate) fn key_column(batch: &RecordBatch, key: &KeyPath) -> Result<ArrayRef> {
    let mut col = batch.column_by_name(key.column()).cloned().ok_or_else(|| {
        Error::SchemaMismatch(format!("the source has no key column {:?}", key.name))
    })?;
    for child in &key.path[1..] {
        let s = col.as_struct_opt().ok_or_else(|| {
            Error::SchemaMismatch(format!("key {:?}: {child:?} is not in a struct", key.name))
        })?;
        let parent_nulls = s.nulls().cloned();
        let kid = s.column_by_name(child).cloned().ok_or_else(|| {
            Error::SchemaMismatch(format!("key {:?}: no struct child {child:?}", key.name))
        })?;
        col = match NullBuffer::union(parent_nulls.as_ref(), kid.nulls()) {
            Some(nulls) if Some(&nulls) != kid.nulls() => {
                make_array(kid.to_data().into_builder().nulls(Some(nulls)).build()?)
            }
            _ => kid,
        };
    }
    Ok(col)
}

/// Encodes the keys of `batch` as comparable rows; `valid[i]` is false where a key is NULL.
pub(crate) struct KeyRows {
    pub(crate) rows: Rows,
    pub(crate) valid: Vec<bool>,
}

/// Encodes keys of batches (source and target) the same way.
pub(crate) struct KeyEncoder {
    keys: Vec<KeyPath>,
    converter: RowConverter,
}

impl KeyEncoder {
    /// An encoder of `keys`.
    ///
    /// # Errors
    /// `InvalidArgument` for a key type rows cannot encode.
    pub(crate) fn new(keys: Vec<KeyPath>) -> Result<Self> {
        let fields = keys
            .iter()
            .map(|k| SortField::new(k.data_type.clone()))
            .collect();
        let converter = RowConverter::new(fields).map_err(|e| {
            Error::InvalidArgument(format!("these key columns cannot be matched on: {e}"))
        })?;
        Ok(Self { keys, converter })
    }

    /// The key columns.
    pub(crate) fn keys(&self) -> &[KeyPath] {
        &self.keys
    }

    /// The keys of `batch` (namespace column names and types).
    ///
    /// # Errors
    /// `SchemaMismatch` when a key column is missing; `Arrow` when encoding fails.
    pub(crate) fn encode(&self, batch: &RecordBatch) -> Result<KeyRows> {
        let cols = self
            .keys
            .iter()
            .map(|k| key_column(batch, k))
            .collect::<Result<Vec<_>>>()?;
        let mut valid = vec![true; batch.num_rows()];
        for c in &cols {
            if let Some(n) = c.nulls() {
                for (i, v) in valid.iter_mut().enumerate() {
                    *v &= n.is_valid(i);
                }
            }
        }
        let rows = self.converter.convert_columns(&cols)?;
        Ok(KeyRows { rows, valid })
    }
}

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
