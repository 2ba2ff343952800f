//! `lance_partitioned._native`: thin pyo3 bindings over `lance-partitioned-core`.
//!
//! Each function converts its arguments (Arrow through the PyCapsule interface, zero copy),
//! releases the GIL, calls the core, and converts the result back. Errors become the typed
//! exceptions of [`errors`]; panics are caught and reported as `InternalError`.

use std::sync::Arc;

use lance_partitioned_core::arrow::array::{Array, ArrayRef};
use lance_partitioned_core::arrow::datatypes::{Field, Schema};
use lance_partitioned_core::spec::{CompiledSpec, PartitionSpec};
use lance_partitioned_core::{expr, hash, route, transform, types};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

mod errors;
mod ffi;
mod maintenance;
mod namespace;
mod results;
mod runtime;
mod writes;

use errors::{invalid_arg, run};
use ffi::{export_array, export_batch, import_array, import_batch, import_schema};

fn arrays_of(objs: &Bound<'_, PyAny>) -> PyResult<Vec<ArrayRef>> {
    let mut out = Vec::new();
    for o in objs.try_iter()? {
        out.push(import_array(&o?)?.0);
    }
    Ok(out)
}

/// murmur3(array) -> int32 array
#[pyfunction]
fn murmur3<'py>(py: Python<'py>, array: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let (a, _) = import_array(array)?;
    let out = run(py, || Ok(Arc::new(hash::murmur3(a.as_ref())?) as ArrayRef))?;
    export_array(py, &out)
}

/// murmur3_multi(arrays) -> int32 array
#[pyfunction]
fn murmur3_multi<'py>(py: Python<'py>, arrays: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let a = arrays_of(arrays)?;
    let out = run(py, || {
        let refs: Vec<&dyn Array> = a.iter().map(|a| a.as_ref()).collect();
        Ok(Arc::new(hash::murmur3_multi(&refs)?) as ArrayRef)
    })?;
    export_array(py, &out)
}

/// bucket(array, n) -> int32 array in [0, n)
#[pyfunction]
fn bucket<'py>(py: Python<'py>, array: &Bound<'py, PyAny>, n: i64) -> PyResult<Bound<'py, PyAny>> {
    let (a, _) = import_array(array)?;
    let out = run(
        py,
        || Ok(Arc::new(hash::bucket(a.as_ref(), n)?) as ArrayRef),
    )?;
    export_array(py, &out)
}

/// multi_bucket(arrays, n) -> int32 array in [0, n)
#[pyfunction]
fn multi_bucket<'py>(
    py: Python<'py>,
    arrays: &Bound<'py, PyAny>,
    n: i64,
) -> PyResult<Bound<'py, PyAny>> {
    let a = arrays_of(arrays)?;
    let out = run(py, || {
        let refs: Vec<&dyn Array> = a.iter().map(|a| a.as_ref()).collect();
        Ok(Arc::new(hash::multi_bucket(&refs, n)?) as ArrayRef)
    })?;
    export_array(py, &out)
}

/// temporal(array, part) with part in year/month/day/hour
#[pyfunction]
fn temporal<'py>(
    py: Python<'py>,
    array: &Bound<'py, PyAny>,
    part: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let (a, _) = import_array(array)?;
    let f = match part {
        "year" => transform::year,
        "month" => transform::month,
        "day" => transform::day,
        "hour" => transform::hour,
        other => return Err(invalid_arg(format!("unknown date part {other:?}"))),
    };
    let out = run(py, || f(a.as_ref()))?;
    export_array(py, &out)
}

/// truncate(array, width)
#[pyfunction]
fn truncate<'py>(
    py: Python<'py>,
    array: &Bound<'py, PyAny>,
    width: i64,
) -> PyResult<Bound<'py, PyAny>> {
    let (a, _) = import_array(array)?;
    if width <= 0 || width > i32::MAX as i64 {
        return Err(invalid_arg(format!(
            "width must be in 1..=2147483647, got {width}"
        )));
    }
    let out = run(py, || transform::truncate(a.as_ref(), width as i32))?;
    export_array(py, &out)
}

/// evaluate(expression, arrays) -> array
#[pyfunction]
fn evaluate<'py>(
    py: Python<'py>,
    expression: &str,
    arrays: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let a = arrays_of(arrays)?;
    let sql = expression.to_string();
    let out = run(py, || expr::evaluate(&sql, &a))?;
    export_array(py, &out)
}

/// The return type of `expression` for sources of the given types, as a pyarrow field.
#[pyfunction]
fn expression_type<'py>(
    py: Python<'py>,
    expression: &str,
    schema: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let s = import_schema(schema)?;
    let types: Vec<_> = s.fields().iter().map(|f| f.data_type().clone()).collect();
    let sql = expression.to_string();
    let dt = run(py, || {
        Ok(expr::compile_cached(&sql, &types)?.return_type().clone())
    })?;
    let out = Arc::new(Schema::new(vec![Field::new("result", dt, true)]));
    let batch = lance_partitioned_core::arrow::array::RecordBatch::new_empty(out);
    export_batch(py, &batch)
}

fn schema_arg(schema: &Bound<'_, PyAny>) -> PyResult<Schema> {
    if let Ok(s) = schema.cast::<PyString>() {
        let text = s.to_str()?.to_string();
        return types::schema_from_json(&text).map_err(errors::to_py);
    }
    import_schema(schema)
}

/// partition_values(batch, spec_json, schema) -> RecordBatch
#[pyfunction]
fn partition_values<'py>(
    py: Python<'py>,
    batch: &Bound<'py, PyAny>,
    spec_json: &str,
    schema: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let b = import_batch(batch)?;
    let s = schema_arg(schema)?;
    let spec_text = spec_json.to_string();
    let out = run(py, || {
        let compiled = compiled_spec(&spec_text, &s)?;
        compiled.partition_values(&b)
    })?;
    export_batch(py, &out)
}

/// validate_spec(spec_json, schema) -> normalised spec JSON; raises SpecError/ExpressionError.
#[pyfunction]
fn validate_spec(py: Python<'_>, spec_json: &str, schema: &Bound<'_, PyAny>) -> PyResult<String> {
    let s = schema_arg(schema)?;
    let spec_text = spec_json.to_string();
    run(py, || compiled_spec(&spec_text, &s)?.spec().to_json())
}

fn compiled_spec(
    spec_json: &str,
    schema: &Schema,
) -> lance_partitioned_core::Result<Arc<CompiledSpec>> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
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
fn schema_to_json(py: Python<'_>, schema: &Bound<'_, PyAny>) -> PyResult<String> {
    let s = import_schema(schema)?;
    run(py, || {
        let js = types::JsonSchema::from_arrow(&s)?;
        serde_json::to_string(&js)
            .map_err(|e| lance_partitioned_core::Error::Internal(e.to_string()))
    })
}

/// schema_from_json(text) -> pyarrow.Schema
#[pyfunction]
fn schema_from_json<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    let t = text.to_string();
    let schema = run(py, || types::schema_from_json(&t))?;
    let batch = lance_partitioned_core::arrow::array::RecordBatch::new_empty(Arc::new(schema));
    export_batch(py, &batch)?.getattr("schema")
}

/// route(batch, keys, threads) -> (keys RecordBatch, permuted RecordBatch, offsets)
#[pyfunction]
#[pyo3(signature = (batch, keys, threads = 1))]
fn route_batch<'py>(
    py: Python<'py>,
    batch: &Bound<'py, PyAny>,
    keys: &Bound<'py, PyAny>,
    threads: usize,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyList>)> {
    let b = import_batch(batch)?;
    let k = import_batch(keys)?;
    let routed = run(py, || {
        route::route_with_threads(&b, k.columns(), k.schema(), threads)
    })?;
    let offsets = PyList::new(py, routed.offsets.iter().copied())?;
    Ok((
        export_batch(py, &routed.keys)?,
        export_batch(py, &routed.batch)?,
        offsets,
    ))
}

/// Panics inside the guarded Rust section; proves that no panic crosses into Python (the
/// test suite expects `InternalError`). Not part of the public API.
#[pyfunction]
fn _panic_for_tests(py: Python<'_>) -> PyResult<()> {
    run(py, || -> lance_partitioned_core::Result<()> {
        panic!("deliberate panic for the FFI guard test")
    })
}

/// The SIMD level the hashing loops use on this machine ("avx2" or "portable").
#[pyfunction]
fn simd_level() -> &'static str {
    hash::simd_level()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(murmur3, m)?)?;
    m.add_function(wrap_pyfunction!(murmur3_multi, m)?)?;
    m.add_function(wrap_pyfunction!(bucket, m)?)?;
    m.add_function(wrap_pyfunction!(multi_bucket, m)?)?;
    m.add_function(wrap_pyfunction!(temporal, m)?)?;
    m.add_function(wrap_pyfunction!(truncate, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(expression_type, m)?)?;
    m.add_function(wrap_pyfunction!(partition_values, m)?)?;
    m.add_function(wrap_pyfunction!(validate_spec, m)?)?;
    m.add_function(wrap_pyfunction!(route_batch, m)?)?;
    m.add_function(wrap_pyfunction!(schema_to_json, m)?)?;
    m.add_function(wrap_pyfunction!(schema_from_json, m)?)?;
    m.add_function(wrap_pyfunction!(simd_level, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_tests, m)?)?;
    m.add_function(wrap_pyfunction!(namespace::create_namespace, m)?)?;
    m.add_function(wrap_pyfunction!(writes::write_data, m)?)?;
    m.add_function(wrap_pyfunction!(maintenance::evolve_spec, m)?)?;
    m.add_function(wrap_pyfunction!(maintenance::repair_manifest, m)?)?;
    m.add_function(wrap_pyfunction!(maintenance::delete_rows, m)?)?;
    m.add_function(wrap_pyfunction!(maintenance::update_schema, m)?)?;
    m.add_function(wrap_pyfunction!(maintenance::cleanup_namespace, m)?)?;
    m.add_class::<writes::DistributedWrite>()?;
    m.add_class::<writes::KeyHasher>()?;
    m.add_class::<results::WriteResult>()?;
    m.add_class::<results::DeleteResult>()?;
    m.add_class::<results::CleanupResult>()?;
    m.add_class::<namespace::ManifestSnapshot>()?;
    m.add_class::<namespace::Scan>()?;
    Ok(())
}
