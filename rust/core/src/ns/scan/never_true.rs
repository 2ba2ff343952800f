//! Filters that are never TRUE whatever a row holds, found before pruning so that they keep
//! no partition (and no data is read): `x IN (NULL, ...)` with only NULLs, and conjunctions
//! whose bounds on one column leave nothing (`x > 5 AND x < 3`, `x = 1 AND x = 2`,
//! `x >= 3 AND x < 3`), on any column, partition source or not.
//!
//! Bounds are compared only between literals of one type (DataFusion has coerced both sides of
//! a comparison to the column's type) and never for floats, whose zeros and NaN compare
//! differently in SQL and in Arrow's total order: a bound this module cannot order is left to
//! the scan, so an answer never changes.

use std::cmp::Ordering;
use std::collections::HashMap;

use crate::datafusion::logical_expr::{Expr, Operator};
use crate::datafusion::scalar::ScalarValue;

use super::prune_expr::{as_column, as_literal, flip};

/// Whether `list`, the values of an `IN`, holds only NULLs (then `x IN (list)` is NULL for
/// every row).
pub(super) fn only_nulls(list: &[Expr]) -> bool {
    list.iter()
        .all(|e| as_literal(e).is_some_and(|v| v.is_null()))
}

/// `list` without its NULL literals (a NULL in an `IN` list never makes it TRUE).
pub(super) fn without_nulls(list: &[Expr]) -> Vec<Expr> {
    list.iter()
        .filter(|e| !as_literal(e).is_some_and(|v| v.is_null()))
        .cloned()
        .collect()
}

/// One end of the values a column may take.
#[derive(Debug, Clone)]
struct Bound {
    value: ScalarValue,
    inclusive: bool,
}

/// Whether the conjunction `conj` (its parts) bounds some column to no value.
pub(super) fn contradictory(conj: &[&Expr]) -> bool {
    let mut bounds: HashMap<Vec<String>, (Option<Bound>, Option<Bound>)> = HashMap::new();
    for e in conj {
        let Some((column, op, value)) = comparison(e) else {
            continue;
        };
        let (lower, upper) = bounds.entry(column).or_default();
        let at = |inclusive| Bound {
            value: value.clone(),
            inclusive,
        };
        let ok = match op {
            Operator::Eq => tighten(lower, at(true), Ordering::Greater)
                .and_then(|()| tighten(upper, at(true), Ordering::Less)),
            Operator::Gt => tighten(lower, at(false), Ordering::Greater),
            Operator::GtEq => tighten(lower, at(true), Ordering::Greater),
            Operator::Lt => tighten(upper, at(false), Ordering::Less),
            Operator::LtEq => tighten(upper, at(true), Ordering::Less),
            _ => Some(()),
        };
        if ok.is_none() {
            // Values of different types on one column: leave the filter alone.
            return false;
        }
    }
    bounds.values().any(|(lower, upper)| match (lower, upper) {
        (Some(lo), Some(hi)) => match lo.value.partial_cmp(&hi.value) {
            Some(Ordering::Greater) => true,
            Some(Ordering::Equal) => !(lo.inclusive && hi.inclusive),
            _ => false,
        },
        _ => false,
    })
}

/// Keeps in `slot` the tighter of it and `new` (`tighter`: the ordering of a tighter value;
/// at equal values an exclusive bound is tighter). `None` when the two cannot be compared.
fn tighten(slot: &mut Option<Bound>, new: Bound, tighter: Ordering) -> Option<()> {
    let replace = match slot {
        None => true,
        Some(old) => match new.value.partial_cmp(&old.value)? {
            Ordering::Equal => old.inclusive && !new.inclusive,
            o => o == tighter,
        },
    };
    if replace {
        *slot = Some(new);
    }
    Some(())
}

/// `column op literal` (or flipped) with a non-NULL literal of an orderable, non-float type.
fn comparison(e: &Expr) -> Option<(Vec<String>, Operator, ScalarValue)> {
    let Expr::BinaryExpr(b) = e else {
        return None;
    };
    let (column, op, value) = match (as_column(&b.left), as_literal(&b.right)) {
        (Some(c), Some(v)) => (c, b.op, v),
        _ => (as_column(&b.right)?, flip(b.op)?, as_literal(&b.left)?),
    };
    let orderable = !value.is_null()
        && !matches!(
            value,
            ScalarValue::Float16(_) | ScalarValue::Float32(_) | ScalarValue::Float64(_)
        );
    orderable.then_some((column, op, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datafusion::prelude::{col, lit};

    fn never(e: &Expr) -> bool {
        let mut conj = Vec::new();
        super::super::prune_expr::flatten_and(e, &mut conj);
        contradictory(&conj)
    }

    #[test]
    fn empty_ranges_on_one_column_are_found() {
        let x = || col("x");
        assert!(never(&x().gt(lit(5i64)).and(x().lt(lit(3i64)))));
        assert!(never(&x().gt_eq(lit(3i64)).and(x().lt(lit(3i64)))));
        assert!(never(&x().gt(lit(3i64)).and(x().lt_eq(lit(3i64)))));
        assert!(never(&x().eq(lit(1i64)).and(x().eq(lit(2i64)))));
        assert!(never(&lit(5i64).lt(x()).and(x().lt(lit(3i64)))));
        assert!(never(&col("s").gt(lit("b")).and(col("s").lt(lit("a")))));
        assert!(never(
            &x().gt(lit(1i64))
                .and(x().lt(lit(10i64)))
                .and(x().gt_eq(lit(10i64)))
        ));
    }

    #[test]
    fn satisfiable_or_unorderable_filters_are_left_alone() {
        let x = || col("x");
        assert!(!never(&x().gt_eq(lit(3i64)).and(x().lt_eq(lit(3i64)))));
        assert!(!never(&x().gt(lit(5i64)).and(col("y").lt(lit(3i64)))));
        assert!(!never(&x().gt(lit(1i64)).and(x().lt(lit(3i64)))));
        // Floats (zeros and NaN order differently in SQL and Arrow) and mixed types.
        assert!(!never(&x().gt(lit(5.0f64)).and(x().lt(lit(3.0f64)))));
        assert!(!never(&x().gt(lit(5i64)).and(x().lt(lit(3i32)))));
        assert!(!never(&x().not_eq(lit(5i64)).and(x().eq(lit(5i64)))));
    }

    #[test]
    fn in_lists_of_nulls() {
        let null = || lit(ScalarValue::Int64(None));
        assert!(only_nulls(&[null(), lit(ScalarValue::Null)]));
        assert!(!only_nulls(&[null(), lit(1i64)]));
        assert_eq!(without_nulls(&[null(), lit(1i64)]), vec![lit(1i64)]);
    }
}
