//! `update(set, where)`: the rows matching a filter get new values (SQL over their own
//! columns). Like a merge's update, the old versions are deleted and the new ones written
//! like any row (a row whose partition columns change moves), in one atomic commit that runs
//! again when a partition it read changed meanwhile.

use std::sync::Arc;

use futures::stream::{self, StreamExt, TryStreamExt};

use crate::arrow::compute::filter_record_batch;
use crate::arrow::datatypes::Schema;
use crate::datafusion::common::DFSchema;
use crate::datafusion::physical_plan::PhysicalExpr;
use crate::error::{Error, Result};
use crate::expr::session;
use crate::ns::infra::filter::{evaluate_mask, parse_expression, plain, Filter};
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::{Leaf, Snapshot};
use crate::ns::scan::prune;
use crate::ns::write::WriteOptions;

use super::leaf_scan::LeafScan;
use super::matcher::{new_version, LeafChanges};
use super::{commit_changes, until_settled, Decided, MergeSummary};

/// The planned update: new values and the filter.
struct Update {
    set: Vec<(String, Arc<dyn PhysicalExpr>)>,
    filter: Option<Filter>,
    filter_phys: Option<Arc<dyn PhysicalExpr>>,
}

/// Sets `set`'s columns (SQL over the row's columns) on the rows matching `filter_sql` (all
/// rows without one).
///
/// # Errors
/// `InvalidArgument` for an empty `set`; `SchemaMismatch` for an unknown column or a value
/// that does not fit its column; `Expression` for bad SQL; `CommitConflict` when concurrent
/// commits outlast `max_attempts` runs. Nothing is visible on error (strong mode).
pub(crate) async fn update(
    storage: &Storage,
    set: &[(String, String)],
    filter_sql: Option<&str>,
    opts: &WriteOptions,
) -> Result<MergeSummary> {
    if set.is_empty() {
        return Err(Error::InvalidArgument("update sets no column".into()));
    }
    until_settled(storage, opts, |snap, strong| {
        update_once(storage, snap, strong, set, filter_sql, opts)
    })
    .await
}

fn plan(set: &[(String, String)], filter_sql: Option<&str>, ns: &Schema) -> Result<Update> {
    let df = DFSchema::try_from(plain(ns))?;
    let mut values = Vec::with_capacity(set.len());
    for (col, sql) in set {
        if ns.field_with_name(col).is_err() {
            return Err(Error::SchemaMismatch(format!(
                "update sets {col:?}, which is not a namespace column"
            )));
        }
        if values.iter().any(|(c, _): &(String, _)| c == col) {
            return Err(Error::InvalidArgument(format!(
                "update sets column {col:?} twice"
            )));
        }
        let e = parse_expression("update value", sql, &df, false)?;
        values.push((col.clone(), session().create_physical_expr(e, &df)?));
    }
    let filter = filter_sql.map(|f| Filter::parse(f, ns)).transpose()?;
    let filter_phys = filter.as_ref().map(|f| f.physical(ns)).transpose()?;
    Ok(Update {
        set: values,
        filter,
        filter_phys,
    })
}

async fn update_once(
    storage: &Storage,
    snap: Arc<Snapshot>,
    strong: bool,
    set: &[(String, String)],
    filter_sql: Option<&str>,
    opts: &WriteOptions,
) -> Result<MergeSummary> {
    let started_ms = crate::ns::txn::cleanup_marks::now_ms()?;
    let ns = snap.schema();
    let up = plan(set, filter_sql, &ns)?;
    let pruned = prune(&snap, up.filter.as_ref()).await?;
    let results: Vec<LeafChanges> = stream::iter(
        pruned
            .leaves
            .iter()
            .map(|&i| update_leaf(storage, &ns, &up, i, &snap.leaves[i])),
    )
    .buffer_unordered(opts.concurrency.max(1))
    .try_collect()
    .await?;
    let summary = MergeSummary {
        updated: results.iter().map(|r| r.updated).sum(),
        scanned: pruned.leaves.len() as u64,
        skipped: (snap.leaves.len() - pruned.leaves.len()) as u64,
        matching: vec![format!(
            "the filter keeps {} of {} partition(s)",
            pruned.leaves.len(),
            snap.leaves.len()
        )],
        manifest_version: snap.version,
        ..Default::default()
    };
    let change = Decided {
        results,
        inserts: None,
        read: pruned.leaves.clone(),
        operation: "update",
    };
    commit_changes(storage, &snap, strong, opts, change, summary, started_ms).await
}

/// The new versions of one partition's rows that match the filter.
async fn update_leaf(
    storage: &Storage,
    ns: &Schema,
    up: &Update,
    index: usize,
    leaf: &Leaf,
) -> Result<LeafChanges> {
    let scan = LeafScan::open(storage, leaf, ns).await?;
    let read = Arc::new(ns.clone());
    let mut out = LeafChanges::new(index, Arc::clone(&scan.ds));
    let mut stream = Box::pin(scan.rows(&read).await?);
    while let Some(next) = stream.next().await {
        let (rows, refs) = next?;
        let addr = refs.addr;
        let (rows, addr) = match &up.filter_phys {
            Some(f) => {
                let mask = evaluate_mask(f, &rows)?;
                let kept = addr
                    .iter()
                    .zip(mask.iter())
                    .filter(|(_, m)| *m == Some(true));
                let addr: Vec<u64> = kept.map(|(a, _)| *a).collect();
                (filter_record_batch(&rows, &mask)?, addr)
            }
            None => (rows, addr),
        };
        if rows.num_rows() == 0 {
            continue;
        }
        out.deleted.extend_from_slice(&addr);
        out.updated += rows.num_rows() as u64;
        out.updates.push(new_version(ns, &rows, |name| {
            up.set.iter().find(|(c, _)| c == name).map(|(_, e)| {
                e.evaluate(&rows)
                    .and_then(|v| v.into_array(rows.num_rows()))
                    .map_err(Error::from)
            })
        })?);
    }
    Ok(out)
}
