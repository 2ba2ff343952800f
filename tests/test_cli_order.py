"""The partitions command sorts and limits in Arrow (`cli.keys.ordered`); checked against
sorting the Python partitions by the documented order, on random tables of two spec
versions with NULL values and ties."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from lance_partitioned.cli.keys import Partition, ordered, partitions_of

SPECS: dict[int, dict[str, Any]] = {
    1: {"fields": [{"field_id": "a"}]},
    2: {"fields": [{"field_id": "b"}, {"field_id": "a"}]},
}

REFERENCE = {
    "values": lambda p: p.order,
    "rows": lambda p: (-p.rows, p.order),
    "bytes": lambda p: (-(p.bytes or 0), p.order),
    "files": lambda p: (-(p.files or 0), p.order),
}

row = st.tuples(
    st.sampled_from([1, 2]),
    st.one_of(st.none(), st.integers(-3, 3)),
    st.one_of(st.none(), st.sampled_from(["", "x", "y", "é"])),
    st.integers(0, 3),
)


def table(rows: list[tuple[int, int | None, str | None, int]]) -> pa.Table:
    return pa.table(
        {
            "object_id": pa.array(
                [f"v{s}$n{i}$dataset" for i, (s, *_) in enumerate(rows)], pa.string()
            ),
            "b": pa.array([b if s == 2 else None for s, _, b, _ in rows], pa.string()),
            "a": pa.array([a for _, a, _, _ in rows], pa.int64()),
            "rows": pa.array([n for *_, n in rows], pa.uint64()),
            "files": pa.array([n % 2 for *_, n in rows], pa.uint64()),
            "bytes": pa.array([n * 10 for *_, n in rows], pa.uint64()),
        }
    )


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(row, max_size=30),
    by=st.sampled_from(sorted(REFERENCE)),
    limit=st.one_of(st.none(), st.integers(0, 35)),
)
def test_ordered_equals_sorting_the_partitions(
    rows: list[tuple[int, int | None, str | None, int]], by: str, limit: int | None
) -> None:
    stats = table(rows)
    key = REFERENCE[by]
    expected: list[Partition] = sorted(partitions_of(stats, SPECS), key=key)
    expected = expected if limit is None else expected[:limit]
    got = partitions_of(ordered(stats, SPECS, by, limit), SPECS)
    assert [key(p) for p in got] == [key(p) for p in expected]
    assert len({p.object_id for p in got}) == len(got)
