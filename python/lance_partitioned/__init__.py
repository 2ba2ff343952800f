"""lance_partitioned: the Lance Partitioned Namespace format, Rust-accelerated.

The kernels that compute partition values (hashing, transforms, expressions) and route rows to
partitions are in :mod:`lance_partitioned.kernels`; errors are in
:mod:`lance_partitioned.exceptions`.
"""

from lance_partitioned import exceptions, kernels
from lance_partitioned._native import __version__
from lance_partitioned.exceptions import (
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
    "__version__",
    "exceptions",
    "kernels",
]
