"""A hypothesis state machine over schema changes, spec evolutions, writes, deletes and
maintenance made through two handles that go stale between steps, against an in-memory model:
the rows (by id, values by model column), the columns in order (renames keep values, drops
forget them, added columns read NULL for older rows), and the spec versions. After every step
a fresh handle must read exactly the model, and every manifest version kept must still read
what it read when it was the latest."""

from __future__ import annotations

import datetime as dt
import tempfile
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

import lance_partitioned as lp

COUNTRIES = ["US", "FR", "DE"]


class TwoHandles(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.TemporaryDirectory()
        self.root = self.dir.name + "/ns"
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
        lp.PartitionedNamespace.create(self.root, schema, spec)
        self.handles = [lp.PartitionedNamespace.open(self.root) for _ in range(2)]
        # model: columns (model id, name) in order; rows id -> {model id: value}
        self.cols: list[tuple[int, str]] = [(0, "id"), (1, "country"), (2, "v")]
        self.next_col = 3
        self.rows: dict[int, dict[int, Any]] = {}
        self.next_id = 0
        self.specs = 1
        self.sources = {"country"}  # partition source columns (never dropped)
        self.bucket: tuple[int, int] | None = None  # the current spec's bucket field
        # manifest version -> the rows it read (as sorted ids)
        self.versions: dict[int, list[int]] = {}

    def teardown(self) -> None:
        self.dir.cleanup()

    def _names(self) -> list[str]:
        return [n for _, n in self.cols]

    def _value(self, row_id: int, col: int) -> Any:
        if col == 0:
            return row_id
        if col == 1:
            return COUNTRIES[row_id % 3]
        return row_id * 100 + col

    def _remember(self) -> None:
        ns = lp.PartitionedNamespace.open(self.root)
        self.versions[ns.version] = sorted(self.rows)

    @rule(h=st.integers(0, 1), n=st.integers(1, 40))
    def write(self, h: int, n: int) -> None:
        ids = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        table = pa.table(
            {name: [self._value(i, c) for i in ids] for c, name in self.cols},
            schema=pa.schema(
                [
                    pa.field(name, pa.string() if c == 1 else pa.int64(), nullable=c != 0)
                    for c, name in self.cols
                ]
            ),
        )
        self.handles[h].write(table)
        for i in ids:
            self.rows[i] = {c: self._value(i, c) for c, _ in self.cols}
        self._remember()

    @rule(h=st.integers(0, 1))
    def add_column(self, h: int) -> None:
        col = self.next_col
        self.next_col += 1
        self.handles[h].add_columns([pa.field(f"c{col}", pa.int64())])
        self.cols.append((col, f"c{col}"))
        self._remember()

    @rule(h=st.integers(0, 1), k=st.integers(0, 50))
    def drop_column(self, h: int, k: int) -> None:
        droppable = [(c, n) for c, n in self.cols if c >= 2 and n not in self.sources]
        if not droppable:
            return
        col, name = droppable[k % len(droppable)]
        self.handles[h].drop_columns(name)
        self.cols.remove((col, name))
        self._remember()

    @rule(h=st.integers(0, 1), k=st.integers(0, 50))
    def rename_column(self, h: int, k: int) -> None:
        if len(self.cols) <= 2:
            return
        col, name = self.cols[2 + k % (len(self.cols) - 2)]
        new = f"r{col}_{self.next_col}"
        self.next_col += 1
        self.handles[h].rename_column(name, new)
        self.cols[self.cols.index((col, name))] = (col, new)
        self.sources = {new if s == name else s for s in self.sources}
        self._remember()

    @rule(h=st.integers(0, 1), k=st.integers(0, 50), n=st.integers(2, 8))
    def evolve(self, h: int, k: int, n: int) -> None:
        candidates = [(c, name) for c, name in self.cols if c >= 2]
        if not candidates:
            return
        col, name = candidates[k % len(candidates)]
        if self.bucket == (col, n):
            return  # the current spec: evolve refuses an identical spec
        spec = lp.PartitionSpec(
            [
                lp.PartitionField("country", source="country", transform=lp.Identity()),
                # one field id per (column, bucket count): the spec's field id rule
                lp.PartitionField(f"b{col}_{n}", source=name, transform=lp.Bucket(n)),
            ]
        )
        assert self.handles[h].evolve(spec) == self.specs + 1
        self.bucket = (col, n)
        self.specs += 1
        self.sources.add(name)
        self._remember()

    @rule(h=st.integers(0, 1), below=st.integers(0, 200))
    def delete(self, h: int, below: int) -> None:
        self.handles[h].delete(f"id < {below}")
        self.rows = {i: r for i, r in self.rows.items() if i >= below}
        self._remember()

    @rule(h=st.integers(0, 1))
    def optimize(self, h: int) -> None:
        self.handles[h].optimize(min_files=2)
        self._remember()

    @rule(h=st.integers(0, 1), keep=st.integers(1, 4))
    def expire(self, h: int, keep: int) -> None:
        self.handles[h].expire(retain_versions=keep)
        ns = lp.PartitionedNamespace.open(self.root)
        kept = set(ns.history()["version"].to_pylist())
        self.versions = {v: ids for v, ids in self.versions.items() if v in kept}

    @rule(h=st.integers(0, 1))
    def cleanup(self, h: int) -> None:
        self.handles[h].cleanup(older_than=dt.timedelta(0), retention_check=False)

    @rule(h=st.integers(0, 1))
    def refresh(self, h: int) -> None:
        self.handles[h].refresh()

    @invariant()
    def reads_equal_the_model(self) -> None:
        ns = lp.PartitionedNamespace.open(self.root)
        assert ns.schema.names == self._names()
        assert len(ns.specs) == self.specs
        got = ns.to_table().sort_by("id")
        ids = sorted(self.rows)
        assert got["id"].to_pylist() == ids
        for c, name in self.cols:
            want = [self.rows[i].get(c) for i in ids]
            assert got[name].to_pylist() == want, name
        for version, want_ids in list(self.versions.items())[-3:]:
            old = ns.to_table(columns=["id"], as_of=version)
            assert sorted(old["id"].to_pylist()) == want_ids, version
        # every partition holds only rows of its country
        for leaf in ns.partitions().to_pylist():
            country = leaf["country"]
            part = ns.to_table(f"country = '{country}'")
            assert pc.all(pc.equal(part["country"], country)).as_py() in (True, None)


TestTwoHandles = TwoHandles.TestCase
TestTwoHandles.settings = settings(
    max_examples=40,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
