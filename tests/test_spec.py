"""Typed partition specs: name resolution, derived result types, validation, round trips."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import exceptions as exc
from lance_partitioned.spec import (
    field_ids,
    schema_from_json,
    schema_to_json,
    type_from_json,
    type_to_json,
)

RAW = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("event_date", pa.date32()),
        pa.field("event_ts", pa.timestamp("us", tz="UTC")),
        pa.field("country", pa.string()),
        pa.field("city", pa.string()),
        pa.field("user_id", pa.int64()),
    ]
)
SCHEMA = lp.assign_field_ids(RAW)

ISSUE_SPEC = lp.PartitionSpec(
    [
        lp.PartitionField("event_year", source="event_date", transform=lp.Year()),
        lp.PartitionField("country", source="country", transform=lp.Identity()),
        lp.PartitionField("user_bucket", source=["user_id"], transform=lp.Bucket(16)),
        lp.PartitionField(
            "region",
            source=["country", "city"],
            expression="concat(col0, '/', left(col1, 2))",
            result_type=pa.string(),
        ),
    ]
)


def test_assign_field_ids_keeps_existing_and_never_reuses() -> None:
    assert field_ids(SCHEMA) == {
        "id": 0,
        "event_date": 1,
        "event_ts": 2,
        "country": 3,
        "city": 4,
        "user_id": 5,
    }
    dropped = pa.schema([f for f in SCHEMA if f.name != "user_id"])
    grown = lp.assign_field_ids(dropped.append(pa.field("new_col", pa.int32())), start=6)
    assert field_ids(grown)["new_col"] == 6  # not 5: the dropped column's id stays retired
    assert lp.assign_field_ids(SCHEMA).equals(SCHEMA, check_metadata=True)
    dup = pa.schema(
        [
            pa.field("a", pa.int8(), metadata={"lance:field_id": "1"}),
            pa.field("b", pa.int8(), metadata={"lance:field_id": "1"}),
        ]
    )
    with pytest.raises(exc.SpecError, match="more than one field"):
        lp.assign_field_ids(dup)


def test_issue_example_spec_resolves_names_and_types() -> None:
    d = ISSUE_SPEC.to_dict(SCHEMA, spec_id=2)
    assert d["id"] == 2
    assert [f["field_id"] for f in d["fields"]] == [
        "event_year",
        "country",
        "user_bucket",
        "region",
    ]
    assert [f["source_ids"] for f in d["fields"]] == [[1], [3], [5], [3, 4]]
    assert d["fields"][0] == {
        "field_id": "event_year",
        "source_ids": [1],
        "transform": {"type": "year"},
        "result_type": {"type": "int32"},
    }
    assert d["fields"][1]["result_type"] == {"type": "utf8"}
    assert d["fields"][2]["transform"] == {"type": "bucket", "num_buckets": 16}
    assert d["fields"][3]["expression"] == "concat(col0, '/', left(col1, 2))"
    # the spec JSON drives the kernels directly
    batch = pa.RecordBatch.from_pylist(
        [
            {
                "id": 1,
                "event_date": None,
                "event_ts": None,
                "country": "US",
                "city": "Boston",
                "user_id": 5,
            }
        ],
        schema=SCHEMA,
    )
    values = lp.kernels.partition_values(batch, d, SCHEMA)
    assert values.to_pylist() == [
        {"event_year": None, "country": "US", "user_bucket": 7, "region": "US/Bo"}
    ]


def test_round_trip_through_dict() -> None:
    d = ISSUE_SPEC.to_dict(SCHEMA)
    again = lp.PartitionSpec.from_dict(d).to_dict(SCHEMA)
    assert again == d


def test_expression_result_type_is_inferred() -> None:
    spec = lp.PartitionSpec(
        [lp.PartitionField("y", source="event_ts", expression="date_part('year', col0)")]
    )
    assert spec.to_dict(SCHEMA)["fields"][0]["result_type"] == {"type": "int32"}


def test_timestamp_identity_keeps_unit_and_zone() -> None:
    spec = lp.PartitionSpec([lp.PartitionField("ts", source="event_ts", transform=lp.Identity())])
    rt = spec.to_dict(SCHEMA)["fields"][0]["result_type"]
    assert rt == {"type": "timestamp", "unit": "us", "timezone": "UTC"}
    assert type_from_json(rt) == pa.timestamp("us", tz="UTC")


@pytest.mark.parametrize(
    ("field", "error", "needle"),
    [
        (lp.PartitionField("x", source="nope", transform=lp.Identity()), exc.SpecError, "nope"),
        (lp.PartitionField("x", source="country", transform=lp.Hour()), exc.SpecError, "hour"),
        (lp.PartitionField("x", source="country", transform=lp.Bucket(0)), exc.SpecError, "num"),
        (lp.PartitionField("x", source="id", transform=lp.Truncate(-1)), exc.SpecError, "width"),
        (lp.PartitionField("x", source="id"), exc.SpecError, "neither"),
        (
            lp.PartitionField("x", source="id", transform=lp.Identity(), expression="col0"),
            exc.SpecError,
            "exactly one",
        ),
        (
            lp.PartitionField("x", source="id", expression="col0", result_type=pa.string()),
            exc.SpecError,
            "result_type",
        ),
        (lp.PartitionField("x", source="id", expression="random()"), exc.ExpressionError, "vol"),
    ],
)
def test_validation_errors_name_the_field(
    field: lp.PartitionField, error: type[Exception], needle: str
) -> None:
    with pytest.raises(error, match=needle) as info:
        lp.PartitionSpec([field]).to_dict(SCHEMA)
    assert "x" in str(info.value)


def test_duplicate_field_ids_in_one_spec() -> None:
    f = lp.PartitionField("c", source="country", transform=lp.Identity())
    with pytest.raises(exc.SpecError, match="twice"):
        lp.PartitionSpec([f, f]).to_dict(SCHEMA)


@pytest.mark.parametrize(
    "typ",
    [
        pa.bool_(),
        pa.int8(),
        pa.uint64(),
        pa.float16(),
        pa.float64(),
        pa.decimal128(38, 10),
        pa.decimal256(50, 3),
        pa.date32(),
        pa.date64(),
        pa.time32("s"),
        pa.time64("ns"),
        pa.timestamp("s"),
        pa.timestamp("ns", tz="America/New_York"),
        pa.duration("ms"),
        pa.string(),
        pa.large_string(),
        pa.string_view(),
        pa.binary(),
        pa.large_binary(),
        pa.binary(16),
        pa.list_(pa.int32()),
        pa.large_list(pa.string()),
        pa.list_(pa.float32(), 3),
        pa.struct([("a", pa.int32()), ("b", pa.timestamp("ms", tz="UTC"))]),
        pa.map_(pa.string(), pa.int64()),
    ],
)
def test_types_round_trip_through_json(typ: pa.DataType) -> None:
    assert type_from_json(type_to_json(typ)) == typ


def test_schema_json_round_trip_keeps_ids_and_nullability() -> None:
    back = schema_from_json(schema_to_json(SCHEMA))
    assert back.equals(SCHEMA, check_metadata=True)
    assert not back.field("id").nullable


@pytest.mark.parametrize(
    ("transform", "hint"),
    [
        ("year", "lp.Year(...), not the string 'year'"),
        ("Bucket", "lp.Bucket(...), not the string 'Bucket'"),
        ("yearly", "a transform object, not the string 'yearly'"),
        (lp.Year, "an instance: Year(...), not the class"),
        (lp.Bucket, "an instance: Bucket(...), not the class"),
        (16, "a Transform (lp.Year(), lp.Bucket(16), ...), not 16"),
    ],
)
def test_a_transform_that_is_not_a_transform_object_is_a_spec_error(
    transform: object, hint: str
) -> None:
    with pytest.raises(exc.SpecError) as got:
        lp.PartitionField("y", source="ts", transform=transform)  # type: ignore[arg-type]
    assert str(got.value) == f"partition field 'y': transform must be {hint}"


@pytest.mark.parametrize(
    ("transforms", "warned"),
    [
        (["month"], ["m"]),
        (["day"], ["d"]),
        (["year", "day"], ["d"]),
        (["year", "month", "hour"], ["h"]),
        (["year", "month"], []),
        (["year", "month", "day", "hour"], []),
        (["year"], []),
    ],
)
def test_month_day_or_hour_without_the_coarser_fields_warns(
    tmp_path: Path, transforms: list[str], warned: list[str]
) -> None:
    import warnings

    kinds = {"year": lp.Year, "month": lp.Month, "day": lp.Day, "hour": lp.Hour}
    schema = pa.schema([pa.field("ts", pa.timestamp("us")), pa.field("x", pa.int64())])
    spec = lp.PartitionSpec(
        [lp.PartitionField(t[0], source="ts", transform=kinds[t]()) for t in transforms]
    )
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema, spec)
    fields = [
        str(w.message).split("'")[1] for w in got if w.category is lp.PartitionGranularityWarning
    ]
    assert fields == warned, [str(w.message) for w in got]
    assert all(w.filename == __file__ for w in got), [w.filename for w in got]
    # The same rule for a spec version added later.
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        ns.evolve(lp.PartitionSpec([lp.PartitionField("h", source="ts", transform=lp.Hour())]))
    assert [w.category for w in got] == [lp.PartitionGranularityWarning]
