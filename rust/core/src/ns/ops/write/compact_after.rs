//! The compaction a write runs after its commit on the partitions it left fragmented (the
//! policy: `manifest::LEAF_MAX_FRAGMENTS_KEY`): what keeps a stream's micro-batches, one
//! small fragment each, from making every read of a partition open thousands of files. It
//! writes files of the namespace's compaction target (`manifest::TARGET_ROWS_PER_FILE_KEY`),
//! and rewrites only the newest files of similar sizes (`txn::compaction_tiers`), so that a
//! stream's growing file is not copied again at every compaction.

use crate::error::Result;
use crate::ns::infra::storage::Storage;
use crate::ns::ops::optimize::{optimize_partitions, OptimizeOptions, OptimizeSummary};

/// Compacts the partitions `fragmented` (object ids) in one commit of mode `strong`; `None`
/// when there are none. Maintenance after the commit point (`ops::after_commit`): the write
/// is visible whatever happens here, so an error (a lost race, a cleanup running) leaves the
/// partitions as they are, for a later write to compact, and is reported.
///
/// # Errors
/// `optimize()`'s errors.
pub(crate) async fn compact_fragmented(
    storage: &Storage,
    fragmented: &[String],
    strong: Option<bool>,
    concurrency: usize,
    max_attempts: u32,
) -> Result<Option<OptimizeSummary>> {
    if fragmented.is_empty() {
        return Ok(None);
    }
    let options = OptimizeOptions {
        filter: None,
        target_rows_per_file: None,
        min_files: 2,
        dry_run: false,
        strong,
        concurrency: concurrency.max(1),
        max_attempts,
    };
    Ok(Some(
        optimize_partitions(storage, fragmented, &options).await?,
    ))
}
