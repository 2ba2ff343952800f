//! Skipping leaves by their column statistics, after partition pruning: DataFusion's
//! `PruningPredicate` rewrites the filter into a predicate over each column's bounds and counts
//! (`x > 5` becomes `x_max > 5`), evaluated once over every candidate leaf's recorded
//! statistics. A leaf is skipped only when its statistics prove that no row can satisfy the
//! filter; leaves without statistics, and columns without them, are kept.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::arrow::array::{ArrayRef, BooleanArray, UInt64Array};
use crate::arrow::datatypes::DataType;
use crate::datafusion::common::Column;
use crate::datafusion::physical_optimizer::pruning::{PruningPredicate, PruningStatistics};
use crate::datafusion::scalar::ScalarValue;
use crate::error::Result;
use crate::field_ids::field_id;
use crate::ns::infra::filter::{plain, Filter};
use crate::ns::manifest::{cast_bound, leaf_column_stats, ColumnStats, LeafColumnStats, Snapshot};

/// Removes from `kept` (indexes into the snapshot's leaves) the leaves whose statistics prove
/// that no row satisfies `filter`; returns those removed.
///
/// # Errors
/// `Lance` or `Corrupt` when the manifest's recorded properties cannot be read.
pub(super) async fn skip_by_stats(
    snap: &Snapshot,
    filter: &Filter,
    kept: &mut Vec<usize>,
) -> Result<HashSet<usize>> {
    let none = HashSet::new;
    if kept.is_empty() {
        return Ok(none());
    }
    let fields: HashMap<String, (i32, DataType)> = snap
        .schema()
        .fields()
        .iter()
        .filter_map(|f| Some((f.name().clone(), (field_id(f)?, f.data_type().clone()))))
        .collect();
    if only_partition_sources(snap, filter, &fields) {
        // Partition pruning has done what statistics could: no need to read them.
        return Ok(none());
    }
    let schema = Arc::new(plain(&snap.schema()));
    // A filter the rewrite cannot use (or that needs no column) prunes nothing here.
    let Ok(expr) = filter.physical(&schema) else {
        return Ok(none());
    };
    let Ok(predicate) = PruningPredicate::try_new(expr, Arc::clone(&schema)) else {
        return Ok(none());
    };
    if predicate.always_true() {
        return Ok(none());
    }
    let recorded = leaf_column_stats(snap).await?;
    let with: Vec<usize> = kept
        .iter()
        .copied()
        .filter(|&i| recorded[i].is_some())
        .collect();
    if with.is_empty() {
        return Ok(none());
    }
    let view = Containers {
        leaves: with.iter().filter_map(|&i| recorded[i].as_ref()).collect(),
        fields,
    };
    let Ok(may_match) = predicate.prune(&view) else {
        return Ok(none());
    };
    let skipped: HashSet<usize> = with
        .iter()
        .zip(may_match)
        .filter(|(_, may)| !may)
        .map(|(&i, _)| i)
        .collect();
    kept.retain(|i| !skipped.contains(i));
    Ok(skipped)
}

/// Whether every column `filter` reads is a source of a partition field (of any spec version).
fn only_partition_sources(
    snap: &Snapshot,
    filter: &Filter,
    fields: &HashMap<String, (i32, DataType)>,
) -> bool {
    let sources: HashSet<i32> = snap
        .root_props
        .specs
        .values()
        .flat_map(|s| s.fields.iter().flat_map(|f| f.source_ids.iter().copied()))
        .collect();
    filter
        .columns()
        .iter()
        .all(|c| fields.get(c).is_some_and(|(id, _)| sources.contains(id)))
}

/// The candidate leaves' statistics as DataFusion's pruning reads them: one container per
/// leaf, columns found by their namespace field id.
struct Containers<'a> {
    leaves: Vec<&'a LeafColumnStats>,
    /// Top-level column name -> (field id, namespace type).
    fields: HashMap<String, (i32, DataType)>,
}

impl Containers<'_> {
    /// One value per leaf: `pick` of the column's statistics in the namespace type, NULL where
    /// unknown.
    fn per_leaf(
        &self,
        column: &Column,
        pick: impl Fn(&ColumnStats) -> Option<&ScalarValue>,
    ) -> Option<ArrayRef> {
        let (id, ty) = self.fields.get(column.name())?;
        let null = ScalarValue::try_from(ty).ok()?;
        let values = self.leaves.iter().map(|s| {
            // A bound recorded under an older type (a widened column) is cast to this one.
            let bound = s.columns.get(id).and_then(&pick);
            bound
                .and_then(|b| cast_bound(b, ty))
                .unwrap_or_else(|| null.clone())
        });
        ScalarValue::iter_to_array(values).ok()
    }
}

impl PruningStatistics for Containers<'_> {
    fn min_values(&self, column: &Column) -> Option<ArrayRef> {
        self.per_leaf(column, |c| c.min.as_ref())
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        self.per_leaf(column, |c| c.max.as_ref())
    }

    fn num_containers(&self) -> usize {
        self.leaves.len()
    }

    fn null_counts(&self, column: &Column) -> Option<ArrayRef> {
        let (id, _) = self.fields.get(column.name())?;
        let counts = self
            .leaves
            .iter()
            .map(|s| s.columns.get(id).map(|c| c.nulls));
        Some(Arc::new(UInt64Array::from_iter(counts)))
    }

    fn row_counts(&self) -> Option<ArrayRef> {
        let rows = self.leaves.iter().map(|s| s.rows);
        Some(Arc::new(UInt64Array::from_iter_values(rows)))
    }

    fn contained(&self, _: &Column, _: &HashSet<ScalarValue>) -> Option<BooleanArray> {
        None
    }
}
