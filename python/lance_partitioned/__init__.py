"""lance_partitioned: the Lance Partitioned Namespace format, Rust-accelerated.

Partition specs and namespace schemas are in :mod:`lance_partitioned.spec` (re-exported here);
the kernels that compute partition values (hashing, transforms, expressions) and route rows to
partitions are in :mod:`lance_partitioned.kernels`; errors are in
:mod:`lance_partitioned.exceptions`.
"""

from lance_partitioned import exceptions, kernels, spec
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
from lance_partitioned.spec import (
    Bucket,
    Day,
    Hour,
    Identity,
    Month,
    MultiBucket,
    PartitionField,
    PartitionSpec,
    Transform,
    Truncate,
    Year,
    assign_field_ids,
)

__all__ = [
    "ArrowError",
    "Bucket",
    "Day",
    "ExpressionError",
    "Hour",
    "Identity",
    "InternalError",
    "InvalidArgumentError",
    "LancePartitionedError",
    "Month",
    "MultiBucket",
    "PartitionField",
    "PartitionSpec",
    "SpecError",
    "Transform",
    "Truncate",
    "UnsupportedTypeError",
    "Year",
    "__version__",
    "assign_field_ids",
    "exceptions",
    "kernels",
    "spec",
]
