//! Compaction of `__manifest`'s own fragments after a commit (policy and rationale:
//! `manifest::compact`, docs/design.md "Manifest compaction").

use lance::dataset::optimize::{compact_files, CompactionOptions};
use lance::dataset::Dataset;

use crate::ns::manifest::{kept_base, ManifestFragment};

/// Compacts `ds`, the manifest version a commit just made, when it holds more than `limit`
/// fragments (never when `limit` is 0): the fragments other than the base `kept_base` picks
/// are merged into one, or every fragment when it picks none. Returns whether a compaction
/// committed. Best effort: the commit is already visible, so a compaction that loses a race
/// or fails leaves the manifest as it was (the next commit over the limit tries again).
pub(crate) async fn compact_if_fragmented(mut ds: Dataset, limit: usize) -> bool {
    let fragments = ds.get_fragments();
    if limit == 0 || fragments.len() <= limit {
        return false;
    }
    let shapes: Vec<ManifestFragment> = fragments
        .iter()
        .map(|f| {
            let meta = f.metadata();
            // A deletion file that does not record its count leaves the size unknown.
            let deleted = match &meta.deletion_file {
                None => Some(0),
                Some(d) => d.num_deleted_rows,
            };
            ManifestFragment {
                id: meta.id,
                rows: meta.physical_rows.zip(deleted),
            }
        })
        .collect();
    // An excluded fragment bounds Lance's plan: the fragments on each side of it are merged
    // apart, so a base between commits' fragments leaves three (`kept_base` needs a limit of
    // at least 3).
    let excluded_fragment_ids = kept_base(&shapes, limit)
        .and_then(|id| u32::try_from(id).ok())
        .into_iter()
        .collect();
    let options = CompactionOptions {
        // The manifest is small: one task, the rest of the machine keeps writing.
        num_threads: Some(1),
        materialize_deletions_threshold: 0.0,
        excluded_fragment_ids,
        ..Default::default()
    };
    compact_files(&mut ds, options, None)
        .await
        .is_ok_and(|m| m.fragments_removed > 0)
}
