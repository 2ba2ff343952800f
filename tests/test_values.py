"""``lance_partitioned.values``: every row of the serialization document's two tables (type,
input, directory, URI path, string form), the divergences we chose, typed errors, and round
trips against a simple model (hypothesis)."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lance_partitioned as lp
from lance_partitioned import values as lv

D = pa.decimal128(38, 18)
TS = pa.timestamp("us", tz="UTC")
NTZ = pa.timestamp("us")
LA = "America/Los_Angeles"
DEFAULT = "p=__HIVE_DEFAULT_PARTITION__"
LA_ZONE = dt.timezone(dt.timedelta(hours=-7))  # PDT, for rows 40 and 42
PST = dt.timezone(dt.timedelta(hours=-8))  # PST, for row 41


def la(y: int, mo: int, d: int, h: int, mi: int, s: int, us: int = 0) -> dt.datetime:
    zone = PST if mo < 3 or mo > 11 else LA_ZONE
    return dt.datetime(y, mo, d, h, mi, s, us, tzinfo=zone)


# (row, type, value, directory, path ("same" = the directory), string form)
TYPED: list[tuple[int, pa.DataType, Any, str, str, str | None]] = [
    (1, pa.int32(), 0, "p=0", "same", "0"),
    (2, pa.int32(), -1, "p=-1", "same", "-1"),
    (3, pa.int32(), 2147483647, "p=2147483647", "same", "2147483647"),
    (4, pa.int32(), -2147483648, "p=-2147483648", "same", "-2147483648"),
    (5, pa.int32(), None, DEFAULT, "same", None),
    (6, pa.int64(), 2**63 - 1, "p=9223372036854775807", "same", "9223372036854775807"),
    (7, pa.int64(), -(2**63), "p=-9223372036854775808", "same", "-9223372036854775808"),
    (8, pa.int64(), None, DEFAULT, "same", None),
    (9, pa.int8(), 127, "p=127", "same", "127"),
    (10, pa.int8(), -128, "p=-128", "same", "-128"),
    (11, pa.int8(), None, DEFAULT, "same", None),
    (12, pa.int16(), 32767, "p=32767", "same", "32767"),
    (13, pa.int16(), -32768, "p=-32768", "same", "-32768"),
    (14, pa.int16(), None, DEFAULT, "same", None),
    (15, pa.float64(), 0.0, "p=0.0", "same", "0.0"),
    # Divergence from Delta-Spark kept as the document's kernel column: the sign stays.
    (16, pa.float64(), -0.0, "p=-0.0", "same", "-0.0"),
    (
        17,
        pa.float64(),
        1.7976931348623157e308,
        "p=1.7976931348623157E308",
        "same",
        "1.7976931348623157E308",
    ),
    # Shortest digits that read back (Delta-Spark: 4.9E-324; both are the same double).
    (18, pa.float64(), 5e-324, "p=5.0E-324", "same", "5.0E-324"),
    (19, pa.float64(), math.nan, "p=NaN", "same", "NaN"),
    (20, pa.float64(), math.inf, "p=Infinity", "same", "Infinity"),
    (21, pa.float64(), -math.inf, "p=-Infinity", "same", "-Infinity"),
    (22, pa.float64(), None, DEFAULT, "same", None),
    (23, pa.float32(), 0.0, "p=0.0", "same", "0.0"),
    (24, pa.float32(), math.nan, "p=NaN", "same", "NaN"),
    (25, pa.float32(), math.inf, "p=Infinity", "same", "Infinity"),
    (26, pa.float32(), -math.inf, "p=-Infinity", "same", "-Infinity"),
    (27, pa.float32(), None, DEFAULT, "same", None),
    (28, pa.bool_(), True, "p=true", "same", "true"),
    (29, pa.bool_(), False, "p=false", "same", "false"),
    (30, pa.bool_(), None, DEFAULT, "same", None),
    (31, D, decimal.Decimal(0), "p=0.000000000000000000", "same", "0.000000000000000000"),
    (
        32,
        D,
        decimal.Decimal("1.23"),
        "p=1.230000000000000000",
        "same",
        "1.230000000000000000",
    ),
    (
        33,
        D,
        decimal.Decimal("-1.23"),
        "p=-1.230000000000000000",
        "same",
        "-1.230000000000000000",
    ),
    (34, D, None, DEFAULT, "same", None),
    (35, pa.date32(), dt.date(2024, 1, 1), "p=2024-01-01", "same", "2024-01-01"),
    (36, pa.date32(), dt.date(1970, 1, 1), "p=1970-01-01", "same", "1970-01-01"),
    (37, pa.date32(), dt.date(1, 1, 1), "p=0001-01-01", "same", "0001-01-01"),
    (38, pa.date32(), dt.date(9999, 12, 31), "p=9999-12-31", "same", "9999-12-31"),
    (39, pa.date32(), None, DEFAULT, "same", None),
    # Rows 40-42: the directory shows the instant in America/Los_Angeles.
    (
        40,
        TS,
        la(2024, 6, 15, 12, 30, 45),
        "p=2024-06-15 12%3A30%3A45",
        "p=2024-06-15%2012%253A30%253A45",
        "2024-06-15T19:30:45.000000Z",
    ),
    (
        41,
        TS,
        la(1970, 1, 1, 0, 0, 0),
        "p=1970-01-01 00%3A00%3A00",
        "p=1970-01-01%2000%253A00%253A00",
        "1970-01-01T08:00:00.000000Z",
    ),
    (
        42,
        TS,
        la(2024, 6, 15, 23, 59, 59, 999999),
        "p=2024-06-15 23%3A59%3A59.999999",
        "p=2024-06-15%2023%253A59%253A59.999999",
        "2024-06-16T06:59:59.999999Z",
    ),
    (43, TS, None, DEFAULT, "same", None),
    # Rows 44-45: microseconds always present in the string form (Delta-Spark omits them).
    (
        44,
        NTZ,
        dt.datetime(2024, 6, 15, 12, 30, 45),
        "p=2024-06-15 12%3A30%3A45",
        "p=2024-06-15%2012%253A30%253A45",
        "2024-06-15 12:30:45.000000",
    ),
    (
        45,
        NTZ,
        dt.datetime(1970, 1, 1),
        "p=1970-01-01 00%3A00%3A00",
        "p=1970-01-01%2000%253A00%253A00",
        "1970-01-01 00:00:00.000000",
    ),
    (46, NTZ, None, DEFAULT, "same", None),
]

# (row, type, value, directory, path, string form); directory None: no directory can name it.
TEXT: list[tuple[int, pa.DataType, Any, str | None, str, str | None]] = [
    (47, pa.string(), "\0", None, "", "\0"),
    (48, pa.string(), "before\0after", None, "", "before\0after"),
    (49, pa.binary(), b"", DEFAULT, "same", None),
    # Not UTF-8: no directory; the string form escapes the bytes (valid text, reads back).
    # (DE AD is valid UTF-8: U+07AD; BE and EF are not.)
    (50, pa.binary(), b"\xde\xad\xbe\xef", None, "", "\u07ad\\xbe\\xef"),
    (51, pa.binary(), b"HELLO", "p=HELLO", "same", "HELLO"),
    (52, pa.binary(), b"\x00\xff", None, "", "\x00\\xff"),
    (53, pa.binary(), b"/=%", "p=%2F%3D%25", "p=%252F%253D%2525", "/=%"),
    (54, pa.string(), "a{b", "p=a%7Bb", "p=a%257Bb", "a{b"),
    (55, pa.string(), "a}b", "p=a}b", "p=a%7Db", "a}b"),
    (56, pa.string(), "hello world", "p=hello world", "p=hello%20world", "hello world"),
    (57, pa.string(), "M\u00fcnchen", "p=M\u00fcnchen", "same", "M\u00fcnchen"),
    (58, pa.string(), "日本語", "p=日本語", "same", "日本語"),
    (59, pa.string(), "🎵🎶", "p=🎵🎶", "same", "🎵🎶"),
    (60, pa.string(), "a<b>c|d", "p=a<b>c|d", "p=a%3Cb%3Ec%7Cd", "a<b>c|d"),
    (61, pa.string(), "a@b!c(d)", "p=a@b!c(d)", "same", "a@b!c(d)"),
    (62, pa.string(), "a&b+c$d;e,f", "p=a&b+c$d;e,f", "same", "a&b+c$d;e,f"),
    (63, pa.string(), "Serbia/srb%", "p=Serbia%2Fsrb%25", "p=Serbia%252Fsrb%2525", "Serbia/srb%"),
    (64, pa.string(), "100%25", "p=100%2525", "p=100%252525", "100%25"),
    (65, pa.string(), "", DEFAULT, "same", None),
    (66, pa.string(), None, DEFAULT, "same", None),
    (67, pa.string(), " ", "p= ", "p=%20", " "),
    (68, pa.string(), "  ", "p=  ", "p=%20%20", "  "),
]


@pytest.mark.parametrize(("row", "type", "value", "directory", "path", "text"), TYPED)
def test_document_rows_typed(
    row: int, type: pa.DataType, value: Any, directory: str, path: str, text: str | None
) -> None:
    assert lv.to_string(value, type) == text, row
    tz = LA if row in (40, 41, 42) else "UTC"
    assert lv.hive_segment("p", value, type, timezone=tz) == directory, row
    assert lv.uri_escape(directory) == (directory if path == "same" else path), row
    back = lv.from_string(text, type)
    name, parsed = lv.parse_hive_segment(directory, type, timezone=tz)
    assert name == "p"
    expected = pa.scalar(value, type)
    for got in (back, parsed):
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(got.as_py())
        else:
            assert got.equals(expected), (row, got, expected)
            if isinstance(value, float):
                assert math.copysign(1, got.as_py()) == math.copysign(1, value)


@pytest.mark.parametrize(("row", "type", "value", "directory", "path", "text"), TEXT)
def test_document_rows_strings_and_binary(
    row: int, type: pa.DataType, value: Any, directory: str | None, path: str, text: str | None
) -> None:
    assert lv.to_string(value, type) == text, row
    if text is not None:
        assert lv.from_string(text, type).as_py() == value
    if directory is None:
        with pytest.raises(lp.InvalidArgumentError) as e:
            lv.hive_segment("p", value, type)
        assert "directory" in str(e.value)
        return
    assert lv.hive_segment("p", value, type) == directory, row
    assert lv.uri_escape(directory) == (directory if path == "same" else path), row
    _, parsed = lv.parse_hive_segment(directory, type)
    if value in ("", b""):
        assert parsed.as_py() is None  # a Hive layout cannot tell '' from NULL
    else:
        assert parsed.as_py() == value


def test_timezone_is_ignored_for_types_without_a_zone() -> None:
    v = dt.datetime(2024, 6, 15, 12, 30, 45)
    assert lv.hive_segment("p", v, NTZ, timezone=LA) == lv.hive_segment("p", v, NTZ)
    assert lv.hive_segment("d", dt.date(2024, 1, 1), pa.date32(), timezone=LA) == "d=2024-01-01"


def test_column_names_are_escaped_too() -> None:
    assert lv.hive_segment("a=b", 1, pa.int64()) == "a%3Db=1"
    assert lv.parse_hive_segment("a%3Db=1", pa.int64()) == ("a=b", pa.scalar(1))


def test_fold_reads_as_the_earlier_instant_and_gap_is_refused() -> None:
    # 2024-11-03 01:30 happens twice in Los Angeles (PDT, then PST).
    _, v = lv.parse_hive_segment("t=2024-11-03 01%3A30%3A00", TS, timezone=LA)
    assert v.as_py() == dt.datetime(2024, 11, 3, 8, 30, tzinfo=dt.timezone.utc)
    # 2024-03-10 02:30 never happens there.
    with pytest.raises(lp.InvalidArgumentError, match="skip"):
        lv.parse_hive_segment("t=2024-03-10 02%3A30%3A00", TS, timezone=LA)


def test_nanoseconds_and_other_units_keep_every_digit() -> None:
    ns = pa.timestamp("ns", tz="UTC")
    v = pa.scalar(1_718_479_845_123_456_789, ns)
    assert lv.to_string(v) == "2024-06-15T19:30:45.123456789Z"
    assert lv.from_string("2024-06-15T19:30:45.123456789Z", ns).equals(v)
    assert lv.hive_segment("t", v) == "t=2024-06-15 19%3A30%3A45.123456789"
    assert lv.to_string(pa.scalar(1, pa.timestamp("s"))) == "1970-01-01 00:00:01.000000"
    assert lv.to_string(pa.scalar(-1, pa.timestamp("ms", tz="UTC"))) == (
        "1969-12-31T23:59:59.999000Z"
    )


def test_typed_errors() -> None:
    with pytest.raises(lp.InvalidArgumentError):
        lv.from_string("abc", pa.int32())
    with pytest.raises(lp.InvalidArgumentError):
        lv.from_string("2024-02-30", pa.date32())
    with pytest.raises(lp.InvalidArgumentError):
        lv.from_string("a\\b", pa.binary())  # a lone backslash is no binary string form
    with pytest.raises(lp.InvalidArgumentError):
        lv.to_string("x", pa.int64())
    with pytest.raises(lp.InvalidArgumentError):
        lv.to_string(1)  # a Python value needs its type
    with pytest.raises(lp.InvalidArgumentError, match="time zone"):
        lv.hive_segment("p", 1, pa.int64(), timezone="Mars/Olympus")
    with pytest.raises(lp.InvalidArgumentError):
        lv.parse_hive_segment("no-equals-sign", pa.int64())
    with pytest.raises(lp.InvalidArgumentError):
        lv.hive_unescape("%ff")  # not UTF-8
    with pytest.raises(lp.UnsupportedTypeError):
        lv.to_string([1], pa.list_(pa.int64()))


# -- round trips against a simple model ------------------------------------------------------

SCALARS = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(lambda x: pa.scalar(x, pa.int64())),
    st.integers(-(2**31), 2**31 - 1).map(lambda x: pa.scalar(x, pa.int32())),
    st.integers(0, 2**64 - 1).map(lambda x: pa.scalar(x, pa.uint64())),
    st.floats(allow_nan=False).map(lambda x: pa.scalar(x, pa.float64())),
    st.floats(width=32, allow_nan=False).map(lambda x: pa.scalar(x, pa.float32())),
    st.booleans().map(lambda x: pa.scalar(x, pa.bool_())),
    st.decimals(
        min_value=-(10**19), max_value=10**19, places=18, allow_nan=False, allow_infinity=False
    ).map(lambda x: pa.scalar(x, D)),
    st.integers(-719_162, 2_932_896).map(lambda x: pa.scalar(x, pa.date32())),
    st.integers(-(2**62), 2**62).map(lambda x: pa.scalar(x, pa.timestamp("ns", tz="UTC"))),
    st.integers(-(10**17), 10**17).map(lambda x: pa.scalar(x, TS)),
    st.integers(-(10**17), 10**17).map(lambda x: pa.scalar(x, NTZ)),
    st.integers(-(10**11), 10**11).map(lambda x: pa.scalar(x, pa.timestamp("s", tz="+05:30"))),
    st.text().map(lambda x: pa.scalar(x, pa.string())),
    st.text().map(lambda x: pa.scalar(x, pa.large_string())),
    st.binary().map(lambda x: pa.scalar(x, pa.binary())),
    st.binary().map(lambda x: pa.scalar(x, pa.large_binary())),
)


def _empty(v: pa.Scalar) -> bool:
    textual = pa.types.is_string(v.type) or pa.types.is_large_string(v.type)
    binary = pa.types.is_binary(v.type) or pa.types.is_large_binary(v.type)
    return (textual or binary) and v.as_py() in ("", b"")


def _same(a: pa.Scalar, b: pa.Scalar) -> bool:
    if pa.types.is_floating(a.type) and a.is_valid and math.isnan(a.as_py()):
        return bool(math.isnan(b.as_py()))
    return bool(a.equals(b)) and a.type == b.type


@settings(max_examples=400, deadline=None)
@given(SCALARS)
def test_string_form_round_trips(v: pa.Scalar) -> None:
    text = lv.to_string(v)
    if text is None:  # '' and b'' have no string form; NULL reads back as NULL
        assert _empty(v)
        return
    assert _same(lv.from_string(text, v.type), v), (v, text)


@settings(max_examples=400, deadline=None)
@given(SCALARS, st.sampled_from(["UTC", LA, "Asia/Kathmandu", "-03:00"]))
def test_hive_segment_round_trips(v: pa.Scalar, tz: str) -> None:
    try:
        seg = lv.hive_segment("p", v, timezone=tz)
    except lp.InvalidArgumentError:
        assert (
            pa.types.is_string(v.type)
            or pa.types.is_binary(v.type)
            or (pa.types.is_large_string(v.type) or pa.types.is_large_binary(v.type))
        )
        raw = v.as_py()
        assert (isinstance(raw, str) and "\0" in raw) or (
            isinstance(raw, bytes) and (b"\0" in raw or not _utf8(raw))
        )
        return
    assert "/" not in seg
    name, back = lv.parse_hive_segment(seg, v.type, timezone=tz)
    assert name == "p"
    if _empty(v):
        assert not back.is_valid
    elif pa.types.is_timestamp(v.type) and v.type.tz is not None and _in_fold(v, tz):
        # The hour the clocks repeat reads as its earlier instant (as Spark and Java).
        assert back.cast(pa.int64()).as_py() <= v.cast(pa.int64()).as_py()
    else:
        assert _same(back, v), (v, seg)


def _utf8(b: bytes) -> bool:
    try:
        b.decode()
    except UnicodeDecodeError:
        return False
    return True


def _in_fold(v: pa.Scalar, tz: str) -> bool:
    """Whether the local time of ``v`` in ``tz`` happens twice (the model: zoneinfo)."""
    from zoneinfo import ZoneInfo

    if tz in ("UTC", "-03:00"):
        return False
    per_micro = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": 1}[v.type.unit]
    micros = v.cast(pa.int64()).as_py() * per_micro
    if v.type.unit == "ns":
        micros //= 1_000
    try:
        instant = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(
            microseconds=micros
        )
        local = instant.astimezone(ZoneInfo(tz)).replace(tzinfo=None)
    except OverflowError:
        return False  # before year 1 or after 9999: no daylight saving time there
    a = local.replace(tzinfo=ZoneInfo(tz), fold=0)
    b = local.replace(tzinfo=ZoneInfo(tz), fold=1)
    return a.utcoffset() != b.utcoffset()


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_escapes_are_inverse(s: str) -> None:
    assert lv.hive_unescape(lv.hive_escape(s)) == s
    assert "/" not in lv.hive_escape(s)
    assert "=" not in lv.hive_escape(s)
    assert lv.hive_unescape(lv.uri_escape(s)) == s
    assert " " not in lv.uri_escape(s)


# -- the vectorised form ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "array",
    [
        pa.array([0, -1, 2**63 - 1, -(2**63), None], pa.int64()),
        pa.array([-128, 127, None], pa.int8()),
        pa.array([0, 2**64 - 1], pa.uint64()),
        pa.array([19723, 0, -719162, 2932896, None], pa.date32()),
        pa.array([0, -1, 1_718_479_845_123_456, None], TS),
        pa.array([0, -1, 1_718_479_845_123_456], NTZ),
        pa.array([0, -1, 1_718_479_845_123_456_789], pa.timestamp("ns", tz="UTC")),
        pa.array([0, -1500, 86_400_000], pa.timestamp("ms")),
        pa.array([0, 1, -1], pa.timestamp("s", tz="Europe/Paris")),
        pa.array(["a", "", None, "Serbia/srb%"]),
        pa.array([b"HELLO", b"", None, b"\xde\xad"]),
        pa.array([0.0, -0.0, 5e-324, math.nan, None]),
        pa.array([decimal.Decimal("1.23"), None], D),
        pa.array([True, False, None]),
    ],
    ids=lambda a: str(a.type),
)
def test_to_strings_equals_to_string_per_value(array: pa.Array) -> None:
    out = lv.to_strings(array)
    assert out.type == pa.string()
    assert out.to_pylist() == [lv.to_string(array[i]) for i in range(len(array))]
    chunked = lv.to_strings(pa.chunked_array([array, array]))
    assert chunked.to_pylist() == out.to_pylist() * 2


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-(2**62), 2**62)), max_size=50))
def test_to_strings_of_timestamps_against_the_scalar_form(xs: list[int | None]) -> None:
    for t in (TS, NTZ, pa.timestamp("ns", tz="UTC")):
        arr = (
            pa.array(xs, t)
            if t != TS
            else pa.array([None if x is None else x // 1000 for x in xs], t)
        )
        assert lv.to_strings(arr).to_pylist() == [lv.to_string(arr[i]) for i in range(len(arr))]


def test_large_outputs_stay_intact_while_held_and_reused_buffers_are_rewritten() -> None:
    # Outputs of >= 1 MiB come from recycled memory: one still held must never be reused,
    # and one given back must be rewritten completely by the next conversion (which may be
    # shorter, with other lengths and nulls).
    n = 200_000
    first = pa.array(range(-(10**15), -(10**15) + n), pa.int64())
    second = pa.array([None if i % 7 == 0 else i for i in range(n)], pa.int64())
    held = lv.to_strings(first)
    expected = [str(v) for v in range(-(10**15), -(10**15) + n)]
    for _ in range(3):
        out = lv.to_strings(second)
        assert out.to_pylist() == [None if i % 7 == 0 else str(i) for i in range(n)]
        del out  # given back: the next round may reuse it
        assert held.to_pylist() == expected
    del held
    again = lv.to_strings(first[: n // 2])
    assert again.to_pylist() == expected[: n // 2]
