//! OpenLineage subset conditions of user filters: the logical step of the subset facet's
//! hierarchy (`BaseSubsetDatasetFacet` 1-0-0, used when a read or delete touches more
//! partitions and locations than a facet lists).
//!
//! A filter maps to a condition only when all of it does: `AND`/`OR` become `binary`
//! conditions; `=`, `<`, `<=`, `>`, `>=` between a column and a literal (or two columns)
//! become `compare` conditions with `field` / `literal` operands, the literal written in its
//! string form (`crate::values::to_string`); `IN (...)` becomes an `OR` of `EQUAL`s and
//! `BETWEEN` an `AND` of `GREATER_EQUAL_THAN` and `LESS_EQUAL_THAN`. Anything else (`NOT`,
//! `<>`, `IS NULL`, functions, casts of columns, NULL or empty literals, which have no string
//! form of their own) leaves the filter without a condition: a partial condition would
//! describe rows the operation did not select.

use serde_json::{json, Value};

use crate::datafusion::logical_expr::{Between, BinaryExpr, Expr, Operator};
use crate::ns::infra::filter::Filter;

/// The subset condition of `filter`, or `None` when it has none or it would hold more than
/// `max_compares` comparisons.
pub fn filter_condition(filter: &Filter, max_compares: usize) -> Option<Value> {
    let mut budget = max_compares;
    condition(&filter.expr, &mut budget)
}

fn condition(e: &Expr, budget: &mut usize) -> Option<Value> {
    match e {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::And | Operator::Or => Some(binary(
                condition(left, budget)?,
                condition(right, budget)?,
                if *op == Operator::And { "AND" } else { "OR" },
            )),
            _ => compare(left, comparison(*op)?, right, budget),
        },
        Expr::Between(Between {
            expr,
            negated: false,
            low,
            high,
        }) => Some(binary(
            compare(expr, "GREATER_EQUAL_THAN", low, budget)?,
            compare(expr, "LESS_EQUAL_THAN", high, budget)?,
            "AND",
        )),
        Expr::InList(list) if !list.negated && !list.list.is_empty() => {
            let mut terms = Vec::with_capacity(list.list.len());
            for v in &list.list {
                terms.push(compare(&list.expr, "EQUAL", v, budget)?);
            }
            Some(balanced(terms, "OR"))
        }
        _ => None,
    }
}

fn comparison(op: Operator) -> Option<&'static str> {
    Some(match op {
        Operator::Eq => "EQUAL",
        Operator::Lt => "LESS_THAN",
        Operator::LtEq => "LESS_EQUAL_THAN",
        Operator::Gt => "GREATER_THAN",
        Operator::GtEq => "GREATER_EQUAL_THAN",
        _ => return None,
    })
}

fn compare(left: &Expr, comparison: &str, right: &Expr, budget: &mut usize) -> Option<Value> {
    *budget = budget.checked_sub(1)?;
    let (l, r) = (operand(left)?, operand(right)?);
    if l["type"] == "literal" && r["type"] == "literal" {
        return None;
    }
    Some(json!({"type": "compare", "left": l, "right": r, "comparison": comparison}))
}

fn operand(e: &Expr) -> Option<Value> {
    match e {
        Expr::Column(c) => Some(json!({"type": "field", "field": c.name})),
        Expr::Literal(v, _) => {
            let text = crate::values::to_string(v).ok()??;
            Some(json!({"type": "literal", "value": text}))
        }
        _ => None,
    }
}

fn binary(left: Value, right: Value, operator: &str) -> Value {
    json!({"type": "binary", "left": left, "right": right, "operator": operator})
}

/// `terms` joined by `operator` into a tree of logarithmic depth.
fn balanced(mut terms: Vec<Value>, operator: &str) -> Value {
    if terms.len() == 1 {
        return terms.pop().unwrap_or(Value::Null);
    }
    let right = terms.split_off(terms.len() / 2);
    binary(
        balanced(terms, operator),
        balanced(right, operator),
        operator,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrow::datatypes::{DataType, Field, Schema};

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("country", DataType::Utf8, true),
            Field::new("n", DataType::Int64, true),
            Field::new("d", DataType::Date32, true),
        ])
    }

    fn cond(sql: &str) -> Option<Value> {
        filter_condition(&Filter::parse(sql, &schema()).ok()?, 1000)
    }

    #[test]
    fn compares_and_binaries() {
        let c = cond("country = 'US' AND n > 5").expect("condition");
        assert_eq!(c["type"], "binary");
        assert_eq!(c["operator"], "AND");
        assert_eq!(
            c["left"]["left"],
            json!({"type": "field", "field": "country"})
        );
        assert_eq!(
            c["left"]["right"],
            json!({"type": "literal", "value": "US"})
        );
        assert_eq!(c["right"]["comparison"], "GREATER_THAN");
        assert_eq!(c["right"]["right"]["value"], "5");
    }

    #[test]
    fn dates_in_their_string_form() {
        let c = cond("d >= DATE '2025-12-01'").expect("condition");
        assert_eq!(c["right"]["value"], "2025-12-01");
    }

    #[test]
    fn in_lists_and_between() {
        let c = cond("country IN ('US', 'DE', 'FR')").expect("condition");
        assert_eq!(c["operator"], "OR");
        let c = cond("n BETWEEN 1 AND 9").expect("condition");
        assert_eq!(c["left"]["comparison"], "GREATER_EQUAL_THAN");
        assert_eq!(c["right"]["comparison"], "LESS_EQUAL_THAN");
    }

    #[test]
    fn anything_else_has_no_condition() {
        for sql in [
            "country <> 'US'",
            "NOT (n = 1)",
            "country IS NULL",
            "n = 1 AND upper(country) = 'US'",
            "country = ''",
        ] {
            assert!(cond(sql).is_none(), "{sql}");
        }
    }

    #[test]
    fn simplified_forms_map_too() {
        // DataFusion simplifies NOT BETWEEN into two comparisons, which map exactly.
        let c = cond("n NOT BETWEEN 1 AND 2").expect("condition");
        assert_eq!(c["operator"], "OR");
        assert_eq!(c["left"]["comparison"], "LESS_THAN");
        assert_eq!(c["right"]["comparison"], "GREATER_THAN");
    }

    #[test]
    fn too_many_comparisons() {
        let sql = format!(
            "n IN ({})",
            (0..50).map(|i| i.to_string()).collect::<Vec<_>>().join(",")
        );
        let f = Filter::parse(&sql, &schema()).expect("filter");
        assert!(filter_condition(&f, 49).is_none());
        assert!(filter_condition(&f, 50).is_some());
    }
}
