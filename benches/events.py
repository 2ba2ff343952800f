"""The synthetic events table the local benches share, generated once per size and cached.

``id`` (int64, scattered), ``country`` (utf8, 50 values), ``ts`` (timestamp[us]) and ``city``
(utf8 of 10-20 bytes, 100k values), partitioned by identity(country) and bucket(city, 16):
~800 partitions. Each measured cell runs in its own process (``cells.py``), so the table is
kept as an Arrow IPC file under the cache directory and read by every cell instead of regenerated.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import lance_partitioned as lp
from lance_partitioned import kernels

CACHE = Path.home() / ".cache" / "lance-partitioned" / "bench-data"

SPEC = lp.PartitionSpec(
    [
        lp.PartitionField("country", source="country", transform=lp.Identity()),
        lp.PartitionField("city_bucket", source=["city"], transform=lp.Bucket(16)),
    ]
)


def gen_strings(n: int, distinct: int, seed: int) -> pa.Array:
    pool = [f"v{seed}-{i:09d}-{'x' * (i % 8)}"[: 10 + (i * 7) % 11] for i in range(distinct)]
    idx = (np.arange(n, dtype=np.uint64) * np.uint64(2654435761) + np.uint64(seed)) % distinct
    return pa.array(pool, pa.string()).take(pa.array(idx.astype(np.int64)))


def make_table(n: int) -> pa.Table:
    # Wrapping 64-bit multiply, then the low 63 bits: scattered non-negative ids.
    scattered = np.arange(n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    ints = pa.array((scattered & np.uint64(0x7FFFFFFFFFFFFFFF)).astype(np.int64))
    return pa.table(
        {
            "id": ints,
            "country": gen_strings(n, 50, 3),
            "ts": pc.cast(pc.divide(ints, 1_000_000), pa.timestamp("us")),
            "city": gen_strings(n, 100_000, 5),
        }
    )


def events(n: int) -> pa.Table:
    """The table of ``n`` rows as one chunk, read from the cache into memory (written on
    first use, atomically, so concurrent cells never read a half-written file). Read, not
    memory-mapped: a mapped input would be paged in by the first timed call."""
    path = CACHE / f"events-{n}.arrow"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        table = make_table(n).combine_chunks()
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
            w.write_table(table, max_chunksize=n)
        tmp.rename(path)
    with pa.OSFile(str(path)) as source:
        return pa.ipc.open_file(source).read_all()


def routed(table: pa.Table) -> list[pa.RecordBatch]:
    """The table split into one batch per partition of ``SPEC`` (our kernels), for the peers
    that write one dataset per partition."""
    keys = pa.record_batch(
        {
            "country": table["country"].combine_chunks(),
            "b": kernels.bucket(table["city"].combine_chunks(), 16),
        }
    )
    return list(kernels.route(table.combine_chunks().to_batches()[0], keys).batches)
