//! The compaction a write runs after its commit on the partitions it left fragmented (the
//! policy: `manifest::LEAF_MAX_FRAGMENTS_KEY`): what keeps a stream's micro-batches, one
//! small fragment each, from making every read of a partition open thousands of files. It
//! writes files of the namespace's compaction target (`manifest::TARGET_ROWS_PER_FILE_KEY`),
//! and rewrites only the newest files of similar sizes (`txn::compaction_tiers`), so that a
//! stream's growing file is not copied again at every compaction.

use crate::ns::infra::storage::Storage;
use crate::ns::ops::optimize::{optimize_partitions, OptimizeOptions};
use crate::ns::write::options::{WriteOptions, WriteSummary};

/// Compacts `summary.fragmented` and counts them in `summary.compacted`; returns the
/// manifest version of the compaction's commit. Maintenance after the commit point: the
/// write is visible whatever happens here, so an error (a lost race, a cleanup running)
/// leaves the partitions as they are, for a later write to compact.
pub(crate) async fn compact_fragmented(
    storage: &Storage,
    summary: &mut WriteSummary,
    opts: &WriteOptions,
) -> Option<u64> {
    if summary.fragmented.is_empty() || summary.already_committed {
        return None;
    }
    let options = OptimizeOptions {
        filter: None,
        target_rows_per_file: None,
        min_files: 2,
        dry_run: false,
        strong: opts.strong,
        concurrency: opts.concurrency.max(1),
        max_attempts: opts.max_attempts,
    };
    let done = optimize_partitions(storage, &summary.fragmented, &options)
        .await
        .ok()?;
    summary.compacted = done.partitions;
    Some(done.manifest_version)
}
