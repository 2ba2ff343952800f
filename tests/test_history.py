"""`history()`: one row per manifest version, newest first, with what its commit did."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
from races import make_ns

import lance_partitioned as lp


def rows(start: int, n: int, countries: str) -> pa.Table:
    cs = countries.split(",")
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "country": pa.array([cs[i % len(cs)] for i in ids]),
            "bucket_src": pa.array([0] * n, pa.int64()),
        }
    )


def test_history_names_every_commit(tmp_path: Path) -> None:
    ns = make_ns(tmp_path / "ns")
    ns.write(rows(0, 100, "US,FR"))  # creates 2 partitions
    ns.write(rows(100, 60, "US,FR,DE"))  # appends to 2, creates 1
    ns.delete("id % 10 = 0 AND country = 'US'")  # rows inside the US partition
    ns.delete("country = 'DE'")  # drops DE whole
    ns.optimize()
    ns.add_columns([pa.field("extra", pa.int32())])
    ns.evolve(
        lp.PartitionSpec([lp.PartitionField("country", source="country", transform=lp.Identity())])
    )
    h = ns.history()
    assert h.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    versions = h["version"].to_pylist()
    assert versions == sorted(versions, reverse=True)
    assert versions[0] == ns.version
    got = list(
        zip(
            h["operation"].to_pylist(),
            h["partitions"].to_pylist(),
            h["rows"].to_pylist(),
            strict=True,
        )
    )
    us_deleted = len([i for i in range(160) if i % 10 == 0 and i % 2 == 0 and i < 100]) + len(
        [i for i in range(100, 160) if i % 10 == 0 and ["US", "FR", "DE"][i % 3] == "US"]
    )
    assert got[:8] == [
        ("evolve", 0, None),  # the spec version
        ("evolve_prepare", 0, None),  # its row in the manifest, before
        ("schema", 0, None),
        ("compact", 2, 160 - 20 - us_deleted),
        ("drop", 1, None),
        ("delete", 1, us_deleted),
        ("append", 3, 60),  # 2 partitions appended to, 1 created
        ("append", 2, 100),  # the first write creates its partitions
    ]
    assert all(op == "create_namespace" for op, _, _ in got[8:])
    assert h["timestamp"].to_pylist() == sorted(h["timestamp"].to_pylist(), reverse=True)
    assert ns.history(limit=2)["version"].to_pylist() == versions[:2]
    ns.expire(retain_versions=3)
    # The oldest kept version lost its predecessor: its own transaction names it.
    assert ns.history()["operation"].to_pylist() == ["evolve", "evolve_prepare", "schema"]


def test_the_oldest_version_kept_by_expire_still_says_what_it_did(tmp_path: Path) -> None:
    """After every step the namespace keeps only its latest version: history() must still
    name what that commit did (expected values from the step itself, not from history())."""
    ns = make_ns(tmp_path / "ns")
    us_deleted = len([i for i in range(100) if i % 10 == 0 and i % 2 == 0]) + len(
        [i for i in range(100, 160) if i % 10 == 0 and i % 3 == 0]
    )
    steps: list[tuple[Callable[[], object], tuple[str, int | None, int | None]]] = [
        (lambda: ns.write(rows(0, 100, "US,FR")), ("append", 2, 100)),
        (lambda: ns.write(rows(100, 60, "US,FR,DE")), ("append", 3, 60)),
        (lambda: ns.delete("id % 10 = 0 AND country = 'US'"), ("delete", 1, us_deleted)),
        (lambda: ns.optimize(), ("compact", None, None)),
        (lambda: ns.write(rows(0, 10, "DE"), mode="overwrite"), ("overwrite", None, 10)),
        (lambda: ns.add_columns([pa.field("extra", pa.int32())]), ("schema", 0, None)),
    ]
    for step, (op, partitions, n) in steps:
        step()
        ns.expire(retain_versions=1)
        h = ns.history()
        assert h.num_rows == 1, h.to_pylist()
        assert h["operation"][0].as_py() == op, (op, h.to_pylist())
        if partitions is not None:
            assert h["partitions"][0].as_py() == partitions, (op, h.to_pylist())
        if n is not None:
            assert h["rows"][0].as_py() == n, (op, h.to_pylist())
