"""The input and output datasets of lineage events: a namespace (its ``partitions``,
``schema`` and ``version`` facets) and what an operation read or wrote of it (``subset``,
statistics, lifecycle). Building them costs O(partitions touched): subsets list at most
``max_partitions`` partitions, read from the write's or delete's own report or from one
pruned manifest scan."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lance_partitioned import _native
from lance_partitioned.lineage import facets
from lance_partitioned.lineage.config import MAX_CONDITION_COMPARES, Settings
from lance_partitioned.lineage.naming import dataset_id, location_uri
from lance_partitioned.values import to_strings

if TYPE_CHECKING:
    from lance_partitioned.snapshot import Filter, Snapshot

__all__ = ["deleted", "namespace_dataset", "read", "written"]

Partition = tuple[str, str, Mapping[str, str | None]]
"""(leaf object id, leaf location, partition field -> value string form)."""


def namespace_dataset(snap: Snapshot, *, with_version: bool = True) -> dict[str, Any]:
    """The namespace as a dataset with its ``partitions``, ``schema`` and ``version``
    facets."""
    namespace, name = dataset_id(snap.root)
    ds_facets = {
        "partitions": facets.partitions_facet(snap.specs, snap.schema),
        "schema": facets.schema_facet(snap.schema),
    }
    if with_version:
        ds_facets["version"] = facets.version_facet(snap.version)
    return {"namespace": namespace, "name": name, "facets": ds_facets}


def _condition(
    root: str,
    partitions: Sequence[Partition] | None,
    count: int,
    filter_sql: str | None,
    schema: pa.Schema,
    settings: Settings,
) -> dict[str, Any] | None:
    """The subset condition, by the proposal's hierarchy (see :mod:`.facets`)."""
    if partitions is not None and count <= settings.max_partitions:
        return facets.partition_condition([(oid, dims) for oid, _, dims in partitions])
    if partitions is not None and count <= settings.max_locations:
        return {
            "type": "location",
            "locations": [location_uri(root, loc) for _, loc, _ in partitions],
        }
    if filter_sql is not None:
        import json

        text = _native.filter_condition(filter_sql, schema, MAX_CONDITION_COMPARES)
        if text is not None:
            parsed: dict[str, Any] = json.loads(text)
            return parsed
    return None


def _touched(report: Sequence[_native.TouchedPartition], limit: int) -> list[Partition] | None:
    if len(report) > limit:
        return None
    return [(t.object_id, t.location, dict(t.values)) for t in report]


def written(
    snap: Snapshot, result: _native.WriteResult, mode: str, settings: Settings
) -> dict[str, Any]:
    """The output dataset of a committed write (``snap``: the namespace after it)."""
    ds = namespace_dataset(snap, with_version=False)
    ds["facets"]["version"] = facets.version_facet(result.manifest_version)
    limit = max(settings.max_partitions, settings.max_locations)
    parts = _touched(result.touched, limit)
    out: dict[str, Any] = {
        "outputStatistics": facets.statistics_facet(
            output=True, rows=result.rows, size=result.bytes, files=result.files
        )
    }
    cond = _condition(snap.root, parts, len(result.touched), None, snap.schema, settings)
    if cond is not None:
        out["subset"] = facets.subset_facet(cond, output=True)
    ds["outputFacets"] = out
    if mode != "append":
        ds["facets"]["lifecycleStateChange"] = facets.lifecycle_facet("OVERWRITE")
    return ds


def deleted(
    snap: Snapshot,
    result: _native.DeleteResult,
    filter_sql: str,
    settings: Settings,
    *,
    truncated: bool,
) -> dict[str, Any]:
    """The output dataset of a delete (``snap``: the namespace after it); ``truncated`` when
    it left the namespace without rows."""
    ds = namespace_dataset(snap, with_version=False)
    ds["facets"]["version"] = facets.version_facet(result.manifest_version)
    limit = max(settings.max_partitions, settings.max_locations)
    parts = _touched(result.touched, limit)
    cond = _condition(snap.root, parts, len(result.touched), filter_sql, snap.schema, settings)
    out: dict[str, Any] = {}
    if cond is not None:
        out["subset"] = facets.subset_facet(cond, output=True)
    ds["outputFacets"] = out
    if truncated:
        ds["facets"]["lifecycleStateChange"] = facets.lifecycle_facet("TRUNCATE")
    return ds


def merged(snap: Snapshot, result: _native.MergeResult, settings: Settings) -> dict[str, Any]:
    """The output dataset of a row-level change (merge, update, apply_changes; ``snap``: the
    namespace after it): the rows it wrote (inserted and updated) and the partitions it
    changed."""
    ds = namespace_dataset(snap, with_version=False)
    ds["facets"]["version"] = facets.version_facet(result.manifest_version)
    limit = max(settings.max_partitions, settings.max_locations)
    changed = [p.partition for p in result.partitions]
    parts = _touched(changed, limit)
    out: dict[str, Any] = {
        "outputStatistics": facets.statistics_facet(
            output=True, rows=result.inserted + result.updated
        )
    }
    cond = _condition(snap.root, parts, len(changed), None, snap.schema, settings)
    if cond is not None:
        out["subset"] = facets.subset_facet(cond, output=True)
    ds["outputFacets"] = out
    return ds


def _read_partitions(snap: Snapshot, table: pa.Table) -> list[Partition]:
    """(object id, location, dims) of the leaves in a ``Snapshot.partitions`` table."""
    specs = snap.specs
    spec_ids = table["spec_id"].to_pylist()
    ids = table["object_id"].to_pylist()
    locations = table["location"].to_pylist()
    texts: dict[str, list[str | None]] = {}
    for spec in specs.values():
        for f in spec.get("fields", []):
            fid = f["field_id"]
            if fid not in texts and fid in table.column_names:
                texts[fid] = to_strings(table[fid].combine_chunks()).to_pylist()
    out: list[Partition] = []
    for i, (oid, loc, sid) in enumerate(zip(ids, locations, spec_ids, strict=True)):
        fields = specs.get(int(sid or 0), {}).get("fields", [])
        dims = {f["field_id"]: texts[f["field_id"]][i] for f in fields if f["field_id"] in texts}
        out.append((str(oid), str(loc), dims))
    return out


def read(
    snap: Snapshot,
    filter: Filter,
    settings: Settings,
) -> dict[str, Any]:
    """The input dataset of a scan at ``snap`` with ``filter`` (the subset condition is
    derived from SQL filters)."""
    ds = namespace_dataset(snap)
    table = snap.partitions(filter, with_rows=False)
    filter_sql = filter if isinstance(filter, str) else None
    limit = max(settings.max_partitions, settings.max_locations)
    parts = _read_partitions(snap, table) if table.num_rows <= limit else None
    cond = _condition(snap.root, parts, table.num_rows, filter_sql, snap.schema, settings)
    if cond is not None:
        ds["inputFacets"] = {"subset": facets.subset_facet(cond, output=False)}
    return ds
