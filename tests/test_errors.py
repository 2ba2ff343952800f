"""Bad inputs get typed errors from our hierarchy, never a panic or a silent wrong answer."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import exceptions as exc
from lance_partitioned import kernels as k

INT = pa.array([1, 2, 3], pa.int64())


def test_hierarchy() -> None:
    for cls in (
        exc.SpecError,
        exc.ExpressionError,
        exc.UnsupportedTypeError,
        exc.InvalidArgumentError,
        exc.ArrowError,
        exc.InternalError,
    ):
        assert issubclass(cls, exc.LancePartitionedError)
        assert issubclass(cls, Exception)


@pytest.mark.parametrize("n", [0, -1, -(2**40)])
def test_bucket_needs_positive_n(n: int) -> None:
    with pytest.raises(exc.InvalidArgumentError, match="positive"):
        k.bucket(INT, n)
    with pytest.raises(exc.InvalidArgumentError):
        k.multi_bucket([INT], n)


def test_bucket_n_too_large() -> None:
    with pytest.raises(exc.InvalidArgumentError, match="num_buckets"):
        k.bucket(INT, 2**31)


@pytest.mark.parametrize("w", [0, -3])
def test_truncate_needs_positive_width(w: int) -> None:
    with pytest.raises(exc.InvalidArgumentError, match="positive"):
        k.truncate(INT, w)


def test_non_int_parameters() -> None:
    with pytest.raises(exc.InvalidArgumentError):
        k.bucket(INT, 2.5)  # type: ignore[arg-type]
    with pytest.raises(exc.InvalidArgumentError):
        k.bucket(INT, True)


def test_wrong_types() -> None:
    with pytest.raises(exc.UnsupportedTypeError, match="murmur3"):
        k.murmur3(pa.array([[1, 2]]))
    with pytest.raises(exc.UnsupportedTypeError, match="hour"):
        k.hour(pa.array([1], pa.date32()))
    with pytest.raises(exc.UnsupportedTypeError):
        k.year(pa.array(["2025-01-01"]))
    with pytest.raises(exc.UnsupportedTypeError):
        k.truncate(pa.array([1.5]), 2)
    with pytest.raises(exc.InvalidArgumentError):
        k.murmur3("not an array")
    with pytest.raises(exc.UnsupportedTypeError, match="Struct"):
        k.murmur3(pa.record_batch({"a": [1]}))


def test_length_mismatch() -> None:
    with pytest.raises(exc.InvalidArgumentError, match="same length"):
        k.murmur3_multi(pa.array([1, 2]), pa.array([1]))
    with pytest.raises(exc.InvalidArgumentError, match="same length"):
        k.evaluate("col0 + col1", [pa.array([1, 2]), pa.array([1])])
    batch = pa.record_batch({"a": [1, 2, 3]})
    with pytest.raises(exc.InvalidArgumentError, match="rows"):
        k.route(batch, [pa.array([1, 2])])


def test_empty_multi() -> None:
    with pytest.raises(exc.InvalidArgumentError):
        k.murmur3_multi()


@pytest.mark.parametrize(
    "expression",
    [
        "random()",
        "col0 + random()",
        "now()",
        "current_date()",
        "uuid()",
        "col0 +",
        "SELEC col0",
        "(SELECT 1)",
        "col0 IN (SELECT 1)",
        "EXISTS (SELECT 1)",
        "sum(col0)",
        "row_number() OVER ()",
        "$1",
        "other_column",
    ],
)
def test_refused_expressions(expression: str) -> None:
    with pytest.raises(exc.ExpressionError):
        k.evaluate(expression, [INT])


def test_unbound_placeholder_names_the_bound_ones() -> None:
    with pytest.raises(exc.ExpressionError, match=r"col7.*col0\.\.col1"):
        k.evaluate("col7 + col0", [INT, INT])
    with pytest.raises(exc.ExpressionError, match="col1"):
        k.evaluate("col1", [INT])


def _spec(**field: object) -> dict[str, object]:
    base: dict[str, object] = {"field_id": "f", "source_ids": [0], "result_type": {"type": "int32"}}
    base.update(field)
    return {"id": 1, "fields": [base]}


SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), metadata={"lance:field_id": "0"}),
        pa.field("name", pa.string(), metadata={"lance:field_id": "1"}),
    ]
)


@pytest.mark.parametrize(
    ("spec", "error", "needle"),
    [
        (_spec(transform={"type": "year"}), exc.SpecError, "date or timestamp"),
        (_spec(transform={"type": "hour"}), exc.SpecError, "timestamp"),
        (_spec(transform={"type": "bucket"}), exc.SpecError, "num_buckets"),
        (_spec(transform={"type": "bucket", "num_buckets": 0}), exc.SpecError, "num_buckets"),
        (_spec(transform={"type": "truncate", "width": -1}), exc.SpecError, "width"),
        (_spec(transform={"type": "nope"}), exc.SpecError, "unknown transform"),
        (_spec(transform={"type": "identity"}), exc.SpecError, "result_type"),
        (_spec(), exc.SpecError, "neither"),
        (_spec(transform={"type": "identity"}, expression="col0"), exc.SpecError, "exactly one"),
        (_spec(source_ids=[9], transform={"type": "identity"}), exc.SpecError, "source id 9"),
        (_spec(source_ids=[], transform={"type": "identity"}), exc.SpecError, "no source_ids"),
        (_spec(expression="random()"), exc.ExpressionError, "volatile"),
        (_spec(expression="col0 + col1"), exc.ExpressionError, "col1"),
        (_spec(expression="(SELECT 1)"), exc.ExpressionError, "subqueries"),
        (_spec(expression="col0", result_type={"type": "utf8"}), exc.SpecError, "result_type"),
        (_spec(transform={"type": "identity"}, result_type={"type": "wat"}), exc.SpecError, "wat"),
    ],
)
def test_spec_validation(spec: dict[str, object], error: type[Exception], needle: str) -> None:
    with pytest.raises(error, match=needle) as info:
        k.validate_spec(spec, SCHEMA)
    assert '"f"' in str(info.value)


def test_corrupt_spec_json() -> None:
    with pytest.raises(exc.SpecError, match="malformed"):
        k.validate_spec("{not json", SCHEMA)
    with pytest.raises(exc.SpecError, match="malformed"):
        k.validate_spec('{"id": 1}', SCHEMA)


def test_lossy_cast_to_namespace_type_is_an_error() -> None:
    spec = _spec(transform={"type": "bucket", "num_buckets": 4})
    batch = pa.record_batch({"id": pa.array(["not a number"])})
    with pytest.raises(exc.InvalidArgumentError, match="namespace type"):
        k.partition_values(batch, spec, SCHEMA)


def test_rust_panic_becomes_internal_error() -> None:
    from lance_partitioned import _native

    with pytest.raises(exc.InternalError, match="deliberate panic"):
        _native._panic_for_tests()


@pytest.mark.parametrize("root", ["gs://bucket/ns", "az://container/ns"])
def test_opendal_refused_where_lance_doubles_the_paths(root: str) -> None:
    import lance_partitioned as lp

    with pytest.raises(lp.InvalidArgumentError, match="use_opendal"):
        lp.PartitionedNamespace.open(root, storage_options={"use_opendal": "true"})


@pytest.mark.parametrize(
    ("to", "texts", "expected"),
    [
        (
            pa.float64(),
            ["2", "2.0", "+2", "1e3", "2.50", "-0", "0.1"],
            [2.0, 2.0, 2.0, 1000.0, 2.5, -0.0, 0.1],
        ),
        (pa.float32(), ["2", "0.5"], [2.0, 0.5]),
        (pa.int64(), ["7", "+7", "007", "-3"], [7, 7, 7, -3]),
    ],
)
def test_text_naming_a_number_is_written_as_that_number(
    tmp_path: Path, to: pa.DataType, texts: list[str], expected: list[Any]
) -> None:
    schema = pa.schema([pa.field("x", to), pa.field("k", pa.int64())])
    spec = lp.PartitionSpec([lp.PartitionField("k", source="k", transform=lp.Identity())])
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema, spec)
    ns.write(pa.table({"x": texts, "k": list(range(len(texts)))}))
    got = ns.to_table().sort_by("k")["x"].to_pylist()
    assert got == expected
    assert [math.copysign(1, v) for v in got] == [math.copysign(1, v) for v in expected]


@pytest.mark.parametrize(("to", "text"), [(pa.int64(), "7.5"), (pa.int32(), "3000000000")])
def test_text_that_is_not_that_number_is_refused(
    tmp_path: Path, to: pa.DataType, text: str
) -> None:
    schema = pa.schema([pa.field("x", to), pa.field("k", pa.int64())])
    spec = lp.PartitionSpec([lp.PartitionField("k", source="k", transform=lp.Identity())])
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema, spec)
    with pytest.raises(lp.SchemaMismatchError, match='column "x" of type Utf8'):
        ns.write(pa.table({"x": [text], "k": [1]}))
    assert ns.to_table().num_rows == 0
