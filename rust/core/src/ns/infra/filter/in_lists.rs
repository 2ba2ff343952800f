//! Simplifying a filter without DataFusion's wrong rewrites of `IN` lists.
//!
//! DataFusion's simplifier (54) rewrites two `IN` lists of one expression joined by `AND`, and
//! two `NOT IN` lists joined by `OR`, into one list of their intersection or difference, and
//! an empty one into a constant: `s IN ('a') AND s IN ('b')` becomes `FALSE`, `s NOT IN ('a')
//! OR s NOT IN ('b')` becomes `TRUE`. Both are NULL, not a constant, where `s` is NULL, so
//! `NOT (s IN ('a') AND s IN ('b'))` and the `NOT IN` form keep (and a delete removes) the rows
//! where `s` is NULL, which SQL says do not match. It compares list items as expressions, so
//! `x IN (y) AND x IN (z)` becomes `FALSE` too, whatever `y` and `z` hold. Lance simplifies
//! the filters pushed into it the same way.
//!
//! [`simplify`] therefore rewrites those shapes itself, bottom-up, before DataFusion's
//! simplifier sees them, into forms it leaves alone: constant parts are folded first (a
//! coerced literal is a cast until then), NULL items leave their list (`x IN (1, NULL)` is
//! `x IN (1) OR NULL`), a list with items that are not literals becomes equalities, `NOT`
//! moves into lists, `OR`ed equalities and lists of one expression merge into one list, and
//! a pair of lists joined as above becomes their intersection or difference, an empty one
//! `x IS NULL AND NULL` (NULL where `x` is, FALSE elsewhere) or `x IS NOT NULL OR NULL`.
//! Each rewrite keeps the value of the expression on every row, NULLs included.

use std::collections::HashSet;
use std::sync::Arc;

use crate::datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use crate::datafusion::common::{DFSchema, Result as DfResult, ScalarValue};
use crate::datafusion::logical_expr::expr::InList;
use crate::datafusion::logical_expr::simplify::SimplifyContext;
use crate::datafusion::logical_expr::{BinaryExpr, Expr, Operator};
use crate::datafusion::optimizer::simplify_expressions::ExprSimplifier;

/// `expr` (coerced against `df`) simplified by DataFusion after the rewrites of the module
/// documentation.
///
/// # Errors
/// DataFusion's, for a constant part that cannot be evaluated.
pub(crate) fn simplify(expr: Expr, df: &DFSchema) -> DfResult<Expr> {
    let simplifier = ExprSimplifier::new(
        SimplifyContext::builder()
            .with_schema(Arc::new(df.clone()))
            .build(),
    );
    let folded = expr
        .transform_down(|e| {
            if matches!(e, Expr::Literal(..)) || !e.column_refs().is_empty() {
                return Ok(Transformed::no(e));
            }
            Ok(Transformed::new(
                simplifier.simplify(e)?,
                true,
                TreeNodeRecursion::Jump,
            ))
        })?
        .data;
    let guarded = folded.transform_up(|e| Ok(rewrite(e)))?.data;
    simplifier.simplify(guarded)
}

/// One bottom-up step: `e` with its children already rewritten.
fn rewrite(e: Expr) -> Transformed<Expr> {
    match e {
        Expr::InList(l) => split_list(l),
        Expr::Not(inner) => match *inner {
            Expr::InList(mut l) => {
                l.negated = !l.negated;
                Transformed::yes(Expr::InList(l))
            }
            Expr::Not(e) => Transformed::yes(*e),
            other => Transformed::no(Expr::Not(Box::new(other))),
        },
        Expr::BinaryExpr(b) if matches!(b.op, Operator::And | Operator::Or) => pair(b),
        other => Transformed::no(other),
    }
}

/// A list without NULL items and with literal items only, or the equivalent expression.
fn split_list(l: InList) -> Transformed<Expr> {
    if !l.list.iter().all(|i| matches!(i, Expr::Literal(..))) {
        // `x IN (y, 1)` is `x = y OR x = 1` (and its negation `x <> y AND x <> 1`).
        let (op, join) = if l.negated {
            (Operator::NotEq, Operator::And)
        } else {
            (Operator::Eq, Operator::Or)
        };
        let terms = l.list.into_iter().map(|i| binary((*l.expr).clone(), op, i));
        return match terms.reduce(|a, b| binary(a, join, b)) {
            Some(e) => Transformed::yes(e),
            None => Transformed::yes(bool_lit(Some(l.negated))),
        };
    }
    let before = l.list.len();
    let list: Vec<Expr> = l.list.into_iter().filter(|i| !is_null(i)).collect();
    let kept = InList {
        expr: l.expr,
        list,
        negated: l.negated,
    };
    if kept.list.len() == before {
        return Transformed::no(Expr::InList(kept));
    }
    // A NULL item makes a miss NULL: `x IN (1, NULL)` is `x IN (1) OR NULL`, and
    // `x NOT IN (1, NULL)` is `x NOT IN (1) AND NULL`.
    let join = if kept.negated {
        Operator::And
    } else {
        Operator::Or
    };
    Transformed::yes(binary(Expr::InList(kept), join, bool_lit(None)))
}

/// `b` (an `AND` or `OR` of rewritten children) with a pair of lists of one expression
/// rewritten, and `TRUE`/`FALSE` identities dropped.
// Items are looked up by value; an `Expr` holds `Arc`s of types with interior mutability
// that its hash never reads (DataFusion keys its own list rewrites the same way).
#[allow(clippy::mutable_key_type)]
fn pair(b: BinaryExpr) -> Transformed<Expr> {
    let BinaryExpr { left, op, right } = b;
    let identity = op == Operator::And;
    if is_bool(&right, identity) {
        return Transformed::yes(*left);
    }
    if is_bool(&left, identity) {
        return Transformed::yes(*right);
    }
    let (Some(l), Some(r)) = (as_list(&left), as_list(&right)) else {
        return Transformed::no(Expr::BinaryExpr(BinaryExpr { left, op, right }));
    };
    if l.expr != r.expr {
        return Transformed::no(Expr::BinaryExpr(BinaryExpr { left, op, right }));
    }
    let x = (*l.expr).clone();
    let both = |a: &InList, b: &InList| -> Vec<Expr> {
        let b: HashSet<&Expr> = b.list.iter().collect();
        a.list.iter().filter(|i| b.contains(i)).cloned().collect()
    };
    let only = |a: &InList, b: &InList| -> Vec<Expr> {
        let b: HashSet<&Expr> = b.list.iter().collect();
        a.list.iter().filter(|i| !b.contains(i)).cloned().collect()
    };
    let out = match (op, l.negated, r.negated) {
        // The intersection; an empty one is FALSE, or NULL where x is.
        (Operator::And, false, false) => in_or_null(x, both(&l, &r), false),
        // The items of the IN list not in the NOT IN list.
        (Operator::And, false, true) => in_or_null(x, only(&l, &r), false),
        (Operator::And, true, false) => in_or_null(x, only(&r, &l), false),
        // NOT IN the intersection; an empty one is TRUE, or NULL where x is.
        (Operator::Or, true, true) => in_or_null(x, both(&l, &r), true),
        // A union (`x IN A OR x IN B`, `x NOT IN A AND x NOT IN B`) is right as DataFusion
        // makes it; so is anything else.
        _ if op == Operator::Or && !l.negated && !r.negated => {
            let mut list = l.list.clone();
            list.extend(only(&r, &l));
            Expr::InList(InList {
                expr: Box::new(x),
                list,
                negated: false,
            })
        }
        _ => return Transformed::no(Expr::BinaryExpr(BinaryExpr { left, op, right })),
    };
    Transformed::yes(out)
}

/// `x [NOT] IN (list)`, or for an empty list what it stands for in the pair it came from:
/// FALSE (TRUE when `negated`) where `x` is not NULL, NULL where it is.
fn in_or_null(x: Expr, list: Vec<Expr>, negated: bool) -> Expr {
    if !list.is_empty() {
        return Expr::InList(InList {
            expr: Box::new(x),
            list,
            negated,
        });
    }
    if negated {
        binary(Expr::IsNotNull(Box::new(x)), Operator::Or, bool_lit(None))
    } else {
        binary(Expr::IsNull(Box::new(x)), Operator::And, bool_lit(None))
    }
}

/// `e` as a list of literal items: a list, or an equality of an expression and a literal.
fn as_list(e: &Expr) -> Option<InList> {
    match e {
        Expr::InList(l) if l.list.iter().all(|i| matches!(i, Expr::Literal(..))) => Some(l.clone()),
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Eq,
            right,
        }) => {
            let (x, v) = match (left.as_ref(), right.as_ref()) {
                (x, v @ Expr::Literal(..)) if !matches!(x, Expr::Literal(..)) => (x, v),
                (v @ Expr::Literal(..), x) if !matches!(x, Expr::Literal(..)) => (x, v),
                _ => return None,
            };
            if is_null(v) {
                return None;
            }
            Some(InList {
                expr: Box::new(x.clone()),
                list: vec![v.clone()],
                negated: false,
            })
        }
        _ => None,
    }
}

fn binary(left: Expr, op: Operator, right: Expr) -> Expr {
    Expr::BinaryExpr(BinaryExpr {
        left: Box::new(left),
        op,
        right: Box::new(right),
    })
}

fn bool_lit(v: Option<bool>) -> Expr {
    Expr::Literal(ScalarValue::Boolean(v), None)
}

fn is_null(e: &Expr) -> bool {
    matches!(e, Expr::Literal(v, _) if v.is_null())
}

fn is_bool(e: &Expr, v: bool) -> bool {
    matches!(e, Expr::Literal(ScalarValue::Boolean(Some(b)), _) if *b == v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrow::datatypes::{DataType, Field, Schema};
    use crate::ns::infra::filter::Filter;

    fn parsed(sql: &str) -> Expr {
        let schema = Schema::new(vec![
            Field::new("s", DataType::Utf8, true),
            Field::new("t", DataType::Utf8, true),
            Field::new("x", DataType::Int32, true),
        ]);
        Filter::parse(sql, &schema).unwrap().expr
    }

    #[test]
    fn empty_pairs_stay_null_where_the_expression_is() {
        for sql in [
            "NOT (s IN ('a')) OR NOT (s IN ('b'))",
            "s NOT IN ('a') OR s NOT IN ('b')",
            "NOT (s IN ('a') AND s IN ('b'))",
            "NOT ((s = 'a' OR s = 'c') AND (s = 'b' OR s = 'd'))",
            "NOT (s IN ('a') AND s NOT IN ('a', 'b'))",
            "NOT (x IN (1, 2) AND x IN (3))",
        ] {
            let e = parsed(sql);
            assert!(
                !matches!(e, Expr::Literal(..)),
                "{sql} must not become a constant: {e}"
            );
        }
    }

    #[test]
    fn lists_with_other_items_are_not_compared_as_expressions() {
        let e = parsed("NOT (s IN (t) AND s IN ('b'))");
        assert!(!matches!(e, Expr::Literal(..)), "{e}");
    }
}
