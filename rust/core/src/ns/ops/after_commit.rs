//! The maintenance a write or a merge runs after its commit point, in this order: compacting
//! the partitions it left fragmented (`write::compact_after`), building the declared indexes
//! of the partitions it changed again (`index::after_commit`), then the automatic expiry when
//! the commits reached its interval (`expire::after_commit`). Each step is its own
//! conflict-checked commit.
//!
//! The change is visible whatever happens here, so a step that fails (a lost race, a cleanup
//! running, a malformed policy) leaves what it would have changed as it was, for a later
//! change, `optimize()` or `expire()` to finish. Its error is not dropped: it is reported in
//! [`Maintenance::errors`] (a write's and a merge's `maintenance_errors`).

use std::collections::HashMap;

use crate::ns::infra::storage::Storage;
use crate::ns::ops::expire::after_commit::expire_if_due;
use crate::ns::ops::index::after_commit::index_after_commit;
use crate::ns::ops::write::compact_after::compact_fragmented;
use crate::ns::write::WriteOptions;

/// What the maintenance after a commit did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Maintenance {
    /// Partitions compacted.
    pub compacted: u64,
    /// Partitions whose declared indexes were built again.
    pub indexed: u64,
    /// Old manifest versions the automatic expiry removed.
    pub expired: u64,
    /// The steps that failed, each as `"<step>: <error>"` (`compaction`, `indexes`, `expiry`).
    pub errors: Vec<String>,
}

/// The commit that maintenance follows.
pub(crate) struct AfterCommit<'a> {
    pub(crate) storage: &'a Storage,
    /// The root properties the change was committed under (the policies).
    pub(crate) props: &'a HashMap<String, String>,
    /// The manifest version the change was based on.
    pub(crate) from: u64,
    /// The manifest version of the change's commit.
    pub(crate) to: u64,
    /// The change's options: its commit mode, concurrency and commit attempts.
    pub(crate) opts: &'a WriteOptions,
}

impl AfterCommit<'_> {
    /// Compacts `fragmented`, builds the indexes of `touched` again, then expires when due
    /// (all object ids).
    pub(crate) async fn run(&self, fragmented: &[String], touched: Vec<String>) -> Maintenance {
        let mut done = Maintenance::default();
        let mut to = self.to;
        // The manifest commits from `from` to `to`: the change's, then each step's.
        let mut commits = 1;
        let (conc, attempts) = (self.opts.concurrency.max(1), self.opts.max_attempts);
        let strong = self.opts.strong;
        match compact_fragmented(self.storage, fragmented, strong, conc, attempts).await {
            Ok(Some(c)) => {
                done.compacted = c.partitions;
                commits += u64::from(c.manifest_version > to);
                to = to.max(c.manifest_version);
            }
            Ok(None) => {}
            Err(e) => done.errors.push(format!("compaction: {e}")),
        }
        match index_after_commit(self.storage, self.props, touched, conc, attempts).await {
            Ok(Some(r)) => {
                done.indexed = r.partitions;
                commits += u64::from(r.manifest_version > to);
                to = to.max(r.manifest_version);
            }
            Ok(None) => {}
            Err(e) => done.errors.push(format!("indexes: {e}")),
        }
        match expire_if_due(self.storage, self.props, self.from, to, commits).await {
            Ok(n) => done.expired = n,
            Err(e) => done.errors.push(format!("expiry: {e}")),
        }
        done
    }
}
