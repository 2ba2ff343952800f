//! The manifest half of `optimize()` in strong mode: one commit records every compacted leaf's
//! new version. A leaf another commit changed since the compaction read it is rebased when
//! only appends happened (the same rewrite, committed again on top of the new version), or
//! compacted again from that version otherwise; a leaf dropped meanwhile is left out.

use futures::future::BoxFuture;
use lance::index::DatasetIndexExt;
use lance::table::format::Fragment;

use crate::error::Result;
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::{LeafVersion, Rewritten, Snapshot};
use crate::ns::txn::compaction::{split, LeafCompaction, LeafOutcome, Rewrite};
use crate::ns::txn::conflict::{carried_stats, version_row, Added};
use crate::ns::txn::leaf::Written;
use crate::ns::txn::manifest_commit::{ManifestChange, ManifestUpdate};

/// One compacted leaf waiting for the manifest commit.
#[derive(Debug, Clone)]
pub(crate) struct Compacted {
    pub(crate) object_id: String,
    pub(crate) location: String,
    pub(crate) rewrite: Rewrite,
    /// The detached version holding the rewrite.
    pub(crate) committed: LeafVersion,
}

/// See the module docs.
pub(crate) struct OptimizeUpdate<'a> {
    pub(crate) storage: &'a Storage,
    pub(crate) compaction: &'a LeafCompaction,
    pub(crate) leaves: Vec<Compacted>,
    /// Leaves rebased onto a concurrent append.
    pub(crate) rebased: u64,
    /// Leaves compacted again because a concurrent commit replaced what was compacted.
    pub(crate) recompacted: u64,
    /// When the compaction started writing (ms since the epoch, this machine's clock).
    pub(crate) started_ms: i64,
}

impl Compacted {
    /// Each rewrite group's fragments, as ids of the base version and of the committed one
    /// (the new fragments found by their first data file).
    fn rewritten(&self) -> Vec<Rewritten> {
        self.rewrite
            .groups
            .iter()
            .map(|g| Rewritten {
                old: g.old_fragments.iter().map(|f| f.id).collect(),
                new: self.committed.ids_of(&g.new_fragments),
            })
            .collect()
    }
}

impl ManifestUpdate for OptimizeUpdate<'_> {
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
            .map(|c| {
                let new: Vec<Fragment> = c
                    .rewrite
                    .groups
                    .iter()
                    .flat_map(|g| g.new_fragments.iter().cloned())
                    .collect();
                Written::new(&c.location, c.committed.version, &new)
            })
            .collect();
        (Some(self.started_ms), written)
    }
}

impl OptimizeUpdate<'_> {
    async fn plan_on(&mut self, latest: &Snapshot) -> Result<Option<ManifestChange>> {
        let mut change = ManifestChange::default();
        let mut kept = Vec::with_capacity(self.leaves.len());
        for mut c in std::mem::take(&mut self.leaves) {
            let Some(leaf) = latest.leaf_by_id(&c.object_id)? else {
                continue; // dropped concurrently: its compaction is moot
            };
            if leaf.read_version != Some(c.rewrite.base)
                && !self.follow(&mut c, leaf.read_version).await?
            {
                continue;
            }
            change.copy_rows.push(leaf.row);
            change
                .read_versions
                .insert(c.object_id.clone(), c.committed.version);
            let base = Some(c.rewrite.base);
            let rewritten = c.rewritten();
            let stats = carried_stats(
                latest,
                &c.object_id,
                base,
                &c.committed,
                Added::NONE,
                &rewritten,
            )?;
            change.rows.push(version_row(
                &c.object_id,
                &c.committed,
                ("compact", base),
                c.rewrite.rows,
                &stats,
            ));
            kept.push(c);
        }
        self.leaves = kept;
        Ok((!change.copy_rows.is_empty()).then_some(change))
    }

    /// Moves `c` on top of the leaf's version `now`; false when nothing is left to compact.
    async fn follow(&mut self, c: &mut Compacted, now: Option<u64>) -> Result<bool> {
        let ds = self.storage.open(&c.location, now).await?;
        let indices = ds.load_indices().await?;
        // A rewrite spanning the segments of a split index is planned again (unsplit first).
        if c.rewrite.applies_to(&ds) && !split(&indices) {
            let base = ds.version().version;
            let indexed = !indices.is_empty();
            c.committed = self
                .compaction
                .commit(ds, &c.rewrite.groups, indexed)
                .await?;
            c.rewrite.base = base;
            self.rebased += 1;
            return Ok(true);
        }
        self.recompacted += 1;
        match self.compaction.compact(ds).await? {
            LeafOutcome::Committed { rewrite, committed } => {
                c.rewrite = rewrite;
                c.committed = committed;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}
