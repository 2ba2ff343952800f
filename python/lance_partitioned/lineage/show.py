"""A compact, human-readable form of lineage events (one line per event, then a few lines per
dataset), for terminals and the demo."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["compact", "read_events"]


def read_events(path: str | Path) -> list[dict[str, Any]]:
    """The events a file transport wrote to ``path`` (one JSON event per line)."""
    text = Path(path).read_text(encoding="utf-8") if Path(path).exists() else ""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _condition(cond: dict[str, Any], shown: int, order: list[str]) -> str:
    kind = cond.get("type")
    if kind == "partition":
        parts = cond.get("partitions", [])
        if not parts:
            return "no partition (nothing written)"
        rank = {name: i for i, name in enumerate(order)}
        dims = [
            "/".join(
                f"{k}={v}"
                for k, v in sorted(
                    p.get("dimensions", {}).items(), key=lambda kv: rank.get(kv[0], len(rank))
                )
            )
            for p in parts[:shown]
        ]
        more = f" (+{len(parts) - shown} more)" if len(parts) > shown else ""
        return f"{len(parts)} partition(s): {', '.join(dims)}{more}"
    if kind == "location":
        locs = cond.get("locations", [])
        return f"{len(locs)} location(s)"
    return f"condition {json.dumps(cond, separators=(',', ':'))[:160]}"


def _dataset(ds: dict[str, Any], role: str, shown: int) -> list[str]:
    facets = ds.get("facets", {})
    version = facets.get("version", {}).get("datasetVersion")
    head = f"  {role} {ds['namespace']}:{ds['name']}" + (f" @v{version}" if version else "")
    lines = [head]
    part = facets.get("partitions") or {}
    order: list[str] = []
    for version in part.get("versions", []):
        order.extend(d["name"] for d in version.get("dimensions", []) if d.get("name") not in order)
    if part:
        lines.append(f"    {part.get('description', '')}")
    life = facets.get("lifecycleStateChange")
    if life:
        lines.append(f"    lifecycle: {life['lifecycleStateChange']}")
    extra = ds.get("outputFacets" if role == "output" else "inputFacets", {})
    stats = extra.get("outputStatistics") or extra.get("inputStatistics")
    if stats:
        lines.append(
            f"    {stats.get('rowCount', 0):,} rows, {stats.get('size', 0):,} bytes"
            + (f", {stats['fileCount']} files" if "fileCount" in stats else "")
        )
    subset = extra.get("subset")
    if subset:
        cond = subset.get("outputCondition") or subset.get("inputCondition") or {}
        lines.append(f"    subset: {_condition(cond, shown, order)}")
    else:
        lines.append(f"    subset: (none: {_no_subset(life, stats)})")
    return lines


def _no_subset(life: dict[str, Any] | None, stats: dict[str, Any] | None) -> str:
    """Why a dataset has no subset facet."""
    if life and life.get("lifecycleStateChange") == "CREATE":
        return "a new namespace holds no partitions"
    return "too many partitions and no filter condition"


def compact(events: Iterable[dict[str, Any]], *, shown: int = 3) -> list[str]:
    """Lines describing ``events``: type, job and run, then each dataset briefly."""
    out = []
    for e in events:
        job = e["job"]
        out.append(
            f"{e['eventType']:<8} {job['namespace']}/{job['name']} run …{e['run']['runId'][-8:]}"
        )
        if e["eventType"] == "START":
            continue
        for ds in e.get("inputs", []):
            out.extend(_dataset(ds, "input", shown))
        for ds in e.get("outputs", []):
            out.extend(_dataset(ds, "output", shown))
        error = e["run"].get("facets", {}).get("errorMessage")
        if error:
            out.append(f"  error: {error['message']}")
    return out
