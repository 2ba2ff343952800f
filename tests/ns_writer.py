"""Subprocess entry point for the reliability tests: appends rounds of rows to a namespace.

python ns_writer.py ROOT START ROWS ROUNDS COUNTRY_SET
"""

from __future__ import annotations

import sys

import pyarrow as pa

import lance_partitioned as lp


def main() -> None:
    root, start, rows, rounds, countries = sys.argv[1:6]
    ns = lp.PartitionedNamespace.open(root)
    cs = countries.split(",")
    next_id = int(start)
    for _ in range(int(rounds)):
        ids = list(range(next_id, next_id + int(rows)))
        next_id += int(rows)
        ns.write(
            pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "country": pa.array([cs[i % len(cs)] for i in ids]),
                    "bucket_src": pa.array([i % 3 for i in ids], pa.int64()),
                }
            )
        )
    print("done", flush=True)


if __name__ == "__main__":
    main()
