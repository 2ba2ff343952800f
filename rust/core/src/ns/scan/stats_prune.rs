//! Skipping leaves, and fragments inside the leaves kept, by their column statistics, after
//! partition pruning: DataFusion's
//! `PruningPredicate` rewrites the filter into a predicate over each column's bounds and counts
//! (`x > 5` becomes `x_max > 5`), evaluated once over every candidate leaf's recorded
//! statistics. A leaf is skipped only when its statistics prove that no row can satisfy the
//! filter; leaves without statistics, and columns without them, are kept. The same predicate
//! judges the fragment groups a leaf version records ([`FragmentStats`]): a leaf whose every
//! fragment they rule out is skipped too, and a leaf opened to be read hands Lance only the
//! fragments they keep.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::prune_expr::as_column;
use crate::arrow::array::{ArrayRef, BooleanArray, UInt64Array};
use crate::arrow::datatypes::{DataType, Field, Schema};
use crate::datafusion::common::tree_node::{Transformed, TreeNode};
use crate::datafusion::common::Column;
use crate::datafusion::logical_expr::Expr;
use crate::datafusion::physical_optimizer::pruning::{PruningPredicate, PruningStatistics};
use crate::datafusion::scalar::ScalarValue;
use crate::error::Result;
use crate::field_ids::field_id;
use crate::ns::infra::filter::Filter;
use crate::ns::manifest::{
    cast_bound, leaf_column_stats, leaf_fragment_stats, ColumnStats, FragmentStats,
    LeafColumnStats, Snapshot,
};

/// A filter rewritten over column statistics (`x > 5` becomes `x_max > 5`), evaluated over
/// leaves and over the fragment groups inside a leaf.
pub(super) struct StatsPredicate {
    predicate: PruningPredicate,
    /// Column name (a struct child's: its path joined by [`PATH_SEP`]) -> (field id,
    /// namespace type).
    fields: HashMap<String, (i32, DataType)>,
}

impl StatsPredicate {
    /// The predicate of `filter` over `snap`'s columns; `None` when statistics cannot rule it
    /// out (it reads only identity partition sources, which partition pruning has judged, or
    /// the rewrite cannot use it).
    pub(super) fn of(snap: &Snapshot, filter: &Filter) -> Option<Self> {
        let ns = snap.schema();
        let mut fields: HashMap<String, (i32, DataType)> = HashMap::new();
        let mut columns: Vec<Field> = Vec::new();
        for f in ns.fields() {
            columns.push(f.as_ref().clone().with_metadata(HashMap::new()));
            if let Some(id) = field_id(f) {
                fields.insert(f.name().clone(), (id, f.data_type().clone()));
            }
            children(&[f.name().clone()], f, &mut fields, &mut columns);
        }
        if only_identity_sources(snap, filter, &fields) {
            return None;
        }
        let schema = Arc::new(Schema::new(columns));
        let by_child = Filter {
            sql: filter.sql.clone(),
            expr: child_columns(&filter.expr, &fields),
        };
        let expr = by_child.physical(&schema).ok()?;
        let predicate = PruningPredicate::try_new(expr, Arc::clone(&schema)).ok()?;
        (!predicate.always_true()).then_some(Self { predicate, fields })
    }

    /// Per statistics, whether rows they describe may satisfy the filter (all `true` when the
    /// predicate cannot be evaluated over them).
    fn may_match(&self, stats: Vec<&LeafColumnStats>) -> Vec<bool> {
        let n = stats.len();
        let view = Containers {
            leaves: stats,
            fields: &self.fields,
        };
        self.predicate
            .prune(&view)
            .unwrap_or_else(|_| vec![true; n])
    }

    /// The fragments of `groups` whose statistics rule the filter out.
    pub(super) fn fragments_ruled_out(&self, groups: &FragmentStats) -> HashSet<u64> {
        let may = self.may_match(groups.groups.iter().map(|g| &g.stats).collect());
        groups
            .groups
            .iter()
            .zip(may)
            .filter(|(_, may)| !may)
            .flat_map(|(g, _)| g.ids.iter().copied())
            .collect()
    }
}

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
    if kept.is_empty() {
        return Ok(HashSet::new());
    }
    let Some(predicate) = StatsPredicate::of(snap, filter) else {
        return Ok(HashSet::new());
    };
    let recorded = leaf_column_stats(snap).await?;
    let with: Vec<usize> = kept
        .iter()
        .copied()
        .filter(|&i| recorded[i].is_some())
        .collect();
    let may_match =
        predicate.may_match(with.iter().filter_map(|&i| recorded[i].as_ref()).collect());
    let mut skipped: HashSet<usize> = with
        .iter()
        .zip(may_match)
        .filter(|(_, may)| !may)
        .map(|(&i, _)| i)
        .collect();
    let left: Vec<usize> = kept
        .iter()
        .copied()
        .filter(|i| !skipped.contains(i))
        .collect();
    for i in left {
        if every_fragment_ruled_out(snap, &predicate, i).await? {
            skipped.insert(i);
        }
    }
    kept.retain(|i| !skipped.contains(i));
    Ok(skipped)
}

/// Whether the fragment groups of leaf `i` hold each of its fragments and rule every one
/// out: then no row matches, though the leaf's own bounds (which span the gaps between the
/// groups') keep it.
async fn every_fragment_ruled_out(
    snap: &Snapshot,
    predicate: &StatsPredicate,
    i: usize,
) -> Result<bool> {
    let Some((groups, Some(fragments))) = leaf_fragment_stats(snap, i).await? else {
        return Ok(false);
    };
    Ok(predicate.fragments_ruled_out(&groups).len() as u64 == fragments)
}

/// How many fragments of the leaves `kept` their recorded fragment groups' statistics rule
/// `filter` out (`explain`; the manifest alone is read).
///
/// # Errors
/// `Lance` or `Corrupt` when the manifest's recorded properties cannot be read.
pub async fn fragments_skipped(snap: &Snapshot, filter: &Filter, kept: &[usize]) -> Result<u64> {
    let Some(predicate) = StatsPredicate::of(snap, filter) else {
        return Ok(0);
    };
    let mut skipped = 0;
    for &i in kept {
        if let Some((groups, _)) = leaf_fragment_stats(snap, i).await? {
            skipped += predicate.fragments_ruled_out(&groups).len() as u64;
        }
    }
    Ok(skipped)
}

/// Separates the names of a struct child's path in the column that stands for it.
const PATH_SEP: char = '\u{1f}';

/// Adds the struct children of `f` (at `path`), at every depth, as columns of their own
/// named by their path: the statistics of a child are recorded under its field id.
fn children(
    path: &[String],
    f: &Field,
    fields: &mut HashMap<String, (i32, DataType)>,
    columns: &mut Vec<Field>,
) {
    let DataType::Struct(kids) = f.data_type() else {
        return;
    };
    for kid in kids {
        let mut at = path.to_vec();
        at.push(kid.name().clone());
        let name = at.join(&PATH_SEP.to_string());
        if let Some(id) = field_id(kid) {
            fields.insert(name.clone(), (id, kid.data_type().clone()));
            columns.push(Field::new(&name, kid.data_type().clone(), true));
        }
        children(&at, kid, fields, columns);
    }
}

/// `e` with every struct child it reads (`get_field(s, 'x')`) replaced by the column that
/// stands for it, so the pruning rewrite sees it as a column with bounds.
fn child_columns(e: &Expr, fields: &HashMap<String, (i32, DataType)>) -> Expr {
    let rewritten = e.clone().transform_up(|e| {
        let Expr::ScalarFunction(_) = &e else {
            return Ok(Transformed::no(e));
        };
        let name = as_column(&e).map(|p| p.join(&PATH_SEP.to_string()));
        Ok(match name.filter(|n| fields.contains_key(n)) {
            Some(n) => Transformed::yes(Expr::Column(Column::new_unqualified(n))),
            None => Transformed::no(e),
        })
    });
    rewritten.map_or_else(|_| e.clone(), |t| t.data)
}

/// Whether every column `filter` reads is the source of an identity field in every spec
/// version: then a leaf's values of it are its partition value, which partition pruning has
/// judged, and statistics cannot rule out more. Any other transform (a day of a timestamp, a
/// bucket, a truncation) keeps many values per partition, which a leaf's and its fragment
/// groups' bounds narrow (a one-hour window inside a day's partition).
fn only_identity_sources(
    snap: &Snapshot,
    filter: &Filter,
    fields: &HashMap<String, (i32, DataType)>,
) -> bool {
    let specs: Vec<_> = snap.root_props.specs.values().collect();
    let identity_in_every_spec = |id: i32| {
        specs.iter().all(|s| {
            s.fields.iter().any(|f| {
                f.source_ids == [id] && f.transform.as_ref().is_some_and(|t| t.kind == "identity")
            })
        })
    };
    !specs.is_empty()
        && filter.columns().iter().all(|c| {
            fields
                .get(c)
                .is_some_and(|(id, _)| identity_in_every_spec(*id))
        })
}

/// The candidate leaves' statistics as DataFusion's pruning reads them: one container per
/// leaf, columns found by their namespace field id.
struct Containers<'a> {
    leaves: Vec<&'a LeafColumnStats>,
    /// As [`StatsPredicate::fields`].
    fields: &'a HashMap<String, (i32, DataType)>,
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
