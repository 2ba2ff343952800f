//! The Python exception hierarchy, created here and re-exported by
//! `lance_partitioned.exceptions`, and the guard that keeps panics from crossing the FFI
//! boundary.

use std::panic::{catch_unwind, AssertUnwindSafe};

use lance_partitioned_core::arrow::error::ArrowError as CoreArrowError;
use lance_partitioned_core::Error;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    lance_partitioned.exceptions,
    LancePartitionedError,
    PyException,
    "Base class of every error raised by lance_partitioned."
);
create_exception!(
    lance_partitioned.exceptions,
    SpecError,
    LancePartitionedError,
    "A partition spec or schema is malformed or inconsistent."
);
create_exception!(
    lance_partitioned.exceptions,
    ExpressionError,
    LancePartitionedError,
    "A partition expression is malformed, unbound, or not deterministic and stateless."
);
create_exception!(
    lance_partitioned.exceptions,
    UnsupportedTypeError,
    LancePartitionedError,
    "A kernel was given an Arrow type it does not support."
);
create_exception!(
    lance_partitioned.exceptions,
    InvalidArgumentError,
    LancePartitionedError,
    "An argument is out of range or inconsistent (n <= 0, width <= 0, length mismatch, ...)."
);
create_exception!(
    lance_partitioned.exceptions,
    ArrowError,
    LancePartitionedError,
    "Arrow reported an error (for example a failed cast or a malformed array)."
);
create_exception!(
    lance_partitioned.exceptions,
    InternalError,
    LancePartitionedError,
    "A bug in lance_partitioned (including a caught Rust panic). Please report it."
);

create_exception!(
    lance_partitioned.exceptions,
    SchemaMismatchError,
    LancePartitionedError,
    "Input data does not fit the namespace schema."
);
create_exception!(
    lance_partitioned.exceptions,
    NamespaceNotFoundError,
    LancePartitionedError,
    "There is no partitioned namespace (or no such object) at the given location."
);
create_exception!(
    lance_partitioned.exceptions,
    NamespaceExistsError,
    LancePartitionedError,
    "A namespace already exists where one is being created."
);
create_exception!(
    lance_partitioned.exceptions,
    CorruptNamespaceError,
    LancePartitionedError,
    "The namespace's stored metadata is malformed or inconsistent; see repair()."
);
create_exception!(
    lance_partitioned.exceptions,
    CommitConflictError,
    LancePartitionedError,
    "A concurrent commit made this commit impossible (nothing of it became visible)."
);
create_exception!(
    lance_partitioned.exceptions,
    LanceError,
    LancePartitionedError,
    "The lance storage layer reported an error (I/O, format, commit)."
);

/// Converts a core error into the matching Python exception.
pub fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::Spec(_) => SpecError::new_err(msg),
        Error::Expression(_) => ExpressionError::new_err(msg),
        Error::UnsupportedType(_) => UnsupportedTypeError::new_err(msg),
        Error::InvalidArgument(_) => InvalidArgumentError::new_err(msg),
        Error::Arrow(_) => ArrowError::new_err(msg),
        Error::DataFusion(_) => ExpressionError::new_err(msg),
        Error::Internal(_) => InternalError::new_err(msg),
        Error::SchemaMismatch(_) => SchemaMismatchError::new_err(msg),
        Error::NotFound(_) => NamespaceNotFoundError::new_err(msg),
        Error::AlreadyExists(_) => NamespaceExistsError::new_err(msg),
        Error::Corrupt(_) => CorruptNamespaceError::new_err(msg),
        Error::CommitConflict(_) => CommitConflictError::new_err(msg),
        Error::Lance(_) => LanceError::new_err(msg),
    }
}

/// An `InvalidArgumentError`.
pub fn invalid_arg(msg: impl Into<String>) -> PyErr {
    InvalidArgumentError::new_err(msg.into())
}

/// An `ArrowError`.
pub fn arrow_err(e: CoreArrowError) -> PyErr {
    ArrowError::new_err(e.to_string())
}

/// Runs `f` without the GIL, turning a core error into its Python exception and a panic into
/// `InternalError`.
pub fn run<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> lance_partitioned_core::Result<T> + Send,
) -> PyResult<T> {
    let out = py.detach(|| catch_unwind(AssertUnwindSafe(f)));
    match out {
        Ok(r) => r.map_err(to_py),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(InternalError::new_err(format!("Rust panic: {what}")))
        }
    }
}

/// Registers the exception classes on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add(
        "LancePartitionedError",
        py.get_type::<LancePartitionedError>(),
    )?;
    m.add("SpecError", py.get_type::<SpecError>())?;
    m.add("ExpressionError", py.get_type::<ExpressionError>())?;
    m.add(
        "UnsupportedTypeError",
        py.get_type::<UnsupportedTypeError>(),
    )?;
    m.add(
        "InvalidArgumentError",
        py.get_type::<InvalidArgumentError>(),
    )?;
    m.add("ArrowError", py.get_type::<ArrowError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    m.add("SchemaMismatchError", py.get_type::<SchemaMismatchError>())?;
    m.add(
        "NamespaceNotFoundError",
        py.get_type::<NamespaceNotFoundError>(),
    )?;
    m.add(
        "NamespaceExistsError",
        py.get_type::<NamespaceExistsError>(),
    )?;
    m.add(
        "CorruptNamespaceError",
        py.get_type::<CorruptNamespaceError>(),
    )?;
    m.add("CommitConflictError", py.get_type::<CommitConflictError>())?;
    m.add("LanceError", py.get_type::<LanceError>())?;
    Ok(())
}
