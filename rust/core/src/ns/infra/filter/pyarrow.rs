//! pyarrow filter expressions (`pyarrow.compute.Expression`) as DataFusion expressions, so
//! that one implementation prunes, pushes down and filters both SQL and pyarrow filters.
//!
//! The expression arrives in the form pyarrow pickles it (Arrow C++'s expression
//! serialization): an Arrow IPC file whose schema metadata lists the expression tree in
//! prefix order (`call <name>`, its arguments, `options <column>`, `end <name>`; `field_ref
//! <name>`; `literal <column>`), and whose one-row columns hold the literals and the
//! function options. The key-value list is read from the IPC footer itself: its keys repeat
//! and their order is the tree, which a map would lose. The format is linear in the tree
//! (pyarrow's Substrait export is exponential in the depth of an `|` chain), and the tree is
//! rebuilt without recursion.
//!
//! Each supported function keeps pyarrow's semantics, NULLs and NaNs included:
//! `and`/`or` (not Kleene) are NULL when either side is; `is_in` follows its
//! `null_matching_behavior`; float comparisons treat NaN as IEEE does (never equal, never
//! ordered). Known differences, in `docs/guide/reads.md`: integer arithmetic wraps on overflow
//! where pyarrow's checked kernels raise, and `-0.0` sorts below `0.0` (DataFusion compares
//! floats by total order). Any other function is refused with `Expression`, naming it.

use std::io::Cursor;
use std::sync::Arc;

use crate::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StructArray};
use crate::arrow::datatypes::DataType;
use crate::arrow::ipc::reader::FileReader;
use crate::arrow::ipc::{root_as_footer, root_as_message, Block};
use crate::datafusion::common::{Column, DFSchema, ScalarValue};
use crate::datafusion::functions::expr_fn::{contains, ends_with, isnan, starts_with};
use crate::datafusion::logical_expr::{
    binary_expr, lit, when, BinaryExpr, Cast, Expr, ExprSchemable, Operator,
};
use crate::error::{Error, Result};

/// The IPC file's trailer: footer length (4 bytes) and the magic `ARROW1` (6 bytes).
const TRAILER: usize = 10;

fn bad(why: impl std::fmt::Display) -> Error {
    Error::Expression(format!("bad pyarrow filter expression: {why}"))
}

/// The DataFusion expression of a pickled pyarrow expression, over `df`.
///
/// # Errors
/// `Expression` for bytes that are not a serialized pyarrow expression, nested field
/// references, and functions or options without a faithful translation.
pub(super) fn translate(bytes: &[u8], df: &DFSchema) -> Result<Expr> {
    let tokens = tokens(bytes)?;
    let batch = literals(bytes)?;
    let mut stack: Vec<Frame> = Vec::new();
    let mut done: Option<Arg> = None;
    for (key, value) in tokens {
        let arg = match key.as_str() {
            "call" => {
                stack.push(Frame {
                    name: value,
                    args: Vec::new(),
                    options: None,
                });
                continue;
            }
            "options" => {
                let frame = stack
                    .last_mut()
                    .ok_or_else(|| bad("options outside a call"))?;
                let col = column(&batch, &value)?;
                let s = col
                    .as_struct_opt()
                    .ok_or_else(|| bad("options are not a struct"))?;
                frame.options = Some(s.clone());
                continue;
            }
            "field_ref" => Arg::Expr(Expr::Column(Column::from_name(value))),
            "literal" => Arg::Expr(lit(scalar(column(&batch, &value)?)?)),
            "end" => {
                let frame = stack.pop().ok_or_else(|| bad("an end without a call"))?;
                if frame.name != value {
                    return Err(bad(format!("{value} ends call {}", frame.name)));
                }
                call(frame, df)?
            }
            "nested_field_ref" => {
                return Err(bad(
                    "nested field references are not supported; filter on top-level columns",
                ))
            }
            other => return Err(bad(format!("unknown token {other:?}"))),
        };
        match stack.last_mut() {
            Some(frame) => frame.args.push(arg),
            None if done.is_none() => done = Some(arg),
            None => return Err(bad("more than one expression")),
        }
    }
    if !stack.is_empty() {
        return Err(bad("a call without its end"));
    }
    done.map(Arg::into_expr).ok_or_else(|| bad("no expression"))
}

/// The key-value list of the IPC file's schema, in order, after checking that every block
/// the file lists lies inside it.
fn tokens(bytes: &[u8]) -> Result<Vec<(String, String)>> {
    let n = bytes.len();
    if n < TRAILER + 8 || &bytes[n - 6..] != b"ARROW1" {
        return Err(bad("not an Arrow IPC file"));
    }
    let mut len = [0u8; 4];
    len.copy_from_slice(&bytes[n - TRAILER..n - 6]);
    let len = usize::try_from(i32::from_le_bytes(len)).map_err(|_| bad("negative footer"))?;
    let start = (n - TRAILER)
        .checked_sub(len)
        .ok_or_else(|| bad("footer longer than the file"))?;
    let footer = root_as_footer(&bytes[start..n - TRAILER]).map_err(bad)?;
    let blocks = footer.recordBatches().into_iter().flatten();
    for block in blocks.chain(footer.dictionaries().into_iter().flatten()) {
        check_block(bytes, block, start)?;
    }
    let meta = footer
        .schema()
        .and_then(|s| s.custom_metadata())
        .ok_or_else(|| bad("no expression metadata"))?;
    Ok(meta
        .iter()
        .map(|kv| {
            (
                kv.key().unwrap_or_default().to_string(),
                kv.value().unwrap_or_default().to_string(),
            )
        })
        .collect())
}

/// Bounds a block, and the buffers and row counts of its message, by the bytes before the
/// footer (`end`): arrow-rs's reader allocates what a block claims before reading it, so a
/// corrupt length would otherwise abort the process on a failed allocation.
fn check_block(bytes: &[u8], block: &Block, end: usize) -> Result<()> {
    let size = |v: i64| usize::try_from(v).map_err(|_| bad("negative block size"));
    let (offset, meta) = (
        size(block.offset())?,
        size(i64::from(block.metaDataLength()))?,
    );
    let body = size(block.bodyLength())?;
    let fits = offset
        .checked_add(meta)
        .and_then(|m| m.checked_add(body))
        .is_some_and(|e| e <= end);
    if !fits {
        return Err(bad("a block outside the file"));
    }
    let m = &bytes[offset..offset + meta];
    let message = match m {
        [0xFF, 0xFF, 0xFF, 0xFF, _, _, _, _, rest @ ..] => rest,
        [_, _, _, _, rest @ ..] => rest,
        _ => return Err(bad("a block without a message")),
    };
    let message = root_as_message(message).map_err(bad)?;
    if size(message.bodyLength())? > body {
        return Err(bad("a message body longer than its block"));
    }
    let batch = message
        .header_as_record_batch()
        .or_else(|| message.header_as_dictionary_batch().and_then(|d| d.data()));
    let Some(batch) = batch else {
        return Ok(());
    };
    if batch.compression().is_some() {
        return Err(bad("compressed literal buffers"));
    }
    for b in batch.buffers().into_iter().flatten() {
        let inside = size(b.offset())?
            .checked_add(size(b.length())?)
            .is_some_and(|e| e <= body);
        if !inside {
            return Err(bad("a buffer outside its block"));
        }
    }
    let most_rows = body.saturating_mul(8).saturating_add(1);
    let rows = std::iter::once(batch.length()).chain(
        batch
            .nodes()
            .into_iter()
            .flatten()
            .flat_map(|n| [n.length(), n.null_count()]),
    );
    for r in rows {
        if size(r)? > most_rows {
            return Err(bad("more rows than the block's bytes can hold"));
        }
    }
    Ok(())
}

/// The one-row batch of literals and options (empty when there are none).
///
/// arrow-rs's IPC reader panics on some corrupt buffer offsets instead of failing; the bytes
/// come from the caller, so such a panic is caught here and is an `Expression` error.
fn literals(bytes: &[u8]) -> Result<Option<RecordBatch>> {
    let read = || -> Result<Option<RecordBatch>> {
        let mut reader = FileReader::try_new(Cursor::new(bytes), None).map_err(bad)?;
        reader.next().transpose().map_err(bad)
    };
    std::panic::catch_unwind(read).unwrap_or_else(|_| Err(bad("corrupt literal buffers")))
}

fn column(batch: &Option<RecordBatch>, index: &str) -> Result<ArrayRef> {
    let i: usize = index
        .parse()
        .map_err(|_| bad(format!("column {index:?}")))?;
    match batch {
        Some(b) if i < b.num_columns() && b.num_rows() == 1 => Ok(Arc::clone(b.column(i))),
        _ => Err(bad(format!("no literal column {i}"))),
    }
}

fn scalar(a: ArrayRef) -> Result<ScalarValue> {
    ScalarValue::try_from_array(&a, 0).map_err(bad)
}

/// A call being read: its name, arguments so far and options.
struct Frame {
    name: String,
    args: Vec<Arg>,
    options: Option<StructArray>,
}

/// A translated argument; chains of one Kleene operator stay flat until something else uses
/// them, then become a balanced tree (a 20,000-term `|` chain is 15 levels deep, not 20,000).
enum Arg {
    Expr(Expr),
    Chain(Operator, Vec<Expr>),
}

impl Arg {
    fn into_expr(self) -> Expr {
        match self {
            Arg::Expr(e) => e,
            Arg::Chain(op, operands) => balanced(op, operands),
        }
    }
}

fn balanced(op: Operator, mut operands: Vec<Expr>) -> Expr {
    // Pairs neighbours until one is left: depth log2(n), operand order kept.
    while operands.len() > 1 {
        let mut next = Vec::with_capacity(operands.len().div_ceil(2));
        let mut it = operands.into_iter();
        while let Some(a) = it.next() {
            next.push(match it.next() {
                Some(b) => binary_expr(a, op, b),
                None => a,
            });
        }
        operands = next;
    }
    operands.pop().unwrap_or_else(|| lit(op == Operator::And))
}

/// Flattens the arguments of one Kleene `op` into one chain.
fn chain(op: Operator, args: Vec<Arg>) -> Arg {
    let mut operands = Vec::with_capacity(args.len());
    for a in args {
        match a {
            Arg::Chain(o, inner) if o == op => operands.extend(inner),
            other => operands.push(other.into_expr()),
        }
    }
    Arg::Chain(op, operands)
}

fn call(frame: Frame, df: &DFSchema) -> Result<Arg> {
    let Frame {
        name,
        args,
        options,
    } = frame;
    let arity = args.len();
    match (name.as_str(), arity) {
        ("and_kleene", 2) => return Ok(chain(Operator::And, args)),
        ("or_kleene", 2) => return Ok(chain(Operator::Or, args)),
        _ => {}
    }
    let mut a: Vec<Expr> = args.into_iter().map(Arg::into_expr).collect();
    if let ("if_else", [c, x, y]) = (name.as_str(), a.as_slice()) {
        return Ok(Arg::Expr(if_else(c, x, y)?));
    }
    let e = match (a.pop(), a.pop(), a.is_empty()) {
        (Some(y), Some(x), true) => binary(&name, x, y, df)?,
        (Some(x), None, true) => unary(&name, x, options.as_ref(), df)?,
        _ => None,
    };
    e.map(Arg::Expr).ok_or_else(|| {
        bad(format!(
            "pyarrow function {name:?} with {arity} argument(s) has no translation; write the \
             filter as SQL (DataFusion dialect) instead"
        ))
    })
}

/// The functions of two arguments (`None`: no translation).
fn binary(name: &str, x: Expr, y: Expr, df: &DFSchema) -> Result<Option<Expr>> {
    Ok(Some(match name {
        "and" => non_kleene(Operator::And, x, y)?,
        "or" => non_kleene(Operator::Or, x, y)?,
        "xor" => binary_expr(x, Operator::NotEq, y),
        "equal" => compare(Operator::Eq, x, y, df),
        "not_equal" => compare(Operator::NotEq, x, y, df),
        "less" => compare(Operator::Lt, x, y, df),
        "less_equal" => compare(Operator::LtEq, x, y, df),
        "greater" => compare(Operator::Gt, x, y, df),
        "greater_equal" => compare(Operator::GtEq, x, y, df),
        "add" | "add_checked" => binary_expr(x, Operator::Plus, y),
        "subtract" | "subtract_checked" => binary_expr(x, Operator::Minus, y),
        "multiply" | "multiply_checked" => binary_expr(x, Operator::Multiply, y),
        "divide" | "divide_checked" => binary_expr(x, Operator::Divide, y),
        _ => return Ok(None),
    }))
}

/// Arrow's non-Kleene `and`/`or`: NULL when either side is NULL.
fn non_kleene(op: Operator, x: Expr, y: Expr) -> Result<Expr> {
    let either_null = x.clone().is_null().or(y.clone().is_null());
    Ok(when(either_null, lit(ScalarValue::Boolean(None))).otherwise(binary_expr(x, op, y))?)
}

/// The functions of one argument (`None`: no translation).
fn unary(
    name: &str,
    x: Expr,
    options: Option<&StructArray>,
    df: &DFSchema,
) -> Result<Option<Expr>> {
    let option = |key: &str| options.and_then(|s| s.column_by_name(key)).cloned();
    let flag = |key: &str| {
        option(key)
            .and_then(|c| c.as_boolean_opt().map(|b| b.is_valid(0) && b.value(0)))
            .unwrap_or(false)
    };
    Ok(Some(match name {
        "invert" => Expr::Not(Box::new(x)),
        "is_null" if flag("nan_is_null") && is_float(&x, df) => x.clone().is_null().or(isnan(x)),
        "is_null" => x.is_null(),
        "is_valid" => x.is_not_null(),
        "is_nan" => isnan(x),
        "is_in" => is_in(x, option("value_set"), option("null_matching_behavior"))?,
        "starts_with" | "ends_with" | "match_substring" => {
            if flag("ignore_case") {
                return Err(bad(format!(
                    "{name} with ignore_case=True has no translation (case folding differs); \
                     write the filter as SQL instead"
                )));
            }
            let Some(pattern) = option("pattern") else {
                return Ok(None);
            };
            let p = lit(scalar(pattern)?);
            match name {
                "starts_with" => starts_with(x, p),
                "ends_with" => ends_with(x, p),
                _ => contains(x, p),
            }
        }
        "cast" => cast(x, options)?,
        _ => return Ok(None),
    }))
}

fn is_float(e: &Expr, df: &DFSchema) -> bool {
    matches!(
        e.get_type(df),
        Ok(DataType::Float16 | DataType::Float32 | DataType::Float64)
    )
}

/// A literal that is a number other than NaN (a column or NaN may be NaN).
fn never_nan(e: &Expr) -> bool {
    match e {
        Expr::Literal(ScalarValue::Float16(v), _) => v.is_none_or(|v| !v.is_nan()),
        Expr::Literal(ScalarValue::Float32(v), _) => v.is_none_or(|v| !v.is_nan()),
        Expr::Literal(ScalarValue::Float64(v), _) => v.is_none_or(|v| !v.is_nan()),
        Expr::Literal(..) => true,
        _ => false,
    }
}

/// A comparison with IEEE NaN semantics: DataFusion orders NaN above every number and equal
/// to itself; pyarrow (IEEE) makes every comparison with NaN false except `!=`, which is true
/// (and NULL stays NULL). The NaN terms are added as `AND`/`OR` terms around `col op value`,
/// which pruning still sees.
fn compare(op: Operator, x: Expr, y: Expr, df: &DFSchema) -> Expr {
    let floats = is_float(&x, df) || is_float(&y, df);
    let maybe_nan: Vec<Expr> = [&x, &y]
        .into_iter()
        .filter(|e| floats && !never_nan(e))
        .cloned()
        .collect();
    let cmp = Expr::BinaryExpr(BinaryExpr::new(
        Box::new(x.clone()),
        op,
        Box::new(y.clone()),
    ));
    if maybe_nan.is_empty() {
        return cmp;
    }
    if op == Operator::NotEq {
        // x != y, or either is NaN while neither is NULL.
        let any_nan = maybe_nan
            .into_iter()
            .map(isnan)
            .reduce(Expr::or)
            .unwrap_or_else(|| lit(false));
        return cmp.or(any_nan.and(x.is_not_null()).and(y.is_not_null()));
    }
    maybe_nan
        .into_iter()
        .fold(cmp, |acc, e| acc.and(Expr::Not(Box::new(isnan(e)))))
}

/// `is_in` by its `null_matching_behavior` (MATCH 0, SKIP 1, EMIT_NULL 2, INCONCLUSIVE 3).
fn is_in(x: Expr, set: Option<ArrayRef>, behavior: Option<ArrayRef>) -> Result<Expr> {
    let set = set.ok_or_else(|| bad("is_in without a value_set"))?;
    let values: ArrayRef = match set.data_type() {
        DataType::List(_) => set.as_list::<i32>().value(0),
        DataType::LargeList(_) => set.as_list::<i64>().value(0),
        other => return Err(bad(format!("is_in value_set of type {other}"))),
    };
    let behavior = behavior
        .and_then(|b| {
            b.as_primitive_opt::<crate::arrow::datatypes::UInt32Type>()
                .map(|p| p.value(0))
        })
        .unwrap_or(0);
    let mut list = Vec::with_capacity(values.len());
    let mut has_null = false;
    for i in 0..values.len() {
        if values.is_null(i) {
            has_null = true;
        } else {
            list.push(lit(ScalarValue::try_from_array(&values, i).map_err(bad)?));
        }
    }
    let found = |list: Vec<Expr>| -> Expr {
        if list.is_empty() {
            lit(false)
        } else {
            x.clone().in_list(list, false)
        }
    };
    Ok(match behavior {
        // MATCH: a NULL value is found when the set holds NULL.
        0 if has_null => x.clone().is_null().or(found(list)),
        // MATCH without NULL in the set, and SKIP: a NULL value is not found.
        0 | 1 => x.clone().is_not_null().and(found(list)),
        // EMIT_NULL: NULL for a NULL value, nulls in the set ignored.
        2 => found(list),
        // INCONCLUSIVE: SQL's IN, NULL in the set included.
        3 => {
            if has_null {
                list.push(lit(ScalarValue::Null));
            }
            found(list)
        }
        other => return Err(bad(format!("is_in null_matching_behavior {other}"))),
    })
}

/// pyarrow's `if_else(c, x, y)`: NULL when `c` is NULL (SQL's `CASE` would take `y`). DuckDB
/// sends an `IN` as `if_else(is_valid(col), is_in(col, ...), null)`: when `x` is a comparison or
/// an `IN` of that column with literals (NULL whenever the column is), that is `x` itself,
/// which pruning understands.
fn if_else(c: &Expr, x: &Expr, y: &Expr) -> Result<Expr> {
    if let (Expr::IsNotNull(col), Expr::Literal(v, _)) = (c, y) {
        if v.is_null() {
            if let Some(e) = null_when_null(col, x) {
                return Ok(e);
            }
        }
    }
    Ok(when(c.clone(), x.clone())
        .when(Expr::Not(Box::new(c.clone())), y.clone())
        .end()?)
}

/// `x` for a non-NULL `col`, when that is NULL whenever `col` is: a comparison or an `IN` list
/// of `col` with non-NULL literals (the `is_in` translation's NULL guard dropped).
fn null_when_null(col: &Expr, x: &Expr) -> Option<Expr> {
    let guarded = |e: &Expr, op: Operator, guard: Expr| match e {
        Expr::BinaryExpr(b) if b.op == op && *b.left == guard => Some(b.right.as_ref().clone()),
        _ => None,
    };
    let inner = guarded(x, Operator::And, col.clone().is_not_null())
        .or_else(|| guarded(x, Operator::Or, col.clone().is_null()))
        .unwrap_or_else(|| x.clone());
    let literal = |e: &Expr| matches!(e, Expr::Literal(v, _) if !v.is_null());
    let plain = match &inner {
        Expr::InList(l) => *l.expr == *col && !l.negated && l.list.iter().all(literal),
        Expr::BinaryExpr(b) => {
            use Operator::{Eq, Gt, GtEq, Lt, LtEq, NotEq};
            matches!(b.op, Eq | NotEq | Lt | LtEq | Gt | GtEq)
                && ((*b.left == *col && literal(&b.right))
                    || (*b.right == *col && literal(&b.left)))
        }
        _ => false,
    };
    plain.then_some(inner)
}

/// pyarrow's safe `cast` (every `allow_*` false); unsafe casts have no faithful translation.
fn cast(x: Expr, options: Option<&StructArray>) -> Result<Expr> {
    let options = options.ok_or_else(|| bad("cast without options"))?;
    let to = options
        .column_by_name("to_type")
        .ok_or_else(|| bad("cast without to_type"))?
        .data_type()
        .clone();
    for (f, c) in options.fields().iter().zip(options.columns()) {
        let allowed = c
            .as_boolean_opt()
            .is_some_and(|b| b.is_valid(0) && b.value(0));
        if f.name().starts_with("allow_") && allowed {
            return Err(bad(format!(
                "cast with {}=True has no translation; write the filter as SQL instead",
                f.name()
            )));
        }
    }
    Ok(Expr::Cast(Cast::new(Box::new(x), to)))
}
