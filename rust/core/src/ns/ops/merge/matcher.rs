//! One partition of a merge: its rows are read at the partition's version (the columns the
//! clauses need, with each row's address), matched against the source's keys and decided
//! clause by clause. What comes out is the rows to delete (by address: deleted rows and the
//! old versions of updated ones), the new versions of updated rows, and the source rows that
//! found a match here. Nothing is written.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use lance::dataset::Dataset;

use crate::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, RecordBatchOptions, UInt32Array};
use crate::arrow::compute::take_record_batch;
use crate::arrow::datatypes::{Field, Schema, UInt64Type};
use crate::datafusion::physical_plan::PhysicalExpr;
use crate::error::{Error, Result};
use crate::ns::infra::filter::evaluate_mask;
use crate::ns::infra::storage::Storage;
use crate::ns::leaf_io::read_rules::{adapt, leaf_columns};
use crate::ns::manifest::Leaf;

use super::source::{KeyEncoder, Source};
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
    let ds = inputs
        .storage
        .open(&leaf.location, leaf.read_version)
        .await?;
    let stored = Schema::from(ds.schema());
    let map = leaf_columns(&stored, inputs.ns);
    let mut wanted: Vec<String> = inputs
        .plan
        .read
        .fields()
        .iter()
        .filter_map(|f| map.get(f.name()).cloned())
        .collect();
    if wanted.is_empty() {
        // None of the columns exist in this partition (added after it was written): read
        // one column for the row addresses; every read column is NULL.
        if let Some(f) = stored.fields().first() {
            wanted.push(f.name().clone());
        }
    }
    let mut out = LeafChanges::new(index, Arc::clone(&ds));
    let mut scanner = ds.scan();
    scanner.project(&wanted)?;
    scanner.with_row_address();
    let mut stream = scanner.try_into_stream().await?;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        let addr = batch
            .column_by_name(lance_core::ROW_ADDR)
            .and_then(|c| c.as_primitive_opt::<UInt64Type>())
            .cloned()
            .ok_or_else(|| Error::Internal("the scan returned no row addresses".into()))?;
        let target = adapt(&batch, &inputs.plan.read, &map)?;
        decide(inputs, &target, addr.values(), &mut out)?;
    }
    Ok(out)
}

/// Decides the rows of one target batch.
fn decide(
    inputs: &Inputs<'_>,
    target: &RecordBatch,
    addr: &[u64],
    out: &mut LeafChanges,
) -> Result<()> {
    let keys = inputs.encoder.encode(target)?;
    let (mut pair_t, mut pair_s, mut unmatched) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..target.num_rows() {
        let hit = keys.valid[r]
            .then(|| inputs.source.index.get(keys.rows.row(r).as_ref()))
            .flatten();
        match hit {
            Some(&s) => {
                pair_t.push(r as u32);
                pair_s.push(s);
            }
            None => unmatched.push(r as u32),
        }
    }
    out.matched.extend_from_slice(&pair_s);
    if !pair_t.is_empty() && !inputs.plan.matched.is_empty() {
        decide_matched(inputs, target, addr, (&pair_t, &pair_s), out)?;
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
fn decide_matched(
    inputs: &Inputs<'_>,
    target: &RecordBatch,
    addr: &[u64],
    (pair_t, pair_s): (&[u32], &[u32]),
    out: &mut LeafChanges,
) -> Result<()> {
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
        match action {
            MatchedAction::Delete => out.deleted_rows += rows.len() as u64,
            MatchedAction::UpdateAll => {
                out.updated += rows.len() as u64;
                let s = take_record_batch(&src, &pick)?;
                let t = take_record_batch(&tgt, &pick)?;
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

/// The new version of target rows `t` (every namespace column of `ns` read): a column
/// `value` gives is replaced, the others kept.
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
