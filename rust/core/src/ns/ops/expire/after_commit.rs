//! The expiry a commit runs when it reaches the interval of the namespace's automatic
//! expiry (`manifest::auto_expire`): what keeps a stream's history, one manifest version per
//! micro-batch, from making every later commit and read list and skip a growing number of
//! versions.

use std::collections::HashMap;

use crate::error::Result;
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::auto_expire;
use crate::ns::MANIFEST_DIR;

use super::{expire, ExpireOptions};

/// The manifest versions a compaction of `__manifest`'s fragments adds after a commit (Lance
/// reserves the new fragments' ids, then commits the rewrite).
const COMPACTION_VERSIONS: u64 = 2;

/// Expires old manifest versions when the `commits` manifest commits that moved the
/// manifest from version `from` to `to` reached the interval of the policy `props` set;
/// returns the manifest versions removed.
///
/// Each of those commits may be followed by a compaction of `__manifest`'s own fragments
/// (`txn::manifest_compact`), [`COMPACTION_VERSIONS`] versions the commit does not report:
/// when the interval lies within those versions after `to`, the manifest's latest version
/// decides, or the
/// interval would be missed whenever a compaction lands on it (two expiries in a row were,
/// in a 2,000-commit stream).
///
/// Maintenance after the commit point (`ops::after_commit`): the commit is visible whatever
/// happens here, so an error (a malformed policy, a concurrent expire or cleanup) removes
/// nothing more, the next interval tries again, and the error is reported.
///
/// # Errors
/// `InvalidArgument` for a malformed policy; `expire()`'s errors.
pub(crate) async fn expire_if_due(
    storage: &Storage,
    props: &HashMap<String, String>,
    from: u64,
    to: u64,
    commits: u64,
) -> Result<u64> {
    let Some(policy) = auto_expire(props)? else {
        return Ok(0);
    };
    let due = policy.due(from, to)
        || (policy.due(from, to + COMPACTION_VERSIONS * commits)
            && policy.due(from, latest(storage).await?));
    if !due {
        return Ok(0);
    }
    let opts = ExpireOptions {
        older_than: policy.older_than,
        retain_versions: policy.retain_versions,
        dry_run: false,
    };
    Ok(expire(storage, &opts).await?.manifest_versions.len() as u64)
}

/// The latest version of `__manifest`.
async fn latest(storage: &Storage) -> Result<u64> {
    Ok(storage.open(MANIFEST_DIR, None).await?.version().version)
}
