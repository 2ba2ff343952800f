//! Bindings of partition values as text (`lance_partitioned.values`): one value travels as a
//! one-element Arrow array, a type as a one-field schema.

use std::sync::Arc;

use lance_partitioned_core::arrow::array::ArrayRef;
use lance_partitioned_core::arrow::datatypes::DataType;
use lance_partitioned_core::datafusion::scalar::ScalarValue;
use lance_partitioned_core::{values, Error, Result};
use pyo3::prelude::*;

use crate::args::{ArrowArray, ArrowSchema};
use crate::errors::run;

/// The one value of a one-element array.
fn single(array: &ArrayRef) -> Result<ScalarValue> {
    if array.len() != 1 {
        return Err(Error::InvalidArgument(format!(
            "expected one value, got an array of {}",
            array.len()
        )));
    }
    Ok(ScalarValue::try_from_array(array.as_ref(), 0)?)
}

/// The type of a one-field schema.
fn only_type(schema: &ArrowSchema) -> Result<DataType> {
    match schema.0.fields().first() {
        Some(f) if schema.0.fields().len() == 1 => Ok(f.data_type().clone()),
        _ => Err(Error::InvalidArgument(
            "expected a schema with exactly one field".into(),
        )),
    }
}

fn as_array(v: &ScalarValue) -> Result<ArrowArray> {
    Ok(ArrowArray(v.to_array()?))
}

/// value_to_string(one-element array) -> str | None
#[pyfunction]
pub fn value_to_string(py: Python<'_>, value: ArrowArray) -> PyResult<Option<String>> {
    run(py, || values::to_string(&single(&value.0)?))
}

/// value_from_string(text, one-field schema) -> one-element array
#[pyfunction]
#[pyo3(signature = (text, schema))]
pub fn value_from_string(
    py: Python<'_>,
    text: Option<String>,
    schema: ArrowSchema,
) -> PyResult<ArrowArray> {
    run(py, || {
        let dt = only_type(&schema)?;
        let v = values::from_string(text.as_deref(), &dt)
            .map_err(|e| Error::InvalidArgument(e.to_string()))?;
        as_array(&v)
    })
}

/// values_to_strings(array) -> string array
#[pyfunction]
pub fn values_to_strings(py: Python<'_>, array: ArrowArray) -> PyResult<ArrowArray> {
    run(py, || {
        Ok(ArrowArray(
            Arc::new(values::to_strings(array.0.as_ref())?) as ArrayRef
        ))
    })
}

/// hive_escape(text) -> str
#[pyfunction]
pub fn hive_escape(text: &str) -> String {
    values::hive_escape(text)
}

/// hive_unescape(text) -> str
#[pyfunction]
pub fn hive_unescape(py: Python<'_>, text: &str) -> PyResult<String> {
    run(py, || values::hive_unescape(text))
}

/// uri_escape(path) -> str
#[pyfunction]
pub fn uri_escape(path: &str) -> String {
    values::uri_escape(path)
}

/// hive_segment(name, one-element array, timezone) -> str
#[pyfunction]
pub fn hive_segment(
    py: Python<'_>,
    name: &str,
    value: ArrowArray,
    timezone: &str,
) -> PyResult<String> {
    run(py, || {
        let tz = values::parse_timezone(timezone)?;
        values::hive_segment(name, &single(&value.0)?, &tz)
    })
}

/// parse_hive_segment(segment, one-field schema, timezone) -> (name, one-element array)
#[pyfunction]
pub fn parse_hive_segment(
    py: Python<'_>,
    segment: &str,
    schema: ArrowSchema,
    timezone: &str,
) -> PyResult<(String, ArrowArray)> {
    run(py, || {
        let tz = values::parse_timezone(timezone)?;
        let (name, v) = values::parse_hive_segment(segment, &only_type(&schema)?, &tz)?;
        Ok((name, as_array(&v)?))
    })
}
