"""The exception hierarchy of lance_partitioned.

Every error raised by the package derives from :class:`LancePartitionedError`. The classes are
created in Rust (``lance_partitioned._native``) so that errors raised deep inside the kernels
arrive with their own type; this module re-exports them.

- :class:`SpecError`: a partition spec or schema is malformed or inconsistent.
- :class:`ExpressionError`: a partition expression is malformed, refers to unbound columns, or
  is not deterministic and stateless.
- :class:`UnsupportedTypeError`: a kernel was given an Arrow type it does not support.
- :class:`InvalidArgumentError`: an argument is out of range or inconsistent.
- :class:`ArgumentTypeError`: an argument has the wrong type (an ``InvalidArgumentError`` and
  a ``TypeError``).
- :class:`ArrowError`: Arrow reported an error (a failed cast, a malformed array).
- :class:`InternalError`: a bug (including a caught Rust panic).
- :class:`SchemaMismatchError`: input data does not fit the namespace schema.
- :class:`NamespaceNotFoundError`: no partitioned namespace (or object) at that location.
- :class:`NamespaceExistsError`: a namespace already exists where one is being created.
- :class:`CorruptNamespaceError`: stored metadata is malformed; see ``repair()``.
- :class:`CommitConflictError`: a concurrent commit made this one impossible; nothing of it
  became visible.
- :class:`PartialCommitError`: a weak-mode write failed after some of its partitions were
  committed; those are visible and the message names them (strong mode never does this).
- :class:`StorageError`: the object store cannot be reached or refused a request (missing
  bucket, wrong credentials, unreachable endpoint), or cannot commit safely; the message names
  the URI, never an option value.
- :class:`LanceError`: the Lance storage layer failed (I/O, format).
- :class:`IncompatibleJoinError`: two namespaces' partitions do not align on the join keys
  (``join(..., allow_shuffle=True)`` joins them without alignment).
- :class:`DuplicateKeyError`: a merge's source has two rows with one key (the message names
  it).
- :class:`IncompatibleFormatError`: the namespace was written in a format this version does
  not understand (newer manifest feature flags, partitions pinned to Lance tags or branches).

Warnings (not errors):

- :class:`PartitionGranularityWarning`: a spec partitions by ``month``, ``day`` or ``hour``
  of a column without the coarser fields of the same column, so values a year (or month, or
  day) apart share a partition.
"""

from lance_partitioned._native import (
    ArrowError,
    CommitConflictError,
    CorruptNamespaceError,
    DuplicateKeyError,
    ExpressionError,
    IncompatibleFormatError,
    IncompatibleJoinError,
    InternalError,
    InvalidArgumentError,
    LanceError,
    LancePartitionedError,
    NamespaceExistsError,
    NamespaceNotFoundError,
    PartialCommitError,
    SchemaMismatchError,
    SpecError,
    StorageError,
    UnsupportedTypeError,
)


class ArgumentTypeError(InvalidArgumentError, TypeError):
    """An argument has the wrong type (a string where a number is expected, ...)."""


class PartitionGranularityWarning(UserWarning):
    """A spec has a ``month``, ``day`` or ``hour`` field without the coarser fields of the same
    source: the spec's transforms are the month of the year, the day of the month and the hour
    of the day, so every March of every year (or every 5th of every month) is one partition."""


__all__ = [
    "ArgumentTypeError",
    "ArrowError",
    "CommitConflictError",
    "CorruptNamespaceError",
    "DuplicateKeyError",
    "ExpressionError",
    "IncompatibleFormatError",
    "IncompatibleJoinError",
    "InternalError",
    "InvalidArgumentError",
    "LanceError",
    "LancePartitionedError",
    "NamespaceExistsError",
    "NamespaceNotFoundError",
    "PartialCommitError",
    "PartitionGranularityWarning",
    "SchemaMismatchError",
    "SpecError",
    "StorageError",
    "UnsupportedTypeError",
]
