//! The index build after a write's or a merge's commit: the declared indexes of the
//! partitions it wrote are built again over their new rows ([`super::refresh`]), unless the
//! namespace property `lance_partitioned.indexes_on_write` is `false` (then `optimize()` does
//! it). Maintenance after the commit point (`ops::after_commit`): the change is visible
//! whatever happens here, so an error leaves the new rows unindexed (read without the index)
//! until `optimize()` or the next write, and is reported.

use std::collections::HashMap;

use crate::error::Result;
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::{declared_indexes, indexes_on_write};
use crate::ns::ops::index::refresh::{refresh_indexes, RefreshOptions};

use super::IndexRefresh;

/// Builds the declared indexes of the partitions `object_ids` again (see the module docs);
/// `None` when there was nothing to do.
///
/// # Errors
/// `InvalidArgument` for a malformed index property; the build's errors.
pub(crate) async fn index_after_commit(
    storage: &Storage,
    props: &HashMap<String, String>,
    object_ids: Vec<String>,
    concurrency: usize,
    max_attempts: u32,
) -> Result<Option<IndexRefresh>> {
    let declared = declared_indexes(props)?;
    if declared.is_empty() || object_ids.is_empty() || !indexes_on_write(props)? {
        return Ok(None);
    }
    let done = refresh_indexes(
        storage,
        &RefreshOptions {
            only: Some(object_ids),
            dropped: Vec::new(),
            concurrency: concurrency.max(1),
            max_attempts,
            dry_run: false,
        },
    )
    .await?;
    Ok(Some(done))
}
