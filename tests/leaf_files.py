"""What a namespace holds, read past our API: every data file's rows as pylance reads each
fragment at the version the manifest names, and the ``id`` column's values; shared by the
sort order tests."""

from __future__ import annotations

import random

import lance
import pyarrow as pa

import lance_partitioned as lp


def shuffled(start: int, n: int, seed: int = 1) -> list[int]:
    """``start .. start + n`` in a random order fixed by ``seed``."""
    ids = list(range(start, start + n))
    random.Random(seed).shuffle(ids)
    return ids


def files(ns: lp.PartitionedNamespace) -> list[pa.Table]:
    """Every data file's rows, as pylance reads each fragment at the manifest's version."""
    out = []
    for p in ns.partitions(with_rows=False).to_pylist():
        ds = lance.dataset(f"{ns.root}/{p['location']}", version=p["read_version"])
        out += [f.to_table() for f in ds.get_fragments()]
    return out


def content(ns: lp.PartitionedNamespace) -> list[int]:
    """The ``id`` values the namespace holds, sorted."""
    return sorted(ns.to_table(columns=["id"])["id"].to_pylist())
