//! The policy of the compaction of `__manifest`'s own fragments at commit time (the
//! compaction itself is the transaction layer's: `txn::manifest_compact`).
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
    match props.get(MAX_FRAGMENTS_KEY) {
        None => Ok(DEFAULT_MAX_FRAGMENTS),
        Some(v) => v.trim().parse().map_err(|_| {
            Error::InvalidArgument(format!(
                "{MAX_FRAGMENTS_KEY} must be a whole number of fragments (0: never compact the \
                 manifest), not {v:?}"
            ))
        }),
    }
}
