"""Arguments of the wrong type or range raise the package's own errors (ArgumentTypeError, a
TypeError, or InvalidArgumentError, a ValueError), never a bare builtin from pyarrow or the
extension's argument conversion; an exception the caller's own code raises passes unchanged."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from typed import raises_typed

import lance_partitioned as lp
from lance_partitioned import kernels, values


@pytest.fixture
def ns(tmp_path: Path) -> lp.PartitionedNamespace:
    schema = pa.schema([pa.field("k", pa.int64()), pa.field("v", pa.string())])
    spec = lp.PartitionSpec([lp.PartitionField("k", source="k", transform=lp.Identity())])
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema, spec)
    ns.write(pa.table({"k": [1, 2], "v": ["a", "b"]}))
    return ns


BAD_CALLS: dict[str, Callable[[lp.PartitionedNamespace], Any]] = {
    "create(spec=None)": lambda ns: lp.PartitionedNamespace.create(
        ns.root + "_x",
        ns.schema,
        None,  # type: ignore[arg-type]
    ),
    "create(schema=5)": lambda ns: lp.PartitionedNamespace.create(
        ns.root + "_y",
        5,
        ns.spec,  # type: ignore[arg-type]
    ),
    "open(5)": lambda ns: lp.PartitionedNamespace.open(5),  # type: ignore[arg-type]
    "snapshot(1.5)": lambda ns: ns.snapshot(1.5),  # type: ignore[arg-type]
    "snapshot(-1)": lambda ns: ns.snapshot(-1),
    "snapshot(2**70)": lambda ns: ns.snapshot(2**70),
    "write(5)": lambda ns: ns.write(5),
    "write(mode=3)": lambda ns: ns.write(pa.table({"k": [1], "v": ["a"]}), mode=3),  # type: ignore[arg-type]
    "delete(5)": lambda ns: ns.delete(5),  # type: ignore[arg-type]
    "add_columns(5)": lambda ns: ns.add_columns(5),  # type: ignore[arg-type]
    "add_columns([5])": lambda ns: ns.add_columns([5]),  # type: ignore[list-item]
    "drop_columns(5)": lambda ns: ns.drop_columns(5),  # type: ignore[arg-type]
    "rename_column(1, 2)": lambda ns: ns.rename_column(1, 2),  # type: ignore[arg-type]
    "evolve(5)": lambda ns: ns.evolve(5),  # type: ignore[arg-type]
    "history('x')": lambda ns: ns.history("x"),  # type: ignore[arg-type]
    "history(-1)": lambda ns: ns.history(-1),
    "cleanup(older_than='x')": lambda ns: ns.cleanup(older_than="x"),  # type: ignore[arg-type]
    "expire(retain_versions='x')": lambda ns: ns.expire(retain_versions="x"),  # type: ignore[arg-type]
    "expire(retain_versions=-1)": lambda ns: ns.expire(retain_versions=-1),
    "scan(columns=5)": lambda ns: ns.scan(columns=5),  # type: ignore[arg-type]
    "scan(filter=5)": lambda ns: ns.scan(filter=5),  # type: ignore[arg-type]
    "to_table(as_of=b'x')": lambda ns: ns.to_table(as_of=b"x"),  # type: ignore[arg-type]
    "partitions(filter=5)": lambda ns: ns.partitions(filter=5),  # type: ignore[arg-type]
    "optimize(target_rows_per_fragment='x')": lambda ns: ns.optimize(
        target_rows_per_fragment="x"  # type: ignore[arg-type]
    ),
    "distributed_write().commit([5])": lambda ns: ns.distributed_write().commit([5]),  # type: ignore[list-item]
    "kernels.bucket(arr, 'x')": lambda ns: kernels.bucket(pa.array([1]), "x"),  # type: ignore[arg-type]
    "kernels.truncate(5, 2)": lambda ns: kernels.truncate(5, 2),  # type: ignore[arg-type]
    "values.to_string(object())": lambda ns: values.to_string(object()),
    "values.from_string(5, int64)": lambda ns: values.from_string(5, pa.int64()),  # type: ignore[arg-type]
    "join(ns, 5, on=k)": lambda ns: lp.join(ns, 5, on="k"),  # type: ignore[arg-type]
}


def call(name: str, ns: lp.PartitionedNamespace) -> None:
    """Makes the bad call (and takes the first item of an iterator it returns)."""
    result = BAD_CALLS[name](ns)
    if isinstance(result, Iterator):
        next(result)


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_a_bad_argument_raises_a_typed_error(ns: lp.PartitionedNamespace, name: str) -> None:
    with raises_typed() as info:
        call(name, ns)
    assert isinstance(info.value, (TypeError, ValueError)), type(info.value)


def test_a_wrong_type_is_both_typed_and_a_type_error(ns: lp.PartitionedNamespace) -> None:
    with pytest.raises(lp.ArgumentTypeError) as info:
        ns.history("x")  # type: ignore[arg-type]
    assert isinstance(info.value, TypeError)
    assert isinstance(info.value, lp.InvalidArgumentError)


def test_the_callers_own_exception_passes_unchanged(ns: lp.PartitionedNamespace) -> None:
    """A TypeError raised by the caller's generator is the caller's: not relabelled."""

    def batches() -> Iterator[pa.RecordBatch]:
        yield pa.record_batch({"k": [3], "v": ["c"]})
        raise TypeError("my generator broke")

    with pytest.raises(TypeError, match="my generator broke") as info:
        ns.write(batches())
    assert not isinstance(info.value, lp.LancePartitionedError)
    assert sorted(ns.to_table()["k"].to_pylist()) == [1, 2]
