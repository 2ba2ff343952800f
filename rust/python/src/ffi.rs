//! Arrow PyCapsule interface: zero-copy import of anything exposing `__arrow_c_array__` or
//! `__arrow_c_schema__`, and export to pyarrow. (Streams and chunked arrays are split into
//! arrays by the Python wrappers.)

use std::ffi::CStr;
use std::sync::Arc;

use lance_partitioned_core::arrow::array::{
    make_array, Array, ArrayRef, RecordBatch, RecordBatchOptions, StructArray,
};
use lance_partitioned_core::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use lance_partitioned_core::arrow::error::ArrowError;
use lance_partitioned_core::arrow::ffi::{
    from_ffi, from_ffi_and_data_type, FFI_ArrowArray, FFI_ArrowSchema,
};
use lance_partitioned_core::arrow::ffi_stream::FFI_ArrowArrayStream;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};

use crate::errors::{arrow_err, invalid_arg};

const SCHEMA_NAME: &CStr = c"arrow_schema";
const ARRAY_NAME: &CStr = c"arrow_array";
const STREAM_NAME: &CStr = c"arrow_array_stream";

fn capsule_ptr<T>(cap: &Bound<'_, PyAny>, name: &CStr) -> PyResult<*mut T> {
    let cap = cap.cast::<PyCapsule>().map_err(|_| {
        invalid_arg(format!(
            "expected a PyCapsule named {:?}",
            name.to_string_lossy()
        ))
    })?;
    Ok(cap.pointer_checked(Some(name))?.as_ptr() as *mut T)
}

/// Imports one array (with its field) from an object implementing `__arrow_c_array__`.
pub fn import_array(obj: &Bound<'_, PyAny>) -> PyResult<(ArrayRef, Field)> {
    if !obj.hasattr("__arrow_c_array__")? {
        return Err(invalid_arg(format!(
            "expected an Arrow array (an object with __arrow_c_array__), got {}",
            obj.get_type().name()?
        )));
    }
    let tuple = obj.call_method0("__arrow_c_array__")?;
    let tuple = tuple
        .cast::<PyTuple>()
        .map_err(|_| invalid_arg("__arrow_c_array__ must return a tuple"))?;
    if tuple.len() != 2 {
        return Err(invalid_arg("__arrow_c_array__ must return two capsules"));
    }
    let schema_ptr = capsule_ptr::<FFI_ArrowSchema>(&tuple.get_item(0)?, SCHEMA_NAME)?;
    let array_ptr = capsule_ptr::<FFI_ArrowArray>(&tuple.get_item(1)?, ARRAY_NAME)?;
    // SAFETY: the capsules follow the Arrow PyCapsule protocol: valid, initialised C data
    // interface structs. `from_raw` moves the array out (the producer's copy is marked
    // released); the schema is only borrowed and released by its capsule.
    let (data, field) = unsafe {
        let ffi_array = FFI_ArrowArray::from_raw(array_ptr);
        let ffi_schema = &*schema_ptr;
        let field = Field::try_from(ffi_schema).map_err(arrow_err)?;
        let mut data = from_ffi(ffi_array, ffi_schema).map_err(arrow_err)?;
        data.align_buffers();
        (data, field)
    };
    Ok((make_array(data), field))
}

/// Imports a record batch from an object implementing `__arrow_c_array__` (a struct array).
pub fn import_batch(obj: &Bound<'_, PyAny>) -> PyResult<RecordBatch> {
    let (array, field) = import_array(obj)?;
    let DataType::Struct(fields) = field.data_type() else {
        return Err(invalid_arg(format!(
            "expected a record batch (a struct array), got an array of type {}",
            field.data_type()
        )));
    };
    let schema = Arc::new(Schema::new_with_metadata(
        fields.clone(),
        field.metadata().clone(),
    ));
    let s = array
        .as_any()
        .downcast_ref::<StructArray>()
        .ok_or_else(|| invalid_arg("record batch did not import as a struct array"))?;
    RecordBatch::try_new_with_options(
        schema,
        s.columns().to_vec(),
        &RecordBatchOptions::new().with_row_count(Some(s.len())),
    )
    .map_err(arrow_err)
}

/// Imports a schema from an object implementing `__arrow_c_schema__`.
pub fn import_schema(obj: &Bound<'_, PyAny>) -> PyResult<Schema> {
    let cap = obj.call_method0("__arrow_c_schema__")?;
    let ptr = capsule_ptr::<FFI_ArrowSchema>(&cap, SCHEMA_NAME)?;
    // SAFETY: a valid schema per the PyCapsule protocol; only borrowed.
    let ffi = unsafe { &*ptr };
    Schema::try_from(ffi).map_err(arrow_err)
}

fn to_pyarrow<'py>(
    py: Python<'py>,
    class: &str,
    schema: FFI_ArrowSchema,
    array: FFI_ArrowArray,
) -> PyResult<Bound<'py, PyAny>> {
    let schema_cap = PyCapsule::new_with_value(py, schema, SCHEMA_NAME)?;
    let array_cap = PyCapsule::new_with_value(py, array, ARRAY_NAME)?;
    let pa = py.import("pyarrow")?;
    pa.getattr(class)?
        .call_method1("_import_from_c_capsule", (schema_cap, array_cap))
}

/// Exports an array to a `pyarrow.Array` (zero copy).
pub fn export_array<'py>(py: Python<'py>, array: &ArrayRef) -> PyResult<Bound<'py, PyAny>> {
    let data = array.to_data();
    let schema = FFI_ArrowSchema::try_from(data.data_type()).map_err(arrow_err)?;
    let ffi = FFI_ArrowArray::new(&data);
    to_pyarrow(py, "Array", schema, ffi)
}

/// Exports a record batch to a `pyarrow.RecordBatch` (zero copy, metadata kept).
pub fn export_batch<'py>(py: Python<'py>, batch: &RecordBatch) -> PyResult<Bound<'py, PyAny>> {
    let schema: SchemaRef = batch.schema();
    let ffi_schema = FFI_ArrowSchema::try_from(schema.as_ref()).map_err(arrow_err)?;
    let s = StructArray::from(batch.clone());
    let ffi = FFI_ArrowArray::new(&s.to_data());
    to_pyarrow(py, "RecordBatch", ffi_schema, ffi)
}

/// A record batch stream imported through the C stream interface whose buffers are copied
/// to aligned memory where the producer's are not (Arrow IPC readers, Spark's among them,
/// hand out buffers at any 8-byte offset; arrow-rs needs decimal128 values 16-byte aligned).
pub struct AlignedStreamReader {
    stream: FFI_ArrowArrayStream,
    schema: SchemaRef,
}

// SAFETY: the C stream interface allows a stream to be consumed from any thread, one call at
// a time; `next` takes `&mut self`.
unsafe impl Send for AlignedStreamReader {}

impl AlignedStreamReader {
    /// Takes the stream out of `ptr` (its copy is marked released).
    ///
    /// # Safety
    /// `ptr` points to a valid, initialised `ArrowArrayStream`.
    unsafe fn from_raw(ptr: *mut FFI_ArrowArrayStream) -> Result<Self, ArrowError> {
        // SAFETY: valid per the caller; replace moves it out and leaves a released one.
        let mut stream = unsafe { std::ptr::replace(ptr, FFI_ArrowArrayStream::empty()) };
        let get_schema = stream
            .get_schema
            .ok_or_else(|| ArrowError::CDataInterface("stream without get_schema".into()))?;
        let mut ffi_schema = FFI_ArrowSchema::empty();
        // SAFETY: the stream is live and owned here.
        let code = unsafe { get_schema(&mut stream, &mut ffi_schema) };
        if code != 0 {
            return Err(ArrowError::CDataInterface(last_error(&mut stream)));
        }
        let schema = Arc::new(Schema::try_from(&ffi_schema)?);
        Ok(Self { stream, schema })
    }
}

fn last_error(stream: &mut FFI_ArrowArrayStream) -> String {
    let Some(f) = stream.get_last_error else {
        return "stream error".into();
    };
    // SAFETY: the stream is live; the returned string (if any) lives until the next call.
    let ptr = unsafe { f(stream) };
    if ptr.is_null() {
        return "stream error".into();
    }
    // SAFETY: a NUL-terminated string per the C stream interface.
    unsafe { CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned()
}

impl Iterator for AlignedStreamReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let get_next = self.stream.get_next?;
        let mut array = FFI_ArrowArray::empty();
        // SAFETY: the stream is live and owned here.
        let code = unsafe { get_next(&mut self.stream, &mut array) };
        if code != 0 {
            return Some(Err(ArrowError::CDataInterface(last_error(
                &mut self.stream,
            ))));
        }
        if array.is_released() {
            return None;
        }
        // SAFETY: an array produced by the stream, of the stream's (struct) type.
        let data = unsafe {
            from_ffi_and_data_type(array, DataType::Struct(self.schema.fields().clone()))
        };
        Some(data.and_then(|mut data| {
            data.align_buffers();
            let len = data.len();
            RecordBatch::try_new_with_options(
                Arc::clone(&self.schema),
                StructArray::from(data).into_parts().1,
                &RecordBatchOptions::new().with_row_count(Some(len)),
            )
        }))
    }
}

/// Imports a stream of record batches from an object implementing `__arrow_c_stream__`.
pub fn import_stream(obj: &Bound<'_, PyAny>) -> PyResult<AlignedStreamReader> {
    if !obj.hasattr("__arrow_c_stream__")? {
        return Err(invalid_arg(format!(
            "expected Arrow data (a table, record batch reader or any object with \
             __arrow_c_stream__), got {}",
            obj.get_type().name()?
        )));
    }
    let cap = obj.call_method0("__arrow_c_stream__")?;
    let ptr = capsule_ptr::<FFI_ArrowArrayStream>(&cap, STREAM_NAME)?;
    // SAFETY: a valid stream per the PyCapsule protocol; `from_raw` moves it out and marks
    // the capsule's copy released.
    unsafe { AlignedStreamReader::from_raw(ptr) }.map_err(arrow_err)
}

/// Exports a schema to a `pyarrow.Schema` (metadata kept).
pub fn export_schema<'py>(py: Python<'py>, schema: &Schema) -> PyResult<Bound<'py, PyAny>> {
    let ffi = FFI_ArrowSchema::try_from(schema).map_err(arrow_err)?;
    let cap = PyCapsule::new_with_value(py, ffi, SCHEMA_NAME)?;
    py.import("pyarrow")?
        .getattr("Schema")?
        .call_method1("_import_from_c_capsule", (cap,))
}

/// Where a Python exception raised while the core consumes an input is kept (the core's
/// error type cannot carry it) until [`BatchInput::finish`] re-raises it.
pub type ErrorSlot = Arc<std::sync::Mutex<Option<PyErr>>>;

/// The rows of a write: an Arrow C stream (tables and other stream producers, whose batches
/// all have the stream's schema), or a Python iterator of record batches, each imported with
/// its own schema so that a batch whose types differ from the first is aligned to the
/// namespace on its own instead of being read with the first batch's layout. Before every
/// batch it checks for pending signals, so Ctrl-C stops a long write (nothing is committed).
pub struct BatchInput {
    source: Source,
    error: ErrorSlot,
}

enum Source {
    /// A C stream.
    Stream(AlignedStreamReader),
    /// A Python iterator.
    Python(Py<PyAny>),
}

impl BatchInput {
    /// Imports `obj`: an object with `__arrow_c_stream__`, or an iterator of record batches.
    pub fn import(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        let source = if obj.hasattr("__arrow_c_stream__")? {
            Source::Stream(import_stream(obj)?)
        } else if obj.hasattr("__next__")? {
            Source::Python(obj.clone().unbind())
        } else {
            return Err(invalid_arg(format!(
                "expected Arrow data (a table, record batch reader or any object with \
                 __arrow_c_stream__) or an iterator of record batches, got {}",
                obj.get_type().name()?
            )));
        };
        Ok(Self {
            source,
            error: Arc::new(std::sync::Mutex::new(None)),
        })
    }

    /// The result of a call that consumed this input: the Python exception raised while
    /// reading it (by the iterator, or a signal such as KeyboardInterrupt), if any, wins over
    /// the error it caused.
    pub fn finish<T>(error: &ErrorSlot, r: PyResult<T>) -> PyResult<T> {
        if let Some(e) = error.lock().unwrap_or_else(|e| e.into_inner()).take() {
            return Err(e);
        }
        r
    }

    /// The declared schema of a C stream (an iterator of batches declares none).
    pub fn schema(&self) -> Option<SchemaRef> {
        match &self.source {
            Source::Stream(s) => Some(Arc::clone(&s.schema)),
            Source::Python(_) => None,
        }
    }

    /// Where a Python exception raised while reading is kept.
    pub fn error_slot(&self) -> ErrorSlot {
        Arc::clone(&self.error)
    }

    fn fail(&self, e: PyErr, what: &str) -> lance_partitioned_core::Error {
        *self.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
        lance_partitioned_core::Error::InvalidArgument(what.into())
    }
}

impl Iterator for BatchInput {
    type Item = lance_partitioned_core::Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Err(e) = Python::attach(|py| py.check_signals()) {
            return Some(Err(self.fail(e, "interrupted")));
        }
        let iter = match &mut self.source {
            Source::Stream(s) => {
                return s
                    .next()
                    .map(|r| r.map_err(lance_partitioned_core::Error::from))
            }
            Source::Python(iter) => Python::attach(|py| iter.clone_ref(py)),
        };
        Python::attach(|py| {
            let got = match iter.bind(py).call_method0("__next__") {
                Ok(b) => b,
                Err(e) if e.is_instance_of::<pyo3::exceptions::PyStopIteration>(py) => return None,
                Err(e) => return Some(Err(self.fail(e, "the input iterator raised an exception"))),
            };
            match import_batch(&got) {
                Ok(b) => Some(Ok(b)),
                Err(e) => Some(Err(self.fail(
                    e,
                    "the input iterator yielded something that is not a record batch",
                ))),
            }
        })
    }
}
