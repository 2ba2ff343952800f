"""Exporting a namespace (or the partitions a filter keeps) as a Hive tree that Spark, pyarrow
and every other Hive-layout reader understands.

Rows are read at one snapshot and partitioned by the current spec (rows of partitions written
under older spec versions too, so the tree has one layout): each row goes to
``<field>=<value>/.../part-<n>-<id>.<ext>`` where every segment is
:func:`lance_partitioned.values.hive_segment` of a partition field's name and value (the
transform result: ``event_year=2025/country=US/user_bucket=3``). A column that an identity
field of the same name partitions by is left out of the files (Hive readers take it from the
directory; keeping both makes Spark refuse the tree); any other clash of a partition field
name with a column is refused. ``_SUCCESS`` is written last, as Spark does.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lance_partitioned import kernels
from lance_partitioned.exceptions import InvalidArgumentError, NamespaceExistsError, StorageError
from lance_partitioned.hive.files import filesystem
from lance_partitioned.hive.formats import check_format
from lance_partitioned.hive.result import ExportResult
from lance_partitioned.values import hive_segment

if TYPE_CHECKING:
    import pyarrow.fs as pafs

    from lance_partitioned.snapshot import Filter, Snapshot

__all__ = ["export_hive"]

OPEN_FILES = 64
"""The most data files an export keeps open at once (least recently written closed first)."""

_EXT = {"parquet": "parquet", "orc": "orc", "csv": "csv", "arrow": "arrow"}


class _Writer:
    """One open data file."""

    def __init__(self, fs: pafs.FileSystem, path: str, schema: pa.Schema, format: str) -> None:
        self._stream = fs.open_output_stream(path)
        self._format = format
        self._writer: Any
        if format == "parquet":
            import pyarrow.parquet as pq

            self._writer = pq.ParquetWriter(self._stream, schema)
        elif format == "csv":
            import pyarrow.csv as pcsv

            self._writer = pcsv.CSVWriter(self._stream, schema)  # type: ignore[arg-type]
        elif format == "arrow":
            self._writer = pa.ipc.new_file(self._stream, schema)
        else:
            import pyarrow.orc as porc

            self._writer = porc.ORCWriter(self._stream)

    def write(self, batch: pa.RecordBatch) -> None:
        if self._format == "orc":
            self._writer.write(pa.Table.from_batches([batch]))
        else:
            self._writer.write_batch(batch)

    def close(self) -> None:
        self._writer.close()
        self._stream.close()


def _layout(snap: Snapshot) -> tuple[dict[str, Any], list[str], list[str]]:
    """The current spec, its field names, and the columns the files leave out."""
    spec = snap.specs[max(snap.specs)]
    by_id = {
        int(f.metadata[b"lance:field_id"]): f.name
        for f in snap.schema
        if f.metadata and b"lance:field_id" in f.metadata
    }
    names = [f["field_id"] for f in spec["fields"]]
    dropped = []
    for f in spec["fields"]:
        name = f["field_id"]
        if name not in snap.schema.names:
            continue
        t = f.get("transform") or {}
        sources = [by_id.get(int(i)) for i in f.get("source_ids", [])]
        if t.get("type") == "identity" and sources == [name]:
            dropped.append(name)
        else:
            raise InvalidArgumentError(
                f"partition field {name!r} has the name of a column it does not copy: a Hive "
                "tree would hold two columns of that name"
            )
    return spec, names, dropped


def export_hive(
    snap: Snapshot,
    dst: str,
    *,
    format: str,
    filter: Filter,
    storage_options: Mapping[str, str] | None,
    timezone: str,
) -> ExportResult:
    """See :meth:`PartitionedNamespace.export_hive`."""
    import pyarrow.fs as pafs

    check_format(format)
    spec, names, dropped = _layout(snap)
    fs, root = filesystem(dst, storage_options)
    if fs.get_file_info(root).type != pafs.FileType.NotFound and fs.get_file_info(
        pafs.FileSelector(root, recursive=False)
    ):
        raise NamespaceExistsError(f"{dst} exists and is not empty")
    keep = [f.name for f in snap.schema if f.name not in dropped]
    out_schema = pa.schema([snap.schema.field(n).remove_metadata() for n in keep])
    run = uuid.uuid4().hex[:12]
    writers: OrderedDict[str, _Writer] = OrderedDict()
    dirs: dict[tuple[Any, ...], str] = {}
    files = rows = 0
    seen: set[str] = set()
    try:
        for batch in snap.scan(filter):
            if batch.num_rows == 0:
                continue
            keys = kernels.partition_values(batch, spec, snap.schema)
            routed = kernels.route(batch, keys, threads=1)  # type: ignore[arg-type]
            key_rows = routed.keys.to_pylist()
            for i, part in enumerate(routed.batches):
                key = tuple(key_rows[i].values())
                path = dirs.get(key)
                if path is None:
                    segs = [
                        hive_segment(n, routed.keys.column(n)[i], None, timezone) for n in names
                    ]
                    path = dirs[key] = "/".join(segs)
                writer = writers.get(path)
                if writer is None:
                    if len(writers) >= OPEN_FILES:
                        writers.popitem(last=False)[1].close()
                    fs.create_dir(f"{root}/{path}", recursive=True)
                    name = f"part-{files:05d}-{run}.{_EXT[format]}"
                    writer = writers[path] = _Writer(
                        fs, f"{root}/{path}/{name}", out_schema, format
                    )
                    files += 1
                writers.move_to_end(path)
                writer.write(part.select(keep).cast(out_schema))
                rows += part.num_rows
                seen.add(path)
        while writers:
            writers.popitem(last=False)[1].close()
        with fs.open_output_stream(f"{root}/_SUCCESS"):
            pass
    except OSError as e:
        raise StorageError(f"cannot write the Hive tree at {dst}: {e}") from None
    finally:
        for w in writers.values():
            w.close()
    return ExportResult(rows, len(seen), files, snap.version)
