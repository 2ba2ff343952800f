"""The partitioned namespace: format, writes, commits, pruning and snapshot reads."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_partitioned as lp
from lance_partitioned import exceptions as exc
from lance_partitioned.snapshot import native_filter

ID_RE = re.compile(r"^[a-z0-9]{16}$")


def events_schema() -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("event_date", pa.date32()),
            pa.field("country", pa.string()),
            pa.field("user_id", pa.int64()),
            pa.field("amount", pa.float64()),
        ]
    )


def events(n: int, start: int = 0) -> pa.Table:
    base = dt.date(2024, 12, 25)
    countries = ["US", "FR", "DE", None, "JP"]
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "event_date": pa.array(
                [base + dt.timedelta(days=(i * 7) % 40) for i in range(start, start + n)],
                pa.date32(),
            ),
            "country": pa.array([countries[i % 5] for i in range(start, start + n)]),
            "user_id": pa.array([(i * 31) % 97 for i in range(start, start + n)], pa.int64()),
            "amount": pa.array([float(i) for i in range(start, start + n)]),
        }
    )


SPEC = lp.PartitionSpec(
    [
        lp.PartitionField("event_year", source="event_date", transform=lp.Year()),
        lp.PartitionField("country", source="country", transform=lp.Identity()),
        lp.PartitionField("user_bucket", source=["user_id"], transform=lp.Bucket(4)),
    ]
)


@pytest.fixture
def ns(tmp_path: Path) -> lp.PartitionedNamespace:
    return lp.PartitionedNamespace.create(str(tmp_path / "events"), events_schema(), SPEC)


def expected_keys(t: pa.Table) -> set[tuple[object, ...]]:
    years = pc.year(t["event_date"]).to_pylist()
    buckets = lp.kernels.bucket(t["user_id"], 4).to_pylist()
    return set(zip(years, t["country"].to_pylist(), buckets, strict=True))


def test_create_writes_the_format(ns: lp.PartitionedNamespace) -> None:
    snap = ns.snapshot()
    props = snap.properties
    assert "schema" in props
    assert "partition_spec_v1" in props
    spec = json.loads(props["partition_spec_v1"])
    assert spec["id"] == 1
    assert [f["field_id"] for f in spec["fields"]] == ["event_year", "country", "user_bucket"]
    schema = json.loads(props["schema"])
    assert [f["metadata"]["lance:field_id"] for f in schema["fields"]] == ["0", "1", "2", "3", "4"]
    m = snap.manifest()
    names = m.schema.names
    for col in ["object_id", "object_type", "location", "metadata", "base_objects"]:
        assert col in names
    assert m.schema.field("read_version").type == pa.uint64()
    assert m.schema.field("partition_field_event_year").type == pa.int32()
    assert m.schema.field("partition_field_country").type == pa.string()
    assert m.schema.field("partition_field_user_bucket").type == pa.int32()
    assert m["object_id"].to_pylist() == ["v1"]
    assert m["object_type"].to_pylist() == ["namespace"]


def test_create_twice_and_open_missing(tmp_path: Path) -> None:
    root = str(tmp_path / "x")
    lp.PartitionedNamespace.create(root, events_schema(), SPEC)
    with pytest.raises(exc.NamespaceExistsError):
        lp.PartitionedNamespace.create(root, events_schema(), SPEC)
    with pytest.raises(exc.NamespaceNotFoundError):
        lp.PartitionedNamespace.open(str(tmp_path / "nothing"))


def test_bad_spec_is_refused_at_create(tmp_path: Path) -> None:
    bad = lp.PartitionSpec([lp.PartitionField("h", source="event_date", transform=lp.Hour())])
    with pytest.raises(exc.SpecError, match="h"):
        lp.PartitionedNamespace.create(str(tmp_path / "x"), events_schema(), bad)
    assert not (tmp_path / "x").exists() or not any((tmp_path / "x").iterdir())


def test_write_routes_every_row_and_reads_back(ns: lp.PartitionedNamespace) -> None:
    data = events(2000)
    res = ns.write(data)
    assert res.rows == 2000
    keys = expected_keys(data)
    assert res.partitions == len(keys) == res.created
    parts = ns.partitions()
    assert parts.num_rows == len(keys)
    got = set(
        zip(
            parts["event_year"].to_pylist(),
            parts["country"].to_pylist(),
            parts["user_bucket"].to_pylist(),
            strict=True,
        )
    )
    assert got == keys
    assert sum(parts["rows"].to_pylist()) == 2000
    out = ns.to_table().sort_by("id")
    assert out.num_rows == 2000
    assert out.column("id").to_pylist() == list(range(2000))
    assert out.select(data.column_names).to_pydict() == data.to_pydict()
    assert out.schema.field("id").nullable is False  # the namespace schema wins
    # Each leaf holds only rows of its partition.
    for row in parts.to_pylist():
        t = ns.to_table(f"id >= 0 AND country IS NOT DISTINCT FROM {_sql(row['country'])}")
        years = set(pc.year(t["event_date"]).to_pylist())
        assert row["event_year"] in years


def _sql(v: object) -> str:
    return "NULL" if v is None else f"'{v}'"


def test_ids_locations_and_manifest_rows(ns: lp.PartitionedNamespace) -> None:
    ns.write(events(500))
    m = ns.snapshot().manifest().to_pylist()
    tables = [r for r in m if r["object_type"] == "table"]
    namespaces = [r for r in m if r["object_type"] == "namespace"]
    versions = [r for r in m if r["object_type"] == "table_version"]
    assert tables
    assert versions
    for t in tables:
        parts = t["object_id"].split("$")
        assert parts[0] == "v1"
        assert parts[-1] == "dataset"
        assert len(parts) == 5
        assert all(ID_RE.match(p) for p in parts[1:4])
        assert re.match(r"^[0-9a-f]{8}_" + re.escape(t["object_id"]) + "$", t["location"])
        assert t["read_version"] == 1
        assert t["partition_field_event_year"] is not None
        # inherited values: the parent namespaces carry the prefix values
        parent = "$".join(parts[:3])
        prow = next(r for r in namespaces if r["object_id"] == parent)
        assert prow["partition_field_event_year"] == t["partition_field_event_year"]
        assert prow["partition_field_country"] == t["partition_field_country"]
        assert prow["partition_field_user_bucket"] is None
        assert (Path(ns.root) / t["location"]).is_dir()
    # one table_version row per table, pointing at read_version
    assert {v["object_id"] for v in versions} == {
        f"{t['object_id']}${t['read_version']}" for t in tables
    }


def test_describe_namespace_runtime_properties(ns: lp.PartitionedNamespace) -> None:
    ns.write(events(100))
    spec = json.loads(ns.describe_namespace(["v1"])["partition_spec"])
    assert spec["fields"][0]["field_id"] == "event_year"
    parts = ns.partitions(with_rows=False).to_pylist()
    row = next(r for r in parts if r["country"] == "US")
    ids = row["object_id"].split("$")
    assert ns.describe_namespace(ids[:2]) == {"partition.event_year": str(row["event_year"])}
    assert ns.describe_namespace(ids[:3]) == {"partition.country": "US"}
    assert ns.describe_namespace(ids[:4]) == {"partition.user_bucket": str(row["user_bucket"])}
    with pytest.raises(exc.NamespaceNotFoundError):
        ns.describe_namespace(["v1", "nope"])


def test_appends_reuse_partitions_and_snapshots_are_consistent(
    ns: lp.PartitionedNamespace,
) -> None:
    r1 = ns.write(events(300))
    v1 = r1.manifest_version
    r2 = ns.write(events(300, start=300))
    assert r2.created == 0
    assert ns.to_table().num_rows == 600
    # the older manifest version reads exactly the first write
    old = ns.to_table(as_of=v1)
    assert sorted(old["id"].to_pylist()) == list(range(300))
    snap = ns.snapshot(v1)
    assert snap.version == v1
    # leaves moved to detached versions; their main branch never did (strong mode)
    for row in ns.partitions(with_rows=False).to_pylist():
        assert row["read_version"] is not None


def test_overwrite_replaces_exactly_the_touched_partitions(ns: lp.PartitionedNamespace) -> None:
    data = events(1000)
    ns.write(data)
    us = data.filter(pc.field("country") == "US")
    replacement = us.set_column(4, "amount", pa.array([-1.0] * us.num_rows))
    res = ns.write(replacement, mode="overwrite")
    assert res.created == 0
    out = ns.to_table()
    assert out.num_rows == 1000
    assert set(out.filter(pc.field("country") == "US")["amount"].to_pylist()) == {-1.0}
    assert -1.0 not in out.filter(pc.field("country") != "US")["amount"].to_pylist()
    # overwrite with fewer rows shrinks just those partitions
    few = replacement.slice(0, 10)
    touched = expected_keys(few)
    ns.write(few, mode="overwrite")
    assert ns.to_table().num_rows == 1000 - _count_in(replacement, touched) + 10


def _count_in(t: pa.Table, keys: set[tuple[object, ...]]) -> int:
    years = pc.year(t["event_date"]).to_pylist()
    buckets = lp.kernels.bucket(t["user_id"], 4).to_pylist()
    return sum(1 for k in zip(years, t["country"].to_pylist(), buckets, strict=True) if k in keys)


def test_overwrite_all_drops_untouched_partitions(ns: lp.PartitionedNamespace) -> None:
    ns.write(events(500))
    small = events(20, start=1000)
    res = ns.write(small, mode="overwrite_all")
    assert res.dropped > 0
    out = ns.to_table()
    assert sorted(out["id"].to_pylist()) == list(range(1000, 1020))
    assert ns.partitions().num_rows == len(expected_keys(small))


def test_weak_mode_commits_to_main(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(
        str(tmp_path / "w"), events_schema(), SPEC, transaction_mode="weak"
    )
    assert ns.transaction_mode == "weak"
    ns.write(events(200))
    ns.write(events(200, start=200))
    parts = ns.partitions()
    assert all(v is None for v in parts["read_version"].to_pylist())
    assert sum(parts["rows"].to_pylist()) == 400
    assert ns.to_table().num_rows == 400


def test_pruning_and_explain(ns: lp.PartitionedNamespace) -> None:
    data = events(3000)
    ns.write(data)
    total = ns.partitions(with_rows=False).num_rows
    cases = [
        "country = 'US'",
        "country IN ('US', 'FR')",
        "country IS NULL",
        "country IS NOT NULL AND user_id = 5",
        "event_date >= DATE '2025-01-01'",
        "event_date < DATE '2025-01-01' OR country = 'JP'",
        "event_date BETWEEN DATE '2024-12-30' AND DATE '2025-01-02'",
        "user_id IN (1, 2, 3)",
        "amount > 100",
    ]
    for f in cases:
        kept = ns.partitions(f, with_rows=False).num_rows
        got = sorted(ns.to_table(f)["id"].to_pylist())
        want = sorted(data.filter(_to_pyarrow(f))["id"].to_pylist())
        assert got == want, f
        assert kept <= total
    assert ns.partitions("country = 'US'", with_rows=False).num_rows < total
    assert ns.partitions("user_id = 5", with_rows=False).num_rows < total
    assert ns.partitions("event_date >= DATE '2025-01-01'", with_rows=False).num_rows < total
    assert ns.partitions("amount > 100", with_rows=False).num_rows == total
    plan = ns.explain("country = 'US' AND user_id = 5")
    # Literals in their string form, as SQL (not DataFusion's Utf8("US")).
    assert "partition_field_country = 'US'" in plan
    assert "partition_field_user_bucket" in plan
    assert "kept" in plan


def _to_pyarrow(f: str) -> pc.Expression:
    d = pc.field
    table = {
        "country = 'US'": d("country") == "US",
        "country IN ('US', 'FR')": d("country").isin(["US", "FR"]),
        "country IS NULL": d("country").is_null(),
        "country IS NOT NULL AND user_id = 5": d("country").is_valid() & (d("user_id") == 5),
        "event_date >= DATE '2025-01-01'": d("event_date") >= dt.date(2025, 1, 1),
        "event_date < DATE '2025-01-01' OR country = 'JP'": (
            (d("event_date") < dt.date(2025, 1, 1)) | (d("country") == "JP")
        ),
        "event_date BETWEEN DATE '2024-12-30' AND DATE '2025-01-02'": (
            (d("event_date") >= dt.date(2024, 12, 30)) & (d("event_date") <= dt.date(2025, 1, 2))
        ),
        "user_id IN (1, 2, 3)": d("user_id").isin([1, 2, 3]),
        "amount > 100": d("amount") > 100,
    }
    return table[f]


def test_pyarrow_expression_filter(ns: lp.PartitionedNamespace) -> None:
    data = events(500)
    ns.write(data)
    got = ns.to_table(pc.field("country") == "FR", columns=["id"])
    assert got.column_names == ["id"]
    want = data.filter(pc.field("country") == "FR")["id"].to_pylist()
    assert sorted(got["id"].to_pylist()) == sorted(want)


def test_projection(ns: lp.PartitionedNamespace) -> None:
    ns.write(events(50))
    t = ns.to_table("country = 'US'", columns=["id", "amount"])
    assert t.column_names == ["id", "amount"]
    with pytest.raises(exc.InvalidArgumentError):
        ns.to_table(columns=["nope"])
    with pytest.raises(exc.ExpressionError):
        ns.to_table("nope = 1")


def test_write_schema_rules(ns: lp.PartitionedNamespace) -> None:
    with pytest.raises(exc.SchemaMismatchError, match="extra"):
        ns.write(events(5).append_column("extra", pa.array([1] * 5)))
    with pytest.raises(exc.SchemaMismatchError, match="id"):
        ns.write(events(5).drop_columns(["id"]))
    lossy = events(5).set_column(3, "user_id", pa.array(["a", "b", "c", "d", "e"]))
    with pytest.raises(exc.SchemaMismatchError, match="user_id"):
        ns.write(lossy)
    with pytest.raises(exc.SchemaMismatchError, match="id"):
        ns.write(events(5).set_column(0, "id", pa.array([1, None, 3, 4, 5], pa.int64())))
    # castable (int32 -> int64) and missing nullable columns are fine
    t = events(5).set_column(3, "user_id", pa.array([1, 2, 3, 4, 5], pa.int32()))
    ns.write(t.drop_columns(["amount"]))
    out = ns.to_table()
    assert out.num_rows == 5
    assert out["amount"].null_count == 5
    assert out.schema.field("user_id").type == pa.int64()
    # nothing of the refused writes became visible
    assert ns.snapshot().manifest().num_rows > 0


def test_awkward_partition_values_round_trip(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("k", pa.string()), pa.field("v", pa.int64())])
    spec = lp.PartitionSpec([lp.PartitionField("k", source="k", transform=lp.Identity())])
    ns = lp.PartitionedNamespace.create(str(tmp_path / "odd"), schema, spec)
    values = ["a$b", "x/y", "k=v", "100%", "nul\x00byte", "日本語", "🎵", "", " ", None, "US"]
    ns.write(pa.table({"k": values, "v": list(range(len(values)))}))
    parts = ns.partitions()
    assert sorted(parts["k"].to_pylist(), key=str) == sorted(values, key=str)
    assert set(parts["rows"].to_pylist()) == {1}
    for i, v in enumerate(values):
        f = "k IS NULL" if v is None else "k = " + "'" + v.replace("'", "''") + "'"
        got = ns.to_table(f)
        assert got["v"].to_pylist() == [i], (v, got)
        assert ns.partitions(f, with_rows=False).num_rows == 1
    # the runtime properties carry the string form; NULL and '' have none ('' is marked)
    for row in parts.to_pylist():
        props = ns.describe_namespace(row["object_id"].split("$")[:2])
        if row["k"] is None:
            assert props == {}
        elif row["k"] == "":
            assert props == {"lance_partitioned.empty.k": "true"}
        else:
            assert props == {"partition.k": row["k"]}


def test_empty_input_is_a_no_op(ns: lp.PartitionedNamespace) -> None:
    before = ns.version
    res = ns.write(events(0))
    assert res.rows == 0
    assert res.partitions == 0
    assert ns.version == before


def test_evolve_adds_a_spec_version_and_old_data_stays_readable(
    ns: lp.PartitionedNamespace,
) -> None:
    first = events(400)
    ns.write(first)
    v2 = lp.PartitionSpec(
        [
            lp.PartitionField("event_year", source="event_date", transform=lp.Year()),
            lp.PartitionField("event_month", source="event_date", transform=lp.Month()),
            lp.PartitionField("country", source="country", transform=lp.Identity()),
        ]
    )
    assert ns.evolve(v2) == 2
    assert sorted(ns.specs) == [1, 2]
    m = ns.snapshot().manifest()
    assert m.schema.field("partition_field_event_month").type == pa.int32()
    assert "v2" in m["object_id"].to_pylist()
    second = events(400, start=400)
    ns.write(second)
    parts = ns.partitions()
    assert set(parts["spec_id"].to_pylist()) == {1, 2}
    assert sum(parts["rows"].to_pylist()) == 800
    assert sorted(ns.to_table()["id"].to_pylist()) == list(range(800))
    # pruning uses each version's own spec
    f = "event_date >= DATE '2025-01-15' AND country = 'US'"
    want = sorted(
        pa.concat_tables([first, second])
        .filter((pc.field("event_date") >= dt.date(2025, 1, 15)) & (pc.field("country") == "US"))[
            "id"
        ]
        .to_pylist()
    )
    assert sorted(ns.to_table(f)["id"].to_pylist()) == want
    plan = ns.snapshot().plan(f)
    assert {p["spec_id"] for p in plan} == {1, 2}
    assert all(p["kept"] < p["total"] for p in plan)
    assert "partition_field_event_month" in ns.explain(f)
    assert json.loads(ns.describe_namespace(["v2"])["partition_spec"])["id"] == 2


def test_evolve_enforces_field_id_rules(ns: lp.PartitionedNamespace) -> None:
    with pytest.raises(exc.SpecError, match="identical"):
        ns.evolve(SPEC)
    renamed = lp.PartitionSpec([lp.PartitionField("yr", source="event_date", transform=lp.Year())])
    with pytest.raises(exc.SpecError, match="reuse"):
        ns.evolve(renamed)
    reused = lp.PartitionSpec(
        [lp.PartitionField("country", source="event_date", transform=lp.Year())]
    )
    with pytest.raises(exc.SpecError, match="never reused"):
        ns.evolve(reused)
    assert sorted(ns.specs) == [1]


def test_delete_drops_covered_partitions_and_deletes_rows_inside_others(
    ns: lp.PartitionedNamespace,
) -> None:
    data = events(1000)
    ns.write(data)
    before = ns.partitions()
    us_parts = before.filter(pc.field("country") == "US").num_rows
    v0 = ns.version
    # covered exactly: identity column only -> whole partitions dropped, nothing read
    res = ns.delete("country = 'US'")
    assert res.dropped == us_parts
    assert res.changed == 0
    assert res.rows == data.filter(pc.field("country") == "US").num_rows
    left = data.filter((pc.field("country") != "US") | pc.field("country").is_null())
    assert sorted(ns.to_table()["id"].to_pylist()) == sorted(left["id"].to_pylist())
    assert ns.partitions().num_rows == before.num_rows - us_parts
    # the dropped partitions' rows, versions and now-empty namespaces are gone
    m = ns.snapshot().manifest()
    assert "US" not in m["partition_field_country"].to_pylist()
    assert set(m["object_type"].to_pylist()) == {"namespace", "table", "table_version"}
    # rows inside partitions (not covered): amount is not a partition column
    res = ns.delete("amount < 100 AND country = 'FR'")
    assert res.dropped == 0 or res.changed > 0
    want = [r["id"] for r in left.to_pylist() if not (r["amount"] < 100 and r["country"] == "FR")]
    assert sorted(ns.to_table()["id"].to_pylist()) == sorted(want)
    assert res.rows == left.num_rows - len(want)
    # NULL partition values are not matched by a comparison; IS NULL drops them
    res = ns.delete("country IS NULL")
    assert res.dropped > 0
    assert ns.to_table("country IS NULL").num_rows == 0
    # nothing matches: no commit
    version = ns.version
    res = ns.delete("country = 'nowhere'")
    assert (res.rows, res.dropped, res.changed) == (0, 0, 0)
    assert ns.version == version
    # the old snapshot still reads everything
    assert ns.to_table(as_of=v0).num_rows == 1000
    with pytest.raises(exc.ExpressionError):
        ns.delete("nope = 1")
    with pytest.raises(exc.InvalidArgumentError):
        ns.delete("")


def test_delete_emptying_a_partition_drops_it(ns: lp.PartitionedNamespace) -> None:
    ns.write(events(200))
    n = ns.partitions().num_rows
    res = ns.delete("id >= 0")
    assert res.dropped == n
    assert res.changed == 0
    assert ns.partitions().num_rows == 0
    assert ns.to_table().num_rows == 0
    # writes go on after everything was deleted
    ns.write(events(10))
    assert ns.to_table().num_rows == 10


def test_delete_in_weak_mode(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(
        str(tmp_path / "w"), events_schema(), SPEC, transaction_mode="weak"
    )
    data = events(300)
    ns.write(data)
    ns.delete("amount >= 150")
    assert sorted(ns.to_table()["id"].to_pylist()) == list(range(150))


def test_pyarrow_expression_prunes_on_identity_columns(ns: lp.PartitionedNamespace) -> None:
    data = events(600)
    ns.write(data)
    total = ns.partitions(with_rows=False).num_rows
    expr = pc.field("country").isin(["US", "JP"])
    scan = ns.snapshot()._s.scan(native_filter(expr), None, None)
    opened = 0
    for _ in scan:
        opened = scan.leaves_opened
    kept = ns.partitions("country IN ('US', 'JP')", with_rows=False).num_rows
    assert 0 < opened <= kept < total
    got = sorted(ns.to_table(expr)["id"].to_pylist())
    assert got == sorted(data.filter(expr)["id"].to_pylist())
    # NULL partitions: is_null prunes to them; a non-partition column does not stop pruning
    nulls = pc.field("country").is_null()
    assert sorted(ns.to_table(nulls)["id"].to_pylist()) == sorted(
        data.filter(nulls)["id"].to_pylist()
    )
    mixed = (pc.field("country") == "FR") & (pc.field("amount") > 300)
    fr = ns.partitions("country = 'FR'", with_rows=False).num_rows
    same = ns.partitions("country = 'FR' AND amount > 300", with_rows=False).num_rows
    assert 0 < ns.partitions(mixed, with_rows=False).num_rows == same <= fr < total
    assert sorted(ns.to_table(mixed)["id"].to_pylist()) == sorted(
        data.filter(mixed)["id"].to_pylist()
    )


def test_quoted_identifiers_filter_rows_like_plain_ones(tmp_path: Path) -> None:
    t = pa.table({"id": pa.array(range(10), pa.int64()), "country": pa.array(["US", "FR"] * 5)})
    spec = lp.PartitionSpec(
        [lp.PartitionField("country", source="country", transform=lp.Identity())]
    )
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), t.schema, spec)
    ns.write(t)
    for f in ["\"country\" = 'US'", "country = 'US'", '("country" IS NOT NULL) AND ("id" < 100)']:
        got = ns.to_table(filter=f, columns=["id", "country"])
        assert got.num_rows == (5 if "US" in f else 10), f
