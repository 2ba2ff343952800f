//! The manifest half of a row-level change ([`crate::ns::txn::row_change`]):
//! [`RowChangeUpdate`] plans it on top of the latest manifest. The change was decided by
//! reading partitions at their versions in the base snapshot, so it holds only while they
//! are unchanged: any partition it read that another commit changed or dropped since, and
//! any partition it creates that another commit created, is a conflict (the operation runs
//! again on the new versions; it is never rebased, which could lose or double a row).

use std::collections::HashMap;

use futures::future::BoxFuture;
use lance::table::format::Fragment;

use crate::datafusion::scalar::ScalarValue;
use crate::error::{Error, Result};
use crate::ns::manifest::{describe_key, LeafColumnStats, LeafVersion, Snapshot};
use crate::ns::txn::conflict::delete::{drop_empty_namespaces, drop_partition};
use crate::ns::txn::conflict::write::{tag_version_rows, NewPartition};
use crate::ns::txn::conflict::{carried_stats, version_row, Added};
use crate::ns::txn::leaf::{Pending, Written};
use crate::ns::txn::manifest_commit::{ManifestChange, ManifestUpdate};

/// What the change did to one partition.
#[derive(Debug, Clone)]
pub(crate) struct ChangedLeaf {
    /// The leaf's object id (a created one's once the manifest commit named it).
    pub(crate) object_id: String,
    pub(crate) location: String,
    pub(crate) spec_id: i32,
    pub(crate) key: Vec<ScalarValue>,
    /// Rows added (new fragments).
    pub(crate) added: u64,
    pub(crate) created: bool,
    pub(crate) dropped: bool,
}

/// One existing partition's change, committed to its leaf (not yet to the manifest).
pub(crate) struct LeafCommit {
    pub(crate) object_id: String,
    pub(crate) location: String,
    pub(crate) spec_id: i32,
    pub(crate) key: Vec<ScalarValue>,
    /// The version read; `None` in weak mode.
    pub(crate) base: Option<u64>,
    /// The new version; `None` when the partition is dropped.
    pub(crate) committed: Option<LeafVersion>,
    pub(crate) added: u64,
    pub(crate) deleted: u64,
    pub(crate) fragments: Vec<Fragment>,
    /// Column statistics of the added rows (`None`: unknown).
    pub(crate) stats: Option<LeafColumnStats>,
}

/// A row-level change's manifest change; see the module docs.
pub(crate) struct RowChangeUpdate<'a> {
    pub(crate) s0: &'a Snapshot,
    /// Partitions read, with the version read.
    pub(crate) read: Vec<(String, Option<u64>)>,
    /// Existing partitions changed (or emptied: `committed` is `None`).
    pub(crate) leaves: Vec<LeafCommit>,
    /// Partitions created (current spec).
    pub(crate) created: Vec<Pending>,
    pub(crate) spec_id: i32,
    pub(crate) field_ids: Vec<String>,
    pub(crate) strong: bool,
    /// When the change started writing (ms since the epoch).
    pub(crate) started_ms: i64,
    pub(crate) operation: &'static str,
    /// Recorded on the `table_version` rows; a manifest that holds it already makes this
    /// change a no-op.
    pub(crate) write_id: Option<String>,
    /// Set when the latest manifest already holds `write_id` (a repeated change).
    pub(crate) already_committed: bool,
}

impl ManifestUpdate for RowChangeUpdate<'_> {
    fn plan<'a>(
        &'a mut self,
        latest: &'a Snapshot,
    ) -> BoxFuture<'a, Result<Option<ManifestChange>>> {
        Box::pin(async move { self.plan_on(latest) })
    }

    fn written(&self) -> (Option<i64>, Vec<Written>) {
        let mut written: Vec<Written> = self
            .leaves
            .iter()
            .filter_map(|l| {
                let c = l.committed.as_ref()?;
                Some(Written::new(&l.location, c.version, &l.fragments))
            })
            .collect();
        written.extend(
            self.created
                .iter()
                .map(|p| Written::new(&p.location, p.committed.version, &p.fragments)),
        );
        (Some(self.started_ms), written)
    }
}

impl RowChangeUpdate<'_> {
    fn plan_on(&mut self, latest: &Snapshot) -> Result<Option<ManifestChange>> {
        if let Some(id) = &self.write_id {
            if latest.has_write(id)? {
                // An earlier run of this same change committed (before a crash, or
                // concurrently): it must not apply twice.
                self.already_committed = true;
                return Ok(None);
            }
        }
        for (oid, version) in &self.read {
            match latest.leaf_by_id(oid)? {
                None => return Err(self.conflict(oid, "dropped")),
                Some(l) if self.strong && l.read_version != *version => {
                    return Err(self.conflict(oid, "changed"))
                }
                Some(_) => {}
            }
        }
        let mut change = ManifestChange::default();
        let k1 = latest.keys()?;
        for l in &self.leaves {
            match &l.committed {
                None => drop_partition(latest, &l.object_id, &mut change)?,
                Some(c) if self.strong => {
                    change.copy_rows.push(k1.row_by_id[&l.object_id]);
                    change.read_versions.insert(l.object_id.clone(), c.version);
                    let ids = c.ids_of(&l.fragments);
                    let added = Added {
                        stats: l.stats.as_ref(),
                        rows: l.added,
                        ids: &ids,
                    };
                    let stats = carried_stats(latest, &l.object_id, l.base, c, added, &[])?;
                    change.rows.push(version_row(
                        &l.object_id,
                        c,
                        (self.operation, l.base),
                        l.added + l.deleted,
                        &stats,
                    ));
                }
                Some(_) => {}
            }
        }
        drop_empty_namespaces(latest, &mut change)?;
        let mut created_ns: HashMap<Vec<ScalarValue>, String> = HashMap::new();
        for i in 0..self.created.len() {
            if latest.leaf(self.spec_id, &self.created[i].key)?.is_some() {
                return Err(Error::CommitConflict(format!(
                    "partition ({}) was created by a concurrent write during this {}",
                    describe_key(&self.field_ids, &self.created[i].key),
                    self.operation
                )));
            }
            let new = NewPartition {
                spec_id: self.spec_id,
                field_ids: &self.field_ids,
                strong: self.strong,
            };
            let oid = new.register(latest, &self.created[i], &mut created_ns, &mut change.rows)?;
            self.created[i].object_id = Some(oid);
        }
        if !self.created.is_empty() {
            // Rewrite the spec version row: concurrent creators conflict on it in Lance.
            if let Some(&r) = k1.row_by_id.get(&format!("v{}", self.spec_id)) {
                change.copy_rows.push(r);
            }
        }
        if let Some(id) = &self.write_id {
            tag_version_rows(&mut change, id);
        }
        let empty =
            change.copy_rows.is_empty() && change.rows.is_empty() && change.delete_ids.is_empty();
        Ok((!empty).then_some(change))
    }

    fn conflict(&self, object_id: &str, what: &str) -> Error {
        Error::CommitConflict(format!(
            "partition ({}) was {what} by a concurrent commit during this {}",
            self.s0.describe_leaf(object_id),
            self.operation
        ))
    }

    /// What changed, once committed.
    pub(crate) fn changed(&self) -> Vec<ChangedLeaf> {
        let mut out: Vec<ChangedLeaf> = self
            .leaves
            .iter()
            .map(|l| ChangedLeaf {
                object_id: l.object_id.clone(),
                location: l.location.clone(),
                spec_id: l.spec_id,
                key: l.key.clone(),
                added: l.added,
                created: false,
                dropped: l.committed.is_none(),
            })
            .collect();
        out.extend(self.created.iter().map(|p| ChangedLeaf {
            object_id: p.object_id.clone().unwrap_or_default(),
            location: p.location.clone(),
            spec_id: self.spec_id,
            key: p.key.clone(),
            added: p.rows(),
            created: true,
            dropped: false,
        }));
        out
    }
}
