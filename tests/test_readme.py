"""Every Python code block of README.md runs as written.

Each block runs in a fresh namespace seeded with the few names the README leaves to the reader
(a `table` to write, a `reader`, a Spark `df`, ...): the blocks show calls, not data set-up.
Absolute paths under `/data/` are redirected to a temporary directory. Lines of the form
`expression   # [v1, v2]` also check the value the comment promises.
"""

from __future__ import annotations

import ast
import datetime
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lance_partitioned as lp

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCK = re.compile(r"^## (?P<section>[^\n]+)$|^```python\n(?P<code>.*?)^```$", re.M | re.S)


def _blocks() -> dict[str, str]:
    """Python blocks by the README section (`## ...` heading) they appear in."""
    blocks: dict[str, str] = {}
    section = ""
    for m in BLOCK.finditer(README.read_text()):
        if m.group("section"):
            section = m.group("section").split(":")[0].strip()
        else:
            assert section not in blocks, f"two Python blocks in README section {section!r}"
            blocks[section] = m.group("code")
    return blocks


BLOCKS = _blocks()


def _events(n: int, offset: int = 0) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(offset, offset + n), pa.int64()),
            "event_date": pa.array(
                [datetime.date(2025, 11 + i % 2, 1 + i % 28) for i in range(n)], pa.date32()
            ),
            "country": pa.array([["US", "FR", "DE"][i % 3] for i in range(n)]),
            "user_id": pa.array([i % 10 for i in range(n)], pa.int64()),
        }
    )


def _run(code: str, tmp_path: Path, names: dict[str, Any]) -> dict[str, Any]:
    code = code.replace('"/data/', f'"{tmp_path}/')
    scope: dict[str, Any] = {"datetime": datetime, **names}
    exec(compile(code, str(README), "exec"), scope)
    _check_commented_values(code, scope)
    return scope


def _check_commented_values(code: str, scope: dict[str, Any]) -> None:
    """`k.bucket(...)   # [7]`: the expression's values equal the commented list."""
    for line in code.splitlines():
        expr, sep, comment = line.partition("#")
        m = re.match(r"\s*(\[[^\]]*\])", comment)
        if not sep or not m or not expr.strip():
            continue
        try:
            tree = ast.parse(expr.strip(), mode="eval")
        except SyntaxError:
            continue
        value = eval(compile(tree, "<README line>", "eval"), scope)
        got = value.to_pylist() if hasattr(value, "to_pylist") else value
        assert got == ast.literal_eval(m.group(1)), line


def test_every_python_block_has_a_runner() -> None:
    assert set(BLOCKS) == set(RUNNERS), "a README Python block without a test (or vice versa)"


def _run_spec(tmp_path: Path) -> dict[str, Any]:
    batch = pa.record_batch(
        {
            "id": pa.array([1, 2], pa.int64()),
            "event_date": pa.array([datetime.date(2025, 1, 2), None], pa.date32()),
            "country": ["US", "FR"],
            "city": ["Paris", None],
            "user_id": pa.array([7, 8], pa.int64()),
        }
    )
    scope = _run(BLOCKS["Partition specs"], tmp_path, {"batch": batch})
    values = lp.kernels.partition_values(batch, scope["spec_json"], scope["schema"])
    assert (values.num_rows, values.num_columns) == (2, 4)
    return scope


def _run_values(tmp_path: Path) -> dict[str, Any]:
    scope = _run(BLOCKS["Partition values as text"], tmp_path, {})
    lv = scope["lv"]
    t = scope["t"]
    assert lv.to_string(-0.0, pa.float64()) == "-0.0"
    assert lv.to_string(b"\xff\xfe", pa.binary()) == "\\xff\\xfe"
    assert scope["seg"] == "ts=2024-06-15 12%3A30%3A45"
    name, back = lv.parse_hive_segment(
        scope["seg"], pa.timestamp("us", tz="UTC"), timezone="America/Los_Angeles"
    )
    assert (name, back.as_py()) == ("ts", t)
    assert lv.hive_segment("country", "Serbia/srb%", pa.string()) == "country=Serbia%2Fsrb%25"
    assert lv.uri_escape("country=Serbia%2Fsrb%25/hello world") == (
        "country=Serbia%252Fsrb%2525/hello%20world"
    )
    return scope


def _run_kernels(tmp_path: Path) -> dict[str, Any]:
    spec_scope = _run_spec(tmp_path)
    ts = pa.array([datetime.datetime(2025, 12, 10, 13, 5)], pa.timestamp("us", "UTC"))
    batch = pa.record_batch(
        {
            "id": pa.array([1], pa.int64()),
            "event_date": pa.array([datetime.date(2025, 12, 10)], pa.date32()),
            "country": ["US"],
            "city": ["Boston"],
            "user_id": pa.array([3], pa.int64()),
        }
    )
    names = {
        "ts": ts,
        "arr": pa.array([1, 2]),
        "country": pa.array(["US"]),
        "city": pa.array(["Boston"]),
        "batch": batch,
        "spec": spec_scope["spec_json"],
        "schema": spec_scope["schema"],
        "keys": [pa.array(["US"])],
    }
    return _run(BLOCKS["Kernels"], tmp_path, names)


def _run_namespace(tmp_path: Path) -> dict[str, Any]:
    streamed = _events(30, offset=100)
    names = {
        "table": _events(60),
        "table2": _events(10, offset=1000).filter(pa.compute.field("country") == "US"),
        "table3": _events(20, offset=2000),
        "reader": streamed.to_reader(max_chunksize=7),
        "parts": [_events(5, offset=3000), _events(5, offset=3005)],
        "new_spec": lp.PartitionSpec(
            [
                lp.PartitionField("event_year", source="event_date", transform=lp.Year()),
                lp.PartitionField("country", source="country", transform=lp.Identity()),
            ]
        ),
    }
    scope = _run(BLOCKS["Partitioned namespaces"], tmp_path, names)
    ns = scope["ns"]
    # After the overwrite_all: table3 and the streamed rows minus the deleted FR rows and the
    # deleted user 7 in the US, then both staged parts.
    rows = ns.scan().read_all()
    kept = [
        r["id"]
        for r in pa.concat_tables([names["table3"], streamed]).to_pylist()
        if r["country"] != "FR" and not (r["country"] == "US" and r["user_id"] == 7)
    ]
    staged = pa.concat_tables(names["parts"]).column("id").to_pylist()
    assert sorted(rows.column("id").to_pylist()) == sorted(kept + staged)
    return scope


def _run_spark_block(tmp_path: Path, spark: Any) -> dict[str, Any]:
    ns_scope = _run_namespace(tmp_path / "ns")
    df = spark.createDataFrame(_events(40).to_pandas())
    scope = _run(BLOCKS["Spark"], tmp_path, {"spark": spark, "df": df, "spec": ns_scope["spec"]})
    assert scope["events"].count() == 40  # the as_of read: the first append only
    return scope


def _run_object_storage_block(tmp_path: Path, spark: Any, s3_server: Any) -> dict[str, Any]:
    ns_scope = _run_namespace(tmp_path / "ns")
    uri = f"s3://{s3_server.new_bucket()}/events"
    code = BLOCKS["Object storage"].replace("s3://bucket/events", uri)
    code = code.replace('opts = {"aws_region": "eu-west-1"}', "opts = S3_OPTIONS")
    assert "S3_OPTIONS" in code, "the README block's options line changed"
    df = spark.createDataFrame(_events(40).to_pandas())
    names = {
        "spark": spark,
        "df": df,
        "lp": lp,
        "spec": ns_scope["spec"],
        "schema": ns_scope["schema"],
        "S3_OPTIONS": s3_server.options(),
    }
    scope = _run(code, tmp_path, names)
    assert scope["events"].count() == 40
    return scope


def _run_hive(tmp_path: Path) -> dict[str, Any]:
    scope = _run(BLOCKS["Hive layouts"], tmp_path, {})
    assert scope["back"].to_table().num_rows == 3
    assert (tmp_path / "hive_tree" / "country=Serbia%2Fsrb%25").is_dir()
    return scope


def _run_lineage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    for key in ("TYPE", "LOG_FILE_PATH", "APPEND"):
        monkeypatch.delenv(f"OPENLINEAGE__TRANSPORT__{key}", raising=False)
    try:
        scope = _run(BLOCKS["OpenLineage"], tmp_path, {})
    finally:
        for key in ("TYPE", "LOG_FILE_PATH", "APPEND"):
            os.environ.pop(f"OPENLINEAGE__TRANSPORT__{key}", None)
    events = scope["read_events"](tmp_path / "lineage.jsonl")
    ingest = [e for e in events if e["job"]["name"] == "nightly_ingest"]
    assert [e["eventType"] for e in ingest] == ["START", "COMPLETE"]
    scans = [e for e in events if e["job"]["name"] == "lance_partitioned.scan"]
    cond = scans[-1]["inputs"][0]["inputFacets"]["subset"]["inputCondition"]
    assert [p["dimensions"] for p in cond["partitions"]] == [{"country": "US"}]
    return scope


def _run_join(tmp_path: Path) -> dict[str, Any]:
    scope = _run(BLOCKS["Storage-partitioned joins"], tmp_path, {})
    plan = scope["plan"]
    assert plan.compatible
    assert len(plan.groups) == 8
    assert all(len(g.left) == 2 and len(g.right) == 1 for g in plan.groups)
    assert scope["joined"].num_rows == 100
    assert sorted(scope["big_spenders"]["order_id"].to_pylist()) == list(range(10))
    return scope


RUNNERS: dict[str, Callable[..., dict[str, Any]]] = {
    "Storage-partitioned joins": _run_join,
    "Hive layouts": _run_hive,
    "OpenLineage": _run_lineage,
    "Partition specs": _run_spec,
    "Kernels": _run_kernels,
    "Partition values as text": _run_values,
    "Partitioned namespaces": _run_namespace,
    "Spark": _run_spark_block,
    "Object storage": _run_object_storage_block,
}


@pytest.mark.parametrize(
    "section",
    [
        "Partition specs",
        "Kernels",
        "Partition values as text",
        "Partitioned namespaces",
        "Storage-partitioned joins",
    ],
)
def test_readme_block_runs(section: str, tmp_path: Path) -> None:
    RUNNERS[section](tmp_path)


def test_readme_hive_block_runs(tmp_path: Path) -> None:
    _run_hive(tmp_path)


def test_readme_lineage_block_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _run_lineage(tmp_path, monkeypatch)


@pytest.mark.spark
def test_readme_spark_block_runs(tmp_path: Path, spark: Any) -> None:
    _run_spark_block(tmp_path, spark)


@pytest.mark.spark
@pytest.mark.s3
def test_readme_object_storage_block_runs(tmp_path: Path, spark: Any, s3_server: Any) -> None:
    _run_object_storage_block(tmp_path, spark, s3_server)
