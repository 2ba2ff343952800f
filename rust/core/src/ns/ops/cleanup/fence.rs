//! The fence between a deleting cleanup and the commits in flight.
//!
//! A cleanup removes files no manifest version names. An operation in flight (a write, an
//! optimize) has written files that no manifest version names *yet*; if the cleanup removed
//! them and the operation then committed, the manifest would name missing files. Checking the
//! files just before committing narrows that race but cannot close it (the cleanup may delete
//! between the check and the commit). The fence closes it through the manifest commit itself:
//!
//! 1. The cleanup sets the root property `lance_partitioned.cleanup.<nonce>` (its start and
//!    cut-off), then rewrites every `table` and `namespace` row of the manifest. Every commit
//!    of an operation rewrites at least one of those rows (its partitions' rows, or the spec
//!    version row of the partitions it creates), so an operation that planned its commit
//!    before the fence conflicts with it and plans again.
//! 2. Only then does the cleanup read which files the manifest versions name: every commit
//!    that landed before the fence is among them.
//! 3. An operation planning on a manifest that shows a running fence whose cut-off could
//!    reach its files waits until the fence is lowered (`cleanup_marks::fenced`, in
//!    `commit_manifest`), then checks that its files still exist, and fails typed with nothing
//!    visible when the cleanup removed them.
//! 4. The cleanup lowers the fence when it is done. It deletes only within its lease
//!    ([`LEASE_MS`]); a fence older than that belongs to a cleanup that died and is ignored.
//!
//! Weak-mode leaf commits are not manifest commits: with the retention floor overridden, a
//! cleanup can still remove the staged files of a weak write that commits its leaves while the
//! cleanup runs (the leaf check before committing narrows it).

use futures::future::BoxFuture;

use crate::error::{Error, Result};
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::{Snapshot, NAMESPACE, OBJECT_TYPE, TABLE};
use crate::ns::txn::cleanup_marks::{Fence, CLOCK_MARGIN_MS, FENCE_KEY_PREFIX, LEASE_MS};
use crate::ns::txn::manifest_commit::{commit_manifest, ManifestChange, ManifestUpdate};
use crate::ns::txn::root_commit::{commit_root, RootChange, RootUpdate};

/// How many lost races raising or lowering the fence retries.
const ATTEMPTS: u32 = 50;

/// A raised fence; [`Raised::lower`] removes it.
pub(crate) struct Raised {
    key: String,
    started_ms: i64,
}

impl Raised {
    /// Fails once the lease is (nearly) over: commits in flight stop waiting for a fence that
    /// old, so deleting after it would race them again.
    pub(crate) fn check_lease(&self) -> Result<()> {
        let now = crate::ns::txn::cleanup_marks::now_ms()?;
        if now > self.started_ms + LEASE_MS - CLOCK_MARGIN_MS {
            return Err(Error::CommitConflict(format!(
                "cleanup() stopped after its lease of {} s; run it again to remove the rest",
                (LEASE_MS - CLOCK_MARGIN_MS) / 1000
            )));
        }
        Ok(())
    }

    /// Lowers the fence (commits waiting for it go on).
    pub(crate) async fn lower(self, storage: &Storage) -> Result<()> {
        let mut update = SetProperty {
            key: self.key,
            value: None,
        };
        commit_root(storage, ATTEMPTS, &mut update).await?;
        Ok(())
    }
}

/// Raises the fence of a cleanup that started at `started_ms` and removes files older than
/// `cutoff_ms` (see the module docs).
///
/// # Errors
/// `CommitConflict` when concurrent commits kept winning; `Lance` for I/O errors.
pub(crate) async fn raise(storage: &Storage, started_ms: i64, cutoff_ms: i64) -> Result<Raised> {
    let key = format!("{FENCE_KEY_PREFIX}{}", crate::ns::infra::ids::random_id()?);
    let fence = Fence {
        started_ms,
        cutoff_ms,
    };
    let value = serde_json::to_string(&fence)
        .map_err(|e| Error::Internal(format!("cannot serialise a cleanup fence: {e}")))?;
    let mut set = SetProperty {
        key: key.clone(),
        value: Some(value),
    };
    commit_root(storage, ATTEMPTS, &mut set).await?;
    let raised = Raised { key, started_ms };
    if let Err(e) = commit_manifest(storage, ATTEMPTS, &mut RewriteRows).await {
        let _ = raised.lower(storage).await;
        return Err(e);
    }
    Ok(raised)
}

/// Sets (or removes) one root property.
struct SetProperty {
    key: String,
    value: Option<String>,
}

impl RootUpdate for SetProperty {
    fn plan<'a>(&'a mut self, _latest: &'a Snapshot) -> BoxFuture<'a, Result<Option<RootChange>>> {
        Box::pin(async move { Ok(Some(vec![(self.key.clone(), self.value.clone())])) })
    }
}

/// Rewrites every `table` and `namespace` row unchanged (the fence's conflict with every
/// commit planned before it).
struct RewriteRows;

impl ManifestUpdate for RewriteRows {
    fn plan<'a>(
        &'a mut self,
        latest: &'a Snapshot,
    ) -> BoxFuture<'a, Result<Option<ManifestChange>>> {
        Box::pin(async move {
            use crate::arrow::array::Array;
            let types = crate::ns::manifest::string_column_of(&latest.batch, OBJECT_TYPE)?;
            let copy_rows: Vec<usize> = (0..types.len())
                .filter(|&r| matches!(types.value(r), TABLE | NAMESPACE))
                .collect();
            Ok(Some(ManifestChange {
                copy_rows,
                ..Default::default()
            }))
        })
    }
}
