//! The compaction policies applied after commits: of `__manifest`'s own fragments (the
//! compaction itself is the transaction layer's: `txn::manifest_compact`), and of the
//! partitions a write leaves with many small fragments ([`leaf_max_fragments`]).
//!
//! Every manifest commit (a Lance `merge_insert`) adds a fragment to `__manifest` and marks
//! the rows it replaced as deleted in older ones, so a manifest committed to N times holds N
//! fragments, and loading it (what every commit, open and read does first) grows with N. After
//! a commit leaves more fragments than the namespace's limit
//! ([`MAX_FRAGMENTS_KEY`], default [`DEFAULT_MAX_FRAGMENTS`]; `0` turns it off), the
//! committing process compacts it (two manifest versions: Lance reserves the new fragments'
//! ids, then commits a `Rewrite`; `history()` names both `compact_manifest`). It merges the
//! fragments other than the largest, the base, into one, and rewrites the base too only once
//! those and the base's deleted rows pass a quarter of it ([`kept_base`]), so a compaction of
//! a namespace of many partitions rewrites its recent commits' rows, not all of them. The
//! rows, the root properties and every older version are unchanged (`as_of` reads of
//! retained versions still read their own files, until `expire()` removes them).
//!
//! It is maintenance, not a change: a commit that lands first wins (Lance refuses the
//! rewrite, and the next commit over the limit tries again), and a commit planned before the
//! rewrite conflicts with it and is planned again by `commit_manifest`'s retry loop.

use std::collections::HashMap;

use crate::error::{Error, Result};

/// Root property: the most fragments a commit leaves in `__manifest` before it compacts it.
pub const MAX_FRAGMENTS_KEY: &str = "lance_partitioned.manifest.max_fragments";

/// The limit when [`MAX_FRAGMENTS_KEY`] is not set.
pub const DEFAULT_MAX_FRAGMENTS: usize = 8;

/// The limit the root properties `props` set.
///
/// # Errors
/// `InvalidArgument` when the property is not a whole number.
pub fn max_fragments(props: &HashMap<String, String>) -> Result<usize> {
    whole_number(
        props,
        MAX_FRAGMENTS_KEY,
        DEFAULT_MAX_FRAGMENTS,
        "never compact the manifest",
    )
}

/// A fragment of `__manifest` as the compaction policy sees it: its Lance id and the rows
/// its file holds and those marked deleted (`None` when the manifest does not record either).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ManifestFragment {
    pub id: u64,
    pub rows: Option<(usize, usize)>,
}

/// The share of the base fragment's rows past which a compaction rewrites the base too:
/// when the rows of the other fragments and those deleted in the base come to more than
/// `1 / FULL_REWRITE_DIVISOR` of the base's.
pub const FULL_REWRITE_DIVISOR: usize = 4;

/// The fragment a compaction of `__manifest` leaves as it is, `None` when it rewrites every
/// fragment into one.
///
/// The base is the fragment whose file holds the most rows (after a full rewrite, the only
/// one). A commit touches a few partitions, so most of the manifest's rows stay in the base
/// for many commits; rewriting them every time the limit is passed is the cost that grows
/// with the namespace. So a compaction merges the other fragments (the recent commits' and
/// the previous compaction's) into one beside the base, and rewrites the base too only when
/// those fragments' rows and the rows deleted in the base pass a quarter of the base's: the
/// rows rewritten per compaction stay a bounded share of what a full rewrite costs, and the
/// deleted rows a load of the manifest skips stay under a quarter of the base. Under a
/// `limit` of 3 fragments it rewrites all: the merged fragments on each side of the base and
/// the base would still be over it.
pub fn kept_base(fragments: &[ManifestFragment], limit: usize) -> Option<u64> {
    if fragments.len() < 2 || limit < 3 {
        return None;
    }
    // A fragment of unknown size: nothing to weigh, rewrite all.
    let sized: Vec<(u64, usize, usize)> = fragments
        .iter()
        .map(|f| f.rows.map(|(rows, deleted)| (f.id, rows, deleted)))
        .collect::<Option<_>>()?;
    let total = sized
        .iter()
        .fold(0usize, |n, &(_, rows, _)| n.saturating_add(rows));
    let &(id, rows, deleted) = sized.iter().max_by_key(|&&(_, rows, _)| rows)?;
    let churn = total.saturating_sub(rows).saturating_add(deleted);
    (churn.saturating_mul(FULL_REWRITE_DIVISOR) <= rows).then_some(id)
}

/// Root property: how many fragments more than its rows need a partition may hold after a
/// write before the writing process compacts it (`0`: never). Micro-batches append one small
/// fragment each; without compaction a partition's reads open every one of them.
///
/// After a commit, each partition the write changed whose new version holds more than
/// `ceil(rows / target) + limit` fragments is compacted into files of `target` rows
/// ([`TARGET_ROWS_PER_FILE_KEY`]), size-tiered (only its newest files of similar sizes, see
/// `txn::compaction_tiers`), in one more manifest commit. The write is committed before: a compaction that
/// fails or loses a race leaves it as it is, and a later write tries again.
pub const LEAF_MAX_FRAGMENTS_KEY: &str = "lance_partitioned.partition.max_extra_fragments";

/// The limit when [`LEAF_MAX_FRAGMENTS_KEY`] is not set.
pub const DEFAULT_LEAF_MAX_FRAGMENTS: usize = 32;

/// The limit the root properties `props` set on a partition's extra fragments.
///
/// # Errors
/// `InvalidArgument` when the property is not a whole number.
pub fn leaf_max_fragments(props: &HashMap<String, String>) -> Result<usize> {
    whole_number(
        props,
        LEAF_MAX_FRAGMENTS_KEY,
        DEFAULT_LEAF_MAX_FRAGMENTS,
        "fragments (0: never compact after a write)",
    )
}

/// Root property: the rows of the files the compaction after a write writes, and of those
/// `optimize()` writes when it is given no `target_rows_per_file` (unset:
/// `write::options::MAX_ROWS_PER_FILE`, see `write::options::compaction_target`). Column
/// statistics are kept per compacted group of files, so a smaller target keeps a stream's
/// partition prunable by time: a run of micro-batches compacted into one file of a million
/// rows spans every hour they held.
pub const TARGET_ROWS_PER_FILE_KEY: &str = "lance_partitioned.partition.target_rows_per_file";

/// The compaction target the root properties `props` set, `None` when unset (see
/// [`TARGET_ROWS_PER_FILE_KEY`]).
///
/// # Errors
/// `InvalidArgument` when the property is not a positive whole number.
pub fn target_rows_per_file(props: &HashMap<String, String>) -> Result<Option<usize>> {
    if !props.contains_key(TARGET_ROWS_PER_FILE_KEY) {
        return Ok(None);
    }
    match whole_number(props, TARGET_ROWS_PER_FILE_KEY, 0, "rows (at least 1)")? {
        0 => Err(Error::InvalidArgument(format!(
            "{TARGET_ROWS_PER_FILE_KEY} must be a positive whole number of rows, not 0"
        ))),
        n => Ok(Some(n)),
    }
}

/// Whether a partition holding `rows` rows in `fragments` fragments is past `limit` (see
/// [`LEAF_MAX_FRAGMENTS_KEY`]) when a fragment holds up to `target_rows` rows.
pub fn too_fragmented(rows: u64, fragments: u64, limit: usize, target_rows: u64) -> bool {
    let needed = rows.div_ceil(target_rows.max(1));
    limit > 0 && fragments > needed + limit as u64
}

/// The whole number the root property `key` holds (`default` when unset); `what` names its
/// unit and what `0` means, for the error.
///
/// # Errors
/// `InvalidArgument` when the property is not a whole number.
pub(super) fn whole_number(
    props: &HashMap<String, String>,
    key: &str,
    default: usize,
    what: &str,
) -> Result<usize> {
    match props.get(key) {
        None => Ok(default),
        Some(v) => v.trim().parse().map_err(|_| {
            Error::InvalidArgument(format!("{key} must be a whole number of {what}, not {v:?}"))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frag(id: u64, rows: usize, deleted: usize) -> ManifestFragment {
        ManifestFragment {
            id,
            rows: Some((rows, deleted)),
        }
    }

    #[test]
    fn the_largest_fragment_is_kept_while_the_churn_is_small() {
        let fs = [
            frag(3, 10_000, 10),
            frag(7, 40, 0),
            frag(8, 1, 0),
            frag(9, 1, 0),
        ];
        assert_eq!(kept_base(&fs, 8), Some(3));
        // The base need not come first.
        let fs = [frag(1, 5, 0), frag(3, 10_000, 0), frag(9, 1, 0)];
        assert_eq!(kept_base(&fs, 8), Some(3));
    }

    #[test]
    fn churn_past_a_quarter_of_the_base_rewrites_all() {
        // 2,400 other rows + 100 deleted = 2,500 = 10,000 / 4: still kept.
        let fs = [frag(0, 10_000, 100), frag(1, 2_400, 0)];
        assert_eq!(kept_base(&fs, 8), Some(0));
        let fs = [frag(0, 10_000, 101), frag(1, 2_400, 0)];
        assert_eq!(kept_base(&fs, 8), None);
        let fs = [frag(0, 10_000, 2_600), frag(1, 1, 0)];
        assert_eq!(kept_base(&fs, 8), None);
    }

    #[test]
    fn unknown_sizes_small_limits_and_single_fragments_rewrite_all() {
        let unknown = ManifestFragment { id: 2, rows: None };
        assert_eq!(kept_base(&[frag(0, 10_000, 0), unknown], 8), None);
        assert_eq!(kept_base(&[frag(0, 10_000, 0), frag(1, 1, 0)], 2), None);
        assert_eq!(kept_base(&[frag(0, 10_000, 0)], 8), None);
    }
}
