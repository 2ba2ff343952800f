//! The manifest half of building scalar indexes in strong mode: one commit records every
//! indexed leaf's new version. A leaf another commit changed since its indexes were built is
//! brought up to date again from its new version (an append leaves the new rows unindexed; a
//! rewrite moves the rows the index points at); a leaf dropped meanwhile is left out.

use futures::future::BoxFuture;

use crate::error::Result;
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::{LeafVersion, Snapshot};
use crate::ns::txn::conflict::{carried_stats, version_row, Added};
use crate::ns::txn::leaf::Written;
use crate::ns::txn::leaf_index::{IndexOutcome, LeafIndexing};
use crate::ns::txn::manifest_commit::{ManifestChange, ManifestUpdate};

/// One leaf whose indexes were built, waiting for the manifest commit.
#[derive(Debug, Clone)]
pub(crate) struct Indexed {
    pub(crate) object_id: String,
    pub(crate) location: String,
    /// The version the indexes were built on.
    pub(crate) base: u64,
    /// The detached version holding them.
    pub(crate) committed: LeafVersion,
}

/// See the module docs.
pub(crate) struct IndexUpdate<'a> {
    pub(crate) storage: &'a Storage,
    pub(crate) indexing: &'a LeafIndexing,
    pub(crate) leaves: Vec<Indexed>,
    /// Leaves indexed again because a concurrent commit changed them.
    pub(crate) rebuilt: u64,
    /// When the build started writing (ms since the epoch, this machine's clock).
    pub(crate) started_ms: i64,
}

impl ManifestUpdate for IndexUpdate<'_> {
    fn plan<'a>(
        &'a mut self,
        latest: &'a Snapshot,
    ) -> BoxFuture<'a, Result<Option<ManifestChange>>> {
        Box::pin(self.plan_on(latest))
    }

    fn written(&self) -> (Option<i64>, Vec<Written>) {
        let written = self
            .leaves
            .iter()
            .map(|c| Written::new(&c.location, c.committed.version, &[]))
            .collect();
        (Some(self.started_ms), written)
    }
}

impl IndexUpdate<'_> {
    async fn plan_on(&mut self, latest: &Snapshot) -> Result<Option<ManifestChange>> {
        let mut change = ManifestChange::default();
        let mut kept = Vec::with_capacity(self.leaves.len());
        for mut c in std::mem::take(&mut self.leaves) {
            let Some(leaf) = latest.leaf_by_id(&c.object_id)? else {
                continue; // dropped concurrently
            };
            if leaf.read_version != Some(c.base) {
                self.rebuilt += 1;
                match self
                    .indexing
                    .run(self.storage, &c.location, leaf.read_version)
                    .await?
                {
                    IndexOutcome::Built {
                        base, committed, ..
                    } => {
                        c.base = base;
                        c.committed = committed;
                    }
                    // Current already (another build won), or nothing left to index.
                    IndexOutcome::Current | IndexOutcome::Planned(_) => continue,
                }
            }
            change.copy_rows.push(leaf.row);
            change
                .read_versions
                .insert(c.object_id.clone(), c.committed.version);
            let base = Some(c.base);
            let stats = carried_stats(latest, &c.object_id, base, &c.committed, Added::NONE, &[])?;
            change.rows.push(version_row(
                &c.object_id,
                &c.committed,
                ("index", base),
                0,
                &stats,
            ));
            kept.push(c);
        }
        self.leaves = kept;
        Ok((!change.copy_rows.is_empty()).then_some(change))
    }
}
