//! The error type of the core crate.
//!
//! Every fallible function in this crate returns [`Result`]. The variants map one to one onto
//! the Python exception hierarchy (`lance_partitioned.exceptions`), so the binding crate can
//! translate without inspecting messages.

use crate::arrow::error::ArrowError;
use crate::datafusion::error::DataFusionError;

/// Errors raised by the kernels, the spec model and the expression engine.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A partition spec or schema is malformed or inconsistent (unknown transform, missing
    /// source field, result_type mismatch, ...).
    #[error("{0}")]
    Spec(String),
    /// A partition expression cannot be parsed, refers to unknown columns, or uses a feature
    /// that partition expressions must not use (volatile functions, subqueries, aggregates).
    #[error("{0}")]
    Expression(String),
    /// A kernel was given an Arrow type it does not support.
    #[error("{0}")]
    UnsupportedType(String),
    /// An argument is out of range or inconsistent (n <= 0, width <= 0, length mismatch).
    #[error("{0}")]
    InvalidArgument(String),
    /// An error reported by arrow-rs.
    #[error("arrow error: {0}")]
    Arrow(#[from] ArrowError),
    /// An error reported by DataFusion while evaluating an expression.
    #[error("datafusion error: {0}")]
    DataFusion(Box<DataFusionError>),
    /// An invariant of this crate was violated; always a bug.
    #[error("internal error: {0}")]
    Internal(String),
    /// Input data does not fit the namespace schema (unknown column, missing non-nullable
    /// column, lossy cast, NULL in a non-nullable column).
    #[error("{0}")]
    SchemaMismatch(String),
    /// No partitioned namespace (or no such object) at the given location.
    #[error("{0}")]
    NotFound(String),
    /// A namespace already exists where one is being created.
    #[error("{0}")]
    AlreadyExists(String),
    /// The namespace's stored metadata is malformed or inconsistent (bad JSON, missing
    /// manifest columns, dangling rows).
    #[error("{0}")]
    Corrupt(String),
    /// A concurrent commit changed what this commit depends on (overwrite against a
    /// concurrent write, or retries exhausted).
    #[error("{0}")]
    CommitConflict(String),
    /// A weak-mode write failed after some of its partitions were committed: those are
    /// visible (weak mode commits leaves directly); the message names them.
    #[error("{0}")]
    PartialCommit(String),
    /// The object store cannot be reached or refused a request (missing bucket, wrong
    /// credentials, unreachable endpoint), or cannot commit safely (no conditional writes).
    /// The message names the URI, never an option value.
    #[error("{0}")]
    Storage(String),
    /// Two namespaces' partitions do not align on the join keys, so a storage-partitioned join
    /// is impossible (the message says why).
    #[error("{0}")]
    IncompatibleJoin(String),
    /// A merge's source has two rows with one key (the message names the key).
    #[error("{0}")]
    DuplicateKey(String),
    /// The caller interrupted the operation before it committed (see
    /// [`crate::ns::txn::interrupt`]); nothing of it is visible.
    #[error("{0}")]
    Interrupted(String),
    /// The namespace was written in a format this version does not understand (feature
    /// flags of a newer format, partitions pinned to Lance tags or branches): refused rather
    /// than misread or damaged.
    #[error("{0}")]
    IncompatibleFormat(String),
    /// An error reported by the lance crate (I/O, format, commit).
    #[error("lance error: {0}")]
    Lance(Box<lance::Error>),
}

impl From<lance::Error> for Error {
    fn from(e: lance::Error) -> Self {
        Error::Lance(Box::new(e))
    }
}

impl From<DataFusionError> for Error {
    fn from(e: DataFusionError) -> Self {
        Error::DataFusion(Box::new(e))
    }
}

/// Whether a Lance commit failed because another commit landed first: the commit may be
/// planned again on the new latest version (an incompatible transaction included: the new
/// plan re-checks what the concurrent commit changed). Surfaced to users as `CommitConflict`.
pub fn lost_race(e: &lance::Error) -> bool {
    matches!(
        e,
        lance::Error::RetryableCommitConflict { .. }
            | lance::Error::CommitConflict { .. }
            | lance::Error::IncompatibleTransaction { .. }
            | lance::Error::TooMuchWriteContention { .. }
    )
}

/// Whether a Lance error says a file or version does not exist (for a read of an old manifest
/// version: `expire()` removed it, possibly while the read ran).
pub fn is_not_found(e: &lance::Error) -> bool {
    match e {
        lance::Error::NotFound { .. }
        | lance::Error::DatasetNotFound { .. }
        | lance::Error::VersionNotFound { .. } => true,
        lance::Error::IO { source, .. } | lance::Error::Wrapped { error: source, .. }
            if source
                .downcast_ref::<object_store::Error>()
                .is_some_and(|o| matches!(o, object_store::Error::NotFound { .. })) =>
        {
            true
        }
        // Errors of the object store reach us wrapped in several layers (I/O, DataFusion
        // execution, stream errors) that keep only its text.
        other => other.to_string().contains("Not found: "),
    }
}

/// `e`, or `NotFound` naming `what` when `e` says a file or version it needed is gone.
pub fn gone(e: Error, what: impl FnOnce() -> String) -> Error {
    match e {
        Error::Lance(l) if is_not_found(&l) => {
            Error::NotFound(format!("{}: {}", what(), user_message(&l.to_string())))
        }
        other => other,
    }
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Shorthand for `Err(Error::InvalidArgument(format!(...)))`.
macro_rules! invalid_arg {
    ($($arg:tt)*) => { Err($crate::error::Error::InvalidArgument(format!($($arg)*))) };
}
/// Shorthand for `Err(Error::UnsupportedType(format!(...)))`.
macro_rules! unsupported {
    ($($arg:tt)*) => { Err($crate::error::Error::UnsupportedType(format!($($arg)*))) };
}
/// Shorthand for `Err(Error::Spec(format!(...)))`.
macro_rules! spec_err {
    ($($arg:tt)*) => { Err($crate::error::Error::Spec(format!($($arg)*))) };
}
/// Shorthand for `Err(Error::Expression(format!(...)))`.
macro_rules! expr_err {
    ($($arg:tt)*) => { Err($crate::error::Error::Expression(format!($($arg)*))) };
}
/// Shorthand for `Err(Error::SchemaMismatch(format!(...)))`.
macro_rules! schema_err {
    ($($arg:tt)*) => { Err($crate::error::Error::SchemaMismatch(format!($($arg)*))) };
}
/// Shorthand for `Err(Error::Corrupt(format!(...)))`.
macro_rules! corrupt {
    ($($arg:tt)*) => { Err($crate::error::Error::Corrupt(format!($($arg)*))) };
}
pub(crate) use {corrupt, expr_err, invalid_arg, schema_err, spec_err, unsupported};

/// Removes what only helps a Rust developer from an error message: the source locations the
/// lance crate appends (`, /home/.../filtered_read.rs:1666:33`), keeping the cause.
pub fn user_message(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut rest = msg;
    while let Some(pos) = rest.find(".rs:") {
        // The location starts after the last separator before ".rs:".
        let head = &rest[..pos];
        let start = head
            .rfind(|c: char| c.is_whitespace() || c == '(' || c == '[' || c == ',')
            .map(|i| i + 1)
            .unwrap_or(0);
        let tail = &rest[pos + 4..];
        let digits = tail
            .find(|c: char| !(c.is_ascii_digit() || c == ':'))
            .unwrap_or(tail.len());
        let looks_like_path = head[start..].contains('/') || head[start..].contains('\\');
        if digits == 0 || !looks_like_path {
            out.push_str(&rest[..pos + 4]);
            rest = tail;
            continue;
        }
        let mut kept = rest[..start].trim_end();
        for sep in [",", " at"] {
            kept = kept.strip_suffix(sep).unwrap_or(kept).trim_end();
        }
        out.push_str(kept);
        rest = &tail[digits..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::user_message;

    #[test]
    fn strips_rust_source_locations() {
        let m = "lance error: Invalid user input: Duplicate column name: a, \
                 /root/.cargo/registry/src/index.crates.io-1/lance-14.0.2/src/dataset/scanner.rs:1666:33";
        assert_eq!(
            user_message(m),
            "lance error: Invalid user input: Duplicate column name: a"
        );
        let m =
            "Not found: /data/x/dataset/_versions/3.manifest, /src/lance-io/src/local.rs:99:5, \
                 more";
        assert_eq!(
            user_message(m),
            "Not found: /data/x/dataset/_versions/3.manifest, more"
        );
        assert_eq!(user_message("file a.rs:12 stays"), "file a.rs:12 stays");
        assert_eq!(user_message("no location"), "no location");
    }
}
