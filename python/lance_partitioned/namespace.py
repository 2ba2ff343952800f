"""The partitioned namespace: a directory of Lance datasets, one per leaf partition, indexed by
a ``__manifest`` Lance table (the Lance Partitioned Namespace format).

::

    import pyarrow as pa
    import lance_partitioned as lp

    ns = lp.PartitionedNamespace.create("/data/events", schema=schema, spec=spec)
    ns.write(table)                                   # strong mode: atomic across partitions
    ns.write(more, mode="overwrite")                  # replaces exactly the partitions touched
    reader = ns.scan(filter="country = 'US' AND event_date >= DATE '2025-12-01'")
    ns.partitions(filter="country = 'US'")            # the pruned leaves
    print(ns.explain("country = 'US'"))
    snap = ns.snapshot()                              # a consistent view at one manifest version

Everything heavy (routing, fragment writes, commits, manifest scans, pruning, leaf reads) runs in
Rust without the GIL; this module only normalises arguments.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lance_partitioned import _native
from lance_partitioned._arguments import typed_class
from lance_partitioned._input import arrow_stream
from lance_partitioned.changes import RowChanges
from lance_partitioned.datafusion_table import DataFusionTable
from lance_partitioned.distributed import DistributedWrite
from lance_partitioned.exceptions import ArgumentTypeError, InvalidArgumentError
from lance_partitioned.hive.result import ExportResult
from lance_partitioned.indexes import Indexes
from lance_partitioned.lineage import datasets as lineage_datasets
from lance_partitioned.lineage.run import Job, operation
from lance_partitioned.maintenance import Maintenance
from lance_partitioned.options import (
    DEFAULT_MAX_NEW_PARTITIONS,
    MAX_ROWS_PER_FILE,
    ROUTE_THREADS,
    WRITE_BUFFER_BYTES,
    AsOf,
    StorageOptions,
    TransactionMode,
    WriteMode,
    check_limit,
    check_sizes,
    namespace_uri,
    storage_options_arg,
    version_arg,
    write_args,
    write_concurrency,
)
from lance_partitioned.snapshot import Filter, Snapshot
from lance_partitioned.sorting import Sorting
from lance_partitioned.spec import PartitionSpec, warn_on_cyclic_fields
from lance_partitioned.tags import Tags

if TYPE_CHECKING:
    from lance_partitioned.dataset_view import NamespaceDataset

__all__ = [
    "CleanupResult",
    "DeleteResult",
    "ExpireResult",
    "ExportResult",
    "IndexInfo",
    "IndexResult",
    "OptimizeResult",
    "PartitionedNamespace",
    "Snapshot",
    "WriteResult",
]


_MODE_KEY = "lance_partitioned.transaction_mode"

WriteResult = _native.WriteResult
DeleteResult = _native.DeleteResult
CleanupResult = _native.CleanupResult
OptimizeResult = _native.OptimizeResult
IndexResult = _native.IndexResult
IndexInfo = _native.IndexInfo
ExpireResult = _native.ExpireResult


@typed_class
class PartitionedNamespace(Maintenance, RowChanges, Tags, Indexes, Sorting):
    """A Lance partitioned namespace rooted at a directory or an object-store URI
    (``s3://``, ``gs://``, ``az://``, ...; see ``storage_options``)."""

    def __init__(self, native: _native.Namespace) -> None:
        self._ns = native
        self._root = native.root
        native.current()  # reads the manifest now: a missing namespace fails here

    @property
    def _snap(self) -> _native.ManifestSnapshot:
        """The native handle's snapshot: the one cache of the namespace's state."""
        return self._ns.current()

    # -- lifecycle ---------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        root: str,
        schema: pa.Schema,
        spec: PartitionSpec | Mapping[str, Any],
        *,
        transaction_mode: TransactionMode = "strong",
        properties: Mapping[str, str] | None = None,
        storage_options: StorageOptions | None = None,
        lineage_job: Job = None,
    ) -> PartitionedNamespace:
        """Creates a namespace with ``schema`` (field ids assigned where missing) and ``spec``
        as ``partition_spec_v1``. Raises ``NamespaceExistsError`` if one exists at ``root``,
        ``SpecError`` / ``ExpressionError`` for an invalid spec. ``storage_options`` configure
        the object store (credentials, endpoint, region; see :data:`StorageOptions`)."""
        from lance_partitioned.spec import assign_field_ids

        if transaction_mode not in ("strong", "weak"):
            raise InvalidArgumentError(
                f"transaction_mode must be 'strong' or 'weak', not {transaction_mode!r}"
            )
        schema = assign_field_ids(schema)
        if isinstance(spec, PartitionSpec):
            spec_obj = spec.to_dict(schema, spec_id=1)
        else:
            spec_obj = dict(spec)
            spec_obj.setdefault("id", 1)
        warn_on_cyclic_fields(spec_obj)
        props = dict(properties or {})
        props[_MODE_KEY] = transaction_mode
        with operation("create", lineage_job) as scope:
            native, _ = _native.Namespace.create(
                namespace_uri(root),
                schema,
                json.dumps(spec_obj),
                props,
                storage_options_arg(storage_options),
            )
            ns = cls(native)
            scope.outputs = lambda: [ns._lineage_dataset("CREATE")]
        return ns

    @classmethod
    def import_hive(
        cls,
        src: str,
        dst: str,
        *,
        schema: pa.Schema | None = None,
        partition_types: Mapping[str, pa.DataType] | None = None,
        format: str = "parquet",
        storage_options: StorageOptions | None = None,
        timezone: str = "UTC",
        **write_options: Any,
    ) -> PartitionedNamespace:
        """Creates a namespace at ``dst`` from the Hive tree at ``src`` (``k=v/`` directories
        above data files, as Spark's ``partitionBy`` writes them), partitioned by identity on
        the tree's partition columns, and writes every row in one atomic commit; on failure
        ``dst`` is removed again (it must not exist, or be empty).

        ``format``: ``parquet``, ``orc``, ``csv`` or ``arrow`` (IPC files). Partition column
        types are inferred like Spark's partition discovery (int, bigint, double, date,
        timestamp, else string) unless ``partition_types`` gives them; ``schema`` sets the
        whole namespace schema (default: the data files' schema, then the partition columns).
        Directory values are read with :func:`lance_partitioned.values.parse_hive_segment`
        (timestamps with a zone as local time in ``timezone``); ``__HIVE_DEFAULT_PARTITION__``
        is NULL, so an empty string written by another tool comes back as NULL. A tree whose
        files sit under different partition columns is refused, naming a file of each kind.
        ``write_options`` go to :meth:`write` (e.g. ``max_new_partitions``).
        """
        from lance_partitioned.hive.importer import import_hive

        return import_hive(
            cls,
            src,
            dst,
            schema=schema,
            partition_types=partition_types,
            format=format,
            storage_options=storage_options_arg(storage_options),
            timezone=timezone,
            **write_options,
        )

    def export_hive(
        self,
        dst: str,
        *,
        format: str = "parquet",
        filter: Filter = None,
        storage_options: StorageOptions | None = None,
        timezone: str = "UTC",
        as_of: AsOf = None,
    ) -> ExportResult:
        """Writes the rows of the partitions ``filter`` keeps (all by default; the filter
        applies to rows as in :meth:`scan`) as a Hive tree at ``dst`` (which must not exist, or
        be empty): ``<field>=<value>/`` directories of the current spec's fields
        (:func:`lance_partitioned.values.hive_segment`, timestamps with a zone shown in
        ``timezone``), data files in ``format`` (``parquet``, ``orc``, ``csv``, ``arrow``),
        and ``_SUCCESS`` at the end. ``storage_options`` reach an object-store ``dst`` (default:
        the namespace's). See docs/hive.md for how readers see the tree."""
        from lance_partitioned.hive.exporter import export_hive

        opts = storage_options_arg(storage_options)
        return export_hive(
            self.snapshot(as_of),
            dst,
            format=format,
            filter=filter,
            storage_options=opts if opts is not None else self._ns.storage_options,
            timezone=timezone,
        )

    @classmethod
    def open(
        cls, root: str, *, storage_options: StorageOptions | None = None
    ) -> PartitionedNamespace:
        """Opens the namespace at ``root`` (``NamespaceNotFoundError`` if there is none)."""
        return cls(_native.Namespace(namespace_uri(root), storage_options_arg(storage_options)))

    def refresh(self) -> bool:
        """Reloads the manifest if another writer moved it; returns whether it moved."""
        return self._ns.refresh()

    def snapshot(self, version: AsOf = None) -> Snapshot:
        """A consistent read-only view: the latest manifest version, or ``version`` (a version
        number, or the name of a tag: :meth:`tag`)."""
        if version is None:
            return Snapshot(self._ns.snapshot())
        if isinstance(version, str):
            version = self._tagged(version)
        version = version_arg(version, "as_of")
        return Snapshot(self._ns.snapshot_as_of(version))

    # -- metadata ----------------------------------------------------------------------------

    @property
    def root(self) -> str:
        return self._root

    @property
    def storage_options(self) -> dict[str, str]:
        """The storage options the namespace was opened with."""
        return self._ns.storage_options

    @property
    def version(self) -> int:
        """The manifest version of the cached snapshot (see :meth:`refresh`)."""
        return self._snap.version

    @property
    def schema(self) -> pa.Schema:
        """The namespace schema."""
        return self._snap.schema

    @property
    def specs(self) -> dict[int, dict[str, Any]]:
        """All partition spec versions by id."""
        return Snapshot(self._snap).specs

    @property
    def spec(self) -> PartitionSpec:
        """The current partition spec."""
        specs = self.specs
        return PartitionSpec.from_dict(specs[max(specs)])

    @property
    def transaction_mode(self) -> TransactionMode:
        """The namespace's default transaction mode."""
        return "weak" if self._snap.properties.get(_MODE_KEY) == "weak" else "strong"

    @property
    def missing_columns(self) -> list[str]:
        return list(self._snap.missing_columns)

    # -- writes ------------------------------------------------------------------------------

    def write(
        self,
        data: Any,
        mode: WriteMode = "append",
        *,
        transaction_mode: TransactionMode | None = None,
        max_rows_per_file: int = MAX_ROWS_PER_FILE,
        concurrency: int | None = None,
        route_threads: int | None = ROUTE_THREADS,
        max_buffer_bytes: int = WRITE_BUFFER_BYTES,
        max_new_partitions: int | None = DEFAULT_MAX_NEW_PARTITIONS,
        lineage_job: Job = None,
        progress: bool = False,
    ) -> WriteResult:
        """Writes ``data`` (a pyarrow Table / RecordBatch / RecordBatchReader, any Arrow
        stream, or an iterable of RecordBatches).

        ``mode="append"`` adds rows; ``"overwrite"`` replaces exactly the partitions the input
        touches; ``"overwrite_all"`` also drops every other partition. In strong mode (the
        default) nothing is visible until one atomic manifest commit; concurrent appends are
        rebased, an overwrite racing another write raises ``CommitConflictError``.

        Memory stays near ``max_buffer_bytes``: when the routed rows reach half of it the
        largest partitions are written out (a partition then gets more than one file), and
        routing waits while the writes in flight hold the other half.

        A write that would create more than ``max_new_partitions`` partitions fails with
        ``InvalidArgumentError`` before committing anything (``None``: no limit).

        ``concurrency`` partitions are written at once (default: 8 on a local disk, 64 on
        object storage, where requests wait on the network). ``route_threads`` threads compute
        the partition values of one batch and route it (default ``None``: every core for
        batches of 100,000 rows or more).

        ``lineage_job`` names the OpenLineage job (see :mod:`lance_partitioned.lineage`).

        ``progress=True`` shows the rows, batches and bytes routed so far on stderr (rich),
        then the partitions, files and bytes written (:mod:`lance_partitioned.progress`).
        """
        from lance_partitioned.progress import WriteProgress

        strong = write_args(mode, transaction_mode)
        check_limit(max_new_partitions)
        concurrency = write_concurrency(self.root, concurrency)
        check_sizes(
            max_rows_per_file=max_rows_per_file,
            max_buffer_bytes=max_buffer_bytes,
            concurrency=concurrency,
            **({} if route_threads is None else {"route_threads": route_threads}),
        )
        shown = WriteProgress(progress)
        with shown, operation("write", lineage_job, outputs=self._lineage_outputs) as scope:
            result = self._ns.write(
                shown.wrap(arrow_stream(data)),
                mode=mode,
                strong=strong,
                max_rows_per_file=max_rows_per_file,
                concurrency=concurrency,
                route_threads=route_threads,
                max_buffer_bytes=max_buffer_bytes,
                max_new_partitions=max_new_partitions,
            )
            self.refresh()
            if scope.run is not None:
                snap, settings = self.snapshot(), scope.run.settings
                scope.outputs = lambda: [lineage_datasets.written(snap, result, mode, settings)]
        shown.report(result)
        return result

    def distributed_write(
        self,
        mode: WriteMode = "append",
        *,
        transaction_mode: TransactionMode | None = None,
        lineage_job: Job = None,
    ) -> DistributedWrite:
        """Starts a write made of many independently staged parts (one per Spark task, or
        per process), committed once: see :class:`DistributedWrite`."""
        return DistributedWrite(
            self._root,
            mode,
            transaction_mode=transaction_mode,
            storage_options=self._ns.storage_options,
            lineage_job=lineage_job,
        )

    # -- schema evolution --------------------------------------------------------------------

    def update_schema(self, schema: pa.Schema, *, lineage_job: Job = None) -> pa.Schema:
        """Changes the namespace schema to ``schema``, matching fields by ``lance:field_id``.

        A field with an existing id keeps its identity: a new name renames it, a new type must
        widen the old one (integers to wider integers, float to double, decimal precision up,
        string/binary to their large or view forms), nullable may be relaxed. Fields without an
        id are added (must be nullable; fresh ids, never reused). Ids left out are dropped.
        Partition source columns can be renamed but not dropped or retyped. Existing partitions
        are not rewritten: reads match their columns by field id, cast to the namespace type and
        fill added columns with NULL; the first append to such a partition rewrites it with the
        current schema (``WriteResult.rewritten``). Returns the stored schema.

        The change is what ``schema`` changes relative to this handle's :attr:`schema`, applied
        to the latest schema when it commits: columns another handle or process added, renamed
        or widened since are kept. When both changed the same column, it raises
        :class:`CommitConflictError` and nothing changes.
        """
        if not isinstance(schema, pa.Schema):
            raise ArgumentTypeError(f"schema must be a pyarrow.Schema, got {type(schema)}")
        with operation("update_schema", lineage_job, outputs=self._lineage_outputs) as scope:
            stored: pa.Schema = self._ns.update_schema(self.schema, schema)
            self.refresh()
            scope.outputs = lambda: [self._lineage_dataset("ALTER")]
        return stored

    def add_columns(self, fields: Sequence[pa.Field[Any]]) -> pa.Schema:
        """Adds nullable columns (see :meth:`update_schema`)."""
        return self.update_schema(pa.schema([*self.schema, *fields]))

    def rename_column(self, old: str, new: str) -> pa.Schema:
        """Renames a column; its field id (and every partition field over it) is kept."""
        self._field(old)
        schema = self.schema
        return self.update_schema(
            pa.schema([f.with_name(new) if f.name == old else f for f in schema])
        )

    def drop_columns(self, names: str | Sequence[str]) -> pa.Schema:
        """Drops columns (not partition sources, nor structs holding one); their field ids are
        never reused. ``names``: one name or several."""
        names = [names] if isinstance(names, str) else list(names)
        for n in names:
            self._field(n)
        return self.update_schema(pa.schema([f for f in self.schema if f.name not in names]))

    def alter_column(
        self, name: str, type: pa.DataType | None = None, *, nullable: bool | None = None
    ) -> pa.Schema:
        """Widens a column's type and/or makes it nullable."""
        self._field(name)
        fields = []
        for f in self.schema:
            if f.name == name:
                if type is not None:
                    f = f.with_type(type)
                if nullable is not None:
                    f = f.with_nullable(nullable)
            fields.append(f)
        return self.update_schema(pa.schema(fields))

    def _field(self, name: str) -> pa.Field[Any]:
        self.refresh()
        if name not in self.schema.names:
            raise InvalidArgumentError(
                f"no column {name!r} in the namespace schema ({', '.join(self.schema.names)})"
            )
        return self.schema.field(name)

    def evolve(self, spec: PartitionSpec | Mapping[str, Any], *, lineage_job: Job = None) -> int:
        """Adds a new partition spec version and makes it current; returns its id.

        New writes are partitioned by the new spec; partitions written under older versions stay
        readable and prunable with their own spec. A field with the same sources and transform
        as an existing field must reuse its ``field_id``; a ``field_id`` is never reused for a
        different definition (``SpecError``).
        """
        self.refresh()
        if isinstance(spec, PartitionSpec):
            obj = spec.to_dict(self.schema, spec_id=max(self.specs) + 1)
        else:
            obj = dict(spec)
            obj.setdefault("id", max(self.specs) + 1)
        warn_on_cyclic_fields(obj)
        with operation("evolve", lineage_job, outputs=self._lineage_outputs) as scope:
            new_id = self._ns.evolve(json.dumps(obj))
            self.refresh()
            scope.outputs = lambda: [self._lineage_dataset("ALTER")]
        return new_id

    def delete(
        self,
        filter: str,
        *,
        transaction_mode: TransactionMode | None = None,
        lineage_job: Job = None,
    ) -> DeleteResult:
        """Deletes the rows matching ``filter`` (a SQL expression over namespace columns).

        Partitions the filter covers exactly (it reads only identity partition columns and is
        TRUE for the partition's values) are dropped whole, without reading them; in the other
        partitions pruning keeps, the matching rows are deleted (a partition left empty is
        dropped). Atomic like a write: one manifest commit in strong mode; a concurrent write to
        a partition being deleted from raises ``CommitConflictError``.
        """
        if not isinstance(filter, str) or not filter.strip():
            raise InvalidArgumentError("delete needs a non-empty SQL filter (use 'TRUE' for all)")
        strong = write_args("append", transaction_mode)
        with operation("delete", lineage_job, outputs=self._lineage_outputs) as scope:
            result = self._ns.delete(filter, strong)
            self.refresh()
            if scope.run is not None:
                snap, settings = self.snapshot(), scope.run.settings
                truncated = result.rows > 0 and snap.partitions(with_rows=False).num_rows == 0
                scope.outputs = lambda: [
                    lineage_datasets.deleted(snap, result, filter, settings, truncated=truncated)
                ]
        return result

    # -- reads -------------------------------------------------------------------------------

    def scan(
        self,
        filter: Filter = None,
        columns: Sequence[str] | None = None,
        *,
        as_of: AsOf = None,
        batch_size: int | None = None,
        lineage_job: Job = None,
    ) -> pa.RecordBatchReader:
        """Streams rows matching ``filter`` from the latest snapshot (or manifest version
        ``as_of``); see :meth:`Snapshot.scan`."""
        return self.snapshot(as_of).scan(
            filter, columns, batch_size=batch_size, lineage_job=lineage_job
        )

    def to_table(
        self,
        filter: Filter = None,
        columns: Sequence[str] | None = None,
        *,
        as_of: AsOf = None,
        lineage_job: Job = None,
    ) -> pa.Table:
        """:meth:`scan` collected into a table."""
        return self.snapshot(as_of).to_table(filter, columns, lineage_job=lineage_job)

    def to_pyarrow_dataset(self, *, as_of: AsOf = None) -> NamespaceDataset:
        """The latest snapshot (or manifest version ``as_of``) as a ``pyarrow.dataset.Dataset``
        whose scans are this namespace's pruned scans: DuckDB (``duckdb.sql("SELECT ... FROM
        ds WHERE ...")``), polars (``pl.scan_pyarrow_dataset(ds)``) and pyarrow push their
        projections and filters into it. See :mod:`lance_partitioned.dataset_view`."""
        from lance_partitioned.dataset_view import NamespaceDataset

        return NamespaceDataset(self.snapshot(as_of))

    def to_datafusion(self, *, as_of: AsOf = None) -> DataFusionTable:
        """The latest snapshot (or manifest version ``as_of``) as a DataFusion table for
        datafusion-python 54 (``ctx.register_table("t", ns.to_datafusion())``), which pushes
        projections, filters and limits into this namespace's pruned scans. See
        :mod:`lance_partitioned.datafusion_table`."""
        return DataFusionTable(self.snapshot(as_of))

    def partitions(
        self, filter: Filter = None, *, as_of: AsOf = None, with_rows: bool = True
    ) -> pa.Table:
        """The pruned leaf partitions; see :meth:`Snapshot.partitions`."""
        return self.snapshot(as_of).partitions(filter, with_rows=with_rows)

    def stats(
        self, filter: Filter = None, *, as_of: AsOf = None, versions: bool = False
    ) -> pa.Table:
        """Per-partition statistics from Lance metadata; see :meth:`Snapshot.stats`."""
        return self.snapshot(as_of).stats(filter, versions=versions)

    def indexes(self, *, as_of: AsOf = None) -> list[_native.IndexInfo]:
        """Every declared index and how much of it is current; see :meth:`Snapshot.indexes`."""
        return self.snapshot(as_of).indexes()

    def history(self, limit: int | None = None) -> pa.Table:
        """The manifest versions, newest first (the last ``limit`` of them): ``version``,
        ``timestamp`` (UTC), ``operation`` (``create_namespace``, ``create`` (new partitions),
        ``append``, ``overwrite``, ``delete``, ``compact``, ``drop``, ``evolve``, ``schema``,
        ``index``; joined with ``+`` when a commit did several), ``partitions`` changed and
        ``rows`` written or deleted (NULL when not recorded). Read from the difference of each
        version to the one before, so the oldest version :meth:`expire` kept shows as
        ``unknown``."""
        if limit is not None:
            check_sizes(limit=limit)
        self.refresh()
        return pa.Table.from_batches([self._snap.history(limit)])

    def explain(
        self, filter: Filter = None, *, as_of: AsOf = None, check_sizes: bool = True
    ) -> str:
        """The pruning plan of ``filter``; see :meth:`Snapshot.explain`."""
        return self.snapshot(as_of).explain(filter, check_sizes=check_sizes)

    def describe_namespace(self, path: Sequence[str]) -> dict[str, str]:
        """Runtime namespace properties (``partition_spec``, ``partition.<field_id>``)."""
        return self.snapshot().describe_namespace(path)

    # -- lineage -----------------------------------------------------------------------------

    def _lineage_outputs(self) -> list[dict[str, Any]]:
        """The namespace as it is now, as a lineage output (START and FAIL events)."""
        return [lineage_datasets.namespace_dataset(Snapshot(self._snap))]

    def _lineage_dataset(self, lifecycle: str) -> dict[str, Any]:
        from lance_partitioned.lineage.facets import lifecycle_facet

        ds = lineage_datasets.namespace_dataset(Snapshot(self._snap))
        ds["facets"]["lifecycleStateChange"] = lifecycle_facet(lifecycle)
        return ds

    def __repr__(self) -> str:
        options = self._ns.storage_options
        shown = f", storage_options=<{len(options)} keys>" if options else ""
        return f"PartitionedNamespace({self._root!r}, version={self.version}{shown})"
