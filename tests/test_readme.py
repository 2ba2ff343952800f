"""Every Python code block of README.md and of the user guide (docs/guide/*.md) runs as written.

Blocks are keyed by (file, section): the file relative to the repository root and the `## `
heading they appear under (its text before any `:`), one block per section. Each run executes
in a fresh namespace seeded with the few names the page leaves to the reader (a `table` to
write, a `reader`, a Spark `df`, ...): the blocks show calls, not data set-up. The namespace
pages show one program in steps (created on namespaces.md, written on writes.md, read on
reads.md, ...): those blocks run one after the other in one scope, in the order of
`NAMESPACE_TOUR`. Absolute paths under `/data/` are redirected to a temporary directory.
Lines of the form `expression   # [v1, v2]` also check the value the comment promises.
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

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "guide"
PAGES = [ROOT / "README.md", *sorted(GUIDE.glob("*.md"))]
BLOCK = re.compile(r"^## (?P<section>[^\n]+)$|^```python\n(?P<code>.*?)^```$", re.M | re.S)

Key = tuple[str, str]
"""(file relative to the repository root, section)."""

README = "README.md"
NAMESPACES = "docs/guide/namespaces.md"
TRANSFORMS = "docs/guide/transforms.md"
WRITES = "docs/guide/writes.md"
READS = "docs/guide/reads.md"
MAINTENANCE = "docs/guide/maintenance.md"
SPARK = "docs/guide/spark.md"
JOINS = "docs/guide/joins.md"
OBJECT_STORAGE = "docs/guide/object-storage.md"
HIVE = "docs/guide/hive.md"
LINEAGE = "docs/guide/lineage.md"
CHANGES = "docs/guide/changes.md"

QUICK_START: Key = (README, "Python quick start")
SPARK_QUICK_START: Key = (README, "Spark quick start")
SPEC: Key = (TRANSFORMS, "Partition specs")
KERNELS: Key = (TRANSFORMS, "Kernels")
VALUES: Key = (TRANSFORMS, "Partition values as text")
NAMESPACE_TOUR: tuple[Key, ...] = (
    (NAMESPACES, "Create and open"),
    (WRITES, "Writing"),
    (WRITES, "Sort order"),
    (READS, "Scanning"),
    (READS, "Indexes"),
    (READS, "Other engines"),
    (READS, "DataFusion"),
    (NAMESPACES, "Snapshots and time travel"),
    (WRITES, "Deletes"),
    (NAMESPACES, "Evolution and repair"),
    (MAINTENANCE, "At a glance"),
    (WRITES, "Distributed writes"),
)
SPARK_BLOCK: Key = (SPARK, "Writes and reads")
OBJECT_STORAGE_BLOCK: Key = (OBJECT_STORAGE, "Object storage options")
HIVE_BLOCK: Key = (HIVE, "Export and import")
LINEAGE_BLOCK: Key = (LINEAGE, "Example")
JOIN_BLOCK: Key = (JOINS, "Example")
CHANGES_BLOCK: Key = (CHANGES, "Example")
SPARK_CHANGES_BLOCK: Key = (CHANGES, "In Spark")
SPARK_STREAM_BLOCK: Key = (SPARK, "Streaming")


def page_blocks(path: Path) -> dict[Key, str]:
    """The Python blocks of one page by (file, section): the `## ...` heading they appear in,
    up to its first `:`."""
    name = path.relative_to(ROOT).as_posix()
    blocks: dict[Key, str] = {}
    section = ""
    for m in BLOCK.finditer(path.read_text()):
        if m.group("section"):
            section = m.group("section").split(":")[0].strip()
        else:
            key = (name, section)
            assert section, f"a Python block before the first section of {name}"
            assert key not in blocks, f"two Python blocks in section {key}"
            blocks[key] = m.group("code")
    return blocks


def all_blocks() -> dict[Key, str]:
    """The Python blocks of README.md and of every page of the user guide."""
    blocks: dict[Key, str] = {}
    for page in PAGES:
        blocks.update(page_blocks(page))
    return blocks


BLOCKS = all_blocks()


def _code(*keys: Key) -> str:
    """The blocks `keys` as one program, in order."""
    return "\n".join(BLOCKS[k] for k in keys)


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


def _run(code: str, tmp_path: Path, names: dict[str, Any], source: str) -> dict[str, Any]:
    code = code.replace('"/data/', f'"{tmp_path}/')
    scope: dict[str, Any] = {"datetime": datetime, **names}
    exec(compile(code, source, "exec"), scope)
    _check_commented_values(code, scope)
    return scope


def _run_keys(keys: tuple[Key, ...], tmp_path: Path, names: dict[str, Any]) -> dict[str, Any]:
    source = " + ".join(f"{f} ({s})" for f, s in keys)
    return _run(_code(*keys), tmp_path, names, source)


_LITERAL = re.compile(
    r"""\s*(\[[^\]]*\]|\{[^}]*\}|'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"|-?\d[\d_.eE+-]*|True|False|None)"""
)


def _check_commented_values(code: str, scope: dict[str, Any]) -> None:
    """`expr  # <Python literal>`: the expression's value equals the literal, with the type
    the literal promises (`# 3` is a Python int, not a pyarrow scalar; `# [7]` a list, or a
    pyarrow array whose `to_pylist()` is that list). Prose after the literal is ignored; a
    literal with `...` in it is a shape, not a value, and is not checked."""
    for line in code.splitlines():
        expr, sep, comment = line.partition("#")
        m = _LITERAL.match(comment)
        if not sep or not m or not expr.strip() or "..." in m.group(1):
            continue
        try:
            tree = ast.parse(expr.strip(), mode="eval")
            expected = ast.literal_eval(m.group(1))
        except (SyntaxError, ValueError):
            continue
        value = eval(compile(tree, "<documented line>", "eval"), scope)
        got = (
            value.to_pylist()
            if isinstance(expected, list) and hasattr(value, "to_pylist")
            else value
        )
        assert type(got) is type(expected), (
            f"{line}: a {type(got).__name__}, not a {type(expected).__name__}"
        )
        assert got == expected, line


def _run_quick_start(tmp_path: Path) -> dict[str, Any]:
    scope = _run_keys((QUICK_START,), tmp_path, {})
    ns = scope["ns"]
    assert scope["res"].rows == 3
    assert ns.to_table().num_rows == 3
    sql = "country = 'US' AND event_date >= DATE '2025-01-01'"
    assert ns.partitions(sql).num_rows == 1  # "opens 1 partition"
    return scope


def _run_spark_quick_start(tmp_path: Path, spark: Any) -> dict[str, Any]:
    quick = _run_quick_start(tmp_path / "python")
    scope = _run_keys((SPARK_QUICK_START,), tmp_path, {"spark": spark, "spec": quick["spec"]})
    assert scope["res"].rows == 2
    assert [r["id"] for r in scope["us"].collect()] == [1]
    assert [r["id"] for r in scope["same"].collect()] == [1]
    return scope


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
    scope = _run_keys((SPEC,), tmp_path, {"batch": batch})
    values = lp.kernels.partition_values(batch, scope["spec_json"], scope["schema"])
    assert (values.num_rows, values.num_columns) == (2, 4)
    return scope


def _run_values(tmp_path: Path) -> dict[str, Any]:
    scope = _run_keys((VALUES,), tmp_path, {})
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
    return _run_keys((KERNELS,), tmp_path, names)


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
    scope = _run_keys(NAMESPACE_TOUR, tmp_path, names)
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
    names = {"spark": spark, "df": df, "spec": ns_scope["spec"]}
    scope = _run_keys((SPARK_BLOCK,), tmp_path, names)
    assert scope["events"].count() == 40  # the as_of read: the first append only
    return scope


def _run_object_storage_block(tmp_path: Path, spark: Any, s3_server: Any) -> dict[str, Any]:
    ns_scope = _run_namespace(tmp_path / "ns")
    uri = f"s3://{s3_server.new_bucket()}/events"
    code = BLOCKS[OBJECT_STORAGE_BLOCK].replace("s3://bucket/events", uri)
    code = code.replace('opts = {"aws_region": "eu-west-1"}', "opts = S3_OPTIONS")
    assert "S3_OPTIONS" in code, "the object storage block's options line changed"
    df = spark.createDataFrame(_events(40).to_pandas())
    names = {
        "spark": spark,
        "df": df,
        "lp": lp,
        "spec": ns_scope["spec"],
        "schema": ns_scope["schema"],
        "S3_OPTIONS": s3_server.options(),
    }
    scope = _run(code, tmp_path, names, f"{OBJECT_STORAGE} ({OBJECT_STORAGE_BLOCK[1]})")
    assert scope["events"].count() == 40
    return scope


def _run_hive(tmp_path: Path) -> dict[str, Any]:
    scope = _run_keys((HIVE_BLOCK,), tmp_path, {})
    assert scope["back"].to_table().num_rows == 3
    assert (tmp_path / "hive_tree" / "country=Serbia%2Fsrb%25").is_dir()
    return scope


def _run_lineage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    for key in ("TYPE", "LOG_FILE_PATH", "APPEND"):
        monkeypatch.delenv(f"OPENLINEAGE__TRANSPORT__{key}", raising=False)
    try:
        scope = _run_keys((LINEAGE_BLOCK,), tmp_path, {})
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
    scope = _run_keys((JOIN_BLOCK,), tmp_path, {})
    plan = scope["plan"]
    assert plan.compatible
    assert len(plan.groups) == 8
    assert all(len(g.left) == 2 and len(g.right) == 1 for g in plan.groups)
    assert scope["joined"].num_rows == 100
    assert sorted(scope["big_spenders"]["order_id"].to_pylist()) == list(range(10))
    return scope


def _run_changes(tmp_path: Path) -> dict[str, Any]:
    scope = _run_keys((CHANGES_BLOCK,), tmp_path, {})
    got = {r["order_id"]: r["status"] for r in scope["orders"].to_table().to_pylist()}
    assert len(got) == 100  # 100 orders + 100 inserted - 8 deleted
    assert (got[5], got[6], got[100], got[1], got[7]) == (
        "paid",
        "new",
        "new",
        "shipped",
        "cancelled",
    )
    assert 8 not in got
    return scope


def _run_spark_changes(tmp_path: Path, spark: Any) -> dict[str, Any]:
    """The Spark block after an `orders` namespace like the example's (100 orders, all
    'new' at 2025-01-01), made here."""
    import lance_partitioned as lp

    schema = pa.schema(
        [
            pa.field("order_id", pa.int64(), nullable=False),
            pa.field("status", pa.string()),
            pa.field("updated_at", pa.timestamp("us")),
        ]
    )
    spec = lp.PartitionSpec([lp.PartitionField("b", source="order_id", transform=lp.Bucket(8))])
    orders = lp.PartitionedNamespace.create(str(tmp_path / "orders"), schema, spec)
    t0 = datetime.datetime(2025, 1, 1)
    orders.write(
        pa.table(
            {"order_id": range(100), "status": ["new"] * 100, "updated_at": [t0] * 100},
            schema=schema,
        )
    )
    scope = _run_keys((SPARK_CHANGES_BLOCK,), tmp_path, {"spark": spark})
    orders.refresh()
    got = {r["order_id"]: r["status"] for r in orders.to_table().to_pylist()}
    assert len(got) == 101
    assert (got[5], got[200], got[6]) == ("delivered", "new", "new")
    return scope


def _run_spark_stream(tmp_path: Path, spark: Any) -> dict[str, Any]:
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import from_arrow_schema

    incoming = tmp_path / "incoming"
    incoming.mkdir()
    files = [_events(30, offset=30 * i) for i in range(3)]
    for i, t in enumerate(files):
        pq.write_table(t, incoming / f"part-{i}.parquet")
    schema = files[0].schema
    uri = str(tmp_path / "streamed")
    spec = lp.PartitionSpec(
        [lp.PartitionField("country", source="country", transform=lp.Identity())]
    )
    lp.PartitionedNamespace.create(uri, schema, spec)
    names = {
        "spark": spark,
        "schema": from_arrow_schema(schema),
        "incoming": str(incoming),
        "checkpoint": str(tmp_path / "checkpoint"),
        "uri": uri,
    }
    scope = _run_keys((SPARK_STREAM_BLOCK,), tmp_path, names)
    got = lp.PartitionedNamespace.open(uri).to_table()
    want = pa.concat_tables(files)
    assert sorted(got["id"].to_pylist()) == sorted(want["id"].to_pylist())
    return scope


RUNNERS: dict[str, tuple[tuple[Key, ...], Callable[..., dict[str, Any]]]] = {
    "quick start": ((QUICK_START,), _run_quick_start),
    "spark quick start": ((SPARK_QUICK_START,), _run_spark_quick_start),
    "partition specs": ((SPEC,), _run_spec),
    "kernels": ((KERNELS,), _run_kernels),
    "partition values as text": ((VALUES,), _run_values),
    "namespace tour": (NAMESPACE_TOUR, _run_namespace),
    "spark": ((SPARK_BLOCK,), _run_spark_block),
    "object storage": ((OBJECT_STORAGE_BLOCK,), _run_object_storage_block),
    "hive layouts": ((HIVE_BLOCK,), _run_hive),
    "openlineage": ((LINEAGE_BLOCK,), _run_lineage),
    "storage-partitioned joins": ((JOIN_BLOCK,), _run_join),
    "row-level changes": ((CHANGES_BLOCK,), _run_changes),
    "row-level changes in spark": ((SPARK_CHANGES_BLOCK,), _run_spark_changes),
    "streaming": ((SPARK_STREAM_BLOCK,), _run_spark_stream),
}


def test_the_user_guide_is_read() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in PAGES}
    assert {README, NAMESPACES, TRANSFORMS, WRITES, READS, SPARK, "docs/guide/README.md"} <= names


def test_every_python_block_has_a_runner() -> None:
    run = [key for keys, _ in RUNNERS.values() for key in keys]
    assert len(run) == len(set(run)), "a Python block run by two runners"
    assert set(run) == set(BLOCKS), "a Python block without a runner (or vice versa)"


@pytest.mark.parametrize(
    "name",
    [
        "quick start",
        "partition specs",
        "kernels",
        "partition values as text",
        "namespace tour",
        "storage-partitioned joins",
        "row-level changes",
    ],
)
def test_documented_block_runs(name: str, tmp_path: Path) -> None:
    RUNNERS[name][1](tmp_path)


def test_hive_block_runs(tmp_path: Path) -> None:
    _run_hive(tmp_path)


def test_lineage_block_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _run_lineage(tmp_path, monkeypatch)


@pytest.mark.spark
def test_spark_quick_start_runs(tmp_path: Path, spark: Any) -> None:
    _run_spark_quick_start(tmp_path, spark)


@pytest.mark.spark
def test_spark_block_runs(tmp_path: Path, spark: Any) -> None:
    _run_spark_block(tmp_path, spark)


@pytest.mark.spark
def test_spark_changes_block_runs(tmp_path: Path, spark: Any) -> None:
    _run_spark_changes(tmp_path, spark)


@pytest.mark.spark
def test_spark_stream_block_runs(tmp_path: Path, spark: Any) -> None:
    _run_spark_stream(tmp_path, spark)


@pytest.mark.spark
@pytest.mark.s3
def test_object_storage_block_runs(tmp_path: Path, spark: Any, s3_server: Any) -> None:
    _run_object_storage_block(tmp_path, spark, s3_server)
