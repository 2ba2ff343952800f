//! `repair()`: persisting the manifest columns another tool dropped (`manifest::dropped_columns`
//! rebuilds their values); the transaction layer's `txn::repair` commits them.

use crate::error::Result;
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::{dropped_columns, Snapshot};
use crate::ns::txn::repair::restore_columns;

/// Restores the manifest columns another tool dropped; returns their names (empty when
/// nothing was missing).
///
/// # Errors
/// `Corrupt` when a value cannot be recovered; `Lance` for I/O errors.
pub(crate) async fn repair(storage: &Storage) -> Result<Vec<String>> {
    let snap = Snapshot::load(storage, None).await?;
    let Some(batch) = dropped_columns(&snap)? else {
        return Ok(Vec::new());
    };
    restore_columns(&snap, batch).await?;
    Ok(snap.missing_columns.clone())
}
