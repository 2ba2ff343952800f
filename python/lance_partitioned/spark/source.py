"""The ``lance-partitioned`` Spark data source (Python Data Source API, PySpark >= 4.1).

Imported only where PySpark is installed (:func:`lance_partitioned.spark.register`). Classes
live at module level so Spark workers import them by reference.
"""

from __future__ import annotations

import datetime
import json
import logging
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from lance_partitioned import _native
from lance_partitioned.distributed import DistributedWrite, TaskLimits, stage_task
from lance_partitioned.exceptions import InvalidArgumentError, NamespaceNotFoundError
from lance_partitioned.namespace import PartitionedNamespace
from lance_partitioned.options import (
    DEFAULT_MAX_NEW_PARTITIONS,
    SPARK_FORMAT,
    WriteMode,
    namespace_uri,
    storage_options_from,
    write_args,
)
from lance_partitioned.spark.stream import LancePartitionedStreamWriter
from lance_partitioned.spark.tasks import conform
from lance_partitioned.spark.tasks import snapshot as _snapshot
from lance_partitioned.spec import PartitionSpec

log = logging.getLogger("lance_partitioned.spark")


def spark_to_arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema a namespace created from a Spark schema gets: Spark's own Arrow
    mapping with timestamps in UTC, and plain (not large) string and binary types."""

    def plain(t: pa.DataType) -> pa.DataType:
        if pa.types.is_large_string(t) or pa.types.is_string_view(t):
            return pa.string()
        if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
            return pa.binary()
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return pa.list_(t.value_field.with_type(plain(t.value_type)))
        if pa.types.is_struct(t):
            return pa.struct([f.with_type(plain(f.type)) for f in t])
        if pa.types.is_map(t):
            mapped: pa.DataType = pa.map_(plain(t.key_type), plain(t.item_type))
            return mapped
        return t

    arrow = to_arrow_schema(schema, timezone="UTC")
    return pa.schema([f.with_type(plain(f.type)) for f in arrow])


def arrow_to_spark_schema(schema: pa.Schema) -> StructType:
    """The Spark schema of a namespace (field metadata dropped)."""
    return from_arrow_schema(pa.schema([f.remove_metadata() for f in schema]))


def ensure_namespace(
    root: str,
    spark_schema: StructType,
    spec: PartitionSpec | Mapping[str, Any] | None,
    properties: dict[str, str] | None = None,
    storage_options: dict[str, str] | None = None,
) -> PartitionedNamespace:
    """Opens the namespace at ``root``, creating it from ``spark_schema`` and ``spec`` if it
    does not exist (``spec`` is then required). Raises ``SchemaMismatchError`` for a Spark
    schema whose rows the namespace would refuse (see ``check_input_schema``)."""
    try:
        ns = PartitionedNamespace.open(root, storage_options=storage_options)
    except NamespaceNotFoundError:
        if spec is None:
            raise NamespaceNotFoundError(
                f"no partitioned namespace at {root!r}; pass a partition spec to create one"
            ) from None
    else:
        # On the driver, before any task: a column the namespace lacks, a missing required
        # one, a type that cannot be cast, or text for a typed column.
        _native.check_input_schema(spark_to_arrow_schema(spark_schema), ns.schema, True)
        return ns
    return PartitionedNamespace.create(
        root,
        spark_to_arrow_schema(spark_schema),
        spec,
        properties=properties,
        storage_options=storage_options,
    )


# -- write -------------------------------------------------------------------------------------


@dataclass
class StagedMessage(WriterCommitMessage):
    """One task's staged output (empty when the task saw no rows)."""

    payload: bytes
    rows: int


class LancePartitionedWriter(DataSourceArrowWriter):
    """Stages every task's rows; the commit (on the driver side) makes them visible at once."""

    def __init__(self, dw: DistributedWrite, limits: TaskLimits) -> None:
        self.dw = dw
        self.limits = limits

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedMessage:  # type: ignore[override]
        msg, rows = stage_task(self.dw, iterator, self.limits)
        return StagedMessage(payload=msg or b"", rows=rows)

    def commit(self, messages: list[StagedMessage | None]) -> None:  # type: ignore[override]
        payloads = [m.payload for m in messages if m is not None and m.payload]
        res = self.dw.commit(payloads)
        log.info("lance-partitioned: committed %s", res)

    def abort(self, messages: list[StagedMessage | None]) -> None:  # type: ignore[override]
        # Nothing was committed: staged fragments are invisible; cleanup() removes them.
        log.warning(
            "lance-partitioned: write to %s aborted; nothing committed (%d staged parts left "
            "for cleanup())",
            self.dw.root,
            sum(1 for m in messages if m is not None and m.payload),
        )


# -- read --------------------------------------------------------------------------------------


@dataclass
class LeafPartition(InputPartition):
    """One leaf table to read."""

    object_id: str


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(v: Any) -> str | None:
    """A SQL literal for a pushed filter value, or None when it cannot be written exactly
    (timestamps and decimals are left to Spark)."""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else None
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, datetime.datetime | Decimal):
        return None
    if isinstance(v, datetime.date):
        return f"DATE '{v.isoformat()}'"
    return None


def filter_to_sql(f: Filter, columns: set[str]) -> str | None:
    """The SQL of one pushed Spark filter, or None when it is not translated."""
    attr = getattr(f, "attribute", None)
    if attr is not None:
        if len(attr) != 1 or attr[0] not in columns:
            return None
        col = _quote_ident(attr[0])
    if isinstance(f, IsNull):
        return f"{col} IS NULL"
    if isinstance(f, IsNotNull):
        return f"{col} IS NOT NULL"
    if isinstance(f, EqualNullSafe):
        if f.value is None:
            return f"{col} IS NULL"
        lit = _literal(f.value)
        return None if lit is None else f"({col} IS NOT NULL AND {col} = {lit})"
    ops = {
        EqualTo: "=",
        GreaterThan: ">",
        GreaterThanOrEqual: ">=",
        LessThan: "<",
        LessThanOrEqual: "<=",
    }
    for cls, op in ops.items():
        if isinstance(f, cls):
            lit = _literal(f.value)  # type: ignore[attr-defined]
            return None if lit is None else f"{col} {op} {lit}"
    if isinstance(f, In):
        lits = [_literal(v) for v in f.value if v is not None]
        if not lits or any(x is None for x in lits):
            return None
        return f"{col} IN ({', '.join(x for x in lits if x is not None)})"
    if isinstance(f, Not):
        inner = filter_to_sql(f.child, columns)
        return None if inner is None else f"NOT ({inner})"
    return None


class LancePartitionedReader(DataSourceReader):
    """Prunes leaves through the manifest (pushed filters), one Spark partition per leaf, all
    leaves at the read versions of one manifest version."""

    def __init__(
        self,
        root: str,
        schema: StructType,
        version: int,
        sql: str | None,
        storage_options: dict[str, str] | None = None,
        emit_lineage: bool = True,
    ) -> None:
        self.root = root
        self.storage_options = storage_options
        self.emit_lineage = emit_lineage
        self.schema = schema
        self.version = version
        self.sql = sql
        self.pushed: list[str] = []

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        # Each planning pushes its own filters: none of an earlier query of the same reader.
        self.pushed = []
        columns = set(self.schema.fieldNames())
        for f in filters:
            sql = filter_to_sql(f, columns)
            if sql is not None:
                self.pushed.append(sql)
            # Spark keeps evaluating every filter: pushed ones only prune (and pre-filter).
            yield f

    def _filter(self) -> str | None:
        parts = [p for p in [self.sql, *self.pushed] if p]
        return " AND ".join(f"({p})" for p in parts) if parts else None

    def partitions(self) -> Sequence[InputPartition]:
        snap = _snapshot(self.root, self.version, self.storage_options)
        leaves = snap.partitions(self._filter(), False)[1]
        ids = leaves.column("object_id").to_pylist()
        log.info(
            "lance-partitioned: %d leaves to read at manifest version %d (filter: %s)",
            len(ids),
            self.version,
            self._filter(),
        )
        if self.emit_lineage:
            self._lineage(snap)
        return [LeafPartition(str(oid)) for oid in ids]

    def _lineage(self, native: _native.ManifestSnapshot) -> None:
        """One lineage run (START and COMPLETE) for the planned read, when lineage is on in
        this (driver-side) process."""
        from lance_partitioned.lineage.datasets import read as lineage_read
        from lance_partitioned.lineage.run import begin
        from lance_partitioned.snapshot import Snapshot

        run = begin("spark_read")
        if run is not None:
            sql, settings = self._filter(), run.settings
            run.complete(inputs=lambda: [lineage_read(Snapshot(native), sql, settings)])

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        oid = getattr(partition, "object_id", None)
        if oid is None:
            return
        target = to_arrow_schema(self.schema, timezone="UTC")
        snap = _snapshot(self.root, self.version, self.storage_options)
        for batch in snap.scan(self._filter(), None, None, [oid]):
            if batch.num_rows == 0:
                continue
            yield conform(batch, target)


# -- the source ----------------------------------------------------------------------------------


def _bool_option(options: dict[str, str], name: str) -> bool | None:
    v = options.get(name)
    if v is None:
        return None
    if v.lower() in ("true", "1", "yes"):
        return True
    if v.lower() in ("false", "0", "no"):
        return False
    raise InvalidArgumentError(f"option {name!r} must be true or false, not {v!r}")


class LancePartitionedDataSource(DataSource):
    """``df.write.format("lance-partitioned")`` and ``spark.read.format("lance-partitioned")``.

    Options: ``path`` (the namespace root, or ``save(uri)``/``load(uri)``); writes:
    ``spec`` (PartitionSpec JSON, to create the namespace), ``overwrite`` (``partitions``:
    dynamic partition overwrite, the default; ``all``: replace everything),
    ``transaction_mode`` (``strong``/``weak``), ``max_rows_per_file``, ``max_buffer_bytes``
    (per task; default 256 MiB), ``max_new_partitions`` (per task; default 1000, ``none``
    for no limit); reads: ``as_of``
    (manifest version), ``filter`` (SQL, pruned through the manifest).
    """

    @classmethod
    def name(cls) -> str:
        return SPARK_FORMAT

    def _root(self) -> str:
        root = self.options.get("path")
        if not root:
            raise InvalidArgumentError(
                "lance-partitioned needs a namespace root: save(uri) / load(uri)"
            )
        return namespace_uri(root)

    def _storage_options(self) -> dict[str, str] | None:
        """``storage_options`` (a JSON object) merged with single object-store options
        (``.option("aws_endpoint", ...)``); ``None`` when there are none."""
        return storage_options_from(self.options)

    def schema(self) -> StructType:
        ns = PartitionedNamespace.open(self._root(), storage_options=self._storage_options())
        return arrow_to_spark_schema(ns.schema)

    def writer(self, schema: StructType, overwrite: bool) -> LancePartitionedWriter:
        # Every option is checked before the namespace may be created.
        mode: WriteMode = "append"
        if overwrite:
            how = self.options.get("overwrite", "partitions")
            if how not in ("partitions", "all"):
                raise InvalidArgumentError(
                    f"option 'overwrite' must be 'partitions' or 'all', not {how!r}"
                )
            mode = "overwrite" if how == "partitions" else "overwrite_all"
        tm = self.options.get("transaction_mode")
        write_args(mode, tm)
        limits = self._limits()
        root = self._root()
        spec_json = self.options.get("spec")
        opts = self._storage_options()
        ensure_namespace(
            root, schema, json.loads(spec_json) if spec_json else None, storage_options=opts
        )
        dw = DistributedWrite(
            root,
            mode,
            transaction_mode=tm,  # type: ignore[arg-type]
            storage_options=opts,
            lineage_job=self.options.get("lineage_job"),
        )
        return LancePartitionedWriter(dw, limits)

    def streamWriter(self, schema: StructType, overwrite: bool) -> LancePartitionedStreamWriter:
        """The stream writer (``writeStream``): append, or ``complete`` output mode as
        ``overwrite_all``; every micro-batch commits once under its write id (see
        ``lance_partitioned.spark.stream``). Options as for writes, plus ``stream_id``
        (default: the query's id)."""
        mode: WriteMode = "overwrite_all" if overwrite else "append"
        tm = self.options.get("transaction_mode")
        if tm is not None and tm != "strong":
            raise InvalidArgumentError(
                "a stream commits each micro-batch exactly once, which needs strong mode, "
                f"not transaction_mode={tm!r}"
            )
        limits = self._limits()
        root = self._root()
        spec_json = self.options.get("spec")
        opts = self._storage_options()
        ns = ensure_namespace(
            root, schema, json.loads(spec_json) if spec_json else None, storage_options=opts
        )
        if not ns.distributed_write(mode).strong:
            raise InvalidArgumentError(
                f"the namespace at {root!r} commits in weak mode; a stream commits each "
                "micro-batch exactly once, which needs a namespace created in strong mode"
            )
        return LancePartitionedStreamWriter(
            root,
            mode,
            limits,
            opts,
            self.options.get("stream_id"),
            self.options.get("lineage_job"),
        )

    def _limits(self) -> TaskLimits:
        """The per-task limits the options set."""
        default = TaskLimits()
        return TaskLimits(
            max_rows_per_file=self._int_option("max_rows_per_file", default.max_rows_per_file),
            max_buffer_bytes=self._int_option("max_buffer_bytes", default.max_buffer_bytes),
            max_new_partitions=self._limit_option("max_new_partitions"),
        )

    def _int_option(self, name: str, default: int) -> int:
        """A positive integer option (typed error otherwise)."""
        text = self.options.get(name)
        if text is None:
            return default
        try:
            value = int(text)
        except ValueError:
            raise InvalidArgumentError(
                f"option {name!r} must be an integer, not {text!r}"
            ) from None
        if value < 1:
            raise InvalidArgumentError(f"option {name!r} must be positive, not {value}")
        return value

    def _limit_option(self, name: str) -> int | None:
        """A positive integer option, or ``none`` for no limit."""
        text = self.options.get(name)
        if text is not None and text.strip().lower() == "none":
            return None
        return self._int_option(name, DEFAULT_MAX_NEW_PARTITIONS)

    def reader(self, schema: StructType) -> LancePartitionedReader:
        root = self._root()
        opts = self._storage_options()
        ns = _native.Namespace(root, opts)
        if self.options.get("as_of") is not None:
            version = self._int_option("as_of", 0)
            ns.snapshot_as_of(version)  # typed errors on the driver
        else:
            version = ns.snapshot().version
        emit = self.options.get("lineage") != "driver"  # lps.read emits from the driver
        return LancePartitionedReader(
            root, schema, version, self.options.get("filter"), opts, emit_lineage=emit
        )


def spec_option(spec: PartitionSpec, schema: StructType) -> str:
    """``spec`` as the data source's ``spec`` option for a DataFrame with ``schema`` (the
    spec JSON, validated, with source field ids as the namespace created from that schema
    numbers them)."""
    from lance_partitioned.spec import assign_field_ids

    return spec.to_json(assign_field_ids(spark_to_arrow_schema(schema)))
