//! User filters (`scan`, `partitions`, `explain`, `delete`), given as SQL or as a pyarrow
//! expression (`pyarrow`): parsed once against the namespace
//! schema and validated the same way for every entry point.
//!
//! - Wide `AND`/`OR` lists are rebalanced into trees of logarithmic depth (both operators are
//!   associative in SQL's three-valued logic), so a filter with tens of thousands of terms
//!   plans and evaluates on ordinary thread stacks.
//! - Whatever still nests deeper than [`MAX_FILTER_DEPTH`] levels is refused with
//!   `Expression`; parsing runs on a thread with a large stack so that measuring it cannot
//!   overflow.
//! - Subqueries, aggregates, window functions, placeholders and non-immutable functions are
//!   refused (pruning evaluates the filter on partition values, where they mean nothing); the
//!   filter must be boolean; a string column compared with a number is refused before any
//!   data is read; constant sub-expressions that fail (`1 / 0`) fail here.

use std::collections::HashMap;
use std::sync::Arc;

use crate::arrow::array::{new_null_array, Array, AsArray, BooleanArray, RecordBatch};
use crate::arrow::datatypes::{DataType, Schema};
use crate::datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use crate::datafusion::common::{Column, DFSchema, ScalarValue};
use crate::datafusion::logical_expr::simplify::SimplifyContext;
use crate::datafusion::logical_expr::{Between, BinaryExpr, Cast, Expr, ExprSchemable, Operator};
use crate::datafusion::optimizer::simplify_expressions::ExprSimplifier;
use crate::datafusion::physical_plan::PhysicalExpr;
use crate::datafusion::sql::sqlparser::ast::{BinaryOperator, Expr as SqlExpr};
use crate::error::{Error, Result};
use crate::expr::{forbidden_construct, session};

mod in_lists;
mod pyarrow;

/// A user filter as given: SQL text (DataFusion dialect), or a `pyarrow.compute.Expression`
/// as pyarrow pickles it.
#[derive(Debug, Clone)]
pub enum FilterInput {
    /// SQL text.
    Sql(String),
    /// The bytes of `Expression.__reduce__()` (Arrow C++'s expression serialization).
    Pyarrow(Vec<u8>),
}

/// The deepest filter expression accepted (after wide `AND`/`OR` lists are balanced).
pub const MAX_FILTER_DEPTH: usize = 200;

/// Stack of the thread that parses and validates a filter.
const PARSE_STACK_BYTES: usize = 256 << 20;

/// A filter parsed against the namespace schema, validated, type-coerced and simplified.
#[derive(Debug, Clone)]
pub struct Filter {
    /// The SQL text.
    pub sql: String,
    /// The logical expression.
    pub expr: Expr,
}

impl Filter {
    /// Parses a filter in either form it is given in.
    ///
    /// # Errors
    /// As [`Filter::parse`] and [`Filter::from_pyarrow`].
    pub fn from_input(input: &FilterInput, schema: &Schema) -> Result<Self> {
        match input {
            FilterInput::Sql(sql) => Self::parse(sql, schema),
            FilterInput::Pyarrow(bytes) => Self::from_pyarrow(bytes, schema),
        }
    }

    /// Translates a pickled `pyarrow.compute.Expression` (see [`pyarrow`]) against the
    /// namespace `schema`, then checks it as SQL filters are checked.
    ///
    /// # Errors
    /// `Expression` for bytes that are not a pyarrow expression, functions without a
    /// translation, and every error [`Filter::parse`] gives after parsing.
    pub fn from_pyarrow(bytes: &[u8], schema: &Schema) -> Result<Self> {
        on_large_stack("pyarrow expression", || {
            let df = DFSchema::try_from(plain(schema))?;
            let expr = pyarrow::translate(bytes, &df)?;
            let text = format!("pyarrow expression {expr}");
            checked(&text, expr, schema, df)
        })
    }

    /// Takes an expression another engine planned (DataFusion's filters pushed into a
    /// table provider): column references lose their table qualifier, then the expression is
    /// checked as SQL filters are.
    ///
    /// # Errors
    /// As [`Filter::parse`] after parsing.
    pub fn from_expr(expr: Expr, schema: &Schema) -> Result<Self> {
        on_large_stack("a filter DataFusion pushed", move || {
            let df = DFSchema::try_from(plain(schema))?;
            let bare = expr
                .transform(|e| match e {
                    Expr::Column(c) if c.relation.is_some() => {
                        Ok(Transformed::yes(Expr::Column(Column::from_name(c.name))))
                    }
                    other => Ok(Transformed::no(other)),
                })?
                .data;
            checked(&bare.to_string(), bare, schema, df)
        })
    }

    /// Parses `sql` (DataFusion dialect) against the namespace `schema`.
    ///
    /// # Errors
    /// `Expression` for a malformed, non-boolean, too deep or ill-typed filter, unknown
    /// columns, or a construct filters may not use.
    pub fn parse(sql: &str, schema: &Schema) -> Result<Self> {
        on_large_stack(sql, || parse_checked(sql, schema))
    }

    /// The filter over a leaf's own columns, for Lance to evaluate inside that leaf: each
    /// namespace column becomes the leaf column with its field id (cast to the namespace type
    /// when the leaf stores another), or a typed NULL when the leaf has no such column (added
    /// after it was written, or only ever stored under a dropped field id).
    ///
    /// # Errors
    /// `Expression` when a namespace column of the filter is unknown.
    pub fn for_leaf(
        &self,
        ns: &Schema,
        leaf: &Schema,
        leaf_names: &HashMap<String, String>,
    ) -> Result<Expr> {
        let unchanged = self.columns().iter().all(|c| {
            leaf_names.get(c) == Some(c)
                && matches!(
                    (ns.field_with_name(c), leaf.field_with_name(c)),
                    (Ok(a), Ok(b)) if a.data_type() == b.data_type()
                )
        });
        if unchanged {
            return Ok(self.expr.clone());
        }
        on_large_stack(&self.sql, || {
            let rewritten = self.expr.clone().transform(|e| {
                let Expr::Column(c) = &e else {
                    return Ok(Transformed::no(e));
                };
                let ours = ns.field_with_name(&c.name)?.data_type().clone();
                let replaced = match leaf_names.get(&c.name) {
                    Some(stored) => {
                        let col = Expr::Column(Column::from_name(stored.clone()));
                        if leaf.field_with_name(stored)?.data_type() == &ours {
                            col
                        } else {
                            Expr::Cast(Cast::new(Box::new(col), ours))
                        }
                    }
                    None => Expr::Literal(ScalarValue::try_from(&ours)?, None),
                };
                Ok(Transformed::yes(replaced))
            })?;
            Ok(rewritten.data)
        })
    }

    /// Whether the filter can never be TRUE on rows whose `missing` columns are all NULL: a
    /// leaf written before those columns were added holds no matching row and need not be
    /// read (`new_col IS NOT NULL`, `new_col = 5`, `new_col > 1 AND x = 2`, ...). The columns
    /// become typed NULLs and DataFusion's simplifier decides; anything it cannot reduce to
    /// FALSE or NULL counts as possibly TRUE.
    pub fn never_true_when_null(&self, missing: &[String], ns: &Schema) -> bool {
        if !self.columns().iter().any(|c| missing.contains(c)) {
            return false;
        }
        let reduced = on_large_stack(&self.sql, || {
            let nulled = self
                .expr
                .clone()
                .transform(|e| {
                    let Expr::Column(c) = &e else {
                        return Ok(Transformed::no(e));
                    };
                    if !missing.contains(&c.name) {
                        return Ok(Transformed::no(e));
                    }
                    let t = ns.field_with_name(&c.name)?.data_type();
                    Ok(Transformed::yes(Expr::Literal(
                        ScalarValue::try_from(t)?,
                        None,
                    )))
                })?
                .data;
            let df = DFSchema::try_from(plain(ns))?;
            Ok(in_lists::simplify(nulled, &df)?)
        });
        matches!(reduced, Ok(e) if !can_be_true(&e))
    }

    /// Namespace columns the filter reads.
    pub fn columns(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .expr
            .column_refs()
            .into_iter()
            .map(|c| c.name.clone())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// A physical expression over batches with `schema`.
    ///
    /// # Errors
    /// `Expression` when the filter does not apply to `schema`.
    pub fn physical(&self, schema: &Schema) -> Result<Arc<dyn PhysicalExpr>> {
        let df = DFSchema::try_from(plain(schema))?;
        Ok(session().create_physical_expr(self.expr.clone(), &df)?)
    }
}

/// Whether a simplified boolean expression may be TRUE: FALSE and NULL literals are not, an
/// `AND` is TRUE only when both sides can be, an `OR` when either can (SQL's three-valued
/// logic: `NULL AND x` is never TRUE); anything else may be.
fn can_be_true(e: &Expr) -> bool {
    match e {
        Expr::Literal(ScalarValue::Boolean(None | Some(false)) | ScalarValue::Null, _) => false,
        Expr::BinaryExpr(b) if b.op == Operator::And => {
            can_be_true(&b.left) && can_be_true(&b.right)
        }
        Expr::BinaryExpr(b) if b.op == Operator::Or => {
            can_be_true(&b.left) || can_be_true(&b.right)
        }
        _ => true,
    }
}

/// Runs `f` (recursion over the filter `sql`'s expression tree) on a thread with a large
/// stack, so that no filter depth we accept can overflow the caller's stack.
fn on_large_stack<T: Send>(sql: &str, f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("lance-partitioned-filter".into())
            .stack_size(PARSE_STACK_BYTES)
            .spawn_scoped(s, f)
            .map_err(|e| Error::Internal(format!("cannot start the filter thread: {e}")))?
            .join()
            .map_err(|_| Error::Internal(format!("the filter thread failed on {sql:?}")))?
    })
}

fn bad(sql: &str, why: impl std::fmt::Display) -> Error {
    Error::Expression(format!("bad filter {sql:?}: {why}"))
}

/// Parses `sql` (DataFusion dialect) against `df`, whose columns may be qualified
/// (`source.x`, `target.x`), and checks it as filters are checked: depth, the constructs
/// filters may not use, strings compared with numbers; a boolean result when `boolean`.
/// Returns the coerced and simplified expression. Merge conditions and update values use it.
///
/// # Errors
/// `Expression` naming `what` (for example "merge condition") and the text.
pub(crate) fn parse_expression(
    what: &str,
    sql: &str,
    df: &DFSchema,
    boolean: bool,
) -> Result<Expr> {
    let bad = |why: &dyn std::fmt::Display| Error::Expression(format!("bad {what} {sql:?}: {why}"));
    on_large_stack(sql, || {
        let state = session().state();
        let dialect = state.config().options().sql_parser.dialect;
        let mut ast = state
            .sql_to_expr_with_alias(sql, &dialect)
            .map_err(|e| bad(&e))?;
        ast.expr = balance(ast.expr);
        let expr = state
            .create_logical_expr_from_sql_expr(ast, df)
            .map_err(|e| bad(&e))?;
        let depth = depth(&expr);
        if depth > MAX_FILTER_DEPTH {
            return Err(bad(&format!(
                "it nests {depth} levels deep; the limit is {MAX_FILTER_DEPTH}"
            )));
        }
        if let Some(p) = misuse(&expr, df)? {
            return Err(bad(&p));
        }
        if boolean {
            match expr.get_type(df) {
                Ok(DataType::Boolean | DataType::Null) => {}
                Ok(other) => return Err(bad(&format!("it must be boolean, this one is {other}"))),
                Err(e) => return Err(bad(&e)),
            }
        }
        let simplifier = ExprSimplifier::new(
            SimplifyContext::builder()
                .with_schema(Arc::new(df.clone()))
                .build(),
        );
        simplifier
            .coerce(expr, df)
            .and_then(|e| in_lists::simplify(e, df))
            .map_err(|e| bad(&e))
    })
}

fn parse_checked(sql: &str, schema: &Schema) -> Result<Filter> {
    let df = DFSchema::try_from(plain(schema))?;
    let state = session().state();
    let dialect = state.config().options().sql_parser.dialect;
    let mut ast = state
        .sql_to_expr_with_alias(sql, &dialect)
        .map_err(|e| bad(sql, e))?;
    ast.expr = balance(ast.expr);
    let expr = state
        .create_logical_expr_from_sql_expr(ast, &df)
        .map_err(|e| bad(sql, e))?;
    checked(sql, expr, schema, df)
}

/// Validates, coerces and simplifies a filter expression (`sql`: its text, for messages),
/// whichever form it was given in.
fn checked(sql: &str, expr: Expr, schema: &Schema, df: DFSchema) -> Result<Filter> {
    let depth = depth(&expr);
    if depth > MAX_FILTER_DEPTH {
        return Err(bad(
            sql,
            format!(
                "it nests {depth} levels deep; the limit is {MAX_FILTER_DEPTH} (long AND/OR \
                 lists are fine, they are balanced; deep nesting of other operators is not)"
            ),
        ));
    }
    validate(sql, &expr, &df)?;
    let simplifier = ExprSimplifier::new(
        SimplifyContext::builder()
            .with_schema(Arc::new(df.clone()))
            .build(),
    );
    let expr = simplifier
        .coerce(expr, &df)
        .and_then(|e| in_lists::simplify(e, &df))
        .map_err(|e| bad(sql, e))?;
    let filter = Filter {
        sql: sql.to_string(),
        expr,
    };
    // Constant parts that cannot be evaluated (1 / 0) fail now, for every entry point,
    // rather than in some of them at read time.
    let nullable = Schema::new(
        plain(schema)
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect::<Vec<_>>(),
    );
    let probe = RecordBatch::try_new_with_options(
        Arc::new(nullable),
        schema
            .fields()
            .iter()
            .map(|f| new_null_array(f.data_type(), 1))
            .collect(),
        &crate::arrow::array::RecordBatchOptions::new().with_row_count(Some(1)),
    )?;
    let phys = filter.physical(schema).map_err(|e| bad(sql, e))?;
    evaluate_mask(&phys, &probe).map_err(|e| bad(sql, e))?;
    Ok(filter)
}

/// Rebalances chains of one associative operator (`AND`, `OR`) into trees of logarithmic
/// depth; the operands keep their order.
fn balance(e: SqlExpr) -> SqlExpr {
    match e {
        SqlExpr::BinaryOp { ref op, .. }
            if matches!(op, BinaryOperator::And | BinaryOperator::Or) =>
        {
            let chain = op.clone();
            let mut operands = Vec::new();
            let mut stack = vec![e];
            while let Some(x) = stack.pop() {
                match x {
                    SqlExpr::BinaryOp { left, op, right } if op == chain => {
                        stack.push(*right);
                        stack.push(*left);
                    }
                    SqlExpr::Nested(inner) if matches!(&*inner, SqlExpr::BinaryOp { op, .. } if *op == chain) =>
                    {
                        stack.push(*inner);
                    }
                    other => operands.push(balance(other)),
                }
            }
            join_balanced(operands, &chain)
        }
        SqlExpr::Nested(inner) => SqlExpr::Nested(Box::new(balance(*inner))),
        SqlExpr::UnaryOp { op, expr } => SqlExpr::UnaryOp {
            op,
            expr: Box::new(balance(*expr)),
        },
        other => other,
    }
}

fn join_balanced(mut operands: Vec<SqlExpr>, op: &BinaryOperator) -> SqlExpr {
    if operands.len() == 1 {
        return operands.pop().unwrap_or(SqlExpr::Value(
            crate::datafusion::sql::sqlparser::ast::Value::Boolean(true).into(),
        ));
    }
    let right = operands.split_off(operands.len() / 2);
    SqlExpr::BinaryOp {
        left: Box::new(SqlExpr::Nested(Box::new(join_balanced(operands, op)))),
        op: op.clone(),
        right: Box::new(SqlExpr::Nested(Box::new(join_balanced(right, op)))),
    }
}

/// The depth of an expression tree.
fn depth(e: &Expr) -> usize {
    let mut deepest = 0;
    let _ = e.apply_children(|c| {
        deepest = deepest.max(depth(c));
        Ok(TreeNodeRecursion::Continue)
    });
    deepest + 1
}

fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// Refuses constructs filters may not use, non-boolean filters and comparisons of strings with
/// numbers (DataFusion would cast the column and fail on the first non-numeric value, inside
/// the read).
fn validate(sql: &str, expr: &Expr, df: &DFSchema) -> Result<()> {
    if let Some(p) = misuse(expr, df)? {
        return Err(bad(sql, p));
    }
    match expr.get_type(df) {
        Ok(DataType::Boolean | DataType::Null) => Ok(()),
        Ok(other) => Err(bad(
            sql,
            format!("a filter must be boolean, this one is {other}"),
        )),
        Err(e) => Err(bad(sql, e)),
    }
}

/// The first construct an expression may not use (subqueries, aggregates, ...), or a string
/// compared with a number.
fn misuse(expr: &Expr, df: &DFSchema) -> Result<Option<String>> {
    let mut problem: Option<String> = None;
    let types = |a: &Expr, b: &Expr| -> Option<String> {
        let (ta, tb) = (a.get_type(df).ok()?, b.get_type(df).ok()?);
        let mixed = (is_string(&ta) && tb.is_numeric()) || (ta.is_numeric() && is_string(&tb));
        mixed.then(|| {
            format!(
                "{a} ({ta}) is compared with {b} ({tb}); compare strings with strings (quote \
                 the value) or cast explicitly"
            )
        })
    };
    expr.apply(|e| {
        let msg = match e {
            Expr::BinaryExpr(BinaryExpr {
                left,
                op:
                    Operator::Eq
                    | Operator::NotEq
                    | Operator::Lt
                    | Operator::LtEq
                    | Operator::Gt
                    | Operator::GtEq
                    | Operator::IsDistinctFrom
                    | Operator::IsNotDistinctFrom,
                right,
            }) => types(left, right),
            Expr::InList(l) => l.list.iter().find_map(|v| types(&l.expr, v)),
            Expr::Between(Between {
                expr, low, high, ..
            }) => types(expr, low).or_else(|| types(expr, high)),
            other => forbidden_construct(other),
        };
        if let Some(m) = msg {
            problem = Some(m);
            return Ok(TreeNodeRecursion::Stop);
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(problem)
}

/// The schema without metadata (DataFusion compares field metadata in some checks).
pub(crate) fn plain(schema: &Schema) -> Schema {
    Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_metadata(HashMap::new()))
            .collect::<Vec<_>>(),
    )
}

/// Evaluates a boolean physical expression; NULL counts as false.
///
/// # Errors
/// `Expression` when the expression fails or is not boolean.
pub fn evaluate_mask(p: &Arc<dyn PhysicalExpr>, batch: &RecordBatch) -> Result<BooleanArray> {
    let v = p.evaluate(batch)?.into_array(batch.num_rows())?;
    let b = v
        .as_boolean_opt()
        .ok_or_else(|| Error::Expression(format!("filter is not boolean but {}", v.data_type())))?;
    Ok(match b.nulls() {
        Some(n) if n.null_count() > 0 => {
            BooleanArray::from_iter((0..b.len()).map(|i| Some(b.is_valid(i) && b.value(i))))
        }
        _ => b.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrow::datatypes::Field;

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("country", DataType::Utf8, true),
        ])
    }

    #[test]
    fn wide_or_lists_are_balanced() {
        let sql = (0..20_000)
            .map(|i| format!("id = {i}"))
            .collect::<Vec<_>>()
            .join(" OR ");
        let f = Filter::parse(&sql, &schema()).unwrap();
        assert!(depth(&f.expr) < 64, "depth {}", depth(&f.expr));
    }

    #[test]
    fn deep_nesting_is_refused_with_a_typed_error() {
        let sql = (0..5_000).map(|_| "id + ").collect::<String>() + "1 > 0";
        match Filter::parse(&sql, &schema()) {
            Err(Error::Expression(m)) => assert!(m.contains("levels deep"), "{m}"),
            other => panic!("expected an Expression error, got {other:?}"),
        }
    }

    #[test]
    fn refuses_what_filters_must_not_do() {
        for (sql, what) in [
            ("country = 5", "compared"),
            ("id", "boolean"),
            ("id IN (SELECT 1)", "subqueries"),
            ("count(id) > 1", "aggregate"),
            ("random() < 0.5", "volatile"),
            ("1 / 0 = 1", "zero"),
        ] {
            match Filter::parse(sql, &schema()) {
                Err(Error::Expression(m)) => {
                    assert!(m.to_lowercase().contains(what), "{sql}: {m}")
                }
                other => panic!("{sql}: expected an Expression error, got {other:?}"),
            }
        }
        assert!(Filter::parse("country = 'US' AND id >= 3", &schema()).is_ok());
    }
}
