//! Partition pruning through the manifest: the user filter becomes one manifest predicate
//! per spec version: comparisons, `IN`, `BETWEEN`, `IS [NOT] NULL`, `AND`/`OR` on identity
//! fields; equality and `IN` on any field by evaluating its transform (or expression) on the
//! literal; ranges on truncate and on year/month/day/hour. With `date_part` semantics
//! month/day/hour are not monotone on their own, so a range prunes on the longest chain
//! year[, month[, day[, hour]]] of fields over the same source, compared as a tuple. A strict
//! bound on the first (last) value of a period excludes that period (`ts < '2021-01-01'` keeps
//! 2020, not 2021); a filter that is never TRUE keeps nothing (`never_true`: an `IN` of
//! NULLs, contradictory bounds on any column).

use std::collections::HashMap;

use crate::arrow::datatypes::{DataType, Schema};
use crate::datafusion::common::DFSchema;
use crate::datafusion::logical_expr::{Expr, Operator};
use crate::datafusion::scalar::ScalarValue;
use crate::error::Result;
use crate::expr::session;
use crate::ns::infra::filter::{evaluate_mask, plain, Filter};
use crate::ns::manifest::{partition_column, Snapshot};

use super::never_true::{contradictory, only_nulls, without_nulls};
use super::prune_expr::{
    as_column, as_literal, binary, date_part, exact_cast, flatten_and, flip, ident,
    identity_compare, lit, neighbor, other_zero,
};
use crate::spec::{fields_by_id, CompiledSpec, PartitionSpec};

use super::stats_prune::skip_by_stats;

/// The pruning of one spec version.
#[derive(Debug, Clone)]
pub struct SpecPlan {
    /// Spec version.
    pub spec_id: i32,
    /// The manifest predicate (display form), `None` when nothing could be pushed.
    pub predicate: Option<String>,
    /// Leaves of this spec version.
    pub total: usize,
    /// Leaves kept.
    pub kept: usize,
    /// Leaves the partition values kept that their column statistics skip (not in `kept`).
    pub skipped_by_stats: usize,
}

/// The result of pruning.
#[derive(Debug, Clone)]
pub struct Pruned {
    /// Per spec version.
    pub specs: Vec<SpecPlan>,
    /// Indexes into [`Snapshot::leaves`] of the kept leaves.
    pub leaves: Vec<usize>,
}

/// Derives manifest predicates for one spec version.
struct Deriver<'a> {
    spec: &'a PartitionSpec,
    compiled: &'a CompiledSpec,
    /// source path (a column, or struct children down from one) -> (field id, type)
    sources: &'a HashMap<Vec<String>, (i32, DataType)>,
    /// manifest columns present
    present: &'a Schema,
}

impl Deriver<'_> {
    fn pcol(&self, k: usize) -> Option<(String, DataType)> {
        let name = partition_column(&self.spec.fields[k].field_id);
        let f = self.present.field_with_name(&name).ok()?;
        Some((name, f.data_type().clone()))
    }

    fn kind(&self, k: usize) -> Option<&str> {
        self.spec.fields[k]
            .transform
            .as_ref()
            .map(|t| t.kind.as_str())
    }

    /// Fields computed from exactly this one source column.
    fn single_source_fields(&self, column: &[String]) -> Vec<usize> {
        let Some(&(id, _)) = self.sources.get(column) else {
            return Vec::new();
        };
        (0..self.spec.fields.len())
            .filter(|&k| self.spec.fields[k].source_ids == [id])
            .collect()
    }

    fn value(&self, k: usize, v: &ScalarValue) -> Option<ScalarValue> {
        self.compiled.field_value(k, std::slice::from_ref(v)).ok()
    }

    fn derive(&self, e: &Expr) -> Option<Expr> {
        match e {
            // A filter that is never TRUE (`FALSE`, `x = NULL` simplified) keeps nothing.
            Expr::Literal(ScalarValue::Boolean(None | Some(false)) | ScalarValue::Null, _) => {
                Some(lit(ScalarValue::Boolean(Some(false))))
            }
            Expr::BinaryExpr(b) if b.op == Operator::And => {
                let mut conj = Vec::new();
                flatten_and(e, &mut conj);
                if contradictory(&conj) {
                    return Some(lit(ScalarValue::Boolean(Some(false))));
                }
                let mut parts: Vec<Expr> = conj.iter().filter_map(|c| self.derive(c)).collect();
                parts.extend(self.multi_source_equalities(&conj));
                parts.into_iter().reduce(|a, b| a.and(b))
            }
            Expr::BinaryExpr(b) if b.op == Operator::Or => {
                let l = self.derive(&b.left)?;
                let r = self.derive(&b.right)?;
                Some(l.or(r))
            }
            Expr::BinaryExpr(b)
                if date_part(&b.left).is_some() || date_part(&b.right).is_some() =>
            {
                let (part, op, v) = match (date_part(&b.left), as_literal(&b.right)) {
                    (Some(p), Some(v)) => (p, b.op, v),
                    _ => match (as_literal(&b.left), date_part(&b.right)) {
                        (Some(v), Some(p)) => (p, flip(b.op)?, v),
                        _ => return None,
                    },
                };
                self.compare_date_part(part, op, &v)
            }
            Expr::BinaryExpr(b) => {
                let (c, op, v) = match (as_column(&b.left), as_literal(&b.right)) {
                    (Some(c), Some(v)) => (c, b.op, v),
                    _ => match (as_literal(&b.left), as_column(&b.right)) {
                        (Some(v), Some(c)) => (c, flip(b.op)?, v),
                        _ => return None,
                    },
                };
                // The operators that flip are the comparisons.
                if v.is_null() && flip(op).is_some() {
                    // A comparison with NULL is never TRUE (`x IN (NULL)` simplifies to one;
                    // `IS [NOT] DISTINCT FROM NULL` is not a comparison).
                    return Some(lit(ScalarValue::Boolean(Some(false))));
                }
                self.compare(&c, op, &v)
            }
            Expr::Between(bt) if !bt.negated => {
                let lo = binary((*bt.expr).clone(), Operator::GtEq, (*bt.low).clone());
                let hi = binary((*bt.expr).clone(), Operator::LtEq, (*bt.high).clone());
                self.derive(&lo.and(hi))
            }
            // NULLs in the list never make it TRUE; only NULLs: it never is.
            Expr::InList(il) if !il.negated && only_nulls(&il.list) => {
                Some(lit(ScalarValue::Boolean(Some(false))))
            }
            Expr::InList(il) if !il.negated => {
                self.derive_in_list(&il.expr, &without_nulls(&il.list))
            }
            Expr::IsNull(inner) => self.derive_null(inner, true),
            Expr::IsNotNull(inner) => self.derive_null(inner, false),
            _ => None,
        }
    }

    /// `c IN (v, ...)`: each field over `c` alone, in the set of the values' field values
    /// (with the other zero of a float zero).
    fn derive_in_list(&self, column: &Expr, list: &[Expr]) -> Option<Expr> {
        let c = as_column(column)?;
        let vals: Option<Vec<ScalarValue>> = list.iter().map(as_literal).collect();
        let vals = vals?;
        let parts: Vec<Expr> = self
            .single_source_fields(&c)
            .into_iter()
            .filter_map(|k| {
                let (pc, dt) = self.pcol(k)?;
                let mapped: Option<Vec<Expr>> = vals
                    .iter()
                    .map(|v| {
                        if self.kind(k) == Some("identity") {
                            exact_cast(v, &dt).map(lit)
                        } else {
                            self.value(k, v).map(lit)
                        }
                    })
                    .collect();
                let mut mapped = mapped?;
                let zeros: Vec<Expr> = mapped
                    .iter()
                    .filter_map(|e| match e {
                        Expr::Literal(v, _) => other_zero(v).map(lit),
                        _ => None,
                    })
                    .collect();
                mapped.extend(zeros);
                Some(ident(&pc).in_list(mapped, false))
            })
            .collect();
        parts.into_iter().reduce(|a, b| a.and(b))
    }

    /// `c IS [NOT] NULL`: every transform field over `c` alone is (not) NULL.
    fn derive_null(&self, column: &Expr, null: bool) -> Option<Expr> {
        let c = as_column(column)?;
        let parts: Vec<Expr> = self
            .single_source_fields(&c)
            .into_iter()
            .filter(|&k| self.spec.fields[k].transform.is_some())
            .filter_map(|k| {
                let (pc, _) = self.pcol(k)?;
                Some(if null {
                    ident(&pc).is_null()
                } else {
                    ident(&pc).is_not_null()
                })
            })
            .collect();
        parts.into_iter().reduce(|a, b| a.and(b))
    }

    /// `a = x AND b = y` pins a field over (a, b): evaluate it.
    fn multi_source_equalities(&self, conj: &[&Expr]) -> Vec<Expr> {
        let mut eq: HashMap<i32, ScalarValue> = HashMap::new();
        for c in conj {
            if let Expr::BinaryExpr(b) = c {
                if b.op == Operator::Eq {
                    let pair = match (as_column(&b.left), as_literal(&b.right)) {
                        (Some(c), Some(v)) => Some((c, v)),
                        _ => match (as_literal(&b.left), as_column(&b.right)) {
                            (Some(v), Some(c)) => Some((c, v)),
                            _ => None,
                        },
                    };
                    if let Some((c, v)) = pair {
                        if let Some(&(id, _)) = self.sources.get(&c) {
                            eq.insert(id, v);
                        }
                    }
                }
            }
        }
        let mut out = Vec::new();
        for (k, f) in self.spec.fields.iter().enumerate() {
            if f.source_ids.len() < 2 {
                continue;
            }
            let vals: Option<Vec<ScalarValue>> =
                f.source_ids.iter().map(|id| eq.get(id).cloned()).collect();
            let (Some(vals), Some((pc, _))) = (vals, self.pcol(k)) else {
                continue;
            };
            if let Ok(v) = self.compiled.field_value(k, &vals) {
                out.push(if v.is_null() {
                    ident(&pc).is_null()
                } else {
                    ident(&pc).eq(lit(v))
                });
            }
        }
        out
    }

    fn compare(&self, column: &[String], op: Operator, v: &ScalarValue) -> Option<Expr> {
        if v.is_null() {
            return None;
        }
        let fields = self.single_source_fields(column);
        let mut parts = Vec::new();
        for &k in &fields {
            let Some((pc, dt)) = self.pcol(k) else {
                continue;
            };
            let kind = self.kind(k);
            match (kind, op) {
                (Some("identity"), _) => {
                    if let Some(c) = exact_cast(v, &dt) {
                        parts.push(identity_compare(&pc, op, c));
                    }
                }
                (_, Operator::Eq) => {
                    if let Some(x) = self.value(k, v) {
                        parts.push(if x.is_null() {
                            ident(&pc).is_null()
                        } else {
                            ident(&pc).eq(lit(x))
                        });
                    }
                }
                (
                    Some("truncate"),
                    Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq,
                ) => {
                    if let Some(x) = self.value(k, v) {
                        let op2 = if self.bound_is_exclusive(op, v, &[(k, x.clone())]) {
                            op
                        } else if matches!(op, Operator::Lt | Operator::LtEq) {
                            Operator::LtEq
                        } else {
                            Operator::GtEq
                        };
                        parts.push(binary(ident(&pc), op2, lit(x)));
                    }
                }
                (Some("year"), Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq) => {
                    if let Some(e) = self.temporal_range(k, &fields, op, v) {
                        parts.push(e);
                    }
                }
                _ => {}
            }
        }
        parts.into_iter().reduce(|a, b| a.and(b))
    }

    /// `date_part('<unit>', column) op v` where a year/month/day/hour field computes exactly
    /// that part of `column`: the same comparison on the field (the field's value is the part,
    /// so every comparison maps, not only equality). Only for dates, timestamps without a zone
    /// and UTC timestamps, where the field and `date_part` read the same calendar.
    fn compare_date_part(
        &self,
        (unit, column): (&str, Vec<String>),
        op: Operator,
        v: &ScalarValue,
    ) -> Option<Expr> {
        if v.is_null()
            || !matches!(
                op,
                Operator::Eq | Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq
            )
        {
            return None;
        }
        let source = self.sources.get(&column)?.1.clone();
        let utc = match &source {
            DataType::Date32 | DataType::Date64 | DataType::Timestamp(_, None) => true,
            DataType::Timestamp(_, Some(tz)) => matches!(tz.as_ref(), "UTC" | "+00:00" | "Z"),
            _ => false,
        };
        if !utc {
            return None;
        }
        let parts: Vec<Expr> = self
            .single_source_fields(&column)
            .into_iter()
            .filter(|&k| self.kind(k) == Some(unit))
            .filter_map(|k| {
                let (pc, dt) = self.pcol(k)?;
                Some(binary(ident(&pc), op, lit(exact_cast(v, &dt)?)))
            })
            .collect();
        parts.into_iter().reduce(|a, b| a.and(b))
    }

    /// Lexicographic comparison over the chain year[, month[, day[, hour]]] starting at the
    /// year field `k`.
    fn temporal_range(
        &self,
        k: usize,
        fields: &[usize],
        op: Operator,
        v: &ScalarValue,
    ) -> Option<Expr> {
        let mut chain = vec![k];
        for next in ["month", "day", "hour"] {
            match fields.iter().find(|&&f| self.kind(f) == Some(next)) {
                Some(&f) => chain.push(f),
                None => break,
            }
        }
        let mut cols = Vec::new();
        let mut values = Vec::new();
        for &f in &chain {
            let (pc, _) = self.pcol(f)?;
            let x = self.value(f, v)?;
            if x.is_null() {
                return None;
            }
            values.push((f, x.clone()));
            cols.push((pc, x));
        }
        let upper = matches!(op, Operator::Lt | Operator::LtEq);
        let (strict, mut last) = if upper {
            (Operator::Lt, Operator::LtEq)
        } else {
            (Operator::Gt, Operator::GtEq)
        };
        if self.bound_is_exclusive(op, v, &values) {
            last = strict;
        }
        // T op t  ==  OR_i (T_0 = t_0 AND ... AND T_{i-1} = t_{i-1} AND T_i strict t_i), last
        // one non-strict.
        let mut disj: Option<Expr> = None;
        for i in 0..cols.len() {
            let mut term = binary(
                ident(&cols[i].0),
                if i + 1 == cols.len() { last } else { strict },
                lit(cols[i].1.clone()),
            );
            for (c, x) in cols[..i].iter().rev() {
                term = ident(c).eq(lit(x.clone())).and(term);
            }
            disj = Some(match disj {
                None => term,
                Some(d) => d.or(term),
            });
        }
        disj
    }
}

impl Deriver<'_> {
    /// Whether a strict bound `T < t` (`T > t`) excludes the whole period of `t`: when `t` is
    /// the first (last) value of its period, that is, when the value just before (after) it
    /// falls in another period of the fields `values` (field index, value of `t`). Then the
    /// manifest comparison on the last field is strict too, so `ts < '2021-01-01'` keeps
    /// year 2020 and not 2021.
    fn bound_is_exclusive(
        &self,
        op: Operator,
        v: &ScalarValue,
        values: &[(usize, ScalarValue)],
    ) -> bool {
        let step = match op {
            Operator::Lt => -1,
            Operator::Gt => 1,
            _ => return false,
        };
        let Some(next) = neighbor(v, step) else {
            // No neighbour (strings): `s < t` excludes the truncate partition of `t` when
            // `t` is its own truncation (every value in it starts with `t`, so is >= `t`).
            return op == Operator::Lt
                && values.len() == 1
                && exact_cast(v, &values[0].1.data_type()).as_ref() == Some(&values[0].1);
        };
        for (f, x) in values {
            match self.value(*f, &next) {
                Some(y) if &y != x => return true,
                Some(_) => {}
                None => return false,
            }
        }
        false
    }
}

/// Prunes the leaves of `snap` with `filter`: by partition values through the manifest, then
/// by the column statistics recorded for the leaves kept.
///
/// # Errors
/// `Expression` when the derived predicate cannot be evaluated (a bug); `Lance` when the
/// manifest's recorded statistics cannot be read.
pub async fn prune(snap: &Snapshot, filter: Option<&Filter>) -> Result<Pruned> {
    let mut pruned = by_partition_values(snap, filter)?;
    let Some(filter) = filter else {
        return Ok(pruned);
    };
    let skipped = skip_by_stats(snap, filter, &mut pruned.leaves).await?;
    for s in &mut pruned.specs {
        let n = skipped
            .iter()
            .filter(|&&i| snap.leaves[i].spec_id == s.spec_id)
            .count();
        s.kept -= n;
        s.skipped_by_stats = n;
    }
    Ok(pruned)
}

/// Prunes the leaves of `snap` with `filter` by their partition values.
fn by_partition_values(snap: &Snapshot, filter: Option<&Filter>) -> Result<Pruned> {
    let schema = snap.schema();
    let sources: HashMap<Vec<String>, (i32, DataType)> = fields_by_id(&schema)?
        .into_iter()
        .filter(|(_, at)| !at.in_list)
        .map(|(id, at)| (at.path, (id, at.field.data_type().clone())))
        .collect();
    let mschema = snap.batch.schema();
    let mut specs = Vec::new();
    let mut kept = Vec::new();
    for (spec_id, spec) in &snap.root_props.specs {
        let members: Vec<usize> = (0..snap.leaves.len())
            .filter(|&i| snap.leaves[i].spec_id == *spec_id)
            .collect();
        let predicate = match filter {
            None => None,
            Some(f) => {
                let compiled = CompiledSpec::compile(spec, &schema, true)?;
                let d = Deriver {
                    spec,
                    compiled: &compiled,
                    sources: &sources,
                    present: mschema.as_ref(),
                };
                d.derive(&f.expr)
            }
        };
        let selected: Vec<usize> = match &predicate {
            None => members.clone(),
            Some(p) => {
                let df = DFSchema::try_from(plain(&mschema))?;
                let phys = session().create_physical_expr(p.clone(), &df)?;
                let mask = evaluate_mask(&phys, &snap.batch)?;
                members
                    .iter()
                    .copied()
                    .filter(|&i| mask.value(snap.leaves[i].row))
                    .collect()
            }
        };
        specs.push(SpecPlan {
            spec_id: *spec_id,
            predicate: predicate.as_ref().map(super::display::predicate_text),
            total: members.len(),
            kept: selected.len(),
            skipped_by_stats: 0,
        });
        kept.extend(selected);
    }
    Ok(Pruned {
        specs,
        leaves: kept,
    })
}
