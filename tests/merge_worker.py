"""Subprocess entry point of the merge races (tests/test_merge_races.py): one role racing the
others on one namespace, ROUNDS times.

python merge_worker.py ROOT ROLE TAG ROUNDS

Roles: ``increment`` (a merge adding 1 to ``qty`` of ids 0..19, the same rows every round;
``weak_increment`` the same in a weak-mode namespace, printing the partitions a
``PartialCommitError`` names as a JSON list after a 0),
``upsert`` (a merge inserting ids TAG*1000 + round*10 .. +9 and updating ids 0..4's ``note``),
``append`` (10 new rows with ids from TAG * 100_000), ``optimize``, ``update`` (``update``
adding 1 to ``qty`` of ids 0..19). Prints one line per committed operation (role, round,
runs of the merge); storage options come as JSON in ``LP_STORAGE_OPTIONS``.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import pyarrow as pa

import lance_partitioned as lp

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("qty", pa.int64()),
        pa.field("note", pa.string()),
    ]
)


def main() -> None:
    root, role, tag, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    options = json.loads(os.environ.get("LP_STORAGE_OPTIONS", "{}"))
    ns = lp.PartitionedNamespace.open(root, storage_options=options)
    wait_for_the_others(tag)
    for r in range(rounds):
        res: lp.MergeResult | None = None
        if role == "increment":
            src = pa.table({"id": pa.array(range(20), pa.int64()), "qty": pa.array([1] * 20)})
            res = (
                ns.merge_insert("id")
                .when_matched_update({"qty": "target.qty + source.qty"})
                .execute(src, max_attempts=1000)
            )
            assert res.updated == 20, res
        elif role == "weak_increment":
            # Weak mode: a merge that fails after some partitions committed says which.
            src = pa.table({"id": pa.array(range(20), pa.int64()), "qty": pa.array([1] * 20)})
            try:
                res = (
                    ns.merge_insert("id")
                    .when_matched_update({"qty": "target.qty + source.qty"})
                    .execute(src, max_attempts=1000)
                )
            except lp.PartialCommitError as e:
                visible = sorted(
                    re.findall(
                        r'b="(\d+)"', str(e).split("whole change: ")[1].split("; its other")[0]
                    )
                )
                print(role, r, 0, json.dumps(visible), flush=True)
                continue
            assert res.updated == 20, res
        elif role == "update":
            res = ns.update({"qty": "qty + 1"}, where="id < 20", max_attempts=1000)
            assert res.updated == 20, res
        elif role == "upsert":
            ids = list(range(tag * 1000 + r * 10, tag * 1000 + r * 10 + 10)) + list(range(5))
            src = pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "qty": pa.array([0] * 15, pa.int64()),
                    "note": [f"{tag}-{r}"] * 15,
                }
            )
            res = (
                ns.merge_insert("id")
                .when_matched_update({"note": "source.note"})
                .when_not_matched_insert_all()
                .execute(src, max_attempts=1000)
            )
            assert (res.inserted, res.updated) == (10, 5), res
        elif role == "append":
            start = tag * 100_000 + r * 10
            ids = list(range(start, start + 10))
            ns.write(
                pa.table(
                    {"id": pa.array(ids, pa.int64()), "qty": [0] * 10, "note": ["a"] * 10},
                    schema=SCHEMA,
                )
            )
        elif role == "optimize":
            ns.optimize(min_files=2)
        else:
            raise SystemExit(f"unknown role {role}")
        attempts = res.attempts if res is not None else 1
        print(role, r, attempts, flush=True)


def wait_for_the_others(tag: int) -> None:
    """The start barrier of ``LP_RACE_BARRIER`` (``DIR:PARTIES``): announces this worker in DIR
    and waits until all PARTIES have, so the rounds of every worker overlap."""
    spec = os.environ.get("LP_RACE_BARRIER")
    if not spec:
        return
    folder, parties = spec.rsplit(":", 1)
    Path(folder, str(tag)).touch()
    deadline = time.monotonic() + 120
    while len(os.listdir(folder)) < int(parties):
        if time.monotonic() > deadline:
            raise SystemExit(f"the other workers did not start: {os.listdir(folder)}")
        time.sleep(0.005)


if __name__ == "__main__":
    main()
