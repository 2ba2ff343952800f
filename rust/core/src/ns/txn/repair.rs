//! `repair()`: persisting the manifest columns another tool dropped, as one Lance commit
//! that adds them back (`manifest::dropped_columns` rebuilds their values); the root
//! properties are kept.

use crate::arrow::array::RecordBatchIterator;
use crate::error::Result;
use crate::ns::manifest::{dropped_columns, Snapshot};
use crate::ns::storage::Storage;

/// Restores the manifest columns another tool dropped; returns their names (empty when
/// nothing was missing).
///
/// # Errors
/// `Corrupt` when a value cannot be recovered; `Lance` for I/O errors.
pub async fn repair(storage: &Storage) -> Result<Vec<String>> {
    use lance::dataset::NewColumnTransform;
    let snap = Snapshot::load(storage, None).await?;
    let Some(batch) = dropped_columns(&snap)? else {
        return Ok(Vec::new());
    };
    let schema = batch.schema();
    let reader = RecordBatchIterator::new(vec![Ok(batch)], schema);
    let mut ds = (*snap.dataset).clone();
    ds.add_columns(NewColumnTransform::Reader(Box::new(reader)), None, None)
        .await?;
    Ok(snap.missing_columns.clone())
}
