//! A merge's SQL: the clause conditions and the update values, parsed once against the
//! source's columns (`source.x`) and the namespace's (`target.x`), checked as filters are
//! (`crate::ns::infra::filter::parse_expression`), then planned over the batches the merge
//! evaluates them on:
//!
//! - matched clauses: a batch of the matched pairs, the source's columns then the target
//!   columns read;
//! - not-matched clauses: the source's columns;
//! - not-matched-by-source clauses: the target columns read (plain names work too).

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use crate::arrow::datatypes::{Field, Schema, SchemaRef};
use crate::datafusion::common::tree_node::{Transformed, TreeNode};
use crate::datafusion::common::{Column, DFSchema};
use crate::datafusion::logical_expr::Expr;
use crate::datafusion::physical_plan::PhysicalExpr;
use crate::error::{Error, Result};
use crate::expr::session;
use crate::ns::infra::filter::{parse_expression, plain, Filter};

use super::clauses::{MergeClauses, WhenMatched};
use super::keys::KeyPath;

/// The qualifier of source columns.
pub(crate) const SOURCE: &str = "source";
/// The qualifier of target columns.
pub(crate) const TARGET: &str = "target";

/// What a matched clause does once its condition holds.
#[derive(Debug, Clone)]
pub(crate) enum MatchedAction {
    UpdateAll,
    /// Namespace column name and its new value.
    Update(Vec<(String, Arc<dyn PhysicalExpr>)>),
    Delete,
}

/// The clauses, planned; see the module docs.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// Namespace columns read from every row of a target partition (namespace order); an
    /// updated row's other columns are fetched for it alone.
    pub(crate) read: SchemaRef,
    /// Matched clauses in order: condition over (source ⊕ target read), action.
    pub(crate) matched: Vec<(Option<Arc<dyn PhysicalExpr>>, MatchedAction)>,
    /// Not-matched clauses in order: condition over the source.
    pub(crate) not_matched: Vec<Option<Arc<dyn PhysicalExpr>>>,
    /// Not-matched-by-source clauses in order: condition over the target columns read.
    pub(crate) by_source: Vec<Option<Arc<dyn PhysicalExpr>>>,
    /// The not-matched-by-source conditions as one filter over the namespace (pruning);
    /// `None` when some clause has no condition (every partition).
    pub(crate) by_source_filter: Option<Vec<Filter>>,
}

/// The schema of the source as the merge sees it: namespace columns in namespace types,
/// the others as given.
pub(crate) fn conformed(source: &Schema, ns: &Schema) -> Schema {
    Schema::new(
        source
            .fields()
            .iter()
            .map(|f| match ns.field_with_name(f.name()) {
                Ok(n) => Field::new(f.name(), n.data_type().clone(), true),
                Err(_) => f.as_ref().clone().with_nullable(true),
            })
            .collect::<Vec<_>>(),
    )
}

fn qualified(q: &str, schema: &Schema) -> Result<DFSchema> {
    Ok(DFSchema::try_from_qualified_schema(q, &plain(schema))?)
}

/// A matched clause, parsed.
struct ParsedMatched {
    condition: Option<Expr>,
    /// Update values (`None` for update-all and delete).
    set: Option<Vec<(String, Expr)>>,
    delete: bool,
}

/// Parsed clauses before planning.
struct Parsed {
    matched: Vec<ParsedMatched>,
    not_matched: Vec<Option<Expr>>,
    by_source: Vec<Option<Expr>>,
}

/// Source columns outside the namespace that the clauses read (they may be in the source).
///
/// # Errors
/// `Expression` for bad SQL.
pub(crate) fn extra_source_columns(
    clauses: &MergeClauses,
    source: &Schema,
    ns: &Schema,
) -> Result<HashSet<String>> {
    let parsed = parse(clauses, &conformed(source, ns), ns)?;
    let mut out = HashSet::new();
    let mut note = |e: &Expr| {
        for c in e.column_refs() {
            if c.relation.as_ref().map(|r| r.table()) == Some(SOURCE)
                && ns.field_with_name(&c.name).is_err()
            {
                out.insert(c.name.clone());
            }
        }
    };
    for m in &parsed.matched {
        m.condition.iter().for_each(&mut note);
        for (_, e) in m.set.iter().flatten() {
            note(e);
        }
    }
    parsed.not_matched.iter().flatten().for_each(note);
    Ok(out)
}

fn parse(clauses: &MergeClauses, source: &Schema, ns: &Schema) -> Result<Parsed> {
    let src = qualified(SOURCE, source)?;
    let tgt = qualified(TARGET, ns)?;
    let mut both = src.clone();
    both.merge(&tgt);
    let cond = |what: &str, sql: Option<&str>, df: &DFSchema| -> Result<Option<Expr>> {
        sql.map(|s| parse_expression(what, s, df, true)).transpose()
    };
    let mut matched = Vec::new();
    for m in &clauses.matched {
        let c = cond("merge condition", m.condition(), &both)?;
        let set = match m {
            WhenMatched::Update { set, .. } => {
                let mut out = Vec::with_capacity(set.len());
                for (col, sql) in set {
                    if ns.field_with_name(col).is_err() {
                        return Err(Error::SchemaMismatch(format!(
                            "when_matched_update sets {col:?}, which is not a namespace column"
                        )));
                    }
                    out.push((
                        col.clone(),
                        parse_expression("update value", sql, &both, false)?,
                    ));
                }
                Some(out)
            }
            _ => None,
        };
        matched.push(ParsedMatched {
            condition: c,
            set,
            delete: matches!(m, WhenMatched::Delete { .. }),
        });
    }
    let not_matched = clauses
        .not_matched
        .iter()
        .map(|n| cond("insert condition", n.condition.as_deref(), &src))
        .collect::<Result<Vec<_>>>()?;
    let by_source = clauses
        .not_matched_by_source
        .iter()
        .map(|n| cond("delete condition", n.condition.as_deref(), &tgt))
        .collect::<Result<Vec<_>>>()?;
    Ok(Parsed {
        matched,
        not_matched,
        by_source,
    })
}

/// Plans the clauses for a source with `source` columns (conformed) and the namespace `ns`.
///
/// # Errors
/// `Expression` for bad SQL; `SchemaMismatch` for an update of an unknown column.
pub(crate) fn plan(
    clauses: &MergeClauses,
    keys: &[KeyPath],
    source: &Schema,
    ns: &Schema,
) -> Result<Plan> {
    let parsed = parse(clauses, source, ns)?;
    let read = read_schema(&parsed, keys, ns);
    let src = qualified(SOURCE, source)?;
    let tgt = qualified(TARGET, &read)?;
    let mut joined = src.clone();
    joined.merge(&tgt);
    let phys = |e: &Expr, df: &DFSchema| -> Result<Arc<dyn PhysicalExpr>> {
        Ok(session().create_physical_expr(e.clone(), df)?)
    };
    let mut matched = Vec::with_capacity(parsed.matched.len());
    for m in &parsed.matched {
        let cond = m.condition.as_ref().map(|c| phys(c, &joined)).transpose()?;
        let action = match (&m.set, m.delete) {
            (_, true) => MatchedAction::Delete,
            (Some(set), _) => MatchedAction::Update(
                set.iter()
                    .map(|(col, e)| Ok((col.clone(), phys(e, &joined)?)))
                    .collect::<Result<Vec<_>>>()?,
            ),
            (None, false) => MatchedAction::UpdateAll,
        };
        matched.push((cond, action));
    }
    let not_matched = parsed
        .not_matched
        .iter()
        .map(|c| c.as_ref().map(|c| phys(c, &src)).transpose())
        .collect::<Result<Vec<_>>>()?;
    let by_source = parsed
        .by_source
        .iter()
        .map(|c| c.as_ref().map(|c| phys(c, &tgt)).transpose())
        .collect::<Result<Vec<_>>>()?;
    let by_source_filter = if parsed.by_source.iter().any(Option::is_none) {
        None
    } else {
        Some(
            parsed
                .by_source
                .iter()
                .flatten()
                .zip(&clauses.not_matched_by_source)
                .map(|(e, c)| unqualified(e, c.condition.as_deref().unwrap_or_default()))
                .collect::<Result<Vec<_>>>()?,
        )
    };
    Ok(Plan {
        read,
        matched,
        not_matched,
        by_source,
        by_source_filter,
    })
}

/// The namespace columns read from every target row: the keys', and the ones conditions and
/// values read (an updated row's other columns are fetched for it alone, `matcher`).
fn read_schema(parsed: &Parsed, keys: &[KeyPath], ns: &Schema) -> SchemaRef {
    let mut wanted: BTreeSet<String> = keys.iter().map(|k| k.column().to_string()).collect();
    let mut note = |e: &Expr| {
        for c in e.column_refs() {
            if c.relation.as_ref().map(|r| r.table()) != Some(SOURCE) {
                wanted.insert(c.name.clone());
            }
        }
    };
    for m in &parsed.matched {
        m.condition.iter().for_each(&mut note);
        for (_, e) in m.set.iter().flatten() {
            note(e);
        }
    }
    parsed.by_source.iter().flatten().for_each(&mut note);
    Arc::new(Schema::new(
        ns.fields()
            .iter()
            .filter(|f| wanted.contains(f.name()))
            .map(|f| f.as_ref().clone())
            .collect::<Vec<_>>(),
    ))
}

/// A target condition as a namespace filter (for pruning).
fn unqualified(e: &Expr, sql: &str) -> Result<Filter> {
    let expr = e
        .clone()
        .transform(|x| match &x {
            Expr::Column(c) if c.relation.is_some() => Ok(Transformed::yes(Expr::Column(
                Column::from_name(c.name.clone()),
            ))),
            _ => Ok(Transformed::no(x)),
        })?
        .data;
    Ok(Filter {
        sql: sql.to_string(),
        expr,
    })
}
