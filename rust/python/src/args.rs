//! Typed arguments and results at the binding boundary: Arrow data through the PyCapsule
//! interface (zero copy) and the enums Python passes as strings. A `#[pyfunction]` names these
//! types in its signature, so conversion and its errors live here once.

use lance_partitioned_core::arrow::array::{ArrayRef, RecordBatch};
use lance_partitioned_core::arrow::datatypes::Schema;
use lance_partitioned_core::ns::ops::Mode;
use lance_partitioned_core::ns::scan::FilterInput;
use lance_partitioned_core::types;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::errors::{invalid_arg, to_py};
use crate::ffi::{
    export_array, export_batch, export_schema, import_array, import_batch, import_schema,
    BatchInput,
};

/// An Arrow array (anything with `__arrow_c_array__`); returned as a `pyarrow.Array`.
pub struct ArrowArray(pub ArrayRef);

impl<'a, 'py> FromPyObject<'a, 'py> for ArrowArray {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Self(import_array(&obj)?.0))
    }
}

impl<'py> IntoPyObject<'py> for ArrowArray {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        export_array(py, &self.0)
    }
}

/// Several Arrow arrays (any iterable of `__arrow_c_array__` objects).
pub struct ArrowArrays(pub Vec<ArrayRef>);

impl<'a, 'py> FromPyObject<'a, 'py> for ArrowArrays {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let mut out = Vec::new();
        for item in obj.try_iter()? {
            out.push(import_array(&item?)?.0);
        }
        Ok(Self(out))
    }
}

/// A record batch (a struct array through `__arrow_c_array__`); returned as a
/// `pyarrow.RecordBatch`.
pub struct ArrowBatch(pub RecordBatch);

impl<'a, 'py> FromPyObject<'a, 'py> for ArrowBatch {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Self(import_batch(&obj)?))
    }
}

impl<'py> IntoPyObject<'py> for ArrowBatch {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        export_batch(py, &self.0)
    }
}

/// A schema: anything with `__arrow_c_schema__`, or its JSON text (the namespace's stored
/// form); returned as a `pyarrow.Schema`.
pub struct ArrowSchema(pub Schema);

impl<'a, 'py> FromPyObject<'a, 'py> for ArrowSchema {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(text) = obj.cast::<PyString>() {
            return Ok(Self(
                types::schema_from_json(text.to_str()?).map_err(to_py)?,
            ));
        }
        Ok(Self(import_schema(&obj)?))
    }
}

impl<'py> IntoPyObject<'py> for ArrowSchema {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        export_schema(py, &self.0)
    }
}

/// A write mode: `"append"`, `"overwrite"` or `"overwrite_all"`.
#[derive(Debug, Clone, Copy)]
pub struct WriteMode(pub Mode);

impl<'a, 'py> FromPyObject<'a, 'py> for WriteMode {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let text = obj
            .cast::<PyString>()
            .map_err(|_| invalid_arg("mode must be a string"))?;
        Ok(Self(Mode::parse(text.to_str()?).map_err(to_py)?))
    }
}

/// The calendar part a temporal transform extracts: `year`, `month`, `day` or `hour`.
#[derive(Debug, Clone, Copy)]
pub enum DatePart {
    /// Years since 1970.
    Year,
    /// Months since 1970-01.
    Month,
    /// Days since 1970-01-01.
    Day,
    /// Hours since 1970-01-01T00.
    Hour,
}

impl<'a, 'py> FromPyObject<'a, 'py> for DatePart {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let text = obj
            .cast::<PyString>()
            .map_err(|_| invalid_arg("the date part must be a string"))?;
        match text.to_str()? {
            "year" => Ok(Self::Year),
            "month" => Ok(Self::Month),
            "day" => Ok(Self::Day),
            "hour" => Ok(Self::Hour),
            other => Err(invalid_arg(format!("unknown date part {other:?}"))),
        }
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for BatchInput {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        BatchInput::import(&obj)
    }
}

/// A row filter: SQL text (`str`) or a pickled `pyarrow.compute.Expression` (`bytes`, from
/// `Expression.__reduce__`; the Python layer pickles it).
pub struct FilterArg(pub FilterInput);

impl<'a, 'py> FromPyObject<'a, 'py> for FilterArg {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(s) = obj.cast::<PyString>() {
            return Ok(Self(FilterInput::Sql(s.to_str()?.to_string())));
        }
        if let Ok(b) = obj.cast::<PyBytes>() {
            return Ok(Self(FilterInput::Pyarrow(b.as_bytes().to_vec())));
        }
        Err(invalid_arg(format!(
            "a filter is SQL text (str) or a pickled pyarrow expression (bytes), got {}",
            obj.get_type().name()?
        )))
    }
}
