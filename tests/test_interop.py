"""Interoperability: our namespaces through pylance 14 and the lance-namespace client models,
and namespaces written in another writer's form read through ours."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import lance
import lance.namespace as lance_namespace
import lance_namespace_urllib3_client.models as models
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_partitioned as lp

# This module partitions by day() alone (the day of the month) on purpose: its data spans
# days of one month, and a coarser field would change nothing it checks.
pytestmark = pytest.mark.filterwarnings("ignore::lance_partitioned.PartitionGranularityWarning")

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("country", pa.string()),
        pa.field("user_id", pa.int64()),
        pa.field("price", pa.decimal128(12, 3)),
    ]
)

SPEC = lp.PartitionSpec(
    [
        lp.PartitionField("ts_day", source="ts", transform=lp.Day()),
        lp.PartitionField("country", source="country", transform=lp.Identity()),
        lp.PartitionField("user_bucket", source=["user_id"], transform=lp.Bucket(3)),
    ]
)


def data(n: int, start: int = 0) -> pa.Table:
    base = dt.datetime(2025, 3, 30, 22, tzinfo=dt.timezone.utc)
    countries = ["US", "FR", None, "日本"]
    ids = range(start, start + n)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "ts": pa.array(
                [base + dt.timedelta(hours=5 * i) for i in ids], SCHEMA.field("ts").type
            ),
            "country": pa.array([countries[i % 4] for i in ids]),
            "user_id": pa.array([i % 11 for i in ids], pa.int64()),
            "price": pa.array([None] * n, SCHEMA.field("price").type),
        }
    )


@pytest.fixture
def ns(tmp_path: Path) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "root"), SCHEMA, SPEC)
    ns.write(data(300))
    ns.write(data(200, start=300))
    return ns


def _dn(root: str) -> Any:
    return lance_namespace.DirectoryNamespace(root=root)


def test_pylance_lists_describes_and_reads_every_leaf(ns: lp.PartitionedNamespace) -> None:
    dn = _dn(ns.root)
    ln = lance_namespace
    assert dn.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["v1"]
    parts = ns.partitions().to_pylist()
    fields = ["ts_day", "country", "user_bucket"]
    seen_leaves = 0
    total = 0
    for p in parts:
        path = p["object_id"].split("$")
        assert path[-1] == "dataset"
        # every level is listed by its parent, and describes its own partition value
        for level in range(1, 4):
            children = dn.list_namespaces(ln.ListNamespacesRequest(id=path[:level])).namespaces
            assert path[level] in children
            props = dn.describe_namespace(ln.DescribeNamespaceRequest(id=path[: level + 1]))
            ours = ns.describe_namespace(path[: level + 1])
            assert (props.properties or {}) == ours
            key = f"partition.{fields[level - 1]}"
            value = p[fields[level - 1]]
            if value is None:
                assert key not in ours
            elif isinstance(value, str):
                assert ours[key] == value
            else:
                assert ours[key] == str(value)
        tables = dn.list_tables(ln.ListTablesRequest(id=path[:4])).tables
        assert tables == ["dataset"]
        desc = dn.describe_table(ln.DescribeTableRequest(id=path))
        assert desc.location.rstrip("/").endswith(p["location"])
        leaf = lance.dataset(desc.location, version=p["read_version"])
        t = leaf.to_table()
        assert t.num_rows == p["rows"]
        total += t.num_rows
        seen_leaves += 1
    assert seen_leaves == len(parts)
    assert total == 500


def test_spec_and_schema_json_validate_with_client_models(ns: lp.PartitionedNamespace) -> None:
    props = ns.snapshot().properties
    raw = json.loads(props["partition_spec_v1"])
    spec = models.PartitionSpec.from_dict(raw)
    assert spec is not None
    # nothing of ours is dropped by the model (it ignores unknown keys silently)
    assert spec.to_dict() == raw
    assert [f.field_id for f in spec.fields] == ["ts_day", "country", "user_bucket"]
    assert spec.fields[2].transform.type == "bucket"
    assert spec.fields[2].transform.num_buckets == 3
    schema = models.JsonArrowSchema.from_dict(json.loads(props["schema"]))
    assert [f.name for f in schema.fields] == SCHEMA.names
    assert all("lance:field_id" in (f.metadata or {}) for f in schema.fields)
    # the runtime property carries the same JSON
    assert json.loads(ns.describe_namespace(["v1"])["partition_spec"]) == raw


def test_pylance_refuses_to_write_a_strong_mode_manifest(ns: lp.PartitionedNamespace) -> None:
    # pylance 14's DirectoryNamespace does not know `table_version` rows, so it refuses to
    # rewrite a strong-mode manifest (and so cannot drop our columns there).
    version = ns.version
    before = ns.snapshot().manifest()
    with pytest.raises(Exception, match="table_version"):
        _dn(ns.root).create_namespace(lance_namespace.CreateNamespaceRequest(id=["scratch"]))
    assert not ns.refresh()
    assert ns.version == version
    assert ns.snapshot().manifest().equals(before)
    assert ns.missing_columns == []
    # our manifest already carries DirectoryNamespace's primary-key marker
    pk = ns.snapshot().manifest().schema.field("object_id").metadata
    assert pk == {b"lance-schema:unenforced-primary-key:position": b"0"}


def test_pylance_write_drops_columns_then_repair_restores_them(tmp_path: Path) -> None:
    weak = lp.PartitionedNamespace.create(
        str(tmp_path / "weak"), SCHEMA, SPEC, transaction_mode="weak"
    )
    weak.write(data(300))
    before = weak.partitions().sort_by("object_id")
    want = weak.to_table().sort_by("id")
    # pylance rewrites the manifest with its five columns only
    # (docs/design.md, "Manifest columns other tools drop")
    _dn(weak.root).create_namespace(
        lance_namespace.CreateNamespaceRequest(id=["scratch"], properties={"owner": "someone"})
    )
    reopened = lp.PartitionedNamespace.open(weak.root)
    missing = set(reopened.missing_columns)
    assert missing == {
        "read_version",
        "partition_field_ts_day",
        "partition_field_country",
        "partition_field_user_bucket",
    }
    _reads_survive_and_repair(reopened, before, want, missing)
    assert "scratch" in reopened.snapshot().manifest()["object_id"].to_pylist()


def test_dropped_columns_of_a_strong_manifest_are_repaired(ns: lp.PartitionedNamespace) -> None:
    # What pylance would do if it accepted table_version rows: rewrite the manifest with its
    # five columns, keeping every row and the table metadata.
    before = ns.partitions().sort_by("object_id")
    want = ns.to_table().sort_by("id")
    m = ns.snapshot().manifest()
    five = m.select(["object_id", "object_type", "location", "metadata", "base_objects"])
    lance.write_dataset(five, str(Path(ns.root) / "__manifest"), mode="overwrite")
    reopened = lp.PartitionedNamespace.open(ns.root)
    missing = set(reopened.missing_columns)
    assert "read_version" in missing
    assert all(v is not None for v in before["read_version"].to_pylist())
    _reads_survive_and_repair(reopened, before, want, missing)


def _reads_survive_and_repair(
    ns: lp.PartitionedNamespace, before: pa.Table, want: pa.Table, missing: set[str]
) -> None:
    # still readable: values from partition.<field_id>, read versions from table_version rows
    after = ns.partitions().sort_by("object_id")
    assert after.select(before.column_names).equals(before)
    assert ns.to_table().sort_by("id").equals(want)
    us = want.filter(pc.field("country") == "US").num_rows
    assert ns.to_table("country = 'US'").num_rows == us
    assert ns.partitions("country = 'US'").num_rows < after.num_rows
    # writes refuse until repaired
    with pytest.raises(lp.CorruptNamespaceError, match="repair"):
        ns.write(data(1, start=10_000))
    # so does expire, which cannot tell which leaf versions the latest manifest reads
    with pytest.raises(lp.CorruptNamespaceError, match="repair"):
        ns.expire(retain_versions=1)
    assert ns.to_table().sort_by("id").equals(want)
    assert set(ns.repair()) == missing
    assert ns.missing_columns == []
    m = ns.snapshot().manifest()
    assert m.schema.field("read_version").type == pa.uint64()
    assert m.schema.field("partition_field_country").type == pa.string()
    assert ns.partitions().sort_by("object_id").select(before.column_names).equals(before)
    n = want.num_rows
    ns.write(data(10, start=10_000))
    assert ns.to_table().num_rows == n + 10
    assert ns.repair() == []


def _other_writer_namespace(src: lp.PartitionedNamespace, root: Path, *, with_rv: bool) -> None:
    """Re-creates ``src`` the way another writer could: root properties in the Arrow schema
    metadata of ``__manifest`` (no table metadata), ``table_version`` ids zero-padded to 20
    digits, leaves written with pylance, optionally without a ``read_version`` column."""
    snap = src.snapshot()
    props = snap.properties
    manifest = snap.manifest().to_pylist()
    rows = []
    for r in manifest:
        if r["object_type"] == "table_version":
            continue
        r = dict(r)
        if r["object_type"] == "table":
            leaf = lance.dataset(str(Path(src.root) / r["location"]), version=r["read_version"])
            t = leaf.to_table()
            # another writer: its own leaf with two versions, the manifest pinning the second
            lance.write_dataset(t.slice(0, 1), str(root / r["location"]))
            ds = lance.write_dataset(t, str(root / r["location"]), mode="overwrite")
            assert ds.version == 2
            r["read_version"] = 2
            rows.append(dict(r))
            for v in (1, 2):
                rows.append(
                    {
                        "object_id": f"{r['object_id']}${v:020d}",
                        "object_type": "table_version",
                        "location": None,
                        "metadata": json.dumps({"operation": "overwrite"}),
                        "base_objects": None,
                        "read_version": None,
                    }
                )
        else:
            rows.append(r)
    cols = [c for c in snap.manifest().schema.names if with_rv or c != "read_version"]
    schema = pa.schema(
        [snap.manifest().schema.field(c) for c in cols],
        metadata={k: v for k, v in props.items() if k == "schema" or k.startswith("partition_")},
    )
    table = pa.Table.from_pylist([{c: r.get(c) for c in cols} for r in rows], schema=schema)
    lance.write_dataset(table, str(root / "__manifest"))


@pytest.mark.parametrize("with_rv", [True, False])
def test_other_writers_form_is_read(
    ns: lp.PartitionedNamespace, tmp_path: Path, with_rv: bool
) -> None:
    root = tmp_path / "other"
    _other_writer_namespace(ns, root, with_rv=with_rv)
    other = lp.PartitionedNamespace.open(str(root))
    assert other.specs == ns.specs
    assert other.schema.names == SCHEMA.names
    assert ("read_version" in other.missing_columns) == (not with_rv)
    parts = other.partitions()
    assert set(parts["read_version"].to_pylist()) == {2}
    assert sum(parts["rows"].to_pylist()) == 500
    assert other.to_table().sort_by("id").equals(ns.to_table().sort_by("id"))
    f = "country = 'FR' AND user_id = 4"
    # Partition pruning alone keeps the FR leaves of user 4's bucket (the bucket read from
    # the leaves that hold user 4, through pylance). The other writer's version rows record
    # no column statistics, so that is all it prunes; ours skip some of those leaves too.
    mine = ns.partitions().to_pylist()
    buckets = {
        p["user_bucket"]
        for p in mine
        if lance.dataset(str(Path(ns.root) / p["location"]), version=p["read_version"])
        .to_table(filter="user_id = 4")
        .num_rows
    }
    assert len(buckets) == 1
    by_partitions = sum(p["country"] == "FR" and p["user_bucket"] in buckets for p in mine)
    assert ns.partitions(f).num_rows < by_partitions < parts.num_rows
    assert other.partitions(f).num_rows == by_partitions
    assert other.to_table(f).sort_by("id").equals(ns.to_table(f).sort_by("id"))
