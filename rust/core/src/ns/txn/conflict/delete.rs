//! The manifest half of `delete()` ([`crate::ns::ops::delete`]): [`DeleteUpdate`] plans the
//! delete's manifest change on top of the latest manifest. Dropped partitions go (with their
//! version rows and the namespaces left empty), row deletes record their new versions; a
//! partition changed concurrently since the delete's base version is a conflict.

use std::collections::HashSet;

use futures::future::BoxFuture;

use crate::error::{Error, Result};
use crate::ns::manifest::{version_row_id, LeafVersion, Snapshot};
use crate::ns::txn::conflict::{carried_stats, version_row, Added};
use crate::ns::txn::leaf::Written;
use crate::ns::txn::manifest_commit::{ManifestChange, ManifestUpdate};

/// The decision for one kept leaf.
#[derive(Debug, Clone)]
pub(crate) enum Action {
    /// Drop the partition (it had `rows` rows).
    Drop { object_id: String, rows: u64 },
    /// Rows deleted inside: the new version holding the delete, based on `base`.
    Rows {
        object_id: String,
        base: Option<u64>,
        committed: LeafVersion,
        rows: u64,
    },
}

/// A delete's manifest change on top of the latest manifest: dropped partitions (with their
/// version rows and the namespaces left empty) go, row deletes record their new versions. A
/// partition changed concurrently since S0 is a conflict.
pub(crate) struct DeleteUpdate<'a> {
    pub(crate) s0: &'a Snapshot,
    pub(crate) actions: &'a [Action],
    pub(crate) strong: bool,
    /// When the delete started writing its leaf versions (ms since the epoch).
    pub(crate) started_ms: i64,
}

impl ManifestUpdate for DeleteUpdate<'_> {
    fn plan<'a>(
        &'a mut self,
        latest: &'a Snapshot,
    ) -> BoxFuture<'a, Result<Option<ManifestChange>>> {
        Box::pin(async move { self.plan_on(latest) })
    }

    fn written(&self) -> (Option<i64>, Vec<Written>) {
        let written = self
            .actions
            .iter()
            .filter_map(|a| match a {
                Action::Rows {
                    object_id,
                    committed,
                    ..
                } => {
                    let leaf = self.s0.leaf_by_id(object_id).ok().flatten()?;
                    Some(Written::new(&leaf.location, committed.version, &[]))
                }
                Action::Drop { .. } => None,
            })
            .collect();
        (Some(self.started_ms), written)
    }
}

impl DeleteUpdate<'_> {
    fn plan_on(&self, latest: &Snapshot) -> Result<Option<ManifestChange>> {
        let mut change = ManifestChange::default();
        for a in self.actions {
            match a {
                Action::Drop { object_id, .. } => self.drop_leaf(latest, object_id, &mut change)?,
                Action::Rows {
                    object_id,
                    base,
                    committed,
                    rows,
                } => self.record_rows(latest, object_id, (*base, committed, *rows), &mut change)?,
            }
        }
        drop_empty_namespaces(latest, &mut change)?;
        let empty = change.copy_rows.is_empty() && change.rows.is_empty();
        Ok((!empty || !change.delete_ids.is_empty()).then_some(change))
    }

    fn conflict(&self, object_id: &str, what: &str) -> Error {
        Error::CommitConflict(format!(
            "partition ({}) was {what} by a concurrent write during this delete",
            self.s0.describe_leaf(object_id)
        ))
    }

    fn drop_leaf(
        &self,
        latest: &Snapshot,
        object_id: &str,
        change: &mut ManifestChange,
    ) -> Result<()> {
        let Some(now) = read_version_of(latest, object_id)? else {
            return Ok(()); // dropped concurrently: nothing left to drop
        };
        if self.strong && Some(now) != read_version_of(self.s0, object_id)? {
            return Err(self.conflict(object_id, "changed"));
        }
        drop_partition(latest, object_id, change)
    }

    fn record_rows(
        &self,
        latest: &Snapshot,
        object_id: &str,
        (base, committed, rows): (Option<u64>, &LeafVersion, u64),
        change: &mut ManifestChange,
    ) -> Result<()> {
        let Some(now) = read_version_of(latest, object_id)? else {
            return Err(self.conflict(object_id, "dropped"));
        };
        if !self.strong {
            return Ok(());
        }
        if now != base {
            return Err(self.conflict(object_id, "changed"));
        }
        change.copy_rows.push(latest.keys()?.row_by_id[object_id]);
        change
            .read_versions
            .insert(object_id.to_string(), committed.version);
        let stats = carried_stats(latest, object_id, base, committed, Added::NONE, &[])?;
        change.rows.push(version_row(
            object_id,
            committed,
            ("delete", base),
            rows,
            &stats,
        ));
        Ok(())
    }
}

/// Drops the partition `object_id` of `latest`: its table row and its version rows.
pub(crate) fn drop_partition(
    latest: &Snapshot,
    object_id: &str,
    change: &mut ManifestChange,
) -> Result<()> {
    let k1 = latest.keys()?;
    change.delete_ids.push(object_id.to_string());
    for v in k1.versions.get(object_id).into_iter().flatten() {
        change
            .delete_ids
            .push(version_row_id(k1, object_id, v.version));
    }
    Ok(())
}

/// The `read_version` of table `oid` (`None` when the manifest has no such table).
fn read_version_of(snap: &Snapshot, oid: &str) -> Result<Option<Option<u64>>> {
    Ok(snap.leaf_by_id(oid)?.map(|l| l.read_version))
}

/// Namespaces left without any partition below them go too. Dropping one rewrites its spec
/// version row, like creating one does, so that a concurrent writer creating a partition
/// under it conflicts with this commit in Lance and re-plans.
pub(crate) fn drop_empty_namespaces(latest: &Snapshot, change: &mut ManifestChange) -> Result<()> {
    let k1 = latest.keys()?;
    let dropped_tables: HashSet<&str> = change.delete_ids.iter().map(String::as_str).collect();
    let mut alive: HashSet<String> = HashSet::new();
    for l in &latest.leaves {
        if !dropped_tables.contains(l.object_id.as_str()) {
            let parts: Vec<&str> = l.object_id.split('$').collect();
            for i in 1..parts.len() {
                alive.insert(parts[..i].join("$"));
            }
        }
    }
    let mut empty_ns: Vec<String> = Vec::new();
    let mut touched_specs: HashSet<String> = HashSet::new();
    for oid in &dropped_tables {
        let parts: Vec<&str> = oid.split('$').collect();
        for i in 2..parts.len() {
            let ns = parts[..i].join("$");
            if !alive.contains(&ns) && k1.row_by_id.contains_key(&ns) {
                touched_specs.insert(parts[0].to_string());
                empty_ns.push(ns);
            }
        }
    }
    empty_ns.sort();
    empty_ns.dedup();
    for v in &touched_specs {
        if let Some(&r) = k1.row_by_id.get(v) {
            change.copy_rows.push(r);
        }
    }
    change.delete_ids.extend(empty_ns);
    Ok(())
}
