//! The index build a write runs after its commit: the declared indexes of the partitions it
//! wrote are built again over their new rows (`ops::index`), unless the namespace property
//! `lance_partitioned.indexes_on_write` is `false` (then `optimize()` does it).

use std::collections::HashMap;

use crate::ns::infra::storage::Storage;
use crate::ns::manifest::{declared_indexes, indexes_on_write};
use crate::ns::ops::index::refresh::{refresh_indexes, RefreshOptions};
use crate::ns::write::options::{WriteOptions, WriteSummary};

/// Builds the declared indexes of `summary.touched` again and counts the partitions in
/// `summary.indexed`; returns the manifest version of the build's commit. Maintenance after
/// the commit point: the write is visible whatever happens here, so an error leaves the new
/// rows unindexed (read without the index) until `optimize()` or the next write.
pub(crate) async fn index_touched(
    storage: &Storage,
    summary: &mut WriteSummary,
    opts: &WriteOptions,
    props: &HashMap<String, String>,
) -> Option<u64> {
    let declared = declared_indexes(props).ok()?;
    if declared.is_empty() || summary.touched.is_empty() || !indexes_on_write(props).ok()? {
        return None;
    }
    let only = summary
        .touched
        .iter()
        .map(|t| t.object_id.clone())
        .collect();
    let done = refresh_indexes(
        storage,
        &RefreshOptions {
            only: Some(only),
            dropped: Vec::new(),
            concurrency: opts.concurrency.max(1),
            max_attempts: opts.max_attempts,
            dry_run: false,
        },
    )
    .await
    .ok()?;
    summary.indexed = done.partitions;
    Some(done.manifest_version)
}
