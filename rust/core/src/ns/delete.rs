//! `delete(filter)`: drops whole partitions when the filter covers them exactly, deletes rows
//! inside partitions otherwise; one atomic manifest commit, like a write.
//!
//! A partition is covered exactly when every column the filter reads is the source of an
//! identity field of the partition's spec: then the filter has one value over the whole
//! partition, computed from the partition values (TRUE: drop it; FALSE or NULL: untouched).
//! Any other kept partition gets a Lance row delete at its `read_version` (detached in strong
//! mode); a partition left empty by it is dropped instead.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::{self, StreamExt, TryStreamExt};
use lance::dataset::DeleteBuilder;

use crate::arrow::array::{RecordBatch, RecordBatchOptions};
use crate::arrow::datatypes::{Field, Schema};
use crate::error::{Error, Result};
use crate::ns::manifest::{Leaf, LeafVersion, Snapshot};
use crate::ns::scan::{evaluate_mask, prune, Filter};
use crate::ns::storage::Storage;
use crate::ns::touched::TouchedPartition;
use crate::ns::txn::conflict::version_row;
use crate::ns::txn::leaf::commit_leaf_transaction;
use crate::ns::txn::leaf::Written;
use crate::ns::txn::manifest_commit::{commit_manifest, ManifestChange, ManifestUpdate};
use crate::types::field_id;

/// What a delete did.
#[derive(Debug, Clone, Default)]
pub struct DeleteSummary {
    /// Rows deleted (including the rows of dropped partitions).
    pub rows: u64,
    /// Partitions dropped whole.
    pub dropped: u64,
    /// Partitions with rows deleted inside.
    pub changed: u64,
    /// Manifest version after the commit (unchanged when nothing matched).
    pub manifest_version: u64,
    /// Manifest commit attempts.
    pub attempts: u32,
    /// The partitions dropped or deleted from, as they were before the delete.
    pub touched: Vec<TouchedPartition>,
}

/// The decision for one kept leaf.
#[derive(Debug, Clone)]
enum Action {
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

/// `Some(true/false)` when the filter has one value over the whole partition.
fn covered(
    snap: &Snapshot,
    leaf: &Leaf,
    values: &[crate::datafusion::scalar::ScalarValue],
    filter: &Filter,
) -> Result<Option<bool>> {
    let schema = snap.schema();
    let spec = &snap.root_props.specs[&leaf.spec_id];
    // namespace column -> index of the identity field over it
    let mut identity: HashMap<String, usize> = HashMap::new();
    for (k, f) in spec.fields.iter().enumerate() {
        if f.transform.as_ref().map(|t| t.kind.as_str()) != Some("identity") {
            continue;
        }
        let [src] = f.source_ids.as_slice() else {
            continue;
        };
        if let Some(col) = schema.fields().iter().find(|c| field_id(c) == Some(*src)) {
            identity.insert(col.name().clone(), k);
        }
    }
    let cols = filter.columns();
    if !cols.iter().all(|c| identity.contains_key(c)) {
        return Ok(None);
    }
    let mut fields = Vec::with_capacity(cols.len());
    let mut arrays = Vec::with_capacity(cols.len());
    for c in &cols {
        let f = schema.field_with_name(c)?;
        let v = &values[identity[c]];
        if crate::ns::scan::other_zero(v).is_some() {
            // A signed zero: SQL (the row filter) holds `-0.0 = 0.0`, the evaluation on the
            // partition value compares bits; the rows decide.
            return Ok(None);
        }
        let v = if &v.data_type() == f.data_type() {
            v.clone()
        } else {
            v.cast_to(f.data_type())?
        };
        fields.push(Field::new(c, f.data_type().clone(), true));
        arrays.push(v.to_array()?);
    }
    let batch = RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        arrays,
        &RecordBatchOptions::new().with_row_count(Some(1)),
    )?;
    let phys = filter.physical(batch.schema().as_ref())?;
    Ok(Some(evaluate_mask(&phys, &batch)?.value(0)))
}

/// Deletes the rows matching `filter` inside one leaf (uncommitted to the manifest).
async fn delete_rows(
    storage: &Storage,
    leaf: &Leaf,
    filter: &Filter,
    ns_schema: &Schema,
    strong: bool,
) -> Result<Option<Action>> {
    let ds = storage.open(&leaf.location, leaf.read_version).await?;
    // Lance evaluates the filter on the leaf's own columns: matched by field id, cast to the
    // namespace type, NULL where the leaf has none (never a dropped or renamed column's data).
    let stored = Schema::from(ds.schema());
    let map = crate::ns::scan::leaf_columns(&stored, ns_schema);
    let expr = filter.for_leaf(ns_schema, &stored, &map)?;
    let total = ds.count_rows(None).await? as u64;
    let staged = DeleteBuilder::from_expr(Arc::clone(&ds), expr)
        .execute_uncommitted()
        .await?;
    if staged.num_deleted_rows == 0 {
        return Ok(None);
    }
    if staged.num_deleted_rows >= total {
        return Ok(Some(Action::Drop {
            object_id: leaf.object_id.clone(),
            rows: total,
        }));
    }
    let base = ds.version().version;
    let affected = staged.affected_rows;
    let committed = commit_leaf_transaction(ds, staged.transaction, strong, |b| match affected {
        Some(rows) => b.with_affected_rows(rows),
        None => b,
    })
    .await?;
    Ok(Some(Action::Rows {
        object_id: leaf.object_id.clone(),
        base: strong.then_some(base),
        committed,
        rows: staged.num_deleted_rows,
    }))
}

/// Deletes the rows of the namespace at `root` that match `filter_sql`.
///
/// # Errors
/// `Expression` for a bad filter; `CommitConflict` when a concurrent write changed a
/// partition this delete touches; `Lance` for I/O errors. Nothing becomes visible on error.
pub async fn delete(
    storage: &Storage,
    filter_sql: &str,
    strong: Option<bool>,
    max_attempts: u32,
) -> Result<DeleteSummary> {
    let started_ms = crate::ns::cleanup_marks::now_ms()?;
    let snap = Snapshot::load(storage, None).await?;
    snap.check_writable()?;
    let strong = snap.strong_mode(strong)?;
    let filter = Filter::parse(filter_sql, &snap.schema())?;
    let actions = plan_actions(storage, &snap, &filter, strong).await?;
    let mut summary = DeleteSummary {
        manifest_version: snap.version,
        ..Default::default()
    };
    for a in &actions {
        match a {
            Action::Drop { rows, .. } => {
                summary.dropped += 1;
                summary.rows += rows;
            }
            Action::Rows { rows, .. } => {
                summary.changed += 1;
                summary.rows += rows;
            }
        }
    }
    if actions.is_empty() {
        return Ok(summary);
    }
    summary.touched = touched(&snap, &actions)?;
    if !strong && actions.iter().all(|a| matches!(a, Action::Rows { .. })) {
        // Weak mode: the row deletes are already on each table's main branch.
        return Ok(summary);
    }
    let mut update = DeleteUpdate {
        s0: &snap,
        actions: &actions,
        strong,
        started_ms,
    };
    let committed = commit_manifest(storage, max_attempts, &mut update).await?;
    summary.manifest_version = committed.version;
    summary.attempts = committed.attempts;
    Ok(summary)
}

/// The partitions `actions` drop or delete from, with their values at `snap`.
fn touched(snap: &Snapshot, actions: &[Action]) -> Result<Vec<TouchedPartition>> {
    let keys = snap.keys()?;
    let index: HashMap<&str, usize> = snap
        .leaves
        .iter()
        .enumerate()
        .map(|(i, l)| (l.object_id.as_str(), i))
        .collect();
    let mut out = Vec::with_capacity(actions.len());
    for a in actions {
        let (Action::Drop { object_id, .. } | Action::Rows { object_id, .. }) = a;
        let Some(&i) = index.get(object_id.as_str()) else {
            continue;
        };
        let leaf = &snap.leaves[i];
        if let Some(spec) = snap.root_props.specs.get(&leaf.spec_id) {
            out.push(TouchedPartition::new(
                object_id,
                &leaf.location,
                spec,
                &keys.leaf_values[i],
            ));
        }
    }
    Ok(out)
}

/// What to do with each partition pruning keeps: drop the covered ones, delete rows inside
/// the others (uncommitted to the manifest).
async fn plan_actions(
    storage: &Storage,
    snap: &Snapshot,
    filter: &Filter,
    strong: bool,
) -> Result<Vec<Action>> {
    let ns_schema = snap.schema();
    let pruned = prune(snap, Some(filter))?;
    let mut whole = Vec::new();
    let mut partial = Vec::new();
    for &i in &pruned.leaves {
        match covered(snap, &snap.leaves[i], &snap.keys()?.leaf_values[i], filter)? {
            Some(true) => whole.push(i),
            Some(false) => {}
            None => partial.push(i),
        }
    }
    let mut actions: Vec<Action> = stream::iter(partial.iter().map(|&i| {
        let ns_schema = &ns_schema;
        async move { delete_rows(storage, &snap.leaves[i], filter, ns_schema, strong).await }
    }))
    .buffer_unordered(8)
    .try_collect::<Vec<Option<Action>>>()
    .await?
    .into_iter()
    .flatten()
    .collect();
    let counts = crate::ns::manifest::count_rows(snap, &whole).await?;
    for (&i, rows) in whole.iter().zip(counts) {
        actions.push(Action::Drop {
            object_id: snap.leaves[i].object_id.clone(),
            rows,
        });
    }
    Ok(actions)
}

/// A delete's manifest change on top of the latest manifest: dropped partitions (with their
/// version rows and the namespaces left empty) go, row deletes record their new versions. A
/// partition changed concurrently since S0 is a conflict.
struct DeleteUpdate<'a> {
    s0: &'a Snapshot,
    actions: &'a [Action],
    strong: bool,
    /// When the delete started writing its leaf versions (ms since the epoch).
    started_ms: i64,
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
        let k1 = latest.keys()?;
        change.delete_ids.push(object_id.to_string());
        for v in k1.versions.get(object_id).into_iter().flatten() {
            let own = format!("{object_id}${}", v.version);
            change.delete_ids.push(if k1.row_by_id.contains_key(&own) {
                own
            } else {
                format!("{object_id}${:020}", v.version)
            });
        }
        Ok(())
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
        change
            .rows
            .push(version_row(object_id, committed, "delete", base, rows));
        Ok(())
    }
}

/// The `read_version` of table `oid` (`None` when the manifest has no such table).
fn read_version_of(snap: &Snapshot, oid: &str) -> Result<Option<Option<u64>>> {
    Ok(snap.leaf_by_id(oid)?.map(|l| l.read_version))
}

/// Namespaces left without any partition below them go too. Dropping one rewrites its spec
/// version row, like creating one does, so that a concurrent writer creating a partition
/// under it conflicts with this commit in Lance and re-plans.
fn drop_empty_namespaces(latest: &Snapshot, change: &mut ManifestChange) -> Result<()> {
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
