//! Bindings of the kernels: hashing, transforms, expressions, partition values and routing,
//! each a pure function of Arrow data.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use lance_partitioned_core::arrow::array::{Array, ArrayRef, RecordBatch};
use lance_partitioned_core::arrow::datatypes::{Field, Schema};
use lance_partitioned_core::spec::{CompiledSpec, PartitionSpec};
use lance_partitioned_core::{expr, hash, route, transform, types, Error, Result};
use pyo3::prelude::*;

use crate::args::{ArrowArray, ArrowArrays, ArrowBatch, ArrowSchema, DatePart};
use crate::errors::{invalid_arg, run};

fn refs(arrays: &[ArrayRef]) -> Vec<&dyn Array> {
    arrays.iter().map(|a| a.as_ref()).collect()
}

/// murmur3(array) -> int32 array
#[pyfunction]
pub fn murmur3(py: Python<'_>, array: ArrowArray) -> PyResult<ArrowArray> {
    run(py, || {
        Ok(ArrowArray(
            Arc::new(hash::murmur3(array.0.as_ref())?) as ArrayRef
        ))
    })
}

/// murmur3_multi(arrays) -> int32 array
#[pyfunction]
pub fn murmur3_multi(py: Python<'_>, arrays: ArrowArrays) -> PyResult<ArrowArray> {
    run(py, || {
        Ok(ArrowArray(
            Arc::new(hash::murmur3_multi(&refs(&arrays.0))?) as ArrayRef
        ))
    })
}

/// bucket(array, n) -> int32 array in [0, n)
#[pyfunction]
pub fn bucket(py: Python<'_>, array: ArrowArray, n: i64) -> PyResult<ArrowArray> {
    run(py, || {
        Ok(ArrowArray(
            Arc::new(hash::bucket(array.0.as_ref(), n)?) as ArrayRef
        ))
    })
}

/// multi_bucket(arrays, n) -> int32 array in [0, n)
#[pyfunction]
pub fn multi_bucket(py: Python<'_>, arrays: ArrowArrays, n: i64) -> PyResult<ArrowArray> {
    run(py, || {
        Ok(ArrowArray(
            Arc::new(hash::multi_bucket(&refs(&arrays.0), n)?) as ArrayRef,
        ))
    })
}

/// temporal(array, part) with part in year/month/day/hour
#[pyfunction]
pub fn temporal(py: Python<'_>, array: ArrowArray, part: DatePart) -> PyResult<ArrowArray> {
    let f = match part {
        DatePart::Year => transform::year,
        DatePart::Month => transform::month,
        DatePart::Day => transform::day,
        DatePart::Hour => transform::hour,
    };
    run(py, || Ok(ArrowArray(f(array.0.as_ref())?)))
}

/// truncate(array, width)
#[pyfunction]
pub fn truncate(py: Python<'_>, array: ArrowArray, width: i64) -> PyResult<ArrowArray> {
    let width = i32::try_from(width)
        .ok()
        .filter(|w| *w > 0)
        .ok_or_else(|| invalid_arg(format!("width must be in 1..=2147483647, got {width}")))?;
    run(py, || {
        Ok(ArrowArray(transform::truncate(array.0.as_ref(), width)?))
    })
}

/// evaluate(expression, arrays) -> array
#[pyfunction]
pub fn evaluate(py: Python<'_>, expression: &str, arrays: ArrowArrays) -> PyResult<ArrowArray> {
    run(py, || {
        Ok(ArrowArray(expr::evaluate(expression, &arrays.0)?))
    })
}

/// The return type of `expression` for sources of the given types, as an empty batch with
/// one field `result`.
#[pyfunction]
pub fn expression_type(
    py: Python<'_>,
    expression: &str,
    schema: ArrowSchema,
) -> PyResult<ArrowBatch> {
    let types: Vec<_> = schema
        .0
        .fields()
        .iter()
        .map(|f| f.data_type().clone())
        .collect();
    run(py, || {
        let dt = expr::compile_cached(expression, &types)?
            .return_type()
            .clone();
        let out = Arc::new(Schema::new(vec![Field::new("result", dt, true)]));
        Ok(ArrowBatch(RecordBatch::new_empty(out)))
    })
}

/// partition_values(batch, spec_json, schema) -> RecordBatch
#[pyfunction]
pub fn partition_values(
    py: Python<'_>,
    batch: ArrowBatch,
    spec_json: &str,
    schema: ArrowSchema,
) -> PyResult<ArrowBatch> {
    run(py, || {
        let compiled = compiled_spec(spec_json, &schema.0)?;
        Ok(ArrowBatch(compiled.partition_values(&batch.0)?))
    })
}

/// validate_spec(spec_json, schema) -> normalised spec JSON; raises SpecError/ExpressionError.
#[pyfunction]
pub fn validate_spec(py: Python<'_>, spec_json: &str, schema: ArrowSchema) -> PyResult<String> {
    run(py, || compiled_spec(spec_json, &schema.0)?.spec().to_json())
}

/// A compiled spec, cached by (spec text, schema): Python calls these kernels per batch.
fn compiled_spec(spec_json: &str, schema: &Schema) -> Result<Arc<CompiledSpec>> {
    type Cache = Mutex<HashMap<(String, String), Arc<CompiledSpec>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let key = (spec_json.to_string(), format!("{schema:?}"));
    if let Some(c) = cache.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return Ok(c);
    }
    let spec = PartitionSpec::from_json(spec_json)?;
    let compiled = Arc::new(CompiledSpec::compile(&spec, schema, false)?);
    if let Ok(mut m) = cache.lock() {
        if m.len() >= 256 {
            m.clear();
        }
        m.insert(key, Arc::clone(&compiled));
    }
    Ok(compiled)
}

/// schema_to_json(schema) -> JsonArrowSchema text (with `unit`/`timezone` extension keys).
#[pyfunction]
pub fn schema_to_json(py: Python<'_>, schema: ArrowSchema) -> PyResult<String> {
    run(py, || {
        let js = types::JsonSchema::from_arrow(&schema.0)?;
        serde_json::to_string(&js).map_err(|e| Error::Internal(e.to_string()))
    })
}

/// check_input_schema(input, namespace, typed_text) -> None: raises `SchemaMismatchError` for
/// an input schema every batch of which a write would refuse (and, with `typed_text`, for a
/// text column whose namespace column is not text).
#[pyfunction]
pub fn check_input_schema(
    py: Python<'_>,
    input: ArrowSchema,
    namespace: ArrowSchema,
    typed_text: bool,
) -> PyResult<()> {
    run(py, || {
        lance_partitioned_core::ns::write::check_input_schema(
            &Arc::new(input.0.clone()),
            &namespace.0,
            typed_text,
        )
    })
}

/// schema_from_json(text) -> pyarrow.Schema
#[pyfunction]
pub fn schema_from_json(py: Python<'_>, text: &str) -> PyResult<ArrowSchema> {
    run(py, || Ok(ArrowSchema(types::schema_from_json(text)?)))
}

/// assign_field_ids(schema, floor) -> pyarrow.Schema: every field (struct children too)
/// without a `lance:field_id` gets a fresh one, larger than every id in use and than
/// `floor - 1`.
#[pyfunction]
pub fn assign_field_ids(py: Python<'_>, schema: ArrowSchema, floor: i32) -> PyResult<ArrowSchema> {
    run(py, || {
        Ok(ArrowSchema(
            lance_partitioned_core::field_ids::assign_field_ids(&schema.0, floor)?,
        ))
    })
}

/// route(batch, keys, threads) -> (keys RecordBatch, permuted RecordBatch, offsets);
/// `threads=None`: `route::auto_threads`.
#[pyfunction]
#[pyo3(signature = (batch, keys, threads = None))]
pub fn route_batch(
    py: Python<'_>,
    batch: ArrowBatch,
    keys: ArrowBatch,
    threads: Option<usize>,
) -> PyResult<(ArrowBatch, ArrowBatch, Vec<usize>)> {
    let threads = threads.unwrap_or_else(|| route::auto_threads(batch.0.num_rows()));
    let routed = run(py, || {
        route::route_with_threads(&batch.0, keys.0.columns(), keys.0.schema(), threads)
    })?;
    Ok((
        ArrowBatch(routed.keys),
        ArrowBatch(routed.batch),
        routed.offsets,
    ))
}

/// The SIMD level the hashing loops use on this machine ("avx2" or "portable").
#[pyfunction]
pub fn simd_level() -> &'static str {
    hash::simd_level()
}
