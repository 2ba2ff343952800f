//! The Python exception hierarchy, created here and re-exported by
//! `lance_partitioned.exceptions`, and the guard that keeps panics from crossing the FFI
//! boundary.
//!
//! Every class derives from `LancePartitionedError` and, where one fits, from the matching
//! builtin (`InvalidArgumentError` is a `ValueError`, `NamespaceNotFoundError` a
//! `FileNotFoundError`, ...), so code written against the builtins keeps working. The classes
//! are made with `type(name, bases, namespace)` at import time because a Rust-declared
//! exception can have only one base.

use std::panic::{catch_unwind, AssertUnwindSafe};

use lance_partitioned_core::arrow::error::ArrowError as CoreArrowError;
use lance_partitioned_core::Error;
use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

/// The exception classes, in creation order (a parent before its children).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Base,
    Spec,
    Expression,
    UnsupportedType,
    InvalidArgument,
    Arrow,
    Internal,
    SchemaMismatch,
    NamespaceNotFound,
    NamespaceExists,
    CorruptNamespace,
    CommitConflict,
    PartialCommit,
    Storage,
    Lance,
    IncompatibleJoin,
    DuplicateKey,
    IncompatibleFormat,
}

const KINDS: [Kind; 18] = [
    Kind::Base,
    Kind::Spec,
    Kind::Expression,
    Kind::UnsupportedType,
    Kind::InvalidArgument,
    Kind::Arrow,
    Kind::Internal,
    Kind::SchemaMismatch,
    Kind::NamespaceNotFound,
    Kind::NamespaceExists,
    Kind::CorruptNamespace,
    Kind::CommitConflict,
    Kind::PartialCommit,
    Kind::Storage,
    Kind::Lance,
    Kind::IncompatibleJoin,
    Kind::DuplicateKey,
    Kind::IncompatibleFormat,
];

/// Class name, builtin base (besides `LancePartitionedError`) and docstring of each class,
/// in the order of [`KINDS`].
const INFO: [(&str, Option<&str>, &str); 18] = [
    // Kind::Base
    (
        "LancePartitionedError",
        None,
        "Base class of every error raised by lance_partitioned.",
    ),
    // Kind::Spec
    (
        "SpecError",
        Some("ValueError"),
        "A partition spec or schema is malformed or inconsistent.",
    ),
    // Kind::Expression
    (
        "ExpressionError",
        Some("ValueError"),
        "An expression (partition expression or filter) is malformed, unbound, of the \
         wrong type, or not deterministic and stateless.",
    ),
    // Kind::UnsupportedType
    (
        "UnsupportedTypeError",
        Some("TypeError"),
        "A kernel was given an Arrow type it does not support.",
    ),
    // Kind::InvalidArgument
    (
        "InvalidArgumentError",
        Some("ValueError"),
        "An argument is out of range or inconsistent (n <= 0, width <= 0, length \
         mismatch, wrong type, ...).",
    ),
    // Kind::Arrow
    (
        "ArrowError",
        None,
        "Arrow reported an error (for example a failed cast or a malformed array).",
    ),
    // Kind::Internal
    (
        "InternalError",
        Some("RuntimeError"),
        "A bug in lance_partitioned (including a caught Rust panic). Please report it.",
    ),
    // Kind::SchemaMismatch
    (
        "SchemaMismatchError",
        Some("ValueError"),
        "Input data does not fit the namespace schema.",
    ),
    // Kind::NamespaceNotFound
    (
        "NamespaceNotFoundError",
        Some("FileNotFoundError"),
        "There is no partitioned namespace (or no such object or version) at the given \
         location.",
    ),
    // Kind::NamespaceExists
    (
        "NamespaceExistsError",
        Some("FileExistsError"),
        "A namespace already exists where one is being created.",
    ),
    // Kind::CorruptNamespace
    (
        "CorruptNamespaceError",
        None,
        "The namespace's stored metadata is malformed or inconsistent; see repair().",
    ),
    // Kind::CommitConflict
    (
        "CommitConflictError",
        None,
        "A concurrent commit made this commit impossible (nothing of it became \
         visible).",
    ),
    // Kind::PartialCommit
    (
        "PartialCommitError",
        None,
        "A weak-mode write failed after some of its partitions were committed; those \
         partitions are visible and the message names them.",
    ),
    // Kind::Storage
    (
        "StorageError",
        Some("OSError"),
        "The object store cannot be reached or refused a request (missing bucket, wrong \
         credentials, unreachable endpoint), or cannot commit safely. The message names \
         the URI, never an option value.",
    ),
    // Kind::Lance
    (
        "LanceError",
        None,
        "The lance storage layer reported an error (I/O, format, commit).",
    ),
    // Kind::IncompatibleJoin
    (
        "IncompatibleJoinError",
        Some("ValueError"),
        "The partitions of two namespaces do not align on the join keys, so they cannot \
         be joined partition by partition (the message says why; allow_shuffle=True \
         joins them anyway).",
    ),
    // Kind::DuplicateKey
    (
        "DuplicateKeyError",
        Some("ValueError"),
        "A merge's source has two rows with one key (the message names the key); \
         apply_changes keeps the last change per key instead.",
    ),
    // Kind::IncompatibleFormat
    (
        "IncompatibleFormatError",
        None,
        "The namespace was written in a format this version does not understand (feature \
         flags of a newer format, partitions pinned to Lance tags or branches); it is \
         refused rather than misread or damaged: upgrade lance-partitioned.",
    ),
];

impl Kind {
    /// Class name, builtin base (besides `LancePartitionedError`) and docstring.
    fn describe(self) -> (&'static str, Option<&'static str>, &'static str) {
        INFO[KINDS.iter().position(|k| *k == self).unwrap_or(0)]
    }
}

static CLASSES: PyOnceLock<Vec<Py<PyType>>> = PyOnceLock::new();

fn create_classes(py: Python<'_>) -> PyResult<Vec<Py<PyType>>> {
    let builtins = py.import("builtins")?;
    let type_ = builtins.getattr("type")?;
    let mut out: Vec<Py<PyType>> = Vec::with_capacity(KINDS.len());
    for kind in KINDS {
        let (name, builtin, doc) = kind.describe();
        let mut bases: Vec<Bound<'_, PyAny>> = Vec::new();
        match out.first() {
            Some(base) => bases.push(base.bind(py).clone().into_any()),
            None => bases.push(builtins.getattr("Exception")?),
        }
        if let Some(b) = builtin {
            bases.push(builtins.getattr(b)?);
        }
        let ns = PyDict::new(py);
        ns.set_item("__doc__", doc)?;
        ns.set_item("__module__", "lance_partitioned.exceptions")?;
        let cls = type_.call1((name, PyTuple::new(py, bases)?, ns))?;
        out.push(cls.cast_into::<PyType>()?.unbind());
    }
    Ok(out)
}

fn class(py: Python<'_>, kind: Kind) -> PyResult<Bound<'_, PyType>> {
    let classes = CLASSES.get_or_try_init(py, || create_classes(py))?;
    let i = KINDS.iter().position(|k| *k == kind).unwrap_or(0);
    Ok(classes[i].bind(py).clone())
}

/// A Python exception of `kind` with `msg`.
pub fn new_err(kind: Kind, msg: impl Into<String>) -> PyErr {
    let msg = msg.into();
    Python::attach(|py| match class(py, kind) {
        Ok(cls) => PyErr::from_type(cls, (msg,)),
        Err(e) => e,
    })
}

/// Converts a core error into the matching Python exception.
pub fn to_py(e: Error) -> PyErr {
    let msg = lance_partitioned_core::error::user_message(&e.to_string());
    if let Error::Interrupted(_) = e {
        return interrupted(crate::runtime::take_interrupt().map(|i| i.error), &msg);
    }
    let kind = match e {
        Error::Spec(_) => Kind::Spec,
        Error::Expression(_) | Error::DataFusion(_) => Kind::Expression,
        Error::UnsupportedType(_) => Kind::UnsupportedType,
        Error::InvalidArgument(_) => Kind::InvalidArgument,
        Error::Arrow(_) => Kind::Arrow,
        Error::Internal(_) | Error::Interrupted(_) => Kind::Internal,
        Error::SchemaMismatch(_) => Kind::SchemaMismatch,
        Error::NotFound(_) => Kind::NamespaceNotFound,
        Error::AlreadyExists(_) => Kind::NamespaceExists,
        Error::Corrupt(_) => Kind::CorruptNamespace,
        Error::CommitConflict(_) => Kind::CommitConflict,
        Error::PartialCommit(_) => Kind::PartialCommit,
        Error::Storage(_) => Kind::Storage,
        // A lost race that reached the caller (retries ran out, or a path without them).
        Error::Lance(ref l) if lance_partitioned_core::error::lost_race(l) => Kind::CommitConflict,
        Error::Lance(_) => Kind::Lance,
        Error::IncompatibleJoin(_) => Kind::IncompatibleJoin,
        Error::DuplicateKey(_) => Kind::DuplicateKey,
        Error::IncompatibleFormat(_) => Kind::IncompatibleFormat,
    };
    new_err(kind, msg)
}

/// An `InvalidArgumentError`.
pub fn invalid_arg(msg: impl Into<String>) -> PyErr {
    new_err(Kind::InvalidArgument, msg)
}

/// An `ArrowError`.
pub fn arrow_err(e: CoreArrowError) -> PyErr {
    new_err(
        Kind::Arrow,
        lance_partitioned_core::error::user_message(&e.to_string()),
    )
}

/// The exception of an interrupt: a signal handler's `KeyboardInterrupt` is raised again with
/// `msg` (what became of the operation); another handler's exception as it was raised.
fn interrupted(error: Option<PyErr>, msg: &str) -> PyErr {
    Python::attach(|py| match error {
        Some(e) if !e.is_instance_of::<PyKeyboardInterrupt>(py) => e,
        _ => PyKeyboardInterrupt::new_err(msg.to_string()),
    })
}

/// Runs `f` without the GIL, turning a core error into its Python exception and a panic into
/// `InternalError`. An interrupt that came after the operation's commit point is raised once
/// the operation has ended, saying how it ended.
pub fn run<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> lance_partitioned_core::Result<T> + Send,
) -> PyResult<T> {
    let out = py.detach(|| catch_unwind(AssertUnwindSafe(f)));
    if let Some(i) = crate::runtime::take_interrupt() {
        let how = match (&out, i.after_commit) {
            (_, false) => {
                "interrupted before the operation committed; nothing of it is visible".to_string()
            }
            (Ok(Ok(_)), true) => "interrupted while the operation was committing; it \
                                  committed and its changes are visible"
                .to_string(),
            (Ok(Err(e)), true) => format!(
                "interrupted while the operation was committing; it then failed: {}",
                lance_partitioned_core::error::user_message(&e.to_string())
            ),
            (Err(_), true) => "interrupted while the operation was committing; it then \
                               failed with a Rust panic"
                .to_string(),
        };
        return Err(interrupted(Some(i.error), &how));
    }
    match out {
        Ok(r) => r.map_err(to_py),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(new_err(Kind::Internal, format!("Rust panic: {what}")))
        }
    }
}

/// Registers the exception classes on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    for kind in KINDS {
        m.add(kind.describe().0, class(py, kind)?)?;
    }
    Ok(())
}
