"""Subprocess entry point of the change campaign (tests/test_change_campaign.py): one role
racing the others on one namespace, printing one line per operation it committed, and
``FAIL <exception class>`` for each typed failure. Any other exception ends the process with
a traceback (the test fails on it).

python change_worker.py ROOT ROLE TAG ROUNDS

Roles: ``append`` (rounds of 50 rows with ids from TAG * 1_000_000), ``distributed`` (the
same as a distributed write of two staged parts), ``reader`` (reads the newest manifest
versions ``as_of``; a version expired meanwhile is skipped), ``schema`` (adds a
column ``TAG_<i>`` each round, renames every third, drops every fourth), ``evolve`` (a new
spec version each round: identity country plus bucket(id, n) with a new n), ``delete`` (each
round deletes a chunk of 10 pre-written ids from 900_000). Storage options come as JSON in
``LP_STORAGE_OPTIONS``.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

import pyarrow as pa

import lance_partitioned as lp

COUNTRIES = ["US", "FR", "DE", "JP"]


def rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "country": pa.array([COUNTRIES[i % 4] for i in ids]),
            "v": pa.array([i * 7 for i in ids], pa.int64()),
        }
    )


def main() -> None:
    root, role, tag, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    options = json.loads(os.environ.get("LP_STORAGE_OPTIONS", "null"))
    ns = lp.PartitionedNamespace.open(root, storage_options=options)
    for i in range(rounds):
        try:
            if role == "append":
                start = tag * 1_000_000 + i * 50
                ns.write(rows(start, 50))
                print(f"append {start} 50", flush=True)
            elif role == "schema":
                name = f"s{tag}_{i}"
                ns.add_columns([pa.field(name, pa.int64())])
                print(f"add {name}", flush=True)
                if i % 3 == 2:
                    ns.rename_column(name, f"{name}_r")
                    print(f"rename {name}", flush=True)
                elif i % 4 == 3:
                    ns.drop_columns(name)
                    print(f"drop {name}", flush=True)
            elif role == "evolve":
                spec = lp.PartitionSpec(
                    [
                        lp.PartitionField("country", source="country", transform=lp.Identity()),
                        lp.PartitionField(
                            f"b{tag}_{i}", source="id", transform=lp.Bucket(2 + tag * 100 + i)
                        ),
                    ]
                )
                print(f"evolve {ns.evolve(spec)}", flush=True)
            elif role == "distributed":
                # two parts staged separately (as two tasks would), committed once
                start = tag * 1_000_000 + i * 50
                dw = ns.distributed_write()
                msgs = [dw.stage(rows(start, 25)), dw.stage(rows(start + 25, 25))]
                dw.commit(msgs)
                print(f"append {start} 50", flush=True)
            elif role == "reader":
                # every version history lists reads, or was expired meanwhile (typed)
                versions = [
                    e["version"]
                    for e in ns.history().to_pylist()
                    if e["operation"] != "create_namespace"
                ]
                for v in versions[:5]:
                    try:
                        ids = ns.to_table(columns=["id"], as_of=v)["id"].to_pylist()
                    except lp.NamespaceNotFoundError:
                        continue  # expired after history() listed it
                    assert len(ids) == len(set(ids)), f"version {v} holds a row twice"
                print(f"read {len(versions)}", flush=True)
            elif role == "delete":
                lo = 900_000 + (tag * rounds + i) * 10
                ns.delete(f"id >= {lo} AND id < {lo + 10}")
                print(f"delete {lo} 10", flush=True)
            else:
                raise SystemExit(f"unknown role {role}")
        except lp.LancePartitionedError as e:
            if isinstance(e, lp.InternalError):
                raise
            print(f"FAIL {type(e).__name__}: {role}: {str(e)[:200]}", flush=True)
            traceback.print_exc()
            ns.refresh()


if __name__ == "__main__":
    main()
