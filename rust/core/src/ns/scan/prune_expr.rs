//! The expression helpers of pruning (`prune`): building manifest predicates, reading
//! columns, literals and `date_part` calls out of a filter, flipping and bounding comparisons.

use crate::arrow::datatypes::DataType;
use crate::conform::strict_cast;
use crate::datafusion::common::Column;
use crate::datafusion::logical_expr::{BinaryExpr, Expr, Operator};
use crate::datafusion::scalar::ScalarValue;

pub(super) fn ident(name: &str) -> Expr {
    Expr::Column(Column::new_unqualified(name))
}

pub(super) fn lit(v: ScalarValue) -> Expr {
    Expr::Literal(v, None)
}

pub(super) fn binary(l: Expr, op: Operator, r: Expr) -> Expr {
    Expr::BinaryExpr(BinaryExpr::new(Box::new(l), op, Box::new(r)))
}

/// The zero of the other sign, for a float zero (`0.0` -> `-0.0`).
pub(crate) fn other_zero(v: &ScalarValue) -> Option<ScalarValue> {
    match v {
        ScalarValue::Float64(Some(x)) if *x == 0.0 => Some(ScalarValue::Float64(Some(-*x))),
        ScalarValue::Float32(Some(x)) if *x == 0.0 => Some(ScalarValue::Float32(Some(-*x))),
        ScalarValue::Float16(Some(x)) if x.to_f32() == 0.0 => Some(ScalarValue::Float16(Some(-*x))),
        _ => None,
    }
}

/// `column op c` on an identity partition column, with SQL's float equality: the manifest
/// compares floats in total order, where `-0.0 < 0.0`, while SQL (and the row filter) holds
/// `-0.0 = 0.0`, so a bound at zero takes both zeros (pruning keeps more, never less).
pub(super) fn identity_compare(column: &str, op: Operator, c: ScalarValue) -> Expr {
    let Some(other) = other_zero(&c) else {
        return binary(ident(column), op, lit(c));
    };
    let negative = match &c {
        ScalarValue::Float64(Some(x)) => x.is_sign_negative(),
        ScalarValue::Float32(Some(x)) => x.is_sign_negative(),
        ScalarValue::Float16(Some(x)) => x.is_sign_negative(),
        _ => false,
    };
    let (neg, pos) = if negative { (c, other) } else { (other, c) };
    match op {
        Operator::Eq => ident(column).in_list(vec![lit(neg), lit(pos)], false),
        Operator::Lt | Operator::LtEq => binary(ident(column), Operator::LtEq, lit(pos)),
        Operator::Gt | Operator::GtEq => binary(ident(column), Operator::GtEq, lit(neg)),
        _ => binary(ident(column), op, lit(pos)),
    }
}

pub(super) fn as_literal(e: &Expr) -> Option<ScalarValue> {
    match e {
        Expr::Literal(v, _) => Some(v.clone()),
        Expr::Cast(c) => as_literal(&c.expr)?.cast_to(c.field.data_type()).ok(),
        Expr::TryCast(c) => as_literal(&c.expr)?.cast_to(c.field.data_type()).ok(),
        _ => None,
    }
}

/// `date_part('year' | 'month' | 'day' | 'hour', column)` (also `extract(...)`, which parses
/// to it): (unit, column).
pub(super) fn date_part(e: &Expr) -> Option<(&'static str, Vec<String>)> {
    let Expr::ScalarFunction(f) = e else {
        return None;
    };
    if f.func.name() != "date_part" {
        return None;
    }
    let [unit, column] = f.args.as_slice() else {
        return None;
    };
    let unit = match as_literal(unit)? {
        ScalarValue::Utf8(Some(u))
        | ScalarValue::LargeUtf8(Some(u))
        | ScalarValue::Utf8View(Some(u)) => u.to_ascii_lowercase(),
        _ => return None,
    };
    let unit = ["year", "month", "day", "hour"]
        .into_iter()
        .find(|k| *k == unit)?;
    Some((unit, as_column(column)?))
}

/// The source a filter reads: a column, or a struct child (`s.city` parses to
/// `get_field(s, 'city')`, `s.pos.x` to `get_field(s, 'pos', 'x')`), as its path of names.
pub(super) fn as_column(e: &Expr) -> Option<Vec<String>> {
    match e {
        Expr::Column(c) => Some(vec![c.name.clone()]),
        Expr::ScalarFunction(f) if f.func.name() == "get_field" => {
            // `a.b.c` parses to `get_field(a, 'b', 'c')`: one call for the whole path.
            let (inner, names) = f.args.split_first()?;
            if names.is_empty() {
                return None;
            }
            let mut path = as_column(inner)?;
            for name in names {
                match as_literal(name)? {
                    ScalarValue::Utf8(Some(n))
                    | ScalarValue::LargeUtf8(Some(n))
                    | ScalarValue::Utf8View(Some(n)) => path.push(n),
                    _ => return None,
                }
            }
            Some(path)
        }
        _ => None,
    }
}

pub(super) fn flip(op: Operator) -> Option<Operator> {
    use Operator::*;
    Some(match op {
        Eq => Eq,
        NotEq => NotEq,
        Lt => Gt,
        LtEq => GtEq,
        Gt => Lt,
        GtEq => LtEq,
        _ => return None,
    })
}

/// The representable value next to `v` (`step` = -1: the one before, +1: the one after) for
/// integer, date and timestamp literals; `None` for other types or at the type's limits.
pub(super) fn neighbor(v: &ScalarValue, step: i64) -> Option<ScalarValue> {
    use ScalarValue as S;
    let i32_step = |x: i32| x.checked_add(i32::try_from(step).ok()?);
    Some(match v {
        S::Int8(Some(x)) => S::Int8(Some(x.checked_add(i8::try_from(step).ok()?)?)),
        S::Int16(Some(x)) => S::Int16(Some(x.checked_add(i16::try_from(step).ok()?)?)),
        S::Int32(Some(x)) => S::Int32(Some(i32_step(*x)?)),
        S::Int64(Some(x)) => S::Int64(Some(x.checked_add(step)?)),
        S::Date32(Some(x)) => S::Date32(Some(i32_step(*x)?)),
        S::Date64(Some(x)) => S::Date64(Some(x.checked_add(step)?)),
        S::TimestampSecond(Some(x), tz) => {
            S::TimestampSecond(Some(x.checked_add(step)?), tz.clone())
        }
        S::TimestampMillisecond(Some(x), tz) => {
            S::TimestampMillisecond(Some(x.checked_add(step)?), tz.clone())
        }
        S::TimestampMicrosecond(Some(x), tz) => {
            S::TimestampMicrosecond(Some(x.checked_add(step)?), tz.clone())
        }
        S::TimestampNanosecond(Some(x), tz) => {
            S::TimestampNanosecond(Some(x.checked_add(step)?), tz.clone())
        }
        _ => return None,
    })
}

/// Casts a literal to `dt` only when the cast is exact (round-trips), so comparisons keep
/// their meaning.
pub(super) fn exact_cast(v: &ScalarValue, dt: &DataType) -> Option<ScalarValue> {
    if &v.data_type() == dt {
        return Some(v.clone());
    }
    let a = v.to_array_of_size(1).ok()?;
    let c = crate::arrow::compute::kernels::cast::cast_with_options(&a, dt, &strict_cast()).ok()?;
    let back =
        crate::arrow::compute::kernels::cast::cast_with_options(&c, &v.data_type(), &strict_cast())
            .ok()?;
    let b = ScalarValue::try_from_array(&back, 0).ok()?;
    (b == *v).then(|| ScalarValue::try_from_array(&c, 0).ok())?
}

pub(super) fn flatten_and<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::BinaryExpr(b) if b.op == Operator::And => {
            flatten_and(&b.left, out);
            flatten_and(&b.right, out);
        }
        other => out.push(other),
    }
}
