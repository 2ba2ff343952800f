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
use std::time::Duration;

use futures::stream::{self, StreamExt, TryStreamExt};
use lance::dataset::{
    CommitBuilder, DeleteBuilder, MergeInsertBuilder, WhenMatched, WhenNotMatched,
    WhenNotMatchedBySource,
};

use crate::arrow::array::{RecordBatch, RecordBatchOptions, UInt32Array};
use crate::arrow::compute::take_record_batch;
use crate::arrow::datatypes::{Field, Schema};
use crate::error::{Error, Result};
use crate::ns::join_uri;
use crate::ns::manifest::{rows_to_batch, Leaf, Snapshot, OBJECT_ID};
use crate::ns::runtime::runtime;
use crate::ns::scan::{evaluate_mask, prune, Filter};
use crate::ns::write::{is_retryable, open_at, set_read_versions, version_row};
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
        version: u64,
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
    root: &str,
    leaf: &Leaf,
    filter: &Filter,
    ns_schema: &Schema,
    strong: bool,
) -> Result<Option<Action>> {
    let ds = open_at(&join_uri(root, &leaf.location), leaf.read_version).await?;
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
    let mut commit = CommitBuilder::new(ds)
        .with_detached(strong)
        .with_skip_auto_cleanup(true);
    if let Some(rows) = staged.affected_rows {
        commit = commit.with_affected_rows(rows);
    }
    let committed = commit.execute(staged.transaction).await?;
    Ok(Some(Action::Rows {
        object_id: leaf.object_id.clone(),
        base: strong.then_some(base),
        version: committed.version().version,
        rows: staged.num_deleted_rows,
    }))
}

/// Deletes the rows of the namespace at `root` that match `filter_sql`.
///
/// # Errors
/// `Expression` for a bad filter; `CommitConflict` when a concurrent write changed a
/// partition this delete touches; `Lance` for I/O errors. Nothing becomes visible on error.
pub fn delete(
    root: &str,
    filter_sql: &str,
    strong: Option<bool>,
    max_attempts: u32,
) -> Result<DeleteSummary> {
    let rt = runtime()?;
    let snap = rt.block_on(Snapshot::load(root, None))?;
    snap.check_writable()?;
    let strong = snap.strong_mode(strong)?;
    let ns_schema = snap.schema();
    let filter = Filter::parse(filter_sql, &ns_schema)?;
    let pruned = prune(&snap, Some(&filter))?;
    let mut whole = Vec::new();
    let mut partial = Vec::new();
    for &i in &pruned.leaves {
        match covered(
            &snap,
            &snap.leaves[i],
            &snap.keys()?.leaf_values[i],
            &filter,
        )? {
            Some(true) => whole.push(i),
            Some(false) => {}
            None => partial.push(i),
        }
    }
    let mut actions: Vec<Action> = rt
        .block_on(
            stream::iter(partial.iter().map(|&i| {
                let (snap, filter, ns_schema) = (&snap, &filter, &ns_schema);
                async move { delete_rows(root, &snap.leaves[i], filter, ns_schema, strong).await }
            }))
            .buffer_unordered(8)
            .try_collect::<Vec<Option<Action>>>(),
        )?
        .into_iter()
        .flatten()
        .collect();
    let counts = rt.block_on(crate::ns::manifest::count_rows(&snap, &whole))?;
    for (&i, rows) in whole.iter().zip(counts) {
        actions.push(Action::Drop {
            object_id: snap.leaves[i].object_id.clone(),
            rows,
        });
    }
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
    if !strong && actions.iter().all(|a| matches!(a, Action::Rows { .. })) {
        // Weak mode: the row deletes are already on each table's main branch.
        return Ok(summary);
    }
    commit_delete(root, &snap, &actions, strong, max_attempts, &mut summary)?;
    Ok(summary)
}

fn commit_delete(
    root: &str,
    s0: &Snapshot,
    actions: &[Action],
    strong: bool,
    max_attempts: u32,
    summary: &mut DeleteSummary,
) -> Result<()> {
    let rt = runtime()?;
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let s1 = rt.block_on(Snapshot::load(root, None))?;
        s1.check_writable()?;
        let k1 = s1.keys()?;
        let base_of = |snap: &Snapshot, oid: &str| -> Option<Option<u64>> {
            let row = *snap.keys().ok()?.row_by_id.get(oid)?;
            Some(
                snap.leaves
                    .iter()
                    .find(|l| l.row == row)
                    .and_then(|l| l.read_version),
            )
        };
        let mut drop_ids: Vec<String> = Vec::new();
        let mut copy_rows: Vec<usize> = Vec::new();
        let mut new_versions: HashMap<&str, u64> = HashMap::new();
        let mut rows = Vec::new();
        for a in actions {
            match a {
                Action::Drop { object_id, .. } => {
                    let Some(now) = base_of(&s1, object_id) else {
                        continue; // dropped concurrently: nothing left to drop
                    };
                    if strong && Some(now) != base_of(s0, object_id) {
                        return Err(Error::CommitConflict(format!(
                            "partition ({}) was changed by a concurrent write during this delete",
                            s0.describe_leaf(object_id)
                        )));
                    }
                    drop_ids.push(object_id.clone());
                    if let Some(vs) = k1.versions.get(object_id) {
                        drop_ids.extend(vs.iter().map(|v| {
                            let own = format!("{object_id}${}", v.version);
                            if k1.row_by_id.contains_key(&own) {
                                own
                            } else {
                                format!("{object_id}${:020}", v.version)
                            }
                        }));
                    }
                }
                Action::Rows {
                    object_id,
                    base,
                    version,
                    ..
                } => {
                    let Some(now) = base_of(&s1, object_id) else {
                        return Err(Error::CommitConflict(format!(
                            "partition ({}) was dropped by a concurrent write during this delete",
                            s0.describe_leaf(object_id)
                        )));
                    };
                    if !strong {
                        continue;
                    }
                    if now != *base {
                        return Err(Error::CommitConflict(format!(
                            "partition ({}) was changed by a concurrent write during this delete",
                            s0.describe_leaf(object_id)
                        )));
                    }
                    copy_rows.push(k1.row_by_id[object_id]);
                    new_versions.insert(object_id.as_str(), *version);
                    rows.push(version_row(object_id, *version, "delete", *base));
                }
            }
        }
        // Namespaces left without any partition below them go too. Dropping one rewrites its
        // spec version row, like creating one does, so that a concurrent writer creating a
        // partition under it conflicts with this commit in Lance and re-plans.
        let dropped_tables: HashSet<&str> = drop_ids.iter().map(String::as_str).collect();
        let mut alive: HashSet<String> = HashSet::new();
        for l in &s1.leaves {
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
                copy_rows.push(r);
            }
        }
        drop_ids.extend(empty_ns);
        let mschema = s1.batch.schema();
        let mut source = Vec::new();
        if !copy_rows.is_empty() {
            let idx = UInt32Array::from_iter_values(copy_rows.iter().map(|&r| r as u32));
            let copied = take_record_batch(&s1.batch, &idx)?;
            source.push(set_read_versions(&copied, &new_versions)?);
        }
        if !rows.is_empty() {
            source.push(rows_to_batch(&mschema, &rows)?);
        }
        if source.is_empty() && drop_ids.is_empty() {
            summary.manifest_version = s1.version;
            summary.attempts = attempt;
            return Ok(());
        }
        let drop_expr = (!drop_ids.is_empty()).then(|| {
            let list: Vec<String> = drop_ids
                .iter()
                .map(|id| format!("'{}'", id.replace('\'', "''")))
                .collect();
            format!("{OBJECT_ID} IN ({})", list.join(", "))
        });
        let result = rt.block_on(async {
            if source.is_empty() {
                let expr = drop_expr.clone().unwrap_or_default();
                let r = DeleteBuilder::new(Arc::clone(&s1.dataset), expr)
                    .conflict_retries(0)
                    .execute()
                    .await?;
                return Ok(r.new_dataset);
            }
            let batch = crate::arrow::compute::concat_batches(&mschema, &source)?;
            let mut b =
                MergeInsertBuilder::try_new(Arc::clone(&s1.dataset), vec![OBJECT_ID.into()])?;
            b.when_matched(WhenMatched::UpdateAll)
                .when_not_matched(WhenNotMatched::InsertAll)
                .conflict_retries(0)
                .skip_auto_cleanup(true);
            if let Some(expr) = &drop_expr {
                b.when_not_matched_by_source(WhenNotMatchedBySource::delete_if(&s1.dataset, expr)?);
            }
            let (ds, _) = b.try_build()?.execute_batches(vec![batch]).await?;
            Ok::<_, lance::Error>(ds)
        });
        match result {
            Ok(ds) => {
                summary.manifest_version = ds.version().version;
                summary.attempts = attempt;
                return Ok(());
            }
            Err(e) if is_retryable(&e) && attempt < max_attempts => {
                std::thread::sleep(Duration::from_millis(20 * u64::from(attempt.min(10))));
            }
            Err(e) if is_retryable(&e) => {
                return Err(Error::CommitConflict(format!(
                    "gave up after {attempt} manifest commit attempts: {e}"
                )))
            }
            Err(e) => return Err(e.into()),
        }
    }
}
