//! `delete(filter)`: drops whole partitions when the filter covers them exactly, deletes rows
//! inside partitions otherwise; one atomic manifest commit, like a write.
//!
//! A partition is covered exactly when every column the filter reads is the source of an
//! identity field of the partition's spec: then the filter has one value over the whole
//! partition, computed from the partition values (TRUE: drop it; FALSE or NULL: untouched).
//! Any other kept partition gets a Lance row delete at its `read_version` (detached in strong
//! mode); a partition left empty by it is dropped instead. The manifest change, with its
//! conflict rules, is [`crate::ns::txn::conflict::delete`].

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::{self, StreamExt, TryStreamExt};
use lance::dataset::DeleteBuilder;

use crate::arrow::array::{RecordBatch, RecordBatchOptions};
use crate::arrow::datatypes::{Field, Schema};
use crate::error::Result;
use crate::ns::infra::storage::Storage;
use crate::ns::infra::touched::TouchedPartition;
use crate::ns::manifest::{Leaf, Snapshot};
use crate::ns::scan::{evaluate_mask, prune, Filter};
use crate::ns::txn::conflict::delete::{Action, DeleteUpdate};
use crate::ns::txn::leaf::commit_leaf_transaction;
use crate::ns::txn::manifest_commit::commit_manifest;
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
    let map = crate::ns::leaf_io::read_rules::leaf_columns(&stored, ns_schema);
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
pub(crate) async fn delete(
    storage: &Storage,
    filter_sql: &str,
    strong: Option<bool>,
    max_attempts: u32,
) -> Result<DeleteSummary> {
    let started_ms = crate::ns::txn::cleanup_marks::now_ms()?;
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
    let pruned = prune(snap, Some(filter)).await?;
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
