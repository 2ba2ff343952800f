//! The compaction policies applied after commits: of `__manifest`'s own fragments (the
//! compaction itself is the transaction layer's: `txn::manifest_compact`), and of the
//! partitions a write leaves with many small fragments ([`leaf_max_fragments`]).
//!
//! Every manifest commit (a Lance `merge_insert`) adds a fragment to `__manifest` and marks
//! the rows it replaced as deleted in older ones, so a manifest committed to N times holds N
//! fragments, and loading it (what every commit, open and read does first) grows with N. After
//! a commit leaves more fragments than the namespace's limit
//! ([`MAX_FRAGMENTS_KEY`], default [`DEFAULT_MAX_FRAGMENTS`]; `0` turns it off), the
//! committing process rewrites the manifest's rows into one fragment (two manifest versions:
//! Lance reserves the new fragments' ids, then commits a `Rewrite`; `history()` names both
//! `compact_manifest`): the rows, the root properties and every older version are unchanged (`as_of`
//! reads of retained versions still read their own files, until `expire()` removes them).
//!
//! It is maintenance, not a change: a commit that lands first wins (Lance refuses the
//! rewrite, and the next commit over the limit tries again), and a commit planned before the
//! rewrite conflicts with it and is planned again by `commit_manifest`'s retry loop.

use std::collections::HashMap;

use crate::error::{Error, Result};

/// Root property: the most fragments a commit leaves in `__manifest` before it compacts it.
pub const MAX_FRAGMENTS_KEY: &str = "lance_partitioned.manifest.max_fragments";

/// The limit when [`MAX_FRAGMENTS_KEY`] is not set.
pub const DEFAULT_MAX_FRAGMENTS: usize = 32;

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

/// Root property: how many fragments more than its rows need a partition may hold after a
/// write before the writing process compacts it (`0`: never). Micro-batches append one small
/// fragment each; without compaction a partition's reads open every one of them.
///
/// After a commit, each partition the write changed whose new version holds more than
/// `ceil(rows / target) + limit` fragments is compacted, as `optimize()` would (files of
/// fewer than `target` rows rewritten together; `target`: [`TARGET_ROWS_PER_FILE_KEY`]), in one more manifest
/// commit named `optimize` in `history()`. The write is committed before: a compaction that
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
