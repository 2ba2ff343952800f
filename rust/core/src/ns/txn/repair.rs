//! The commit of `repair()` ([`crate::ns::ops::repair`]): the manifest columns another tool
//! dropped, added back as one Lance commit; the root properties are kept.

use crate::arrow::array::{RecordBatch, RecordBatchIterator};
use crate::error::Result;
use crate::ns::manifest::Snapshot;

/// Adds the columns of `batch` (the rebuilt values of every manifest row) to the manifest at
/// `snap`.
///
/// # Errors
/// `Lance` for I/O errors.
pub(crate) async fn restore_columns(snap: &Snapshot, batch: RecordBatch) -> Result<()> {
    use lance::dataset::NewColumnTransform;
    let schema = batch.schema();
    let reader = RecordBatchIterator::new(vec![Ok(batch)], schema);
    let mut ds = (*snap.dataset).clone();
    ds.add_columns(NewColumnTransform::Reader(Box::new(reader)), None, None)
        .await?;
    Ok(())
}
