//! The merge's key columns: resolved against the namespace schema (a column, or a struct's
//! child), read from a batch with the NULLs of the structs above them, and encoded the same
//! way for source and target.

use std::collections::HashMap;

use crate::arrow::array::{make_array, Array, ArrayRef, AsArray, RecordBatch};
use crate::arrow::buffer::NullBuffer;
use crate::arrow::datatypes::{DataType, Field, Schema};
use crate::arrow::row::{RowConverter, Rows, SortField};
use crate::error::{Error, Result};

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
