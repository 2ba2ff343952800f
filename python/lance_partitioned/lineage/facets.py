"""OpenLineage facets as JSON-ready dicts: what a namespace is (``partitions``, ``schema``,
``version``) and what an operation read or wrote (``subset``, statistics, lifecycle).

Partition values appear in their string form (:func:`lance_partitioned.values.to_string`;
``None``, JSON null, for NULL and empty values). The subset condition follows the hierarchy of
the partitioning proposal: the partitions themselves when there are at most
``max_partitions``; else their locations when at most ``max_locations``; else the logical
condition of the filter where it maps to one; else no subset facet (the adopted
``BaseSubsetDatasetFacet`` 1-0-0 has no description condition).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

import pyarrow as pa

from lance_partitioned._native import __version__
from lance_partitioned.spec import source_fields

__all__ = [
    "OPENLINEAGE_SPEC",
    "PARTITIONS_SCHEMA_URL",
    "PRODUCER",
    "error_facet",
    "lifecycle_facet",
    "partition_condition",
    "partitions_facet",
    "partitions_schema",
    "schema_facet",
    "statistics_facet",
    "subset_facet",
    "version_facet",
]

PROJECT_URL = "https://example.invalid/lance-partitioned"
"""Where the project lives; the producer URI and our facet's schema URL are under it."""
PRODUCER = f"{PROJECT_URL}/tree/v{__version__}"
OPENLINEAGE_SPEC = "https://openlineage.io/spec/2-0-2/OpenLineage.json"
PARTITIONS_SCHEMA_URL = (
    f"{PROJECT_URL}/spec/facets/1-0-0/PartitionDatasetFacet.json#/$defs/PartitionDatasetFacet"
)
_FACETS = "https://openlineage.io/spec/facets"
_SUBSET = f"{_FACETS}/1-0-0/BaseSubsetDatasetFacet.json#/$defs"


def partitions_schema() -> dict[str, Any]:
    """The JSON schema of the ``partitions`` facet (shipped with the package)."""
    import json

    text = resources.files(__package__).joinpath("schemas/PartitionDatasetFacet.json")
    loaded: dict[str, Any] = json.loads(text.read_text(encoding="utf-8"))
    return loaded


def _facet(schema_url: str, **fields: Any) -> dict[str, Any]:
    return {"_producer": PRODUCER, "_schemaURL": schema_url, **fields}


def _transform(field: Mapping[str, Any]) -> str:
    t = field.get("transform")
    if t is None:
        return str(field.get("expression", ""))
    kind = str(t.get("type"))
    if kind == "bucket" or kind == "multi_bucket":
        return f"{kind}({t['num_buckets']})"
    if kind == "truncate":
        return f"truncate({t['width']})"
    return kind


def _clause_item(field: Mapping[str, Any], sources: list[str]) -> str:
    t = field.get("transform")
    if t is None:
        return f"({field.get('expression', '')})"
    kind = str(t.get("type"))
    if kind == "identity":
        return ", ".join(sources)
    args = ", ".join(sources)
    if kind in ("bucket", "multi_bucket"):
        return f"{kind}({t['num_buckets']}, {args})"
    if kind == "truncate":
        return f"truncate({t['width']}, {args})"
    return f"{kind}({args})"


def _dimensions(spec: Mapping[str, Any], names: Mapping[int, str]) -> tuple[list[Any], str]:
    dims = []
    clause = []
    for f in spec.get("fields", []):
        sources = [names.get(int(i), f"<field {i}>") for i in f.get("source_ids", [])]
        dims.append({"fields": sources, "transform": _transform(f), "name": f["field_id"]})
        clause.append(_clause_item(f, sources))
    return dims, f"PARTITIONED BY ({', '.join(clause)})"


def _names_by_id(schema: pa.Schema) -> dict[int, str]:
    """Field id -> source name (``s.city`` for a struct child)."""
    return {fid: name for name, (fid, _) in source_fields(schema).items()}


def partitions_facet(specs: Mapping[int, Mapping[str, Any]], schema: pa.Schema) -> dict[str, Any]:
    """The ``partitions`` facet: the current spec's dimensions and ``PARTITIONED BY`` clause,
    and every spec version under ``versions`` (oldest first)."""
    names = _names_by_id(schema)
    versions = []
    for spec_id in sorted(specs):
        dims, clause = _dimensions(specs[spec_id], names)
        versions.append({"specId": spec_id, "dimensions": dims, "description": clause})
    current = versions[-1] if versions else {"dimensions": [], "description": "PARTITIONED BY ()"}
    return _facet(
        PARTITIONS_SCHEMA_URL,
        dimensions=current["dimensions"],
        description=current["description"],
        versions=versions,
    )


def _schema_fields(fields: Sequence[pa.Field[Any]]) -> list[dict[str, Any]]:
    out = []
    for i, f in enumerate(fields, start=1):
        entry: dict[str, Any] = {"name": f.name, "type": str(f.type), "ordinal_position": i}
        if pa.types.is_struct(f.type):
            entry["fields"] = _schema_fields(list(f.type))
        out.append(entry)
    return out


def schema_facet(schema: pa.Schema) -> dict[str, Any]:
    """The ``schema`` facet (field names and Arrow types; struct fields nested)."""
    return _facet(
        f"{_FACETS}/1-2-0/SchemaDatasetFacet.json#/$defs/SchemaDatasetFacet",
        fields=_schema_fields(list(schema)),
    )


def version_facet(manifest_version: int) -> dict[str, Any]:
    """The ``version`` facet: the ``__manifest`` version read or committed."""
    return _facet(
        f"{_FACETS}/1-0-1/DatasetVersionDatasetFacet.json#/$defs/DatasetVersionDatasetFacet",
        datasetVersion=str(manifest_version),
    )


def lifecycle_facet(state: str) -> dict[str, Any]:
    """The ``lifecycleStateChange`` facet (``CREATE``, ``OVERWRITE``, ``TRUNCATE``, ...)."""
    return _facet(
        f"{_FACETS}/1-0-1/LifecycleStateChangeDatasetFacet.json"
        "#/$defs/LifecycleStateChangeDatasetFacet",
        lifecycleStateChange=state,
    )


def statistics_facet(
    *, output: bool, rows: int, size: int | None = None, files: int | None = None
) -> dict[str, Any]:
    """``outputStatistics`` (rows, bytes, files) or ``inputStatistics`` (rows, bytes)."""
    if output:
        url = (
            f"{_FACETS}/1-0-2/OutputStatisticsOutputDatasetFacet.json"
            "#/$defs/OutputStatisticsOutputDatasetFacet"
        )
        fields: dict[str, Any] = {"rowCount": rows, "size": size, "fileCount": files}
    else:
        url = (
            f"{_FACETS}/1-0-0/InputStatisticsInputDatasetFacet.json"
            "#/$defs/InputStatisticsInputDatasetFacet"
        )
        fields = {"rowCount": rows, "size": size}
    return _facet(url, **{k: v for k, v in fields.items() if v is not None})


def error_facet(error: BaseException) -> dict[str, Any]:
    """The ``errorMessage`` run facet of a failed operation."""
    return _facet(
        f"{_FACETS}/1-0-1/ErrorMessageRunFacet.json#/$defs/ErrorMessageRunFacet",
        message=f"{type(error).__name__}: {error}",
        programmingLanguage="PYTHON",
    )


def partition_condition(
    partitions: Sequence[tuple[str, Mapping[str, str | None]]],
) -> dict[str, Any]:
    """A ``PartitionSubsetCondition``: (leaf object id, field -> string form) per partition."""
    return {
        "type": "partition",
        "partitions": [{"identifier": oid, "dimensions": dict(dims)} for oid, dims in partitions],
    }


def subset_facet(condition: Mapping[str, Any], *, output: bool) -> dict[str, Any]:
    """The ``subset`` input or output facet holding ``condition``."""
    if output:
        return _facet(f"{_SUBSET}/OutputSubsetOutputDatasetFacet", outputCondition=condition)
    return _facet(f"{_SUBSET}/InputSubsetInputDatasetFacet", inputCondition=condition)
