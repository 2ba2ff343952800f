"""A read-only view of a partitioned namespace at one ``__manifest`` version: pruning
(``partitions``, ``explain``) and consistent reads (``scan``, ``to_table``)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned import _native
from lance_partitioned._arguments import typed_class
from lance_partitioned.exceptions import ExpressionError, InvalidArgumentError
from lance_partitioned.lineage.run import Job, LineageRun, begin
from lance_partitioned.options import columns_arg

__all__ = ["Filter", "Snapshot"]

Filter = str | pc.Expression | None
"""A SQL filter (DataFusion dialect) or a ``pyarrow.compute.Expression``."""

TINY_PARTITION_ROWS = 10_000
"""``explain`` warns when the median kept partition holds fewer rows than this."""
TINY_CHECK_MIN_PARTITIONS = 100
"""... and only when it keeps at least this many partitions (a few small ones cost little)."""
TINY_CHECK_SAMPLE = 256
"""... reading the row counts of at most this many partitions, evenly spaced."""


def native_filter(filter: Filter) -> str | bytes | None:
    """``filter`` as the native layer takes it: SQL text, or a pyarrow expression pickled
    (Arrow C++'s expression serialization), which the native layer translates into the same
    DataFusion expression a SQL filter becomes: one path prunes, pushes down and filters
    both."""
    if filter is None or isinstance(filter, str):
        return filter
    if isinstance(filter, pc.Expression):
        try:
            reduced: Any = filter.__reduce__()
            return bytes(reduced[1][0])
        except (TypeError, ValueError, IndexError) as e:  # a pyarrow that pickles otherwise
            raise ExpressionError(f"cannot read the pyarrow expression {filter}: {e}") from None
    raise InvalidArgumentError(
        f"filter must be a SQL string or a pyarrow.compute.Expression, got {type(filter).__name__}"
    )


@typed_class
class Snapshot:
    """A read-only view of the namespace at one ``__manifest`` version.

    Every leaf is read at the ``read_version`` this manifest version records, so all reads
    through one snapshot are consistent across partitions.
    """

    def __init__(self, native: _native.ManifestSnapshot) -> None:
        self._s = native

    @property
    def version(self) -> int:
        """The ``__manifest`` version."""
        return self._s.version

    @property
    def root(self) -> str:
        return self._s.root

    @property
    def schema(self) -> pa.Schema:
        """The namespace schema (``lance:field_id`` on every field)."""
        return self._s.schema

    @property
    def specs(self) -> dict[int, dict[str, Any]]:
        """Every partition spec version, by id (the ``partition_spec_v<N>`` objects)."""
        return {k: json.loads(v) for k, v in self._s.specs()}

    @property
    def spec_id(self) -> int:
        """The current (newest) spec version."""
        return max(self.specs)

    @property
    def properties(self) -> dict[str, str]:
        """Root properties as stored in the manifest's table metadata."""
        return dict(self._s.properties)

    @property
    def missing_columns(self) -> list[str]:
        """Manifest columns another tool dropped (see :meth:`PartitionedNamespace.repair`)."""
        return list(self._s.missing_columns)

    def manifest(self) -> pa.Table:
        """All ``__manifest`` rows."""
        return pa.Table.from_batches([self._s.manifest_batch()])

    def partitions(self, filter: Filter = None, *, with_rows: bool = True) -> pa.Table:
        """The leaf partitions kept by pruning ``filter`` (all without a filter).

        Columns: ``object_id``, ``location``, ``read_version``, ``spec_id``, one column per
        partition field id (typed; NULL where a spec version lacks the field) and, with
        ``with_rows``, ``rows`` (the row count at ``read_version``).
        """
        _, batch = self._s.partitions(native_filter(filter), with_rows)
        return pa.Table.from_batches([batch])

    def stats(self, filter: Filter = None, *, versions: bool = False) -> pa.Table:
        """One row per partition kept by pruning ``filter``, from Lance metadata (no data is
        read): ``object_id``, one column per partition field (named by field id), ``rows``,
        ``files``, ``bytes`` and ``fragments_with_deletions``, as this manifest version reads
        each partition. In strong mode every commit records these totals in the manifest row
        of the partition version it makes, so they come from the manifest alone (one scan of
        it, however many partitions, and a cost that does not grow with the history before
        this version). Partitions without recorded totals (weak mode, versions committed by
        other tools) are opened at their read version, 16 at a time.

        With ``versions``, a ``versions`` column counts the version manifests each
        partition's Lance table keeps on storage (its ``_versions/``: the versions
        :meth:`PartitionedNamespace.expire` keeps, and any it has not removed yet). It lists
        every kept partition's directory, 16 at a time: one listing per partition.
        """
        batch = self._s.leaf_stats(native_filter(filter), versions)
        table = pa.Table.from_batches([batch])
        return table.drop_columns(["location", "read_version", "spec_id", "fragments"])

    def indexes(self) -> list[_native.IndexInfo]:
        """Every declared index (:meth:`PartitionedNamespace.create_index`) and how much of
        it is current at this version: the partitions holding its column and their rows, and
        how many of those its index covers (``partitions_indexed``, ``rows_indexed``; rows
        outside it are read without it). Opens every partition's Lance table."""
        return self._s.indexes()

    def explain(self, filter: Filter = None, *, check_sizes: bool = True) -> str:
        """The manifest predicate built per spec version and how many partitions were kept,
        with how many of those the partition values kept were then skipped by the column
        statistics their commits recorded (bounds that rule the filter out), and how many
        fragments inside the kept partitions the statistics of each write's rows skip.

        With ``check_sizes`` (and at least ``TINY_CHECK_MIN_PARTITIONS`` kept partitions), the
        row counts of up to ``TINY_CHECK_SAMPLE`` kept partitions are read; a warning line is
        added when their median is under ``TINY_PARTITION_ROWS``: every partition is a Lance
        dataset of its own with a fixed cost per read and write, so a spec that makes many
        tiny partitions (identity on a near-unique column) is slow. ``check_sizes=False``
        reads nothing but the manifest.
        """
        native = native_filter(filter)
        plan, _ = self._s.partitions(native, False)
        lines = [f"filter: {filter!s}" if filter is not None else "filter: (none)"]
        kept = total = by_stats = 0
        for p in plan:
            kept += p["kept"]
            total += p["total"]
            by_stats += p["skipped_by_stats"]
            pred = p["predicate"] or "TRUE (nothing to prune on)"
            lines.append(
                f"  v{p['spec_id']}: object_id LIKE 'v{p['spec_id']}$%' AND object_type = 'table'"
                f" AND {pred}  -> kept {p['kept']} of {p['total']} partitions"
                + _stats_note(p["skipped_by_stats"])
            )
        lines.append(f"total: kept {kept} of {total} partitions" + _stats_note(by_stats))
        if native is not None and kept:
            skipped = self._s.fragments_skipped(native)
            if skipped:
                lines.append(
                    f"fragments: {skipped} of the kept partitions skipped by the column"
                    " statistics of the rows their writes added"
                )
        if check_sizes and kept >= TINY_CHECK_MIN_PARTITIONS:
            lines.extend(self._tiny_partition_warning(native))
        return "\n".join(lines)

    def _tiny_partition_warning(self, native: str | bytes | None) -> list[str]:
        kept, rows = self._s.sampled_rows(native, TINY_CHECK_SAMPLE)
        median = statistics.median(rows)
        if median >= TINY_PARTITION_ROWS:
            return []
        return [
            f"warning: tiny partitions: median {median:g} rows over {len(rows)} of {kept}"
            f" kept partitions (under {TINY_PARTITION_ROWS}); each partition is a separate"
            " Lance dataset with a fixed cost per read and write: consider a coarser spec"
            " (bucket or truncate instead of identity on a near-unique column)"
        ]

    def plan(self, filter: Filter = None) -> list[dict[str, Any]]:
        """:meth:`explain` as data: one dict per spec version."""
        plan, _ = self._s.partitions(native_filter(filter), False)
        return list(plan)

    def scan(
        self,
        filter: Filter = None,
        columns: Sequence[str] | None = None,
        *,
        batch_size: int | None = None,
        lineage_job: Job = None,
    ) -> pa.RecordBatchReader:
        """Streams the rows matching ``filter``, reading only the partitions pruning keeps.

        ``filter`` is a SQL expression (DataFusion dialect) over namespace columns, or a
        ``pyarrow.compute.Expression`` (translated into the same expression, so it prunes and
        filters as SQL does; docs/guide/reads.md lists the functions). Batches follow the
        namespace schema (projected to ``columns``). With ``batch_size``, batches hold up to
        that many rows and the small ones of consecutive partitions are combined (fewer,
        fuller batches for a consumer that pays per batch); without it, each partition's
        batches come as Lance reads them.

        With lineage on, START is emitted here and COMPLETE when the reader is exhausted or
        closed (FAIL if reading fails), listing the partitions read.
        """
        cols = columns_arg(columns)
        scan = self._s.scan(native_filter(filter), cols, batch_size)
        reader = pa.RecordBatchReader.from_batches(scan.schema, iter(scan))
        run = begin("scan", lineage_job, inputs=lambda: [self._lineage_input(filter)])
        if run is None:
            return reader
        return pa.RecordBatchReader.from_batches(reader.schema, _observed(reader, run))

    def _lineage_input(self, filter: Filter) -> dict[str, Any]:
        from lance_partitioned.lineage import datasets
        from lance_partitioned.lineage.config import settings

        return datasets.read(self, filter, settings())

    def to_table(
        self,
        filter: Filter = None,
        columns: Sequence[str] | None = None,
        *,
        lineage_job: Job = None,
    ) -> pa.Table:
        """:meth:`scan` collected into a table."""
        return self.scan(filter, columns, lineage_job=lineage_job).read_all()

    def describe_namespace(self, path: Sequence[str]) -> dict[str, str]:
        """Runtime properties of a namespace: ``["v1"]`` gives ``partition_spec``;
        ``["v1", "<id>", ...]`` gives ``partition.<field_id>`` of that level."""
        return dict(self._s.describe_namespace(list(path)))


def _stats_note(skipped: int) -> str:
    return f" ({skipped} more skipped by column statistics)" if skipped else ""


def _observed(reader: pa.RecordBatchReader, run: LineageRun) -> Iterator[pa.RecordBatch]:
    """``reader``'s batches; COMPLETE (with the rows read) when they end or the consumer
    stops, FAIL when reading fails."""
    import copy

    from lance_partitioned.lineage.facets import statistics_facet

    started = run.events[0]["inputs"] if run.events else []
    rows = 0
    size = 0

    def inputs() -> list[dict[str, Any]]:
        out = copy.deepcopy(started)
        for ds in out:
            ds.setdefault("inputFacets", {})["inputStatistics"] = statistics_facet(
                output=False, rows=rows, size=size
            )
        return out

    try:
        for batch in reader:
            rows += batch.num_rows
            size += batch.nbytes
            yield batch
    except Exception as e:
        run.fail(e, started)
        raise
    finally:
        run.complete(inputs)
