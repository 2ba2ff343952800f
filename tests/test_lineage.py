"""OpenLineage events of reads, writes and deletes: captured with the client's file transport,
validated against the official schemas (tests/fixtures/openlineage) and the one we ship, and
checked for what they say (which partitions, which condition)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pyarrow as pa
import pytest
from referencing import Registry, Resource
from typed import raises_typed

import lance_partitioned as lp
from lance_partitioned import lineage
from lance_partitioned.lineage import config as lineage_config

FIXTURES = Path(__file__).parent / "fixtures" / "openlineage"
OL = "https://openlineage.io/spec/2-0-2/OpenLineage.json"


def _registry() -> Registry:
    resources = [json.loads(p.read_text()) for p in sorted(FIXTURES.glob("*.json"))]
    resources.append(lineage.partitions_schema())
    return Registry().with_resources((r["$id"], Resource.from_contents(r)) for r in resources)


REGISTRY = _registry()
KNOWN = {uri for uri in REGISTRY}


def _check(instance: Any, ref: str) -> None:
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": ref}
    jsonschema.Draft202012Validator(schema, registry=REGISTRY).validate(instance)


def _check_facets(facets: dict[str, Any], base: str) -> None:
    for facet in facets.values():
        url = facet["_schemaURL"]
        doc = url.split("#")[0]
        _check(facet, url if doc in KNOWN else f"{OL}#/$defs/{base}")


def validate(event: dict[str, Any]) -> None:
    """The event against RunEvent, every facet against its own schema where we have it (the
    others against the base facet type)."""
    _check(event, f"{OL}#/$defs/RunEvent")
    _check_facets(event["run"].get("facets", {}), "RunFacet")
    _check_facets(event["job"].get("facets", {}), "JobFacet")
    for ds in event["inputs"]:
        _check_facets(ds.get("facets", {}), "DatasetFacet")
        _check_facets(ds.get("inputFacets", {}), "InputDatasetFacet")
    for ds in event["outputs"]:
        _check_facets(ds.get("facets", {}), "DatasetFacet")
        _check_facets(ds.get("outputFacets", {}), "OutputDatasetFacet")


@pytest.fixture
def events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Lineage on, through the client's file transport; returns a function reading (and
    validating) the events emitted so far."""
    log = tmp_path / "events.jsonl"
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "file")
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__LOG_FILE_PATH", str(log))
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__APPEND", "true")
    monkeypatch.setenv("OPENLINEAGE_NAMESPACE", "tests")
    monkeypatch.delenv("LANCE_PARTITIONED_LINEAGE_JOB", raising=False)

    def read() -> list[dict[str, Any]]:
        if not log.exists():
            return []
        out = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
        for e in out:
            validate(e)
        return out

    return read


SCHEMA = pa.schema([("country", pa.string()), ("day", pa.date32()), ("n", pa.int64())])
SPEC = lp.PartitionSpec(
    [
        lp.PartitionField("country", "country", lp.Identity()),
        lp.PartitionField("n_bucket", "n", lp.Bucket(4)),
    ]
)


def _table() -> pa.Table:
    import datetime

    d = datetime.date(2025, 6, 15)
    return pa.table(
        {
            "country": ["US", "DE", "US", None, "Serbia/srb%"],
            "day": [d] * 5,
            "n": [1, 2, 3, 4, 5],
        },
        schema=SCHEMA,
    )


def _partitions(ds: dict[str, Any], key: str) -> list[dict[str, Any]]:
    cond = ds[key]["subset"]["outputCondition" if key == "outputFacets" else "inputCondition"]
    assert cond["type"] == "partition"
    return list(cond["partitions"])


def test_nothing_is_emitted_or_imported_without_configuration(tmp_path: Path) -> None:
    code = f"""
import os, sys
for k in list(os.environ):
    if k.startswith("OPENLINEAGE"):
        del os.environ[k]
os.chdir({str(tmp_path)!r})
import pyarrow as pa
import lance_partitioned as lp
ns = lp.PartitionedNamespace.create("ns", pa.schema([("a", pa.int64())]),
    lp.PartitionSpec([lp.PartitionField("a", "a", lp.Identity())]))
ns.write(pa.table({{"a": [1, 2]}}))
ns.to_table("a = 1")
assert not lp.lineage.enabled()
assert not any(m.startswith("openlineage") for m in sys.modules), "client imported"
print("ok")
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, env=None
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_write_scan_delete_evolve_events(tmp_path: Path, events: Any) -> None:
    root = str(tmp_path / "ns")
    ns = lp.PartitionedNamespace.create(root, SCHEMA, SPEC)
    result = ns.write(_table(), lineage_job="ingest")
    evs = events()
    kinds = [(e["job"]["name"], e["eventType"]) for e in evs]
    assert kinds == [
        ("lance_partitioned.create", "START"),
        ("lance_partitioned.create", "COMPLETE"),
        ("ingest", "START"),
        ("ingest", "COMPLETE"),
    ]
    create_done, start, done = evs[1], evs[2], evs[3]
    assert create_done["outputs"][0]["facets"]["lifecycleStateChange"]["lifecycleStateChange"] == (
        "CREATE"
    )
    assert start["run"]["runId"] == done["run"]["runId"]
    assert done["job"]["namespace"] == "tests"
    out = done["outputs"][0]
    assert (out["namespace"], out["name"]) == ("file", str(Path(root).resolve()))
    part = out["facets"]["partitions"]
    assert part["dimensions"] == [
        {"fields": ["country"], "transform": "identity", "name": "country"},
        {"fields": ["n"], "transform": "bucket(4)", "name": "n_bucket"},
    ]
    assert part["description"] == "PARTITIONED BY (country, bucket(4, n))"
    assert out["facets"]["version"]["datasetVersion"] == str(result.manifest_version)
    stats = out["outputFacets"]["outputStatistics"]
    assert stats["rowCount"] == 5
    assert stats["fileCount"] == result.files
    assert stats["size"] == result.bytes
    written = _partitions(out, "outputFacets")
    assert len(written) == result.partitions == len(result.touched)
    by_id = {p["identifier"]: p["dimensions"] for p in written}
    for t in result.touched:
        # NULL values: JSON null in the facet, which the client's serializer drops (the key is
        # then absent: every field of the partition's spec is listed otherwise).
        assert by_id[t.object_id] == {k: v for k, v in t.values if v is not None}
    assert {d.get("country") for d in by_id.values()} == {"US", "DE", None, "Serbia/srb%"}

    # A pruned read lists only the partitions it read.
    before = len(events())
    assert ns.to_table("country = 'US'").num_rows == 2
    scan = events()[before:]
    assert [e["eventType"] for e in scan] == ["START", "COMPLETE"]
    inp = scan[1]["inputs"][0]
    read = _partitions(inp, "inputFacets")
    assert {p["dimensions"]["country"] for p in read} == {"US"}
    kept = ns.partitions("country = 'US'")
    assert {p["identifier"] for p in read} == set(kept["object_id"].to_pylist())
    assert inp["inputFacets"]["inputStatistics"]["rowCount"] == 2
    assert inp["facets"]["version"]["datasetVersion"] == str(ns.version)

    # An overwrite says so.
    before = len(events())
    ns.write(_table().slice(0, 1), mode="overwrite")
    over = events()[before:][-1]["outputs"][0]
    assert over["facets"]["lifecycleStateChange"]["lifecycleStateChange"] == "OVERWRITE"
    assert len(_partitions(over, "outputFacets")) == 1

    # A delete lists the partitions it touched.
    before = len(events())
    deleted = ns.delete("country = 'DE'")
    dele = events()[before:][-1]
    assert dele["eventType"] == "COMPLETE"
    touched = _partitions(dele["outputs"][0], "outputFacets")
    assert [p["dimensions"]["country"] for p in touched] == ["DE"]
    assert len(touched) == deleted.dropped + deleted.changed

    # Evolution: every spec version is shown, the current one as the dimensions.
    before = len(events())
    ns.evolve(lp.PartitionSpec([lp.PartitionField("country", "country", lp.Identity())]))
    ev = events()[before:][-1]["outputs"][0]
    assert ev["facets"]["lifecycleStateChange"]["lifecycleStateChange"] == "ALTER"
    versions = ev["facets"]["partitions"]["versions"]
    assert [v["specId"] for v in versions] == [1, 2]
    assert ev["facets"]["partitions"]["dimensions"] == versions[1]["dimensions"]

    # Deleting everything truncates.
    before = len(events())
    ns.delete("TRUE")
    trunc = events()[before:][-1]["outputs"][0]
    assert trunc["facets"]["lifecycleStateChange"]["lifecycleStateChange"] == "TRUNCATE"


def test_many_partitions_fall_back_to_the_filter_condition(
    tmp_path: Path, events: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANCE_PARTITIONED_LINEAGE_MAX_PARTITIONS", "2")
    monkeypatch.setenv("LANCE_PARTITIONED_LINEAGE_MAX_LOCATIONS", "3")
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    ns.write(_table())
    # 3 partitions read: more than max_partitions, not more than max_locations.
    before = len(events())
    ns.to_table("country = 'US' OR country = 'DE'")
    cond = events()[before:][-1]["inputs"][0]["inputFacets"]["subset"]["inputCondition"]
    assert cond["type"] == "location"
    assert len(cond["locations"]) == 3
    assert all(loc.startswith(str((tmp_path / "ns").resolve())) for loc in cond["locations"])
    # All partitions read: the logical condition of the filter.
    before = len(events())
    ns.to_table("n >= 1 AND country <= 'zz'")
    cond = events()[before:][-1]["inputs"][0]["inputFacets"]["subset"]["inputCondition"]
    assert cond == {
        "type": "binary",
        "operator": "AND",
        "left": {
            "type": "compare",
            "left": {"type": "field", "field": "n"},
            "right": {"type": "literal", "value": "1"},
            "comparison": "GREATER_EQUAL_THAN",
        },
        "right": {
            "type": "compare",
            "left": {"type": "field", "field": "country"},
            "right": {"type": "literal", "value": "zz"},
            "comparison": "LESS_EQUAL_THAN",
        },
    }
    # A filter with no condition: no subset facet at all.
    before = len(events())
    ns.to_table("n <> 3")
    assert "subset" not in events()[before:][-1]["inputs"][0]["inputFacets"]


def test_failures_emit_fail_and_a_broken_transport_never_fails_the_write(
    tmp_path: Path, events: Any
) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    with raises_typed():
        ns.write(pa.table({"nope": [1]}))
    fail = events()[-1]
    assert fail["eventType"] == "FAIL"
    error = fail["run"]["facets"]["errorMessage"]
    assert error["programmingLanguage"] == "PYTHON"
    assert "nope" in error["message"]

    class Broken:
        def emit(self, event: Any) -> None:
            raise ConnectionError("lineage backend down")

    lineage.set_client(Broken())
    try:
        assert ns.write(_table()).rows == 5
        assert ns.to_table().num_rows == 5
    finally:
        lineage.set_client(None)


def test_distributed_write_emits_once_with_the_union_of_the_parts(
    tmp_path: Path, events: Any
) -> None:
    import pickle

    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    dw = ns.distributed_write(lineage_job="spark_ingest")
    shipped = pickle.loads(pickle.dumps(dw))  # as a task gets it: no run inside
    t = _table()
    msgs = [shipped.stage(t.slice(0, 2)), shipped.stage(t.slice(2, 3))]
    result = dw.commit(msgs)
    evs = [e for e in events() if e["job"]["name"] == "spark_ingest"]
    assert [e["eventType"] for e in evs] == ["START", "COMPLETE"]
    written = _partitions(evs[1]["outputs"][0], "outputFacets")
    assert {p["identifier"] for p in written} == {t.object_id for t in result.touched}
    assert len(written) == result.partitions
    # A commit in another process (as Spark's Data Source commits) continues the planning
    # run: one START, one COMPLETE, one run id.
    dw2 = ns.distributed_write(lineage_job="spark_ingest_2")
    elsewhere = pickle.loads(pickle.dumps(dw2))
    elsewhere.commit([elsewhere.stage(t)])
    evs = [e for e in events() if e["job"]["name"] == "spark_ingest_2"]
    assert [e["eventType"] for e in evs] == ["START", "COMPLETE"]
    assert len({e["run"]["runId"] for e in evs}) == 1


def test_job_settings_and_configure(events: Any, tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    ns.write(_table(), lineage_job=("team", "nightly"))
    last = events()[-1]
    assert (last["job"]["namespace"], last["job"]["name"]) == ("team", "nightly")
    with pytest.raises(lp.InvalidArgumentError):
        lineage.configure(max_partitions=-1)
    assert lineage_config.settings().max_partitions == 100


def test_filter_conditions_use_the_string_form() -> None:
    from lance_partitioned import _native

    schema = pa.schema([("ts", pa.timestamp("us", tz="UTC")), ("b", pa.bool_())])
    text = _native.filter_condition("ts >= TIMESTAMP '2025-01-01T00:00:00Z'", schema, 10)
    assert text is not None
    cond = json.loads(text)
    assert cond["right"] == {"type": "literal", "value": "2025-01-01T00:00:00.000000Z"}
    assert _native.filter_condition("b", schema, 10) is None


@pytest.mark.spark
def test_spark_write_and_read_emit_from_the_driver(spark: Any, tmp_path: Path, events: Any) -> None:
    import lance_partitioned.spark as lps

    uri = str(tmp_path / "ns")
    df = spark.createDataFrame(_table().to_pandas())
    result = lps.write(df, uri, spec=SPEC, num_tasks=2, lineage_job="spark_ingest")
    evs = [e for e in events() if e["job"]["name"] == "spark_ingest"]
    assert [e["eventType"] for e in evs] == ["START", "COMPLETE"]
    written = _partitions(evs[1]["outputs"][0], "outputFacets")
    assert {p["identifier"] for p in written} == {t.object_id for t in result.touched}
    assert evs[1]["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"] == 5

    rows = lps.read(spark, uri, filter="country = 'US'", lineage_job="spark_query").collect()
    assert len(rows) == 2
    evs = [e for e in events() if e["job"]["name"] == "spark_query"]
    assert [e["eventType"] for e in evs] == ["START", "COMPLETE"]
    read = _partitions(evs[1]["inputs"][0], "inputFacets")
    assert {p["dimensions"]["country"] for p in read} == {"US"}
    version = evs[1]["inputs"][0]["facets"]["version"]["datasetVersion"]
    assert version == str(lp.PartitionedNamespace.open(uri).version)


@pytest.mark.spark
def test_data_source_write_emits_one_run_from_the_driver_host(tmp_path: Path) -> None:
    # The Data Source plans and commits in Python processes the driver's JVM starts: lineage
    # configured in the environment that JVM starts with reaches them. One run (START at
    # planning, COMPLETE at commit, one run id), named by the `lineage_job` option.
    log = tmp_path / "events.jsonl"
    uri = str(tmp_path / "ns")
    env = {
        **os.environ,
        "OPENLINEAGE__TRANSPORT__TYPE": "file",
        "OPENLINEAGE__TRANSPORT__LOG_FILE_PATH": str(log),
        "OPENLINEAGE__TRANSPORT__APPEND": "true",
        "OPENLINEAGE_NAMESPACE": "tests",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    job = Path(__file__).parent / "lineage_ds_job.py"
    out = subprocess.run(
        [sys.executable, str(job), uri], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    evs = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    for e in evs:
        validate(e)
    ours = [e for e in evs if e["job"]["name"] == "ds_ingest"]
    assert [e["eventType"] for e in ours] == ["START", "COMPLETE"]
    assert len({e["run"]["runId"] for e in ours}) == 1
    written = _partitions(ours[1]["outputs"][0], "outputFacets")
    assert sorted(p["dimensions"]["country"] for p in written) == ["DE", "US"]
    assert lp.PartitionedNamespace.open(uri).to_table().num_rows == 3


def test_the_compact_view_says_why_a_dataset_has_no_subset(tmp_path: Path, events: Any) -> None:
    from lance_partitioned.lineage.show import compact

    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    ns.write(_table().slice(0, 0), lineage_job="empty")
    ns.write(_table(), lineage_job="full")
    shown = "\n".join(compact(events()))
    subsets = [line.strip() for line in shown.splitlines() if "subset:" in line]
    assert subsets[0] == "subset: (none: a new namespace holds no partitions)", shown
    assert subsets[1] == "subset: no partition (nothing written)", shown
    assert subsets[2].startswith("subset: 5 partition(s): "), shown
    assert "too many partitions" not in shown


def test_merge_and_update_events_list_the_partitions_changed(tmp_path: Path, events: Any) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    ns.write(_table())
    before = len(events())
    src = _table().slice(0, 2)  # US n=1, DE n=2: both updated in place
    result = ns.merge_insert("n").when_matched_update_all().execute(src, lineage_job="upsert")
    evs = events()[before:]
    assert [(e["job"]["name"], e["eventType"]) for e in evs] == [
        ("upsert", "START"),
        ("upsert", "COMPLETE"),
    ]
    out = evs[1]["outputs"][0]
    assert out["outputFacets"]["outputStatistics"]["rowCount"] == result.updated == 2
    changed = _partitions(out, "outputFacets")
    assert sorted(p["dimensions"]["country"] for p in changed) == ["DE", "US"]
    assert {p["identifier"] for p in changed} == {p.partition.object_id for p in result.partitions}
    assert out["facets"]["version"]["datasetVersion"] == str(result.manifest_version)

    before = len(events())
    ns.update({"n": "n + 100"}, where="country = 'DE'")
    upd = events()[before:]
    assert [e["eventType"] for e in upd] == ["START", "COMPLETE"]
    assert upd[1]["job"]["name"] == "lance_partitioned.update"
    assert upd[1]["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"] == 1
