//! Compaction of `__manifest`'s own fragments after a commit (policy and rationale:
//! `manifest::compact`, docs/design.md "Manifest compaction").

use lance::dataset::optimize::{compact_files, CompactionOptions};
use lance::dataset::Dataset;

/// Compacts `ds`, the manifest version a commit just made, when it holds more than `limit`
/// fragments (never when `limit` is 0). Returns whether a compaction committed. Best effort:
/// the commit is already visible, so a compaction that loses a race or fails leaves the
/// manifest as it was (the next commit over the limit tries again).
pub(crate) async fn compact_if_fragmented(mut ds: Dataset, limit: usize) -> bool {
    if limit == 0 || ds.get_fragments().len() <= limit {
        return false;
    }
    let options = CompactionOptions {
        // The manifest is small: one task, the rest of the machine keeps writing.
        num_threads: Some(1),
        materialize_deletions_threshold: 0.0,
        ..Default::default()
    };
    compact_files(&mut ds, options, None)
        .await
        .is_ok_and(|m| m.fragments_removed > 0)
}
