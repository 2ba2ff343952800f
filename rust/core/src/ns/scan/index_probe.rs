//! Ruling a leaf out by its scalar indexes before reading it: a filter that requires a column
//! to equal a value (`c = v`, `c IN (v, ...)`, an OR of those on `c`, ANDed with anything)
//! cannot match a leaf whose index on `c` (B-tree, bitmap, zone map) holds none of the values,
//! so that leaf is never planned or scanned. A point lookup then costs one index search per kept leaf (tens of microseconds
//! warm) and a scan of the few leaves that hold the key, instead of a Lance scan of every
//! leaf (a few hundred microseconds each, mostly planning).
//!
//! A leaf is ruled out only when an index answers for every fragment it has (the fragments
//! its segments cover include all of the leaf's) and every segment finds nothing. Anything
//! else (no index, fragments written since the index was built, an index type that cannot
//! search, an error) leaves the leaf to the scan, which reads it as before: the probe only
//! ever skips work, never changes an answer. Deleted rows an index still lists only keep a
//! leaf in.

use std::collections::HashSet;

use lance::dataset::Dataset;
use lance::index::{DatasetIndexExt, DatasetIndexInternalExt};
use lance_index::metrics::NoOpMetricsCollector;
use lance_index::scalar::{SargableQuery, SearchResult};
use lance_table::format::IndexMetadata;

use crate::arrow::datatypes::DataType;
use crate::datafusion::logical_expr::{Expr, Operator};
use crate::datafusion::scalar::ScalarValue;
use crate::error::Result;
use crate::field_ids::field_id;
use crate::ns::manifest::{declared_indexes, Snapshot};

/// One conjunct of the filter an index can answer: column `column` equals one of `values`.
#[derive(Debug, Clone)]
struct Equality {
    column: Column,
    values: Vec<ScalarValue>,
}

/// The equalities of a filter, checked against each leaf's indexes.
#[derive(Debug, Clone, Default)]
pub(super) struct IndexProbe {
    equalities: Vec<Equality>,
}

impl IndexProbe {
    /// The equalities among the top-level conjuncts of `expr` on columns of `snap` with a
    /// declared index (`create_index`); `None` when there are none (a namespace without
    /// indexes, or a filter on other columns, asks no leaf anything).
    pub(super) fn of(expr: &Expr, snap: &Snapshot) -> Option<Self> {
        let declared = declared_indexes(&snap.root_props.props).ok()?;
        let indexed: HashSet<&str> = snap
            .root_props
            .schema
            .fields()
            .iter()
            .filter(|f| field_id(f).is_some_and(|id| declared.values().any(|d| d.field_id == id)))
            .map(|f| f.name().as_str())
            .collect();
        let mut equalities = Vec::new();
        collect(expr, &mut equalities);
        equalities.retain(|e| indexed.contains(e.column.name.as_str()));
        (!equalities.is_empty()).then_some(Self { equalities })
    }

    /// Whether the indexes of `ds` show that no row of it satisfies the filter. The columns
    /// are the leaf's own under their namespace names (the caller checked that the leaf has
    /// each filter column under its namespace name and type).
    pub(super) async fn rules_out(&self, ds: &Dataset) -> bool {
        let Ok(indexes) = ds.load_indices().await else {
            return false;
        };
        for eq in &self.equalities {
            if matches!(holds_none(ds, &indexes, eq).await, Ok(true)) {
                return true;
            }
        }
        false
    }
}

/// Collects the conjuncts of `expr` (through ANDs) that require one column to equal one of
/// some literals: `c = v`, `c IN (v, ...)`, and ORs of those on the same column.
fn collect(expr: &Expr, out: &mut Vec<Equality>) {
    match expr {
        Expr::BinaryExpr(b) if b.op == Operator::And => {
            collect(&b.left, out);
            collect(&b.right, out);
        }
        other => {
            if let Some((column, values)) = equality(other) {
                push(out, column, values);
            }
        }
    }
}

/// The column `e` requires to equal one of the returned values (NULLs included, dropped
/// later), when `e` is such a requirement.
fn equality(e: &Expr) -> Option<(Column, Vec<ScalarValue>)> {
    match e {
        Expr::BinaryExpr(b) if b.op == Operator::Eq => {
            match (column_of(&b.left), literal_of(&b.right)) {
                (Some(c), Some(v)) => Some((c, vec![v])),
                _ => Some((column_of(&b.right)?, vec![literal_of(&b.left)?])),
            }
        }
        Expr::InList(l) if !l.negated => {
            let values: Option<Vec<ScalarValue>> = l.list.iter().map(literal_of).collect();
            Some((column_of(&l.expr)?, values?))
        }
        // `e OR NULL` is true where `e` is (the simplified form of `c IN (v, NULL)`).
        Expr::BinaryExpr(b) if b.op == Operator::Or && is_null(&b.right) => equality(&b.left),
        Expr::BinaryExpr(b) if b.op == Operator::Or && is_null(&b.left) => equality(&b.right),
        Expr::BinaryExpr(b) if b.op == Operator::Or => {
            let (left, mut values) = equality(&b.left)?;
            let (right, more) = equality(&b.right)?;
            values.extend(more);
            (left == right).then_some((left, values))
        }
        _ => None,
    }
}

/// Whether `e` is a NULL literal (through casts).
fn is_null(e: &Expr) -> bool {
    literal_of(e).is_some_and(|v| v.is_null())
}

/// The value of a literal, through casts (evaluated).
fn literal_of(e: &Expr) -> Option<ScalarValue> {
    match e {
        Expr::Literal(v, _) => Some(v.clone()),
        Expr::Cast(c) => literal_of(&c.expr)?.cast_to(c.field.data_type()).ok(),
        Expr::TryCast(c) => literal_of(&c.expr)?.cast_to(c.field.data_type()).ok(),
        _ => None,
    }
}

/// Keeps the non-NULL values (a NULL never equals anything, so it adds no matching row); an
/// equality with none left is not probed (the never-true rules handle it).
fn push(out: &mut Vec<Equality>, column: Column, values: Vec<ScalarValue>) {
    let values: Vec<ScalarValue> = values.into_iter().filter(|v| !v.is_null()).collect();
    if !values.is_empty() {
        out.push(Equality { column, values });
    }
}

/// The top-level column `e` reads, as itself or through casts to integer types (an integer
/// column cast to another integer type equals an integer exactly when the column does; the
/// leaf's column must then be an integer too, see [`holds_none`]).
fn column_of(e: &Expr) -> Option<Column> {
    match e {
        Expr::Column(c) if c.relation.is_none() => Some(Column {
            name: c.name.clone(),
            cast: false,
        }),
        Expr::Cast(c) if c.field.data_type().is_integer() => Some(Column {
            cast: true,
            ..column_of(&c.expr)?
        }),
        Expr::TryCast(c) if c.field.data_type().is_integer() => Some(Column {
            cast: true,
            ..column_of(&c.expr)?
        }),
        _ => None,
    }
}

/// A column an equality reads.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Column {
    name: String,
    /// Through an integer cast.
    cast: bool,
}

/// Whether the indexes of `ds` (`indexes`, its index list) on `eq.column` cover all of its
/// fragments and find none of `eq.values`; `Ok(false)` whenever that cannot be shown.
async fn holds_none(ds: &Dataset, indexes: &[IndexMetadata], eq: &Equality) -> Result<bool> {
    let Some(field) = ds.schema().fields.iter().find(|f| f.name == eq.column.name) else {
        return Ok(false);
    };
    if eq.column.cast && !field.data_type().is_integer() {
        return Ok(false);
    }
    let Some(values) = as_column_type(&eq.values, &field.data_type()) else {
        return Ok(false);
    };
    let segments: Vec<_> = indexes.iter().filter(|m| m.fields == [field.id]).collect();
    if segments.is_empty() {
        return Ok(false);
    }
    if segments.iter().any(|s| s.fragment_bitmap.is_none()) {
        return Ok(false);
    }
    let covered = |id: u32| {
        segments
            .iter()
            .any(|s| s.fragment_bitmap.as_ref().is_some_and(|b| b.contains(id)))
    };
    if !ds
        .fragments()
        .iter()
        .all(|f| u32::try_from(f.id).is_ok_and(covered))
    {
        return Ok(false);
    }
    let query = match values.as_slice() {
        [one] => SargableQuery::Equals(one.clone()),
        _ => SargableQuery::IsIn(values),
    };
    for s in segments {
        let index = ds
            .open_scalar_index(&eq.column.name, &s.uuid, &NoOpMetricsCollector)
            .await?;
        let found = index.search(&query, &NoOpMetricsCollector).await?;
        let none = match &found {
            SearchResult::Exact(rows) | SearchResult::AtMost(rows) => rows.is_empty(),
            SearchResult::AtLeast(_) => false,
        };
        if !none {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `values` as the column's type, each converting back to itself (an integer literal for a
/// narrower integer column, say); `None` when one does not, or for a type whose index
/// equality could differ from SQL's (floats: `-0.0 = 0.0`, NaN) or that indexes do not take
/// as such (dictionaries, nested types): the index is not asked then.
fn as_column_type(values: &[ScalarValue], ty: &DataType) -> Option<Vec<ScalarValue>> {
    if !probed_type(ty) {
        return None;
    }
    values
        .iter()
        .map(|v| {
            if v.data_type() == *ty {
                return Some(v.clone());
            }
            let cast = v.cast_to(ty).ok()?;
            (cast.cast_to(&v.data_type()).ok()? == *v && !cast.is_null()).then_some(cast)
        })
        .collect()
}

/// Whether equality on `ty` is probed (see [`as_column_type`]).
fn probed_type(ty: &DataType) -> bool {
    ty.is_integer()
        || matches!(
            ty,
            DataType::Boolean
                | DataType::Utf8
                | DataType::LargeUtf8
                | DataType::Utf8View
                | DataType::Binary
                | DataType::LargeBinary
                | DataType::Date32
                | DataType::Date64
                | DataType::Timestamp(_, _)
                | DataType::Decimal128(_, _)
                | DataType::Decimal256(_, _)
        )
}
