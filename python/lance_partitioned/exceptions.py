"""The exception hierarchy of lance_partitioned.

Every error raised by the package derives from :class:`LancePartitionedError`. The classes are
created in Rust (``lance_partitioned._native``) so that errors raised deep inside the kernels
arrive with their own type; this module re-exports them.

- :class:`SpecError`: a partition spec or schema is malformed or inconsistent.
- :class:`ExpressionError`: a partition expression is malformed, refers to unbound columns, or
  is not deterministic and stateless.
- :class:`UnsupportedTypeError`: a kernel was given an Arrow type it does not support.
- :class:`InvalidArgumentError`: an argument is out of range or inconsistent.
- :class:`ArrowError`: Arrow reported an error (a failed cast, a malformed array).
- :class:`InternalError`: a bug (including a caught Rust panic).
"""

from lance_partitioned._native import (
    ArrowError,
    ExpressionError,
    InternalError,
    InvalidArgumentError,
    LancePartitionedError,
    SpecError,
    UnsupportedTypeError,
)

__all__ = [
    "ArrowError",
    "ExpressionError",
    "InternalError",
    "InvalidArgumentError",
    "LancePartitionedError",
    "SpecError",
    "UnsupportedTypeError",
]
