"""A hypothesis state machine over row-level changes: random merge_insert clause combinations
(with conditions), update, apply_changes, delete, append and optimize, through a handle and
against an in-memory model (a dict keyed by id, changed here by the SQL MERGE rules in plain
Python). After every step the namespace reads exactly the model, and every manifest version
reads what the model held when that version was the latest."""

from __future__ import annotations

import datetime as dt
import tempfile
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

import lance_partitioned as lp

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("day", pa.date32()),
        pa.field("qty", pa.int64()),
    ]
)
DAYS = [dt.date(2025, 1, d) for d in (1, 2, 3)]

source_rows = st.lists(
    st.tuples(st.integers(0, 30), st.sampled_from(DAYS), st.integers(0, 9)),
    max_size=25,
    unique_by=lambda r: r[0],
)
# (SQL, the same condition in Python over (target, source))
matched_conditions = st.sampled_from(
    [
        (None, lambda t, s: True),
        ("source.qty > target.qty", lambda t, s: s["qty"] > t["qty"]),
        ("source.qty % 2 = 0", lambda t, s: s["qty"] % 2 == 0),
        ("target.day = DATE '2025-01-02'", lambda t, s: t["day"] == DAYS[1]),
    ]
)
insert_conditions = st.sampled_from(
    [(None, lambda s: True), ("source.qty >= 3", lambda s: s["qty"] >= 3)]
)
by_source_conditions = st.sampled_from(
    [
        (None, lambda t: True),
        ("day = DATE '2025-01-03'", lambda t: t["day"] == DAYS[2]),
        ("qty < 2", lambda t: t["qty"] is not None and t["qty"] < 2),
    ]
)


def as_rows(src: list[tuple[int, dt.date, int]]) -> list[dict[str, Any]]:
    return [{"id": i, "day": d, "qty": q} for i, d, q in src]


class Merges(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.TemporaryDirectory()
        self.root = self.dir.name + "/ns"
        spec = lp.PartitionSpec([lp.PartitionField("d", source="day", transform=lp.Identity())])
        self.ns = lp.PartitionedNamespace.create(self.root, SCHEMA, spec)
        self.model: dict[int, dict[str, Any]] = {}
        self.versions: dict[int, dict[int, dict[str, Any]]] = {self.ns.version: {}}

    def teardown(self) -> None:
        self.dir.cleanup()

    def _committed(self) -> None:
        self.versions[lp.PartitionedNamespace.open(self.root).version] = {
            k: dict(v) for k, v in self.model.items()
        }

    @rule(src=source_rows)
    def append(self, src: list[tuple[int, dt.date, int]]) -> None:
        fresh = [r for r in as_rows(src) if r["id"] not in self.model]
        if not fresh:
            return
        self.ns.write(pa.Table.from_pylist(fresh, schema=SCHEMA))
        for r in fresh:
            self.model[r["id"]] = r
        self._committed()

    @rule(
        src=source_rows,
        update=st.none() | st.tuples(st.sampled_from(["all", "set"]), matched_conditions),
        delete=st.none() | matched_conditions,
        insert=st.none() | insert_conditions,
        by_source=st.none() | by_source_conditions,
        delete_first=st.booleans(),
    )
    def merge(
        self,
        src: list[tuple[int, dt.date, int]],
        update: Any,
        delete: Any,
        insert: Any,
        by_source: Any,
        delete_first: bool,
    ) -> None:
        if update is None and delete is None and insert is None and by_source is None:
            return
        source = as_rows(src)
        b = self.ns.merge_insert("id")
        clauses: list[tuple[str, Any]] = []
        if update is not None:
            clauses.append(("update", update))
        if delete is not None:
            clauses.insert(0 if delete_first else len(clauses), ("delete", delete))
        for kind, c in clauses:
            if kind == "delete":
                b.when_matched_delete(c[0])
            elif c[0] == "all":
                b.when_matched_update_all(c[1][0])
            else:
                b.when_matched_update({"qty": "target.qty + source.qty"}, c[1][0])
        if insert is not None:
            b.when_not_matched_insert_all(insert[0])
        if by_source is not None:
            b.when_not_matched_by_source_delete(by_source[0])
        result = b.execute(pa.Table.from_pylist(source, schema=SCHEMA))
        # the model: SQL MERGE
        before = {k: dict(v) for k, v in self.model.items()}
        matched = set()
        for s in source:
            t = before.get(s["id"])
            if t is None:
                if insert is not None and insert[1](s):
                    self.model[s["id"]] = dict(s)
                continue
            matched.add(s["id"])
            for kind, c in clauses:
                cond = c[1] if kind == "delete" else c[1][1]
                if not cond(t, s):
                    continue
                if kind == "delete":
                    del self.model[s["id"]]
                elif c[0] == "all":
                    self.model[s["id"]] = dict(s)
                else:
                    self.model[s["id"]] = dict(t, qty=t["qty"] + s["qty"])
                break
        if by_source is not None:
            for k, t in before.items():
                if k not in matched and by_source[1](t):
                    del self.model[k]
        if result.manifest_version not in self.versions:
            self._committed()

    @rule(k=st.integers(2, 5))
    def update(self, k: int) -> None:
        self.ns.update({"qty": "qty + 1", "day": "DATE '2025-01-01'"}, where=f"id % {k} = 0")
        for key, r in self.model.items():
            if key % k == 0:
                self.model[key] = dict(r, qty=r["qty"] + 1, day=DAYS[0])
        self._committed()

    @rule(src=source_rows, deletes=st.sets(st.integers(0, 30), max_size=5))
    def apply_changes(self, src: list[tuple[int, dt.date, int]], deletes: set[int]) -> None:
        feed = [dict(r, op="U", lsn=1) for r in as_rows(src)]
        feed += [{"id": i, "day": DAYS[0], "qty": 0, "op": "D", "lsn": 2} for i in deletes]
        if not feed:
            return
        changes = pa.Table.from_pylist(
            feed,
            schema=SCHEMA.append(pa.field("op", pa.string())).append(pa.field("lsn", pa.int64())),
        )
        self.ns.apply_changes(changes, keys="id", sequence_by="lsn")
        for r in as_rows(src):
            if r["id"] not in deletes:
                self.model[r["id"]] = r
        for i in deletes:
            self.model.pop(i, None)
        self._committed()

    @rule(day=st.sampled_from(DAYS))
    def delete(self, day: dt.date) -> None:
        self.ns.delete(f"day = DATE '{day.isoformat()}' AND qty > 4")
        for k in [k for k, r in self.model.items() if r["day"] == day and r["qty"] > 4]:
            del self.model[k]
        self._committed()

    @rule()
    def optimize(self) -> None:
        self.ns.optimize()
        self._committed()

    @invariant()
    def reads_the_model(self) -> None:
        got = {r["id"]: r for r in lp.PartitionedNamespace.open(self.root).to_table().to_pylist()}
        assert got == self.model

    @invariant()
    def old_versions_read_what_they_held(self) -> None:
        ns = lp.PartitionedNamespace.open(self.root)
        for v, held in list(self.versions.items())[-3:]:
            got = {r["id"]: r for r in ns.snapshot(v).to_table().to_pylist()}
            assert got == held, f"version {v}"


Merges.TestCase.settings = settings(
    max_examples=25,
    stateful_step_count=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_merges_match_the_model = Merges.TestCase
