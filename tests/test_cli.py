"""The ``lance-partitioned`` command line, run as a subprocess (``python -m
lance_partitioned.cli``) on real namespaces: what each command prints (text and ``--json``)
checked against the Python API, one-line errors with exit code 2, the skew statistics, the PNG
histogram, and ``write(progress=True)``."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math
import os
import shutil
import statistics
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import lance_partitioned as lp
from lance_partitioned.cli import main
from lance_partitioned.cli.params import parse_duration
from lance_partitioned.cli.skew import bar, extremes
from lance_partitioned.cli.skew_stats import gini, max_median_ratio, summarize
from lance_partitioned.cli.tree import build
from lance_partitioned.progress import WriteProgress

COUNTRIES = ["US", "FR", "DE", "JP"]

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("day", pa.date32()),
        pa.field("country", pa.string()),
        pa.field("loc", pa.struct([pa.field("city", pa.string()), pa.field("zip", pa.int32())])),
        pa.field("amount", pa.float64()),
    ]
)
SPEC = lp.PartitionSpec(
    [
        lp.PartitionField("year", source="day", transform=lp.Year()),
        lp.PartitionField("country", source="country", transform=lp.Identity()),
    ]
)
EVOLVED = lp.PartitionSpec(
    [*SPEC.fields, lp.PartitionField("bucket", source="id", transform=lp.Bucket(4))]
)


def rows(n: int, start: int = 0) -> pa.Table:
    ids = range(start, start + n)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "day": pa.array(
                [dt.date(2024 + i % 2, 1 + i % 12, 1 + i % 28) for i in ids], pa.date32()
            ),
            # skewed: US gets half of the rows
            "country": [COUNTRIES[0] if i % 2 == 0 else COUNTRIES[1 + i % 3] for i in ids],
            "loc": [{"city": f"city-{i % 7}", "zip": 10_000 + i} for i in ids],
            "amount": [i * 0.25 for i in ids],
        },
        schema=SCHEMA,
    )


def make_namespace(root: Path) -> lp.PartitionedNamespace:
    """Two spec versions: 3000 rows under year/country, 600 more under year/country/bucket."""
    ns = lp.PartitionedNamespace.create(str(root), SCHEMA, SPEC)
    ns.write(rows(3000))
    ns.evolve(EVOLVED)
    ns.write(rows(600, start=3000))
    return ns


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> lp.PartitionedNamespace:
    """A namespace the read-only tests share."""
    return make_namespace(tmp_path_factory.mktemp("cli") / "events")


@pytest.fixture
def fresh(tmp_path: Path) -> lp.PartitionedNamespace:
    """A namespace of its own (for commands that change it)."""
    return make_namespace(tmp_path / "events")


def run(*args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.run(
        [sys.executable, "-m", "lance_partitioned.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def run_json(*args: str) -> Any:
    proc = run(*args, "--json")
    return json.loads(proc.stdout)  # stdout holds the JSON document and nothing else


def totals(stats: pa.Table) -> dict[str, int]:
    return {
        "partitions": stats.num_rows,
        "rows": pc.sum(stats["rows"]).as_py() or 0,
        "files": pc.sum(stats["files"]).as_py() or 0,
        "bytes": pc.sum(stats["bytes"]).as_py() or 0,
    }


# -- info -------------------------------------------------------------------------------------


def test_info_shows_field_ids_specs_and_totals(shared: lp.PartitionedNamespace) -> None:
    out = run("info", shared.root).stdout
    ids = {
        f.name: int(f.metadata[b"lance:field_id"]) for f in shared.schema if f.metadata is not None
    }
    lines = out.splitlines()
    for name, fid in ids.items():
        assert any(_cells(line)[:2] == [str(fid), name] for line in lines), out
    loc = shared.schema.field("loc").type
    for child in loc.fields:
        fid = int(child.metadata[b"lance:field_id"])
        assert any(_cells(line)[:2] == [str(fid), f"└ {child.name}"] for line in lines), out
    assert "v2 (current)" in out
    assert "year(day)" in out
    assert "identity(country)" in out
    assert "bucket(id, 4)" in out
    t = totals(shared.stats())
    assert f"{t['rows']:,}" in out
    assert f"manifest version {shared.version}" in out
    assert "transaction mode strong" in out


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.split("│")[1:-1]]


def test_info_json_matches_stats(shared: lp.PartitionedNamespace) -> None:
    doc = run_json("info", shared.root)
    assert {k: doc[k] for k in ("partitions", "rows", "files", "bytes")} == totals(shared.stats())
    assert doc["rows"] == 3600
    assert doc["manifest_version"] == shared.version
    assert doc["transaction_mode"] == "strong"
    assert doc["root"] == shared.root
    by_name = {f["name"]: f for f in doc["schema"]}
    for f in shared.schema:
        assert by_name[f.name]["field_id"] == int(f.metadata[b"lance:field_id"])
    children = {c["path"]: c["field_id"] for c in by_name["loc"]["children"]}
    loc = shared.schema.field("loc").type
    assert children == {f"loc.{c.name}": int(c.metadata[b"lance:field_id"]) for c in loc.fields}
    specs = {s["spec_id"]: s for s in doc["specs"]}
    assert sorted(specs) == [1, 2]
    assert specs[2]["current"]
    assert not specs[1]["current"]
    assert [f["field_id"] for f in specs[2]["fields"]] == ["year", "country", "bucket"]
    assert specs[2]["fields"][2]["sources"] == ["id"]
    assert doc["missing_columns"] == []


# -- partitions, tree, explain ----------------------------------------------------------------


def test_partitions_filter_keeps_the_right_partitions(shared: lp.PartitionedNamespace) -> None:
    flt = "country = 'US'"
    doc = run_json("partitions", shared.root, "--filter", flt)
    expected = shared.stats(flt)
    assert len(doc["partitions"]) == doc["shown"] == expected.num_rows > 0
    assert {p["values"]["country"] for p in doc["partitions"]} == {"US"}
    assert doc["total"] == totals(expected)
    by_id = {r["object_id"]: r for r in expected.to_pylist()}
    for p in doc["partitions"]:
        row = by_id[p["object_id"]]
        assert (p["rows"], p["files"], p["bytes"]) == (row["rows"], row["files"], row["bytes"])
        assert p["values"]["year"] == row["year"]
        assert ("bucket" in p["values"]) == (p["spec_id"] == 2)
    # Text: one row per partition, only US.
    out = run("partitions", shared.root, "--filter", flt).stdout
    body = [_cells(line) for line in out.splitlines() if line.startswith("│")]
    assert len(body) == expected.num_rows
    assert {cells[2] for cells in body} == {"US"}
    assert f"{expected.num_rows} partitions" in out
    limited = run_json("partitions", shared.root, "--limit", "2", "--sort", "rows")
    assert limited["shown"] == 2
    assert limited["total"]["partitions"] == shared.stats().num_rows
    biggest = sorted(shared.stats()["rows"].to_pylist(), reverse=True)[:2]
    assert [p["rows"] for p in limited["partitions"]] == biggest


def _check_sums(node: dict[str, Any]) -> int:
    """Checks every node's rows are its children's sum; returns the leaves below."""
    kids = node.get("children", [])
    if not kids:
        assert node["partitions"] == 1
        return 1
    assert node["rows"] == sum(k["rows"] for k in kids)
    assert node["bytes"] == sum(k["bytes"] for k in kids)
    leaves = sum(_check_sums(k) for k in kids)
    assert node["partitions"] == leaves
    return leaves


def test_tree_rows_sum_up_to_the_total(shared: lp.PartitionedNamespace) -> None:
    doc = run_json("tree", shared.root)
    root = doc["tree"]
    stats = shared.stats()
    assert root["rows"] == totals(stats)["rows"] == 3600
    assert _check_sums(root) == stats.num_rows
    specs = {c["name"]: c for c in root["children"]}
    assert sorted(specs) == ["v1", "v2"]
    assert specs["v1"]["rows"] == 3000
    assert specs["v2"]["rows"] == 600
    years = [c["name"] for c in specs["v1"]["children"]]
    assert years == ["year=2024", "year=2025"]
    depth2 = specs["v2"]["children"][0]["children"][0]
    assert depth2["field"] == "country"
    assert all(k["field"] == "bucket" for k in depth2["children"])
    out = run("tree", shared.root).stdout
    assert "v1" in out
    assert "v2" in out
    assert "year=2024" in out
    assert "country=US" in out
    assert f"{3600:,} rows" in out
    capped = run("tree", shared.root, "--max-children", "1").stdout
    assert "... and 1 more" in capped  # the second year under each spec version
    assert "country=FR" not in capped or "country=DE" not in capped


def test_tree_build_caps_nothing_and_keeps_order() -> None:
    from lance_partitioned.cli.keys import Partition

    parts = [
        Partition(f"v1$a{i}$dataset", 1, (("k", str(i)),), {"k": i}, rows=i, order=(1, (False, i)))
        for i in (3, 1, 2)
    ]
    root = build(parts, "root")
    assert root.rows == 6
    assert root.partitions == 3
    assert [n.name for n in root.children["v1"].sorted_children("values")] == ["k=1", "k=2", "k=3"]
    assert [n.name for n in root.children["v1"].sorted_children("rows")] == ["k=3", "k=2", "k=1"]


def test_explain_prints_the_plan(shared: lp.PartitionedNamespace) -> None:
    flt = "country = 'US' AND day >= DATE '2025-01-01'"
    out = run("explain", shared.root, flt).stdout
    assert out == shared.explain(flt) + "\n"
    assert "partition_field_country = 'US'" in out
    doc = run_json("explain", shared.root, flt)
    assert doc["kept"] == shared.partitions(flt, with_rows=False).num_rows
    assert doc["total"] == shared.partitions(with_rows=False).num_rows
    assert [p["spec_id"] for p in doc["plan"]] == [1, 2]
    assert doc["text"] == shared.explain(flt)


# -- scan -------------------------------------------------------------------------------------


def _by_id(t: pa.Table) -> pa.Table:
    return t.sort_by("id")


def test_scan_csv_json_parquet_equal_to_table(
    shared: lp.PartitionedNamespace, tmp_path: Path
) -> None:
    flt = "country IN ('FR', 'JP')"
    expected = _by_id(shared.to_table(flt))
    assert expected.num_rows > 0

    # CSV on stdout: struct columns flattened to loc.city, loc.zip.
    out = run("scan", shared.root, "--filter", flt, "--format", "csv").stdout
    flat = expected.flatten()
    from pyarrow import csv as pacsv

    got = pacsv.read_csv(
        io.BytesIO(out.encode()),
        convert_options=pacsv.ConvertOptions(column_types=flat.schema),
    )
    assert got.column_names == ["id", "day", "country", "loc.city", "loc.zip", "amount"]
    assert _by_id(got).equals(flat.cast(got.schema))

    # JSON Lines on stdout (--format json, and --json)
    for args in (("--format", "json"), ("--json",)):
        out = run("scan", shared.root, "--filter", flt, *args).stdout
        got_rows = sorted((json.loads(line) for line in out.splitlines()), key=lambda r: r["id"])
        want = [{**r, "day": r["day"].isoformat()} for r in expected.to_pylist()]
        assert got_rows == want

    # Parquet (needs --output), and csv/json into files
    pq_path = tmp_path / "rows.parquet"
    summary = run_json("scan", shared.root, "--filter", flt, "--output", str(pq_path))
    assert summary == {"rows": expected.num_rows, "format": "parquet", "output": str(pq_path)}
    assert _by_id(pq.read_table(pq_path)).equals(expected.cast(pq.read_schema(pq_path)))
    csv_path = tmp_path / "rows.csv"
    run("scan", shared.root, "--columns", "id,country", "--limit", "7", "-o", str(csv_path))
    with open(csv_path, newline="") as f:
        body = list(csv.reader(f))
    assert body[0] == ["id", "country"]
    assert len(body) == 8


def test_scan_table_format(shared: lp.PartitionedNamespace) -> None:
    out = run("scan", shared.root, "--filter", "country = 'DE'", "--columns", "id,country").stdout
    body = [_cells(line) for line in out.splitlines() if line.startswith("│")]
    assert len(body) == 20  # the table format's default limit
    assert {cells[1] for cells in body} == {"DE"}
    assert "20 rows" in out
    ids = set(shared.to_table("country = 'DE'", ["id"])["id"].to_pylist())
    assert {int(cells[0]) for cells in body} <= ids
    few = run("scan", shared.root, "--limit", "3").stdout
    assert len([line for line in few.splitlines() if line.startswith("│")]) == 3


def test_scan_parquet_needs_output(shared: lp.PartitionedNamespace) -> None:
    proc = run("scan", shared.root, "--format", "parquet", code=2)
    assert proc.stderr.startswith("error: ")
    assert "--output" in proc.stderr
    assert proc.stdout == ""


# -- history (contract: ns.history(limit=N) -> version, timestamp, operation, partitions,
# rows) --------------------------------------------------------------------------------------


def test_history_lists_manifest_versions(fresh: lp.PartitionedNamespace) -> None:
    fresh.delete("country = 'JP'")
    hist = fresh.history()
    assert hist.schema.field("version").type == pa.uint64()
    doc = run_json("history", fresh.root)
    versions = [e["version"] for e in doc["versions"]]
    assert versions == hist["version"].to_pylist()
    assert fresh.version in versions
    for entry, row in zip(doc["versions"], hist.to_pylist(), strict=True):
        assert entry["operation"] == row["operation"]
        assert entry["rows"] == row["rows"]
        assert entry["partitions"] == row["partitions"]
        assert dt.datetime.fromisoformat(entry["timestamp"]) == row["timestamp"]
    assert len(run_json("history", fresh.root, "--limit", "2")["versions"]) == 2
    out = run("history", fresh.root).stdout
    for v in versions:
        assert str(v) in out
    assert any(op in out for op in {str(o) for o in hist["operation"].to_pylist()})


def test_history_shows_merges_and_updates(fresh: lp.PartitionedNamespace) -> None:
    changed = rows(5, start=10).set_column(4, "amount", pa.array([-1.0] * 5))
    merged = fresh.merge_insert("id").when_matched_update_all().execute(changed)
    updated = fresh.update({"amount": "amount + 1"}, where="id = 10")
    doc = run_json("history", fresh.root, "--limit", "2")
    got = [(e["version"], e["operation"]) for e in doc["versions"]]
    assert got == [(updated.manifest_version, "update"), (merged.manifest_version, "merge")]
    out = run("history", fresh.root, "--limit", "2").stdout
    assert "merge" in out
    assert "update" in out


# -- skew -------------------------------------------------------------------------------------


def test_gini() -> None:
    assert gini([]) == 0.0
    assert gini([5]) == 0.0
    assert gini([7, 7, 7, 7]) == pytest.approx(0.0)
    for n in (2, 3, 10, 1000):
        assert gini([0] * (n - 1) + [42]) == pytest.approx((n - 1) / n)
    assert gini([1, 2, 3]) == pytest.approx(2 / 9)
    assert gini([3, 1, 2]) == gini([1, 2, 3])  # order does not matter
    assert gini([0, 0, 0]) == 0.0
    with pytest.raises(ValueError, match="non-negative"):
        gini([1, -1])


def test_skew_summary_and_bars() -> None:
    assert max_median_ratio([1, 1, 1]) == 1.0
    assert max_median_ratio([1, 2, 10]) == 5.0
    assert max_median_ratio([0, 0, 3]) is None
    assert max_median_ratio([]) is None
    s = summarize([10, 20, 30, 100])
    assert (s.count, s.total, s.min, s.median, s.max) == (4, 160, 10, 25, 100)
    assert s.mean == 40
    assert s.max_median == 4.0
    assert summarize([]).count == 0
    assert bar(10, 10, 5) == "█████"
    assert bar(0, 10, 5) == ""
    assert bar(1, 1000, 5) == "▏"  # a positive value is never invisible
    assert bar(5, 10, 4) == "██"
    assert bar(9, 16, 2) == "█▏"  # 9/16 of 2 cells = 9 eighths


def test_extremes_and_durations() -> None:
    from lance_partitioned.cli.keys import Partition

    parts = [Partition(f"v1$p{i}", 1, (), {}, rows=i, order=(1, i)) for i in range(10)]
    top, bottom = extremes(parts, 3)
    assert [p.rows for p in top] == [9, 8, 7]
    assert [p.rows for p in bottom] == [2, 1, 0]
    top, bottom = extremes(parts[:4], 3)
    assert [p.rows for p in top] == [3, 2, 1]
    assert [p.rows for p in bottom] == [0]
    assert parse_duration("7d") == 7 * 86400
    assert parse_duration("12h") == 12 * 3600
    assert parse_duration("30m") == 1800
    assert parse_duration("0s") == 0
    assert parse_duration("1h30m") == 5400
    assert parse_duration("2w") == 14 * 86400
    for bad in ("", "7", "d", "7x", "1h 30m", "-1s"):
        with pytest.raises(ValueError, match="duration"):
            parse_duration(bad)


def test_skew_command(shared: lp.PartitionedNamespace) -> None:
    stats = shared.stats()
    sizes = stats["rows"].to_pylist()
    doc = run_json("skew", shared.root, "--top", "3")
    assert doc["partitions"] == stats.num_rows
    assert doc["rows"]["total"] == sum(sizes) == 3600
    assert doc["rows"]["gini"] == pytest.approx(gini(sizes))
    assert doc["bytes"]["gini"] == pytest.approx(gini(stats["bytes"].to_pylist()))
    assert doc["rows"]["max"] == max(sizes)
    assert doc["rows"]["max_median"] == pytest.approx(max(sizes) / statistics.median(sizes))
    assert [p["rows"] for p in doc["largest"]] == sorted(sizes, reverse=True)[:3]
    assert [p["rows"] for p in doc["smallest"]] == sorted(sizes, reverse=True)[-3:]
    out = run("skew", shared.root, "--top", "3").stdout
    assert "█" in out
    assert f"Gini rows {gini(sizes):.3f}" in out
    assert "max/median rows" in out
    # The largest partition is a v1 US partition (US holds half the rows).
    assert "country=US" in out.splitlines()[1]


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR"
    assert length == 13
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_skew_png_histogram(shared: lp.PartitionedNamespace, tmp_path: Path) -> None:
    png = tmp_path / "skew.png"
    out = run("skew", shared.root, "--png", str(png)).stdout
    assert f"histogram written to {png}" in out
    assert _png_size(png) == (800, 450)


def test_skew_png_without_matplotlib(shared: lp.PartitionedNamespace, tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from lance_partitioned.cli import main\n"
        f"sys.exit(main(['skew', {shared.root!r}, '--png', {str(tmp_path / 'x.png')!r}]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr == "error: --png needs matplotlib: pip install 'lance-partitioned[plot]'\n"
    assert not (tmp_path / "x.png").exists()


# -- maintenance --------------------------------------------------------------------------------


def _small_files(ns: lp.PartitionedNamespace) -> None:
    """Three more appends into existing partitions: three small files each."""
    for k in range(3):
        ns.write(rows(200, start=10_000 + 200 * k))


def test_optimize(fresh: lp.PartitionedNamespace) -> None:
    _small_files(fresh)
    before = fresh.stats()
    version = fresh.version
    dry = run_json("optimize", fresh.root, "--dry-run")
    assert set(dry) >= {
        "partitions",
        "files_before",
        "files_after",
        "rows",
        "bytes_written",
        "manifest_version",
    }
    assert dry["partitions"] > 0
    assert dry["files_before"] > dry["files_after"]
    fresh.refresh()
    assert fresh.version == version
    assert fresh.stats()["files"].to_pylist() == before["files"].to_pylist()
    text = run("optimize", fresh.root, "--dry-run").stdout
    assert text.startswith(f"would compact {dry['partitions']} partitions")
    done = run_json("optimize", fresh.root, "--min-files", "2")
    assert done["partitions"] == dry["partitions"]
    assert done["files_before"] - done["files_after"] == (dry["files_before"] - dry["files_after"])
    fresh.refresh()
    assert done["manifest_version"] == fresh.version > version
    after = fresh.stats()
    assert totals(after)["files"] == totals(before)["files"] - (
        done["files_before"] - done["files_after"]
    )
    assert totals(after)["rows"] == totals(before)["rows"] == fresh.to_table().num_rows
    again = run("optimize", fresh.root).stdout
    assert again.startswith("compacted 0 partitions")


def test_expire(fresh: lp.PartitionedNamespace) -> None:
    _small_files(fresh)
    fresh.optimize()
    expected = _by_id(fresh.to_table())
    version = fresh.version
    dry = run_json(
        "expire", fresh.root, "--older-than", "0s", "--retain-versions", "1", "--dry-run"
    )
    assert set(dry) == {
        "manifest_versions",
        "leaf_versions",
        "leaf_tables",
        "files",
        "bytes",
        "dry_run",
    }
    assert dry["dry_run"] is True
    assert dry["manifest_versions"]
    assert version not in dry["manifest_versions"]
    assert fresh.to_table(as_of=max(dry["manifest_versions"])).num_rows > 0  # still there
    done = run_json("expire", fresh.root, "--older-than", "0s", "--retain-versions", "1")
    assert done["dry_run"] is False
    assert done["manifest_versions"] == dry["manifest_versions"]
    assert done["files"] == dry["files"]
    assert done["bytes"] == dry["bytes"]
    assert _by_id(lp.PartitionedNamespace.open(fresh.root).to_table()).equals(expected)
    out = run("expire", fresh.root, "--older-than", "0s", "--dry-run").stdout
    assert out.startswith("would remove ")


def test_cleanup_dry_run_lists_an_orphan(fresh: lp.PartitionedNamespace) -> None:
    root = Path(fresh.root)
    leaf = root / fresh.partitions()["location"][0].as_py()
    orphan = root / "0badc0de_v1$orphanorphan0001$dataset"
    shutil.copytree(leaf, orphan)  # like a partition a write created before dying
    doc = run_json("cleanup", fresh.root, "--dry-run", "--older-than", "0s")
    assert doc["dry_run"] is True
    assert doc["removed"] is False
    assert doc["orphans"] == [orphan.name]
    assert doc["files"] > 0
    assert doc["bytes"] > 0
    assert orphan.exists()
    out = run("cleanup", fresh.root, "--dry-run", "--older-than", "0s").stdout
    assert out.startswith("would remove 1 orphaned leaf tables")
    assert orphan.name in out
    # The default grace period (1d) keeps the fresh copy.
    assert run_json("cleanup", fresh.root, "--dry-run")["orphans"] == []
    assert orphan.exists()
    # Deleting below the one-hour retention floor needs the override.
    err = run("cleanup", fresh.root, "--older-than", "0s", code=2).stderr
    assert "retention" in err
    assert orphan.exists()
    doc = run_json("cleanup", fresh.root, "--older-than", "0s", "--no-retention-check")
    assert doc["orphans"] == [orphan.name]
    assert not orphan.exists()


def test_repair(shared: lp.PartitionedNamespace) -> None:
    assert run("repair", shared.root, "--dry-run").stdout.startswith("nothing to repair")
    assert run_json("repair", shared.root, "--dry-run") == {
        "columns": [],
        "dry_run": True,
        "manifest_version": shared.version,
    }


# -- Hive -------------------------------------------------------------------------------------


def test_export_and_import_hive(shared: lp.PartitionedNamespace, tmp_path: Path) -> None:
    tree = tmp_path / "hive"
    flt = "country = 'DE'"
    doc = run_json("export-hive", shared.root, str(tree), "--filter", flt)
    expected = shared.to_table(flt)
    assert doc["rows"] == expected.num_rows
    assert doc["manifest_version"] == shared.version
    assert (tree / "_SUCCESS").exists()
    assert any(p.name.startswith("country=DE") for p in tree.rglob("*"))
    dst = tmp_path / "imported"
    out = run("import-hive", str(tree), str(dst), "--partition-type", "year=int32").stdout
    assert out.startswith(f"imported {expected.num_rows:,} rows")
    ns = lp.PartitionedNamespace.open(str(dst))
    assert ns.schema.field("year").type == pa.int32()
    assert sorted(ns.to_table()["id"].to_pylist()) == sorted(expected["id"].to_pylist())
    again = run("import-hive", str(tree), str(dst), code=2)
    assert again.stderr.startswith("error: ")
    assert "not empty" in again.stderr


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "args"),
    [
        ("bad uri", ["info", "nosuchscheme://bucket/ns"]),
        ("missing namespace", ["info", "{missing}"]),
        ("bad filter", ["partitions", "{root}", "--filter", "country = "]),
        ("unknown column in filter", ["scan", "{root}", "--filter", "nope = 1"]),
        ("unknown column", ["scan", "{root}", "--columns", "id,nope"]),
        ("bad option", ["info", "{root}", "--bogus"]),
        ("bad storage option", ["info", "{root}", "--storage-option", "novalue"]),
        ("bad duration", ["cleanup", "{root}", "--older-than", "7x"]),
        ("bad as-of", ["info", "{root}", "--as-of", "999"]),
        ("unknown command", ["frobnicate", "{root}"]),
        ("output dir missing", ["scan", "{root}", "-o", "{missing}/x.csv"]),
    ],
)
def test_errors_are_one_line_with_exit_code_2(
    shared: lp.PartitionedNamespace, tmp_path: Path, case: str, args: list[str]
) -> None:
    argv = [a.format(root=shared.root, missing=tmp_path / "missing") for a in args]
    proc = run(*argv, code=2)
    assert proc.stderr.startswith("error: "), (case, proc.stderr)
    assert proc.stderr.count("\n") == 1, (case, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
    # --json changes nothing about errors
    if "--bogus" not in argv and case != "unknown command":
        proc = run(*argv, "--json", code=2)
        assert proc.stderr.startswith("error: ")
        assert proc.stdout == ""


def test_every_command_has_help() -> None:
    out = run("--help").stdout
    commands = [
        "info",
        "partitions",
        "tree",
        "explain",
        "history",
        "scan",
        "skew",
        "optimize",
        "expire",
        "cleanup",
        "repair",
        "import-hive",
        "export-hive",
    ]
    # The wheel ships no docs/: help must not send users there.
    assert "docs/" not in out
    for c in commands:
        assert c in out
        sub = run(c, "--help").stdout
        assert "docs/" not in sub, c
        assert f"lance-partitioned {c}" in sub
        assert "--json" in sub
        assert "--storage-option" in sub


def test_main_in_process(
    shared: lp.PartitionedNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["info", shared.root, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 3600
    assert main(["info", shared.root + "-missing"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no partitioned namespace")


# -- write(progress=True) ---------------------------------------------------------------------


def test_write_progress_goes_to_stderr(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    capfd.readouterr()
    data = rows(2500)
    result = ns.write(data, progress=True)
    out, err = capfd.readouterr()
    assert out == ""
    assert result.rows == 2500
    assert ns.to_table().num_rows == 2500
    assert "rows routed" in err
    assert "2500/2500" in err
    assert f"wrote 2,500 rows to {result.partitions:,} partitions" in err
    assert f"{result.files:,} files" in err
    assert f"manifest version {result.manifest_version}" in err

    # A stream of batches (no total known) and an iterable of batches.
    reader = pa.RecordBatchReader.from_batches(data.schema, data.to_batches(max_chunksize=400))
    result = ns.write(reader, progress=True)
    err = capfd.readouterr().err
    assert result.rows == 2500
    assert "wrote 2,500 rows" in err
    result = ns.write(iter(data.to_batches(max_chunksize=1000)), progress=True)
    assert result.rows == 2500
    assert "wrote 2,500 rows" in capfd.readouterr().err
    assert ns.to_table().num_rows == 7500


def test_write_without_progress_is_quiet(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    capfd.readouterr()
    result = ns.write(rows(1000))
    result2 = ns.write(rows(1000, start=1000), progress=False)
    assert capfd.readouterr() == ("", "")
    assert result.rows == result2.rows == 1000


def test_write_progress_counts_batches_without_copying() -> None:
    data = rows(1000)
    shown = WriteProgress(True)
    wrapped = shown.wrap(data)
    assert isinstance(wrapped, pa.RecordBatchReader)
    got = list(_batches(wrapped))
    shown.close()
    assert sum(b.num_rows for b in got) == shown.rows == 1000
    assert shown.batches == len(data.to_batches())
    src = data.to_batches()[0].column(0).buffers()[1]
    assert got[0].column(0).buffers()[1].address == src.address  # the same memory
    assert WriteProgress(False).wrap(data) is data


def _batches(reader: pa.RecordBatchReader) -> Iterator[pa.RecordBatch]:
    yield from reader


def test_json_values_are_json() -> None:
    """Non-finite floats and dates in scan JSON stay valid JSON."""
    from lance_partitioned.cli.output import jsonable

    assert jsonable({"x": math.nan, "y": -math.inf, "d": dt.date(2024, 1, 2)}) == {
        "x": "NaN",
        "y": "-Infinity",
        "d": "2024-01-02",
    }
