"""Subprocess entry point for the reliability tests: appends rounds of rows to a namespace.

python ns_writer.py ROOT START ROWS ROUNDS COUNTRY_SET

Storage options (object-store namespaces) come as JSON in ``LP_STORAGE_OPTIONS`` (never on the
command line, where other users' ``ps`` would show the secrets).
"""

from __future__ import annotations

import json
import os
import sys

import pyarrow as pa

import lance_partitioned as lp


def main() -> None:
    root, start, rows, rounds, countries = sys.argv[1:6]
    options = json.loads(os.environ.get("LP_STORAGE_OPTIONS", "null"))
    ns = lp.PartitionedNamespace.open(root, storage_options=options)
    cs = countries.split(",")
    next_id = int(start)
    for _ in range(int(rounds)):
        ids = list(range(next_id, next_id + int(rows)))
        next_id += int(rows)
        res = ns.write(
            pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "country": pa.array([cs[i % len(cs)] for i in ids]),
                    "bucket_src": pa.array([i % 3 for i in ids], pa.int64()),
                }
            )
        )
        print(
            f"wrote attempts={res.attempts} rebased={res.rebased} adopted={res.adopted}", flush=True
        )
    print("done", flush=True)


if __name__ == "__main__":
    main()
