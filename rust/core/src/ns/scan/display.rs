//! The text `explain` shows for a manifest predicate: SQL, with every literal written in its
//! partition-value string form (`crate::values::to_string`, the one implementation of value
//! text): `partition_field_country = 'DE'`, `partition_field_day >= DATE '2026-01-05'`, not
//! DataFusion's debug form (`Utf8("DE")`). Parentheses appear only where precedence needs them.

use crate::datafusion::logical_expr::{BinaryExpr, Expr};
use crate::datafusion::scalar::ScalarValue;

/// `expr` as SQL text (see the module docs).
pub fn predicate_text(expr: &Expr) -> String {
    let mut out = String::new();
    write_expr(&mut out, expr);
    out
}

fn write_expr(out: &mut String, e: &Expr) {
    match e {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let own = op.precedence();
            write_operand(out, left, own);
            out.push(' ');
            out.push_str(&op.to_string());
            out.push(' ');
            write_operand(out, right, own);
        }
        Expr::Column(c) => out.push_str(&c.name),
        Expr::Literal(v, _) => out.push_str(&literal(v)),
        Expr::Not(inner) => {
            out.push_str("NOT ");
            write_operand(out, inner, u8::MAX);
        }
        Expr::IsNull(inner) => {
            write_operand(out, inner, u8::MAX);
            out.push_str(" IS NULL");
        }
        Expr::IsNotNull(inner) => {
            write_operand(out, inner, u8::MAX);
            out.push_str(" IS NOT NULL");
        }
        other => out.push_str(&other.to_string()),
    }
}

fn write_operand(out: &mut String, e: &Expr, parent: u8) {
    let needs = match e {
        Expr::BinaryExpr(b) => b.op.precedence() < parent,
        Expr::Column(_) | Expr::Literal(..) => false,
        _ => parent == u8::MAX,
    };
    if needs {
        out.push('(');
        write_expr(out, e);
        out.push(')');
    } else {
        write_expr(out, e);
    }
}

/// A literal as SQL: strings quoted (`'` doubled), dates and timestamps typed, numbers bare.
fn literal(v: &ScalarValue) -> String {
    if v.is_null() {
        return "NULL".into();
    }
    let text = match crate::values::to_string(v) {
        Ok(Some(t)) => t,
        Ok(None) => String::new(),
        Err(_) => return v.to_string(),
    };
    let quoted = || format!("'{}'", text.replace('\'', "''"));
    match v {
        ScalarValue::Utf8(_) | ScalarValue::LargeUtf8(_) | ScalarValue::Utf8View(_) => quoted(),
        ScalarValue::Date32(_) | ScalarValue::Date64(_) => format!("DATE {}", quoted()),
        ScalarValue::TimestampSecond(..)
        | ScalarValue::TimestampMillisecond(..)
        | ScalarValue::TimestampMicrosecond(..)
        | ScalarValue::TimestampNanosecond(..) => format!("TIMESTAMP {}", quoted()),
        ScalarValue::Binary(_) | ScalarValue::LargeBinary(_) | ScalarValue::BinaryView(_) => {
            v.to_string()
        }
        ScalarValue::Boolean(Some(b)) => if *b { "TRUE" } else { "FALSE" }.into(),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datafusion::logical_expr::{col, lit};

    #[test]
    fn literals_in_their_string_form() {
        let e = col("c").eq(lit("D'E")).and(
            col("y")
                .gt(lit(2026i32))
                .or(col("d").gt_eq(lit(ScalarValue::Date32(Some(0))))),
        );
        assert_eq!(
            predicate_text(&e),
            "c = 'D''E' AND (y > 2026 OR d >= DATE '1970-01-01')"
        );
    }

    #[test]
    fn and_inside_or_needs_no_parentheses() {
        let e = col("a")
            .eq(lit(1i64))
            .and(col("b").eq(lit(2i64)))
            .or(col("c").is_null());
        assert_eq!(predicate_text(&e), "a = 1 AND b = 2 OR c IS NULL");
    }
}
