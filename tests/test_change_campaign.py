"""Real processes racing every kind of change on one namespace, on local disk and on the S3
server: two append, one changes the schema, two evolve the spec, one deletes, and (in the
maintenance campaign) optimize, expire and cleanup loop in this process. Afterwards no row is
lost or doubled (the expected ids come from what each process reports it committed), every
partition holds only rows of its values, every kept manifest version reads, and every failure
was one of our exception types (tests/change_worker.py)."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_partitioned as lp

WORKER = str(Path(__file__).parent / "change_worker.py")
PRE = 900_000  # ids written before the race; the deleter removes chunks of them


def start(root: str, options: dict[str, str] | None) -> lp.PartitionedNamespace:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("country", pa.string()),
            pa.field("v", pa.int64()),
        ]
    )
    spec = lp.PartitionSpec(
        [lp.PartitionField("country", source="country", transform=lp.Identity())]
    )
    ns = lp.PartitionedNamespace.create(root, schema, spec, storage_options=options)
    ids = list(range(PRE, PRE + 2000))
    ns.write(
        pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "country": pa.array([["US", "FR", "DE", "JP"][i % 4] for i in ids]),
                "v": pa.array([i * 7 for i in ids], pa.int64()),
            }
        )
    )
    return ns


def spawn(
    root: str, role: str, tag: int, rounds: int, options: dict[str, str] | None
) -> subprocess.Popen[str]:
    env = dict(os.environ, LP_STORAGE_OPTIONS=json.dumps(options))
    return subprocess.Popen(
        [sys.executable, WORKER, root, role, str(tag), str(rounds)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def collect(procs: list[subprocess.Popen[str]]) -> list[str]:
    lines: list[str] = []
    for p in procs:
        out, err = p.communicate(timeout=1800)
        assert p.returncode == 0, err
        assert "panic" not in err.lower(), err
        lines += out.splitlines()
    return lines


def check(ns: lp.PartitionedNamespace, lines: list[str]) -> dict[str, int]:
    expected = set(range(PRE, PRE + 2000))
    counts: Counter[str] = Counter()
    for line in lines:
        op, *args = line.split()
        counts[op] += 1
        if op == "append":
            expected |= set(range(int(args[0]), int(args[0]) + int(args[1])))
        elif op == "delete":
            expected -= set(range(int(args[0]), int(args[0]) + int(args[1])))
        elif op == "FAIL":
            assert args[0].rstrip(":") in {"CommitConflictError"}, line
    ns.refresh()
    ids = ns.to_table(columns=["id"])["id"].to_pylist()
    doubled = [k for k, c in Counter(ids).items() if c > 1]
    assert not doubled, f"rows stored twice: {doubled[:10]}"
    assert set(ids) == expected, (len(set(ids) - expected), len(expected - set(ids)))
    # every partition holds only rows of its values
    table = ns.to_table(columns=["id", "country"])
    for country in ("US", "FR", "DE", "JP"):
        part = ns.to_table("country = '" + country + "'", columns=["id", "country"])
        assert pc.all(pc.equal(part["country"], country)).as_py()
        want = table.filter(pc.equal(table["country"], country)).num_rows
        assert part.num_rows == want
    # every kept manifest version reads
    for entry in ns.history().to_pylist():
        if entry["operation"] != "create_namespace":  # before the first spec property
            ns.to_table(columns=["id"], as_of=entry["version"])
    # the specs and columns the workers reported all landed
    evolved = [line for line in lines if line.startswith("evolve ")]
    assert len(ns.specs) == 1 + len(evolved)
    assert len({line.split()[1] for line in evolved}) == len(evolved), "a spec id given twice"
    names = set(ns.schema.names)
    for line in lines:
        op, *args = line.split()
        if op == "add" and not any(f"{x} {args[0]}" in lines for x in ("drop", "rename")):
            assert args[0] in names, f"column {args[0]} lost"
        if op == "rename":
            assert f"{args[0]}_r" in names
        if op == "drop":
            assert args[0] not in names
    return dict(counts)


def race(root: str, options: dict[str, str] | None, rounds: int) -> dict[str, int]:
    ns = start(root, options)
    procs = [
        spawn(root, "append", 1, rounds, options),
        spawn(root, "append", 2, rounds, options),
        spawn(root, "schema", 3, rounds, options),
        spawn(root, "evolve", 4, max(2, rounds // 3), options),
        spawn(root, "evolve", 5, max(2, rounds // 3), options),
        spawn(root, "delete", 0, rounds, options),
    ]
    return check(ns, collect(procs))


@pytest.mark.slow
def test_changes_race_on_local_disk(tmp_path: Path) -> None:
    counts = race(str(tmp_path / "ns"), None, 12)
    assert counts["append"] > 0
    assert counts["add"] > 0
    assert counts["evolve"] > 0


@pytest.mark.slow
@pytest.mark.s3
def test_changes_race_on_the_s3_server(s3_uri: tuple[str, dict[str, str]]) -> None:
    uri, options = s3_uri
    counts = race(uri, options, 6)
    assert counts["append"] > 0
    assert counts["add"] > 0
    assert counts["evolve"] > 0


def maintain(ns: lp.PartitionedNamespace, procs: list[subprocess.Popen[str]]) -> Counter[str]:
    """optimize, expire and cleanup (no grace period, the floor overridden) in a loop while
    the processes run; every failure must be typed."""
    done: Counter[str] = Counter()
    ops: list[tuple[str, Any]] = [
        ("optimize", lambda: ns.optimize(min_files=2)),
        ("expire", lambda: ns.expire(retain_versions=5)),
        ("cleanup", lambda: ns.cleanup(older_than=dt.timedelta(0), retention_check=False)),
    ]
    k = 0
    while any(p.poll() is None for p in procs):
        name, op = ops[k % len(ops)]
        k += 1
        try:
            op()
            done[name] += 1
        except lp.CommitConflictError:
            done[name + " conflict"] += 1
        ns.refresh()
    return done


def maintenance_race(root: str, options: dict[str, str] | None, rounds: int) -> dict[str, int]:
    ns = start(root, options)
    procs = [
        spawn(root, "append", 1, rounds, options),
        spawn(root, "distributed", 2, rounds, options),
        spawn(root, "delete", 0, rounds, options),
        spawn(root, "reader", 0, rounds, options),
    ]
    done = maintain(ns, procs)
    counts = check(ns, collect(procs))
    assert done["optimize"] + done["expire"] + done["cleanup"] > 3, done
    assert counts["append"] > 0
    assert counts["read"] > 0
    return {**counts, **done}


@pytest.mark.slow
def test_maintenance_races_writers_on_local_disk(tmp_path: Path) -> None:
    maintenance_race(str(tmp_path / "ns"), None, 15)


@pytest.mark.slow
@pytest.mark.s3
def test_maintenance_races_writers_on_the_s3_server(s3_uri: tuple[str, dict[str, str]]) -> None:
    uri, options = s3_uri
    maintenance_race(uri, options, 6)


if __name__ == "__main__":
    # The same campaigns at a larger scale, on local disk:
    # python tests/test_change_campaign.py ROUNDS
    import tempfile
    import time

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    with tempfile.TemporaryDirectory() as d:
        for name, run in (("race", race), ("maintenance", maintenance_race)):
            t0 = time.time()
            counts = run(f"{d}/{name}", None, n)
            print(f"{name}: {n} rounds, {time.time() - t0:.0f} s: {counts}", flush=True)
