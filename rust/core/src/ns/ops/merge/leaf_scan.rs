//! A partition as a row-level change reads it: opened at the version the change read, its
//! rows streamed with the namespace columns the change needs (as namespace names and
//! types) and each row's address (and id, when the leaf has stable row ids).

use std::collections::HashMap;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use lance::dataset::Dataset;

use crate::arrow::array::{AsArray, RecordBatch, RecordBatchOptions};
use crate::arrow::datatypes::{Field, Schema, SchemaRef, UInt64Type};
use crate::error::{Error, Result};
use crate::ns::infra::storage::Storage;
use crate::ns::leaf_io::read_rules::{adapt, leaf_columns};
use crate::ns::manifest::Leaf;

/// One partition opened for a row-level change.
pub(crate) struct LeafScan {
    /// The leaf at the version read.
    pub(crate) ds: Arc<Dataset>,
    /// Namespace column name to the leaf's stored name (for columns the leaf has).
    pub(crate) map: HashMap<String, String>,
    stable: bool,
}

/// Per row of a scanned batch: its address, and its id when the leaf has stable row ids
/// (rows are then fetched by id, not address).
pub(crate) struct RowRefs {
    pub(crate) addr: Vec<u64>,
    pub(crate) id: Option<Vec<u64>>,
}

impl LeafScan {
    /// Opens `leaf` at the version the snapshot reads, for namespace `ns`.
    ///
    /// # Errors
    /// `Lance` for I/O errors.
    pub(crate) async fn open(storage: &Storage, leaf: &Leaf, ns: &Schema) -> Result<Self> {
        let ds = storage.open(&leaf.location, leaf.read_version).await?;
        let map = leaf_columns(&Schema::from(ds.schema()), ns);
        let stable = ds.manifest().uses_stable_row_ids();
        Ok(Self { ds, map, stable })
    }

    /// The rows with the namespace columns of `read` (NULL where the leaf lacks one: added
    /// after it was written) and their references.
    ///
    /// # Errors
    /// `Lance` for I/O errors; `SchemaMismatch` when a column cannot be read as the namespace
    /// type.
    pub(crate) async fn rows<'a>(
        &'a self,
        read: &'a SchemaRef,
    ) -> Result<impl Stream<Item = Result<(RecordBatch, RowRefs)>> + 'a> {
        let mut wanted: Vec<String> = read
            .fields()
            .iter()
            .filter_map(|f| self.map.get(f.name()).cloned())
            .collect();
        if wanted.is_empty() {
            // None of the columns exist in this partition: read one column for the row
            // addresses; every read column is NULL.
            if let Some(f) = self.ds.schema().fields.first() {
                wanted.push(f.name.clone());
            }
        }
        let mut scanner = self.ds.scan();
        scanner.project(&wanted)?;
        scanner.with_row_address();
        if self.stable {
            scanner.with_row_id();
        }
        let stream = scanner.try_into_stream().await?;
        Ok(stream.map(move |batch| {
            let batch = batch?;
            let target = adapt(&batch, read, &self.map)?;
            let refs = RowRefs {
                addr: system_column(&batch, lance_core::ROW_ADDR)?,
                id: if self.stable {
                    Some(system_column(&batch, lance_core::ROW_ID)?)
                } else {
                    None
                },
            };
            Ok((target, refs))
        }))
    }

    /// The target rows `t` (some columns read) at `refs` (row addresses or ids) completed
    /// with every namespace column of `ns` they lack, read for them alone.
    pub(crate) async fn complete(
        &self,
        ns: &Schema,
        t: RecordBatch,
        refs: &[u64],
    ) -> Result<RecordBatch> {
        let missing: Vec<Field> = ns
            .fields()
            .iter()
            .filter(|f| t.column_by_name(f.name()).is_none())
            .map(|f| f.as_ref().clone())
            .collect();
        if missing.is_empty() {
            return Ok(t);
        }
        let out = Arc::new(Schema::new(missing));
        let stored: Vec<String> = out
            .fields()
            .iter()
            .filter_map(|f| self.map.get(f.name()).cloned())
            .collect();
        let fetched = if stored.is_empty() {
            RecordBatch::try_new_with_options(
                Arc::new(Schema::empty()),
                vec![],
                &RecordBatchOptions::new().with_row_count(Some(t.num_rows())),
            )?
        } else {
            let projection = self.ds.schema().project(&stored)?;
            self.ds.take_rows(refs, projection).await?
        };
        if fetched.num_rows() != t.num_rows() {
            return Err(Error::Internal(format!(
                "fetched {} rows for {} updated rows",
                fetched.num_rows(),
                t.num_rows()
            )));
        }
        let filled = adapt(&fetched, &out, &self.map)?;
        let mut fields: Vec<Field> = t
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        let mut cols = t.columns().to_vec();
        fields.extend(out.fields().iter().map(|f| f.as_ref().clone()));
        cols.extend(filled.columns().iter().cloned());
        Ok(RecordBatch::try_new_with_options(
            Arc::new(Schema::new(fields)),
            cols,
            &RecordBatchOptions::new().with_row_count(Some(t.num_rows())),
        )?)
    }
}

/// A system column (`_rowaddr`, `_rowid`) of a scanned batch.
pub(crate) fn system_column(batch: &RecordBatch, name: &str) -> Result<Vec<u64>> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_primitive_opt::<UInt64Type>())
        .map(|c| c.values().to_vec())
        .ok_or_else(|| Error::Internal(format!("the scan returned no {name}")))
}
