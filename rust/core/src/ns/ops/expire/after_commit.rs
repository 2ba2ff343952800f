//! The expiry a commit runs when it reaches the interval of the namespace's automatic
//! expiry (`manifest::auto_expire`): what keeps a stream's history, one manifest version per
//! micro-batch, from making every later commit and read list and skip a growing number of
//! versions.

use std::collections::HashMap;

use crate::ns::infra::storage::Storage;
use crate::ns::manifest::auto_expire;

use super::{expire, ExpireOptions};

/// Expires old manifest versions when the commits that moved the manifest from version
/// `from` to `to` reached the interval of the policy `props` set; returns the manifest
/// versions removed. Maintenance after the commit point: the commit is visible whatever
/// happens here, so an error (a malformed policy, a concurrent expire or cleanup) removes
/// nothing more, and the next interval tries again.
pub(crate) async fn expire_if_due(
    storage: &Storage,
    props: &HashMap<String, String>,
    from: u64,
    to: u64,
) -> u64 {
    let Ok(Some(policy)) = auto_expire(props) else {
        return 0;
    };
    if !policy.due(from, to) {
        return 0;
    }
    let opts = ExpireOptions {
        older_than: policy.older_than,
        retain_versions: policy.retain_versions,
        dry_run: false,
    };
    match expire(storage, &opts).await {
        Ok(done) => done.manifest_versions.len() as u64,
        Err(_) => 0,
    }
}
