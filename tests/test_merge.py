"""merge_insert against an independent model: every expected table is computed here in plain
Python (dicts keyed by the merge key) from the rows as pyarrow holds them, never from the code
under test; every error path must leave the namespace at the version it was."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lance_partitioned as lp

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("day", pa.date32()),
        pa.field("qty", pa.int64()),
        pa.field("note", pa.string()),
    ]
)


def by_bucket(root: Path, n: int = 8) -> lp.PartitionedNamespace:
    """Partitioned by bucket(id): the key determines the partition."""
    spec = lp.PartitionSpec([lp.PartitionField("b", source="id", transform=lp.Bucket(n))])
    return lp.PartitionedNamespace.create(str(root), SCHEMA, spec)


def by_day(root: Path) -> lp.PartitionedNamespace:
    """Partitioned by the day column: the key (id) does not determine the partition."""
    spec = lp.PartitionSpec([lp.PartitionField("d", source="day", transform=lp.Identity())])
    return lp.PartitionedNamespace.create(str(root), SCHEMA, spec)


def rows(n: int, start: int = 0, qty: int = 1) -> list[dict[str, Any]]:
    return [
        {
            "id": i,
            "day": dt.date(2025, 1, 1 + i % 5),
            "qty": qty * i,
            "note": f"n{i}",
        }
        for i in range(start, start + n)
    ]


def table(rs: list[dict[str, Any]], schema: pa.Schema = SCHEMA) -> pa.Table:
    return pa.Table.from_pylist(rs, schema=schema)


def content(ns: lp.PartitionedNamespace) -> dict[Any, dict[str, Any]]:
    """The namespace's rows by id (every id must appear once)."""
    out: dict[Any, dict[str, Any]] = {}
    for r in ns.to_table().to_pylist():
        assert r["id"] not in out, f"id {r['id']} appears twice"
        out[r["id"]] = r
    return out


def model_merge(
    target: dict[Any, dict[str, Any]],
    source: list[dict[str, Any]],
    *,
    update: Any = None,
    insert: bool = False,
    delete_matched: Any = None,
    delete_unmatched: Any = None,
) -> dict[Any, dict[str, Any]]:
    """SQL MERGE on dicts: `update(t, s)` returns the new row or None (no update),
    `delete_matched(t, s)` / `delete_unmatched(t)` say whether to delete."""
    out = {k: dict(v) for k, v in target.items()}
    seen = set()
    for s in source:
        k = s["id"]
        if k is not None and k in target:
            seen.add(k)
            t = target[k]
            if update is not None and (new := update(t, s)) is not None:
                out[k] = new
            elif delete_matched is not None and delete_matched(t, s):
                del out[k]
        elif insert:
            out[k] = dict(s)
    if delete_unmatched is not None:
        for k, t in target.items():
            if k not in seen and delete_unmatched(t):
                del out[k]
    return out


def test_upsert_equals_the_model_and_counts_what_it_did(tmp_path: Path) -> None:
    ns = by_bucket(tmp_path / "ns")
    ns.write(table(rows(200)))
    before = content(ns)
    source = rows(60, start=170, qty=7)  # 30 existing ids, 30 new ones
    result = (
        ns.merge_insert("id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute(table(source))
    )
    want = model_merge(before, source, update=lambda t, s: dict(s), insert=True)
    assert content(ns) == want
    assert (result.inserted, result.updated, result.deleted) == (30, 30, 0)
    assert sum(p.inserted for p in result.partitions) == 30
    assert sum(p.updated + p.moved_out for p in result.partitions) == 30
    assert result.manifest_version == ns.version
    assert result.attempts == 1
    ops = ns.history().column("operation").to_pylist()
    assert "merge" in ops


def test_only_partitions_holding_source_keys_are_read(tmp_path: Path) -> None:
    ns = by_bucket(tmp_path / "ns", n=16)
    ns.write(table(rows(400)))
    source = rows(3, start=10, qty=5)
    # Independently: the partitions holding the source's ids, found by reading each
    # partition's rows with pylance.
    import lance

    wanted = {r["id"] for r in source}
    parts = ns.partitions().to_pylist()
    holding = 0
    for p in parts:
        ds = lance.dataset(str(tmp_path / "ns" / p["location"]), version=p["read_version"])
        got = ds.to_table(columns=["id"]).column("id").to_pylist()
        holding += bool(set(got) & wanted)
    total = len(parts)
    result = ns.merge_insert("id").when_matched_update_all().execute(table(source))
    assert result.scanned == holding
    assert result.skipped == total - holding
    assert "determines" in result.matching[0]


def test_conditional_update_and_update_set(tmp_path: Path) -> None:
    ns = by_bucket(tmp_path / "ns")
    ns.write(table(rows(50)))
    before = content(ns)
    source = [dict(r, qty=r["id"] % 3) for r in rows(50)]
    result = (
        ns.merge_insert(["id"])
        .when_matched_update(
            {"qty": "target.qty + source.qty", "note": "concat(target.note, '!')"},
            condition="source.qty > 0",
        )
        .execute(table(source))
    )

    def upd(t: dict[str, Any], s: dict[str, Any]) -> dict[str, Any] | None:
        if not s["qty"] > 0:
            return None
        return dict(t, qty=t["qty"] + s["qty"], note=t["note"] + "!")

    want = model_merge(before, source, update=upd)
    assert content(ns) == want
    assert result.updated == sum(1 for s in source if s["qty"] > 0)


def test_clauses_apply_in_order_first_true_wins(tmp_path: Path) -> None:
    ns = by_bucket(tmp_path / "ns")
    ns.write(table(rows(30)))
    before = content(ns)
    source = [dict(r, qty=r["id"] % 4) for r in rows(30)]
    (
        ns.merge_insert("id")
        .when_matched_delete("source.qty = 0")
        .when_matched_update_all("source.qty < 3")
        .execute(table(source))
    )
    want = {k: dict(v) for k, v in before.items()}
    for s in source:
        if s["qty"] == 0:
            del want[s["id"]]
        elif s["qty"] < 3:
            want[s["id"]] = dict(s)
    assert content(ns) == want


def test_not_matched_by_source_delete_prunes_by_its_condition(tmp_path: Path) -> None:
    ns = by_day(tmp_path / "ns")
    ns.write(table(rows(50)))
    before = content(ns)
    source = rows(10)  # ids 0..9, all days
    result = (
        ns.merge_insert("id")
        .when_not_matched_by_source_delete("day = DATE '2025-01-02'")
        .execute(table(source))
    )
    want = model_merge(before, source, delete_unmatched=lambda t: t["day"] == dt.date(2025, 1, 2))
    assert content(ns) == want
    assert result.deleted == len(before) - len(want)
    # No matching clause besides the delete: only the day the condition names is read.
    assert result.scanned == 1


def test_rows_whose_partition_columns_change_move(tmp_path: Path) -> None:
    ns = by_day(tmp_path / "ns")
    ns.write(table(rows(20)))
    before = content(ns)
    source = [dict(r, day=dt.date(2025, 2, 1)) for r in rows(4)]
    result = ns.merge_insert("id").when_matched_update_all().execute(table(source))
    want = model_merge(before, source, update=lambda t, s: dict(s))
    assert content(ns) == want
    assert result.moved == 4
    assert "does not" in result.matching[0]
    new = [p for p in result.partitions if p.created]
    assert len(new) == 1
    assert new[0].moved_in == 4
    assert sum(p.moved_out for p in result.partitions) == 4
    # the new day is a partition of its own, read back by pruning
    assert sorted(ns.to_table(filter="day = DATE '2025-02-01'").column("id").to_pylist()) == [
        0,
        1,
        2,
        3,
    ]


def test_a_partition_left_empty_is_dropped(tmp_path: Path) -> None:
    ns = by_day(tmp_path / "ns")
    ns.write(table(rows(10)))
    first_day = [r for r in rows(10) if r["day"] == dt.date(2025, 1, 1)]
    result = ns.merge_insert("id").when_matched_delete().execute(table(first_day))
    assert result.deleted == len(first_day)
    assert [p.dropped for p in result.partitions] == [True]
    days = ns.partitions().num_rows
    assert days == 4


def test_null_keys_never_match(tmp_path: Path) -> None:
    schema = SCHEMA.set(0, pa.field("id", pa.int64()))
    ns = lp.PartitionedNamespace.create(
        str(tmp_path / "ns"),
        schema,
        lp.PartitionSpec([lp.PartitionField("d", source="day", transform=lp.Identity())]),
    )
    ns.write(table([{"id": None, "day": dt.date(2025, 1, 1), "qty": 1, "note": "t"}], schema))
    src = [{"id": None, "day": dt.date(2025, 1, 1), "qty": 2, "note": "s"}]
    result = (
        ns.merge_insert("id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute(table(src, schema))
    )
    assert (result.updated, result.inserted) == (0, 1)
    assert sorted(ns.to_table().column("qty").to_pylist()) == [1, 2]


_UTC = dt.timezone.utc


@pytest.mark.parametrize(
    ("key_type", "ids"),
    [
        # Past the largest int64: the key's bits, not a signed value, must match.
        (pa.uint64(), [2**64 - 1 - i * 3 for i in range(40)] + [0, 2**63]),
        (pa.int8(), list(range(-128, 128, 6))),
        (pa.date32(), [dt.date(1900 + i * 7, 1 + i % 12, 1) for i in range(40)]),
        (
            pa.timestamp("us", tz="America/New_York"),
            [dt.datetime(2024, 3, 10, 6, i, tzinfo=_UTC) for i in range(40)],
        ),
        (pa.string(), [f"k{i:03d}" for i in range(40)]),
    ],
)
def test_keys_of_every_integer_like_type_match_by_value(
    tmp_path: Path, key_type: pa.DataType, ids: list[Any]
) -> None:
    """Integer-like keys are looked up by value (strings by their encoded bytes): upserts of
    each type, a NULL key among them, equal the model."""
    schema = SCHEMA.set(0, pa.field("id", key_type))
    ns = by_day_of(tmp_path / "ns", schema)
    base = [
        {"id": k, "day": dt.date(2025, 1, 1 + i % 3), "qty": i, "note": "t"}
        for i, k in enumerate(ids[::2])
    ]
    base.append({"id": None, "day": dt.date(2025, 1, 1), "qty": -1, "note": "t"})
    ns.write(table(base, schema))
    before = {r["id"]: r for r in ns.to_table().to_pylist() if r["id"] is not None}
    nulls = [r for r in ns.to_table().to_pylist() if r["id"] is None]
    source = [
        {"id": k, "day": dt.date(2025, 1, 2), "qty": 1000 + i, "note": "s"}
        for i, k in enumerate(ids[::3])
    ]
    source.append({"id": None, "day": dt.date(2025, 1, 3), "qty": -2, "note": "s"})
    result = (
        ns.merge_insert("id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute(table(source, schema))
    )
    keyed = [r for r in source if r["id"] is not None]
    want = model_merge(before, keyed, update=lambda t, s: dict(s), insert=True)
    got = ns.to_table().to_pylist()
    assert {r["id"]: r for r in got if r["id"] is not None} == want
    assert sorted(r["qty"] for r in got if r["id"] is None) == sorted(
        [r["qty"] for r in nulls] + [-2]
    )
    matched = len({r["id"] for r in keyed} & set(before))
    assert (result.updated, result.inserted) == (matched, len(source) - matched)
    assert matched > 0


def by_day_of(root: Path, schema: pa.Schema) -> lp.PartitionedNamespace:
    spec = lp.PartitionSpec([lp.PartitionField("d", source="day", transform=lp.Identity())])
    return lp.PartitionedNamespace.create(str(root), schema, spec)


def test_keys_inside_structs(tmp_path: Path) -> None:
    schema = pa.schema(
        [
            pa.field("meta", pa.struct([pa.field("id", pa.int64()), pa.field("src", pa.string())])),
            pa.field("v", pa.int64()),
        ]
    )
    spec = lp.PartitionSpec([lp.PartitionField("s", source="meta.src", transform=lp.Identity())])
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema, spec)
    base = [{"meta": {"id": i, "src": "ab"[i % 2]}, "v": i} for i in range(10)]
    ns.write(pa.Table.from_pylist(base, schema=schema))
    src = [{"meta": {"id": i, "src": "ab"[i % 2]}, "v": 100 + i} for i in (3, 4, 11)]
    result = (
        ns.merge_insert("meta.id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute(pa.Table.from_pylist(src, schema=schema))
    )
    assert (result.updated, result.inserted) == (2, 1)
    got = {r["meta"]["id"]: r["v"] for r in ns.to_table().to_pylist()}
    want = {r["meta"]["id"]: r["v"] for r in base} | {r["meta"]["id"]: r["v"] for r in src}
    assert got == want


def test_a_merge_into_an_evolved_spec_moves_old_rows_to_the_current_spec(tmp_path: Path) -> None:
    ns = by_day(tmp_path / "ns")
    ns.write(table(rows(20)))
    ns.evolve(lp.PartitionSpec([lp.PartitionField("b", source="id", transform=lp.Bucket(4))]))
    ns.write(table(rows(10, start=20)))
    before = content(ns)
    source = rows(30, qty=3)  # ids 0..29: 20 under spec v1, 10 under v2
    result = ns.merge_insert("id").when_matched_update_all().execute(table(source))
    want = model_merge(before, source, update=lambda t, s: dict(s))
    assert content(ns) == want
    assert result.updated == 30
    # the old spec's partitions are all read (the key does not determine them) and emptied
    assert any("does not" in line for line in result.matching)
    assert any("determines" in line for line in result.matching)
    specs = {sid for sid in ns.partitions().column("spec_id").to_pylist()}
    assert specs == {2}


@pytest.mark.parametrize(
    ("build", "error"),
    [
        (lambda b: b.when_matched_update_all("source.nope > 1"), lp.ExpressionError),
        (lambda b: b.when_matched_update_all("source.qty"), lp.ExpressionError),
        (lambda b: b.when_matched_update({"nope": "1"}), lp.SchemaMismatchError),
        (lambda b: b, lp.InvalidArgumentError),
    ],
)
def test_bad_merges_fail_typed_and_change_nothing(tmp_path: Path, build: Any, error: Any) -> None:
    ns = by_bucket(tmp_path / "ns")
    ns.write(table(rows(10)))
    version, before = ns.version, content(ns)
    with pytest.raises(error):
        build(ns.merge_insert("id")).execute(table(rows(3, qty=9)))
    assert lp.PartitionedNamespace.open(str(tmp_path / "ns")).version == version
    assert content(ns) == before


def test_duplicate_source_keys_are_refused_naming_the_key(tmp_path: Path) -> None:
    ns = by_bucket(tmp_path / "ns")
    ns.write(table(rows(10)))
    version = ns.version
    src = rows(3) + rows(1, start=2)
    with pytest.raises(lp.DuplicateKeyError, match="id = 2"):
        ns.merge_insert("id").when_matched_update_all().execute(table(src))
    assert ns.version == version


def test_unknown_source_columns_are_refused_unless_a_condition_reads_them(tmp_path: Path) -> None:
    ns = by_bucket(tmp_path / "ns")
    ns.write(table(rows(10)))
    src = table(rows(3, qty=5)).append_column("op", pa.array(["U", "D", "U"]))
    with pytest.raises(lp.SchemaMismatchError, match="op"):
        ns.merge_insert("id").when_matched_update_all().execute(src)
    before = content(ns)
    (
        ns.merge_insert("id")
        .when_matched_delete("source.op = 'D'")
        .when_matched_update_all()
        .execute(src)
    )
    want = dict(before)
    del want[1]
    want[0] = rows(3, qty=5)[0]
    want[2] = rows(3, qty=5)[2]
    assert content(ns) == want


def test_a_partial_source_updates_only_its_columns(tmp_path: Path) -> None:
    ns = by_bucket(tmp_path / "ns")
    ns.write(table(rows(10)))
    before = content(ns)
    src = pa.table({"id": [1, 2], "qty": [77, 88]})
    ns.merge_insert("id").when_matched_update_all().execute(src)
    want = dict(before)
    want[1] = dict(before[1], qty=77)
    want[2] = dict(before[2], qty=88)
    assert content(ns) == want


def test_update_sets_values_and_moves_rows(tmp_path: Path) -> None:
    ns = by_day(tmp_path / "ns")
    ns.write(table(rows(30)))
    before = content(ns)
    result = ns.update(
        {"qty": "qty * 10", "day": "DATE '2025-03-01'"}, where="id % 7 = 0 AND qty < 100"
    )
    want = {k: dict(v) for k, v in before.items()}
    changed = [k for k, v in before.items() if k % 7 == 0 and v["qty"] < 100]
    for k in changed:
        want[k] = dict(want[k], qty=want[k]["qty"] * 10, day=dt.date(2025, 3, 1))
    assert content(ns) == want
    assert result.updated == len(changed)
    assert result.moved == len(changed)
    with pytest.raises(lp.SchemaMismatchError):
        ns.update({"nope": "1"})
    with pytest.raises(lp.ExpressionError):
        ns.update({"qty": "qty +"})


def test_apply_changes_keeps_the_last_change_per_key(tmp_path: Path) -> None:
    ns = by_bucket(tmp_path / "ns")
    ns.write(table(rows(20)))
    before = content(ns)
    feed = [
        # id, op, lsn, qty
        (1, "U", 5, 100),
        (1, "U", 9, 101),  # last for 1: update
        (2, "D", 3, None),  # last for 2: delete
        (3, "U", 7, 300),
        (3, "D", 8, None),  # last for 3: delete
        (4, "D", 1, None),
        (4, "I", 2, 400),  # last for 4: upsert
        (50, "I", 1, 5000),  # new key: insert
        (51, "D", 1, None),  # delete of a missing key: nothing
        (52, "I", 4, 5200),
        (52, "D", 6, None),  # inserted then deleted: nothing
    ]
    changes = pa.table(
        {
            "id": [f[0] for f in feed],
            "op": [f[1] for f in feed],
            "lsn": [f[2] for f in feed],
            "day": [dt.date(2025, 1, 1)] * len(feed),
            "qty": [f[3] for f in feed],
            "note": ["cdc"] * len(feed),
        }
    )
    result = ns.apply_changes(changes, keys="id", sequence_by="lsn")
    want = {k: dict(v) for k, v in before.items()}
    last: dict[int, tuple[str, int, Any]] = {}
    for key, op, lsn, qty in feed:
        if key not in last or lsn >= last[key][1]:
            last[key] = (op, lsn, qty)
    for key, (op, _, qty) in last.items():
        if op == "D":
            want.pop(key, None)
        else:
            want[key] = {"id": key, "day": dt.date(2025, 1, 1), "qty": qty, "note": "cdc"}
    assert content(ns) == want
    assert (result.inserted, result.updated, result.deleted) == (1, 2, 2)
    assert "op" not in ns.schema.names


def test_weak_mode_merges_equal_the_model(tmp_path: Path) -> None:
    spec = lp.PartitionSpec([lp.PartitionField("d", source="day", transform=lp.Identity())])
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, spec, transaction_mode="weak")
    ns.write(table(rows(40)))
    before = content(ns)
    source = [dict(r, day=dt.date(2025, 3, 1)) for r in rows(10, start=35, qty=2)]
    result = (
        ns.merge_insert("id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .when_not_matched_by_source_delete("qty < 10")
        .execute(table(source))
    )
    want = model_merge(
        before,
        source,
        update=lambda t, s: dict(s),
        insert=True,
        delete_unmatched=lambda t: t["qty"] < 10,
    )
    assert content(ns) == want
    assert (result.inserted, result.updated, result.moved) == (5, 5, 5)
    assert content(lp.PartitionedNamespace.open(str(tmp_path / "ns"))) == want
