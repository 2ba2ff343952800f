//! Partition expressions: DataFusion SQL with `col0..colN` placeholders.
//!
//! An expression is parsed against a schema whose columns are exactly `col0..col{N-1}` (typed
//! by the source columns), validated (deterministic and stateless: only immutable functions;
//! no subqueries, aggregates, window functions, placeholders or session variables), planned
//! once into a physical expression and then evaluated on whole arrays. The Lance extension
//! UDFs `murmur3` and `murmur3_multi` are registered and run on our kernels.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::arrow::array::{Array, ArrayRef, RecordBatch, RecordBatchOptions};
use crate::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use crate::datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use crate::datafusion::common::DFSchema;
use crate::datafusion::error::DataFusionError;
use crate::datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use crate::datafusion::physical_expr::PhysicalExpr;
use crate::datafusion::prelude::{SessionConfig, SessionContext};
use crate::datafusion::scalar::ScalarValue;
use crate::error::{expr_err, invalid_arg, Error, Result};
use crate::hash;

/// The `murmur3(col)` UDF (Lance extension): int32 hash, NULL for NULL.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Murmur3Udf {
    signature: Signature,
}

impl Default for Murmur3Udf {
    fn default() -> Self {
        Self {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

fn df_err(e: Error) -> DataFusionError {
    DataFusionError::Execution(e.to_string())
}

/// Runs `f` on the arguments as arrays and returns a scalar when every argument was one.
fn invoke_arrays(
    args: ScalarFunctionArgs,
    f: impl Fn(&[ArrayRef]) -> Result<ArrayRef>,
) -> crate::datafusion::error::Result<ColumnarValue> {
    let all_scalar = args
        .args
        .iter()
        .all(|a| matches!(a, ColumnarValue::Scalar(_)));
    let rows = if all_scalar { 1 } else { args.number_rows };
    let arrays = args
        .args
        .iter()
        .map(|a| a.to_array(rows))
        .collect::<crate::datafusion::error::Result<Vec<_>>>()?;
    let out = f(&arrays).map_err(df_err)?;
    if all_scalar {
        Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
            out.as_ref(),
            0,
        )?))
    } else {
        Ok(ColumnarValue::Array(out))
    }
}

impl ScalarUDFImpl for Murmur3Udf {
    fn name(&self) -> &str {
        "murmur3"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> crate::datafusion::error::Result<DataType> {
        Ok(DataType::Int32)
    }
    fn invoke_with_args(
        &self,
        args: ScalarFunctionArgs,
    ) -> crate::datafusion::error::Result<ColumnarValue> {
        invoke_arrays(args, |a| hash::murmur3_ref(&a[0]))
    }
}

/// The `murmur3_multi(col0, col1, ...)` UDF (Lance extension).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Murmur3MultiUdf {
    signature: Signature,
}

impl Default for Murmur3MultiUdf {
    fn default() -> Self {
        Self {
            signature: Signature::variadic_any(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for Murmur3MultiUdf {
    fn name(&self) -> &str {
        "murmur3_multi"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> crate::datafusion::error::Result<DataType> {
        Ok(DataType::Int32)
    }
    fn invoke_with_args(
        &self,
        args: ScalarFunctionArgs,
    ) -> crate::datafusion::error::Result<ColumnarValue> {
        invoke_arrays(args, |a| {
            let refs: Vec<&dyn Array> = a.iter().map(|a| a.as_ref()).collect();
            Ok(Arc::new(hash::murmur3_multi(&refs)?) as ArrayRef)
        })
    }
}

/// A DataFusion session with the Lance extension UDFs registered. Created lazily in the
/// process that uses it (never inherited in a half-initialised state across a fork).
pub fn session() -> &'static SessionContext {
    static CTX: OnceLock<SessionContext> = OnceLock::new();
    CTX.get_or_init(|| {
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(1));
        ctx.register_udf(ScalarUDF::from(Murmur3Udf::default()));
        ctx.register_udf(ScalarUDF::from(Murmur3MultiUdf::default()));
        ctx
    })
}

/// The name of placeholder column `i`.
pub fn placeholder(i: usize) -> String {
    format!("col{i}")
}

fn placeholder_schema(types: &[DataType]) -> SchemaRef {
    Arc::new(Schema::new(
        types
            .iter()
            .enumerate()
            .map(|(i, t)| Field::new(placeholder(i), t.clone(), true))
            .collect::<Vec<_>>(),
    ))
}

/// Why `e` (one node) may not appear in a partition expression or a filter: subqueries,
/// aggregates, window functions, placeholders, session variables, lambdas and functions that
/// are not immutable; `None` when it may.
pub(crate) fn forbidden_construct(e: &Expr) -> Option<String> {
    match e {
        Expr::ScalarSubquery(_)
        | Expr::Exists(_)
        | Expr::InSubquery(_)
        | Expr::SetComparison(_)
        | Expr::OuterReferenceColumn(_, _) => Some("subqueries are not allowed".to_string()),
        Expr::AggregateFunction(f) => Some(format!(
            "aggregate function {}() is not allowed",
            f.func.name()
        )),
        Expr::WindowFunction(_) => Some("window functions are not allowed".to_string()),
        Expr::Placeholder(p) => Some(format!("placeholder {} is not allowed", p.id)),
        Expr::ScalarVariable(_, v) => {
            Some(format!("session variable {} is not allowed", v.join(".")))
        }
        Expr::GroupingSet(_) | Expr::Unnest(_) => {
            Some(format!("{} is not allowed", e.variant_name()))
        }
        Expr::HigherOrderFunction(_) | Expr::Lambda(_) | Expr::LambdaVariable(_) => {
            Some("lambda functions are not allowed".to_string())
        }
        Expr::ScalarFunction(f) => {
            let v = f.func.signature().volatility;
            (v != Volatility::Immutable).then(|| {
                format!(
                    "function {}() is {} (its result depends on more than its arguments); \
                     it must be deterministic and stateless",
                    f.func.name(),
                    match v {
                        Volatility::Volatile => "volatile",
                        _ => "not immutable",
                    }
                )
            })
        }
        _ => None,
    }
}

/// Checks that `expr` is allowed as a partition expression.
fn validate(sql: &str, expr: &Expr, num_sources: usize) -> Result<()> {
    let mut problem: Option<String> = None;
    let visit = expr.apply(|e| {
        let msg = match e {
            Expr::Column(c) => {
                let ok = c
                    .name
                    .strip_prefix("col")
                    .and_then(|n| n.parse::<usize>().ok())
                    .is_some_and(|n| n < num_sources && placeholder(n) == c.name);
                (!ok || c.relation.is_some()).then(|| unknown_column_msg(&c.name, num_sources))
            }
            other => forbidden_construct(other),
        };
        if let Some(m) = msg {
            problem = Some(m);
            return Ok(TreeNodeRecursion::Stop);
        }
        Ok(TreeNodeRecursion::Continue)
    });
    visit?;
    match problem {
        Some(p) => expr_err!("invalid partition expression {sql:?}: {p}"),
        None => Ok(()),
    }
}

fn unknown_column_msg(name: &str, num_sources: usize) -> String {
    let bound = match num_sources {
        0 => "no columns are bound".to_string(),
        1 => "only col0 is bound (one source column)".to_string(),
        n => format!("col0..col{} are bound ({n} source columns)", n - 1),
    };
    format!("column {name:?} is not a source placeholder: {bound}")
}

/// A parsed, validated and planned partition expression.
#[derive(Debug)]
pub struct CompiledExpr {
    sql: String,
    schema: SchemaRef,
    physical: Arc<dyn PhysicalExpr>,
    return_type: DataType,
}

impl CompiledExpr {
    /// Parses and plans `sql` for sources of the given types (`col{i}` has `types[i]`).
    ///
    /// # Errors
    /// `Expression` for malformed SQL, unknown columns, and anything [`validate`] refuses.
    pub fn compile(sql: &str, types: &[DataType]) -> Result<Self> {
        let schema = placeholder_schema(types);
        let df_schema = DFSchema::try_from(schema.as_ref().clone())?;
        let ctx = session();
        let expr = ctx.parse_sql_expr(sql, &df_schema).map_err(|e| {
            let msg = e.strip_backtrace();
            // DataFusion's message for an unknown identifier names the field; make it ours.
            if let Some(name) = unknown_identifier(&msg) {
                Error::Expression(format!(
                    "invalid partition expression {sql:?}: {}",
                    unknown_column_msg(&name, types.len())
                ))
            } else {
                Error::Expression(format!("cannot parse partition expression {sql:?}: {msg}"))
            }
        })?;
        validate(sql, &expr, types.len())?;
        let physical = ctx.create_physical_expr(expr, &df_schema).map_err(|e| {
            Error::Expression(format!(
                "cannot plan partition expression {sql:?}: {}",
                e.strip_backtrace()
            ))
        })?;
        let return_type = physical.data_type(schema.as_ref()).map_err(|e| {
            Error::Expression(format!(
                "cannot type partition expression {sql:?}: {}",
                e.strip_backtrace()
            ))
        })?;
        Ok(Self {
            sql: sql.to_string(),
            schema,
            physical,
            return_type,
        })
    }

    /// The expression text.
    pub fn sql(&self) -> &str {
        &self.sql
    }

    /// The type the expression returns for the compiled source types.
    pub fn return_type(&self) -> &DataType {
        &self.return_type
    }

    /// Evaluates the expression on whole source arrays.
    ///
    /// # Errors
    /// `InvalidArgument` when the arrays do not match the compiled types or lengths;
    /// `Expression` when evaluation fails.
    pub fn evaluate(&self, arrays: &[ArrayRef]) -> Result<ArrayRef> {
        if arrays.len() != self.schema.fields().len() {
            return invalid_arg!(
                "expression {:?} was compiled for {} source column(s), got {}",
                self.sql,
                self.schema.fields().len(),
                arrays.len()
            );
        }
        let rows = arrays.first().map(|a| a.len()).unwrap_or(1);
        for (i, (a, f)) in arrays.iter().zip(self.schema.fields()).enumerate() {
            if a.len() != rows {
                return invalid_arg!(
                    "all source columns must have the same length: col0 has {rows} rows, \
                     col{i} has {}",
                    a.len()
                );
            }
            if a.data_type() != f.data_type() {
                return invalid_arg!(
                    "col{i} has type {}, the expression was compiled for {}",
                    a.data_type(),
                    f.data_type()
                );
            }
        }
        let batch = RecordBatch::try_new_with_options(
            Arc::clone(&self.schema),
            arrays.to_vec(),
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )?;
        let value = self.physical.evaluate(&batch).map_err(|e| {
            Error::Expression(format!(
                "evaluating partition expression {:?} failed: {}",
                self.sql,
                e.strip_backtrace()
            ))
        })?;
        Ok(value.into_array(rows)?)
    }
}

fn unknown_identifier(msg: &str) -> Option<String> {
    // "Schema error: No field named col7. Valid fields are ..."
    let rest = msg.split("No field named ").nth(1)?;
    let name: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '"')
        .collect();
    Some(name.trim_matches('"').to_string())
}

type CacheKey = (String, Vec<DataType>);

/// Compiles `sql` for `types`, reusing an earlier compilation of the same pair.
///
/// # Errors
/// As [`CompiledExpr::compile`].
pub fn compile_cached(sql: &str, types: &[DataType]) -> Result<Arc<CompiledExpr>> {
    static CACHE: OnceLock<Mutex<HashMap<CacheKey, Arc<CompiledExpr>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let key = (sql.to_string(), types.to_vec());
    if let Some(c) = cache.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return Ok(c);
    }
    let compiled = Arc::new(CompiledExpr::compile(sql, types)?);
    if let Ok(mut m) = cache.lock() {
        if m.len() >= 1024 {
            m.clear();
        }
        m.insert(key, Arc::clone(&compiled));
    }
    Ok(compiled)
}

/// Evaluates `sql` on whole arrays (`col{i}` is `arrays[i]`).
///
/// # Errors
/// As [`CompiledExpr::compile`] and [`CompiledExpr::evaluate`].
pub fn evaluate(sql: &str, arrays: &[ArrayRef]) -> Result<ArrayRef> {
    if arrays.is_empty() {
        return invalid_arg!("evaluate needs at least one source array");
    }
    let types: Vec<DataType> = arrays.iter().map(|a| a.data_type().clone()).collect();
    compile_cached(sql, &types)?.evaluate(arrays)
}

/// Evaluates `sql` on one value per source (the pruning path).
///
/// # Errors
/// As [`evaluate`].
pub fn evaluate_scalar(sql: &str, values: &[ScalarValue]) -> Result<ScalarValue> {
    let arrays = values
        .iter()
        .map(|v| v.to_array_of_size(1))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let types: Vec<DataType> = arrays.iter().map(|a| a.data_type().clone()).collect();
    let out = compile_cached(sql, &types)?.evaluate(&arrays)?;
    Ok(ScalarValue::try_from_array(out.as_ref(), 0)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrow::array::{Int32Array, StringArray};

    fn s(v: &[&str]) -> ArrayRef {
        Arc::new(StringArray::from(v.to_vec()))
    }

    #[test]
    fn evaluates_with_udfs() {
        let out = evaluate("murmur3(col0)", &[s(&["hello", "US"])]).unwrap();
        let out = out.as_any().downcast_ref::<Int32Array>().unwrap();
        assert_eq!(out.values().to_vec(), vec![613153351, -629525236]);
        let out = evaluate(
            "concat(col0, '/', left(col1, 2))",
            &[s(&["US"]), s(&["Boston"])],
        )
        .unwrap();
        let out = crate::arrow::compute::cast(&out, &DataType::Utf8).unwrap();
        let out = out.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(out.value(0), "US/Bo");
    }

    #[test]
    fn refuses_what_partition_expressions_must_not_do() {
        let one = [DataType::Int32];
        for bad in [
            "random()",
            "col0 + random()",
            "now()",
            "uuid()",
            "col1",
            "col7",
            "other",
            "(SELECT 1)",
            "col0 IN (SELECT 1)",
            "sum(col0)",
            "$1",
            "col0 +",
        ] {
            let err = CompiledExpr::compile(bad, &one).unwrap_err();
            assert!(matches!(err, Error::Expression(_)), "{bad}: {err:?}");
        }
    }
}
