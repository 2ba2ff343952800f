//! One partition of a merge: its rows are read at the partition's version (the columns the
//! clauses need, with each row's address), matched against the source's keys and decided
//! clause by clause. What comes out is the rows to delete (by address: deleted rows and the
//! old versions of updated ones), the new versions of updated rows, and the source rows that
//! found a match here. Nothing is written.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use lance::dataset::Dataset;

use crate::arrow::array::{Array, ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use crate::arrow::compute::take_record_batch;
use crate::arrow::datatypes::{Field, Schema};
use crate::datafusion::physical_plan::PhysicalExpr;
use crate::error::{Error, Result};
use crate::ns::infra::filter::evaluate_mask;
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::Leaf;

use super::key_index::Matches;
use super::keys::KeyEncoder;
use super::leaf_scan::{LeafScan, RowRefs};
use super::source::Source;
use super::sql::{MatchedAction, Plan};

/// What a merge decided for one partition.
pub(crate) struct LeafChanges {
    /// Index into the snapshot's leaves.
    pub(crate) leaf: usize,
    /// The leaf at the version read.
    pub(crate) dataset: Arc<Dataset>,
    /// Row addresses to delete.
    pub(crate) deleted: Vec<u64>,
    /// New versions of updated rows (namespace column names, not yet aligned).
    pub(crate) updates: Vec<RecordBatch>,
    /// Source rows that matched a row here.
    pub(crate) matched: Vec<u32>,
    /// Addresses of the rows here that a source row matched, when [`Inputs::report_matched`]
    /// asks for them.
    pub(crate) matched_rows: Vec<u64>,
    /// Rows updated.
    pub(crate) updated: u64,
    /// Rows deleted by a delete clause.
    pub(crate) deleted_rows: u64,
}

impl LeafChanges {
    /// Nothing decided yet for leaf `leaf`, read as `dataset`.
    pub(crate) fn new(leaf: usize, dataset: Arc<Dataset>) -> Self {
        Self {
            leaf,
            dataset,
            deleted: Vec::new(),
            updates: Vec::new(),
            matched: Vec::new(),
            matched_rows: Vec::new(),
            updated: 0,
            deleted_rows: 0,
        }
    }

    /// Whether the partition changes.
    pub(crate) fn changes(&self) -> bool {
        !self.deleted.is_empty()
    }
}

/// What the matcher needs besides the partition.
pub(crate) struct Inputs<'a> {
    pub(crate) storage: &'a Storage,
    pub(crate) ns: &'a Schema,
    pub(crate) source: &'a Source,
    pub(crate) encoder: &'a KeyEncoder,
    pub(crate) plan: &'a Plan,
    /// Whether to report the matched target rows (a distributed merge's not-matched-by-source
    /// clauses are decided where every task's matches meet).
    pub(crate) report_matched: bool,
}

/// Matches and decides the rows of leaf `index`; see the module docs.
///
/// # Errors
/// `Lance` for I/O errors; `Expression` when a condition or value fails on the data;
/// `SchemaMismatch` when a partition's column cannot be read as the namespace type.
pub(crate) async fn match_leaf(
    inputs: &Inputs<'_>,
    index: usize,
    leaf: &Leaf,
) -> Result<LeafChanges> {
    let scan = LeafScan::open(inputs.storage, leaf, inputs.ns).await?;
    let mut out = LeafChanges::new(index, Arc::clone(&scan.ds));
    let mut rows = Box::pin(scan.rows(&inputs.plan.read).await?);
    while let Some(next) = rows.next().await {
        let (target, refs) = next?;
        decide(inputs, &scan, &target, &refs, &mut out).await?;
    }
    Ok(out)
}

/// Decides the rows of one target batch.
async fn decide(
    inputs: &Inputs<'_>,
    leaf: &LeafScan,
    target: &RecordBatch,
    rows: &RowRefs,
    out: &mut LeafChanges,
) -> Result<()> {
    let addr = rows.addr.as_slice();
    let Matches {
        target: pair_t,
        source: pair_s,
        unmatched,
        ..
    } = (inputs.source.index).find(inputs.encoder, target, !inputs.plan.by_source.is_empty())?;
    out.matched.extend_from_slice(&pair_s);
    if inputs.report_matched {
        out.matched_rows
            .extend(pair_t.iter().map(|&r| addr[r as usize]));
    }
    if !pair_t.is_empty() && !inputs.plan.matched.is_empty() {
        decide_matched(inputs, leaf, target, rows, (&pair_t, &pair_s), out).await?;
    }
    if !unmatched.is_empty() && !inputs.plan.by_source.is_empty() {
        let rows = take_record_batch(target, &UInt32Array::from(unmatched.clone()))?;
        let chosen = first_true(&inputs.plan.by_source, &rows)?;
        for (j, c) in chosen.iter().enumerate() {
            if c.is_some() {
                out.deleted.push(addr[unmatched[j] as usize]);
                out.deleted_rows += 1;
            }
        }
    }
    Ok(())
}

/// Applies the matched clauses to the pairs (target row, source row).
async fn decide_matched(
    inputs: &Inputs<'_>,
    leaf: &LeafScan,
    target: &RecordBatch,
    refs: &RowRefs,
    (pair_t, pair_s): (&[u32], &[u32]),
    out: &mut LeafChanges,
) -> Result<()> {
    let addr = refs.addr.as_slice();
    let t_idx = UInt32Array::from(pair_t.to_vec());
    let s_idx = UInt32Array::from(pair_s.to_vec());
    let src = take_record_batch(&inputs.source.batch, &s_idx)?;
    let tgt = take_record_batch(target, &t_idx)?;
    let joined = side_by_side(&src, &tgt)?;
    let conditions: Vec<Option<Arc<dyn PhysicalExpr>>> =
        inputs.plan.matched.iter().map(|(c, _)| c.clone()).collect();
    let chosen = first_true(&conditions, &joined)?;
    for (k, (_, action)) in inputs.plan.matched.iter().enumerate() {
        let rows: Vec<u32> = (0..chosen.len() as u32)
            .filter(|&j| chosen[j as usize] == Some(k))
            .collect();
        if rows.is_empty() {
            continue;
        }
        for &j in &rows {
            out.deleted.push(addr[pair_t[j as usize] as usize]);
        }
        let pick = UInt32Array::from(rows.clone());
        let ids: Vec<u64> = rows
            .iter()
            .map(|&j| {
                let r = pair_t[j as usize] as usize;
                refs.id.as_ref().map_or(addr[r], |ids| ids[r])
            })
            .collect();
        match action {
            MatchedAction::Delete => out.deleted_rows += rows.len() as u64,
            MatchedAction::UpdateAll => {
                out.updated += rows.len() as u64;
                let s = take_record_batch(&src, &pick)?;
                let given = |name: &str| inputs.source.ns_columns.contains(name);
                let t = take_record_batch(&tgt, &pick)?;
                let t = if inputs.ns.fields().iter().all(|f| given(f.name())) {
                    t
                } else {
                    leaf.complete(inputs.ns, t, &ids).await?
                };
                out.updates.push(new_version(inputs.ns, &t, |name| {
                    inputs
                        .source
                        .ns_columns
                        .contains(name)
                        .then(|| s.column_by_name(name).cloned())
                        .flatten()
                        .map(Ok)
                })?);
            }
            MatchedAction::Update(set) => {
                out.updated += rows.len() as u64;
                let j = take_record_batch(&joined, &pick)?;
                let t = take_record_batch(&tgt, &pick)?;
                let t = leaf.complete(inputs.ns, t, &ids).await?;
                let values: HashMap<&str, &Arc<dyn PhysicalExpr>> =
                    set.iter().map(|(c, e)| (c.as_str(), e)).collect();
                out.updates.push(new_version(inputs.ns, &t, |name| {
                    values.get(name).map(|e| {
                        e.evaluate(&j)
                            .and_then(|v| v.into_array(j.num_rows()))
                            .map_err(Error::from)
                    })
                })?);
            }
        }
    }
    Ok(())
}

/// The new version of target rows `t` (every namespace column of `ns` that `value` does not
/// give): a column `value` gives is replaced, the others kept.
pub(crate) fn new_version(
    ns: &Schema,
    t: &RecordBatch,
    value: impl Fn(&str) -> Option<Result<ArrayRef>>,
) -> Result<RecordBatch> {
    let mut fields = Vec::with_capacity(ns.fields().len());
    let mut cols = Vec::with_capacity(ns.fields().len());
    for f in ns.fields() {
        let col = match value(f.name()) {
            Some(v) => v?,
            None => t.column_by_name(f.name()).cloned().ok_or_else(|| {
                Error::Internal(format!("column {:?} was not read for an update", f.name()))
            })?,
        };
        fields.push(Field::new(f.name(), col.data_type().clone(), true));
        cols.push(col);
    }
    Ok(RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        cols,
        &RecordBatchOptions::new().with_row_count(Some(t.num_rows())),
    )?)
}

/// The source's columns then the target's, as the matched clauses' SQL sees them.
fn side_by_side(src: &RecordBatch, tgt: &RecordBatch) -> Result<RecordBatch> {
    let mut fields: Vec<Field> = Vec::with_capacity(src.num_columns() + tgt.num_columns());
    let mut cols = Vec::with_capacity(fields.capacity());
    for (i, b) in [src, tgt].into_iter().enumerate() {
        for (f, c) in b.schema().fields().iter().zip(b.columns()) {
            // Names are positional for the planned expressions; prefixes keep them unique.
            let name = format!("{}{}", ["s.", "t."][i], f.name());
            fields.push(Field::new(name, f.data_type().clone(), true));
            cols.push(Arc::clone(c));
        }
    }
    Ok(RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        cols,
        &RecordBatchOptions::new().with_row_count(Some(src.num_rows())),
    )?)
}

/// For each row, the first clause whose condition is TRUE (no condition: always).
pub(crate) fn first_true(
    conditions: &[Option<Arc<dyn PhysicalExpr>>],
    batch: &RecordBatch,
) -> Result<Vec<Option<usize>>> {
    let mut chosen: Vec<Option<usize>> = vec![None; batch.num_rows()];
    let mut open = batch.num_rows();
    for (k, c) in conditions.iter().enumerate() {
        if open == 0 {
            break;
        }
        match c {
            None => {
                for x in chosen.iter_mut().filter(|x| x.is_none()) {
                    *x = Some(k);
                }
                open = 0;
            }
            Some(c) => {
                let mask = evaluate_mask(c, batch)?;
                for (j, x) in chosen.iter_mut().enumerate() {
                    if x.is_none() && mask.value(j) {
                        *x = Some(k);
                        open -= 1;
                    }
                }
            }
        }
    }
    Ok(chosen)
}
