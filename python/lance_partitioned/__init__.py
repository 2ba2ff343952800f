"""lance_partitioned: the Lance Partitioned Namespace format, Rust-accelerated.

Partition specs and namespace schemas are in :mod:`lance_partitioned.spec` (re-exported here);
the kernels that compute partition values (hashing, transforms, expressions) and route rows to
partitions are in :mod:`lance_partitioned.kernels`; errors are in
:mod:`lance_partitioned.exceptions`.
"""

from lance_partitioned import (
    exceptions,
    hive,
    joins,
    kernels,
    lineage,
    namespace,
    options,
    spec,
    values,
)
from lance_partitioned._native import __version__
from lance_partitioned.distributed import DistributedWrite
from lance_partitioned.exceptions import (
    ArrowError,
    CommitConflictError,
    CorruptNamespaceError,
    ExpressionError,
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
from lance_partitioned.joins import JoinGroup, JoinPlan, join, join_plan
from lance_partitioned.namespace import (
    CleanupResult,
    DeleteResult,
    ExportResult,
    PartitionedNamespace,
    Snapshot,
    WriteResult,
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
    "CleanupResult",
    "CommitConflictError",
    "CorruptNamespaceError",
    "Day",
    "DeleteResult",
    "DistributedWrite",
    "ExportResult",
    "ExpressionError",
    "Hour",
    "Identity",
    "IncompatibleJoinError",
    "InternalError",
    "InvalidArgumentError",
    "JoinGroup",
    "JoinPlan",
    "LanceError",
    "LancePartitionedError",
    "Month",
    "MultiBucket",
    "NamespaceExistsError",
    "NamespaceNotFoundError",
    "PartialCommitError",
    "PartitionField",
    "PartitionSpec",
    "PartitionedNamespace",
    "SchemaMismatchError",
    "Snapshot",
    "SpecError",
    "StorageError",
    "Transform",
    "Truncate",
    "UnsupportedTypeError",
    "WriteResult",
    "Year",
    "__version__",
    "assign_field_ids",
    "exceptions",
    "hive",
    "join",
    "join_plan",
    "joins",
    "kernels",
    "lineage",
    "namespace",
    "options",
    "spec",
    "values",
]
