"""Importing a Hive tree (as Spark's ``df.write.partitionBy(...).parquet(src)`` writes it) into a
new partitioned namespace with an identity spec over the tree's partition columns.

Every row is written by one strong-mode write (one manifest commit). If anything fails, the
namespace directory is removed again, so ``dst`` is left as it was: absent (a ``dst`` that
already holds a namespace is refused before anything is written).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.dataset as pads

from lance_partitioned.exceptions import (
    ArgumentTypeError,
    InvalidArgumentError,
    NamespaceExistsError,
    SchemaMismatchError,
)
from lance_partitioned.hive.files import filesystem, list_files, remove_tree
from lance_partitioned.hive.formats import check_format
from lance_partitioned.hive.layout import HiveTree, infer_types, partition_values, read_layout

if TYPE_CHECKING:
    import pyarrow.fs as pafs

    from lance_partitioned.namespace import PartitionedNamespace

__all__ = ["import_hive"]


def _file_format(format: str) -> str:
    return "ipc" if format == "arrow" else format


def _data_schema(fs: pafs.FileSystem, root: str, tree: HiveTree, format: str) -> pa.Schema:
    first = f"{root}/{tree.partitions[0].files[0]}"
    try:
        schema: pa.Schema = pads.dataset(
            first,
            format=_file_format(format),  # type: ignore[call-overload]
            filesystem=fs,
        ).schema
        return schema
    except (pa.ArrowInvalid, OSError) as e:
        raise InvalidArgumentError(f"cannot read {first} as {format}: {e}") from None


def _namespace_schema(
    data: pa.Schema,
    types: Mapping[str, pa.DataType],
    tree: HiveTree,
    schema: pa.Schema | None,
) -> pa.Schema:
    clash = [c for c in tree.columns if c in data.names]
    if clash:
        raise InvalidArgumentError(
            f"partition column(s) {clash} are also columns of the data files: a Hive tree "
            "keeps partition values only in its directory names"
        )
    if schema is None:
        return pa.schema([*data, *(pa.field(c, types[c]) for c in tree.columns)])
    if not isinstance(schema, pa.Schema):
        raise ArgumentTypeError(f"schema must be a pyarrow.Schema, got {type(schema)}")
    missing = [c for c in (*data.names, *tree.columns) if c not in schema.names]
    if missing:
        raise SchemaMismatchError(f"schema lacks column(s) of the tree: {missing}")
    return schema


def _batches(
    fs: pafs.FileSystem,
    root: str,
    tree: HiveTree,
    types: Mapping[str, pa.DataType],
    schema: pa.Schema,
    format: str,
    timezone: str,
) -> Iterator[pa.RecordBatch]:
    """Every file's rows with the partition values of its directory, as ``schema``."""
    for part in tree.partitions:
        values = partition_values(part, types, timezone)
        for rel in part.files:
            path = f"{root}/{rel}"
            try:
                data = pads.dataset(
                    path,
                    format=_file_format(format),  # type: ignore[call-overload]
                    filesystem=fs,
                )
                for b in data.to_batches():
                    cols: dict[str, Any] = {n: b.column(n) for n in b.schema.names}
                    for name, v in values.items():
                        cols[name] = pa.repeat(v, b.num_rows)  # type: ignore[call-overload]
                    yield pa.RecordBatch.from_pydict(
                        {f.name: cols.get(f.name, pa.nulls(b.num_rows, f.type)) for f in schema}
                    ).cast(schema)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
                raise SchemaMismatchError(f"cannot read {path} as {format}: {e}") from None


def _refuse_non_empty(fs: pafs.FileSystem, root: str, uri: str) -> None:
    """The import creates ``dst`` and removes it again on failure: it must not hold anything
    else."""
    import pyarrow.fs as pafs

    if fs.get_file_info(root).type == pafs.FileType.NotFound:
        return
    if fs.get_file_info(pafs.FileSelector(root, recursive=False)):
        raise NamespaceExistsError(f"{uri} exists and is not empty")


def import_hive(
    cls: type[PartitionedNamespace],
    src: str,
    dst: str,
    *,
    schema: pa.Schema | None,
    partition_types: Mapping[str, pa.DataType] | None,
    format: str,
    storage_options: Mapping[str, str] | None,
    timezone: str,
    **write_options: Any,
) -> PartitionedNamespace:
    """See :meth:`PartitionedNamespace.import_hive`."""
    from lance_partitioned.spec import Identity, PartitionField, PartitionSpec

    check_format(format)
    src_fs, src_root = filesystem(src, storage_options)
    tree = read_layout(list_files(src_fs, src_root))
    if not tree.columns:
        raise InvalidArgumentError(f"{src} has no partition directories (name=value)")
    types = infer_types(tree, partition_types)
    ns_schema = _namespace_schema(_data_schema(src_fs, src_root, tree, format), types, tree, schema)
    spec = PartitionSpec([PartitionField(c, c, Identity()) for c in tree.columns])
    dst_fs, dst_root = filesystem(dst, storage_options)
    _refuse_non_empty(dst_fs, dst_root, dst)
    ns = cls.create(dst, ns_schema, spec, storage_options=storage_options)
    try:
        stored = ns.schema
        reader = pa.RecordBatchReader.from_batches(
            stored,
            (
                b.cast(stored)
                for b in _batches(src_fs, src_root, tree, types, ns_schema, format, timezone)
            ),
        )
        ns.write(reader, transaction_mode="strong", **write_options)
    except BaseException:
        remove_tree(dst_fs, dst_root)
        raise
    return ns
