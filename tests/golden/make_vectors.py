"""Regenerates tests/golden/vectors.json (run by hand; the JSON file is what tests read).

The seed rows are the format's published hash vectors (their expected values as published);
the extension rows get their expected hashes from `mmh3` (an independent MurmurHash3
implementation) over the bytes docs/design.md ("Hashed bytes per type") prescribes. Every row,
seed or extension, is cross-checked against mmh3 here before the file is written.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import mmh3

OUT = Path(__file__).with_name("vectors.json")


def h(data: bytes) -> int:
    return mmh3.hash(data, 0, signed=True)


def b16(x: int | None) -> int | None:
    return None if x is None else abs(x) % 16


T = lambda name, **kw: {"type": name, **kw}  # noqa: E731

# (arrow type, json value, bytes hashed, expected murmur3 from the spec or None to derive)
SEED = [
    (T("int8"), 5, b"\x05", 1405797717),
    (T("int16"), 5, struct.pack("<h", 5), 1253686505),
    (T("int32"), 5, struct.pack("<i", 5), 236698494),
    (T("int64"), 5, struct.pack("<q", 5), 1740791543),
    (T("uint32"), 5, struct.pack("<I", 5), 236698494),
    (T("int32"), -1, struct.pack("<i", -1), 1982413648),
    (T("int32"), 0, struct.pack("<i", 0), 593689054),
    (T("int64"), 0, struct.pack("<q", 0), 1669671676),
    (T("float32"), 1.0, struct.pack("<f", 1.0), -443043632),
    (T("float64"), 1.0, struct.pack("<d", 1.0), -142385009),
    (T("float64"), -0.0, struct.pack("<d", -0.0), 1366273829),
    (T("date32"), 20432, struct.pack("<i", 20432), 697559546),
    (T("date64"), 1765324800000, struct.pack("<q", 1765324800000), 1988835957),
    (T("timestamp", unit="s"), 1765374300, struct.pack("<q", 1765374300), 320152589),
    (T("timestamp", unit="us"), 1765374300000000, struct.pack("<q", 1765374300000000), -612240890),
    (T("utf8"), "", b"", 0),
    (T("utf8"), "US", b"US", -629525236),
    (T("utf8"), "hello", b"hello", 613153351),
    (T("utf8"), "héllo", "héllo".encode(), -1130389400),
    (T("binary"), {"hex": "616263"}, b"abc", -1277324294),
    (T("bool"), True, b"true", 888000370),
    (T("decimal128", length=10002), "1.23", b"1.23", -598344771),
    (T("int32"), -2089875627, struct.pack("<i", -2089875627), -2147483648),
    (T("int64"), 2841062569, struct.pack("<q", 2841062569), -2147483648),
]

EXT = [
    (T("uint8"), 255, b"\xff"),
    (T("int8"), -128, struct.pack("<b", -128)),
    (T("uint16"), 65535, struct.pack("<H", 65535)),
    (T("int16"), -32768, struct.pack("<h", -32768)),
    (T("uint64"), 18446744073709551615, struct.pack("<Q", 18446744073709551615)),
    (T("int64"), -9223372036854775808, struct.pack("<q", -9223372036854775808)),
    (T("int64"), -1, struct.pack("<q", -1)),
    (T("float16"), 1.0, struct.pack("<e", 1.0)),
    (T("float32"), -0.0, struct.pack("<f", -0.0)),
    (T("float64"), 3.5, struct.pack("<d", 3.5)),
    # timestamps: raw i64 in their unit, timezone ignored
    (T("timestamp", unit="ms"), 1765374300000, struct.pack("<q", 1765374300000)),
    (T("timestamp", unit="ns"), 1765374300000000000, struct.pack("<q", 1765374300000000000)),
    (
        T("timestamp", unit="us", timezone="UTC"),
        1765374300000000,
        struct.pack("<q", 1765374300000000),
    ),
    (
        T("timestamp", unit="us", timezone="+08:00"),
        1765374300000000,
        struct.pack("<q", 1765374300000000),
    ),
    (T("date32"), -1, struct.pack("<i", -1)),
    (T("large_utf8"), "hello", b"hello"),
    (T("utf8_view"), "a string longer than twelve bytes", b"a string longer than twelve bytes"),
    (T("utf8"), "日本語", "日本語".encode()),
    (T("utf8"), "🎵🎶", "🎵🎶".encode()),
    (T("utf8"), "a\u0000b", b"a\x00b"),
    (T("large_binary"), {"hex": "00ff"}, b"\x00\xff"),
    (T("binary_view"), {"hex": "deadbeef"}, b"\xde\xad\xbe\xef"),
    (T("binary"), {"hex": ""}, b""),
    # display-string types
    (T("bool"), False, b"false"),
    (T("decimal128", length=10002), "-1.23", b"-1.23"),
    (T("decimal128", length=38010), "0", b"0.0000000000"),
    (T("decimal256", length=40002), "12345.67", b"12345.67"),
    (T("time32", unit="s"), 49500, b"13:45:00"),
    (T("time64", unit="us"), 49500123456, b"13:45:00.123456"),
    (T("fixed_size_binary", length=3), {"hex": "616263"}, b"616263"),
]

MULTI = [
    ([T("utf8"), T("utf8")], ["ab", "12"], b"ab12", -505686679),
    ([T("int32"), T("utf8")], [1, "US"], struct.pack("<i", 1) + b"US", 1065972804),
    ([T("int32"), T("utf8")], [None, "US"], b"US", -629525236),
    ([T("int32"), T("utf8")], [None, None], None, None),
    (
        [T("utf8"), T("int64"), T("utf8")],
        ["abc", 7, "d"],
        b"abc" + struct.pack("<q", 7) + b"d",
        None,
    ),
    ([T("utf8"), T("utf8"), T("utf8")], ["", "x", None], b"x", None),
    (
        [T("date32"), T("binary")],
        [20432, {"hex": "0102"}],
        struct.pack("<i", 20432) + b"\x01\x02",
        None,
    ),
]

# transform vectors: (transform, params, source type, value, expected value)
TRANSFORMS = [
    ("year", {}, T("date32"), 19723, 2024),  # 2024-01-01
    ("month", {}, T("date32"), 19723, 1),
    ("day", {}, T("date32"), 19723, 1),
    ("hour", {}, T("timestamp", unit="us", timezone="+08:00"), 0, 8),
    ("hour", {}, T("timestamp", unit="us"), 0, 0),
    (
        "year",
        {},
        T("timestamp", unit="us", timezone="+08:00"),
        1735660800000000,
        2025,
    ),  # 2024-12-31T16:00Z
    ("year", {}, T("timestamp", unit="us"), 1735660800000000, 2024),
    (
        "day",
        {},
        T("timestamp", unit="s", timezone="America/New_York"),
        1765324800,
        9,
    ),  # 2025-12-10T00:00Z
    ("month", {}, T("date64"), 1765324800000, 12),
    ("day", {}, T("date32"), -1, 31),  # 1969-12-31
    ("truncate", {"width": 3}, T("utf8"), "abcdef", "abc"),
    ("truncate", {"width": 2}, T("utf8"), "héllo", "hé"),
    ("truncate", {"width": 3}, T("utf8"), "日本語テキスト", "日本語"),
    ("truncate", {"width": 5}, T("int32"), 17, 15),
    ("truncate", {"width": 5}, T("int64"), -7, -5),
    ("truncate", {"width": 10}, T("decimal128", length=10002), "12.34", "10.00"),
    ("truncate", {"width": 10}, T("large_utf8"), "short", "short"),
    ("bucket", {"num_buckets": 16}, T("int64"), 5, 7),
    ("bucket", {"num_buckets": 7}, T("utf8"), "US", abs(-629525236) % 7),
    ("bucket", {"num_buckets": 16}, T("int32"), -2089875627, 0),
    ("bucket", {"num_buckets": 10}, T("int32"), -2089875627, 2147483648 % 10),
]


def main() -> None:
    hashes = []
    for typ, val, data, expected in SEED:
        got = h(data)
        assert got == expected, (typ, val, got, expected)
        hashes.append(
            {"type": typ, "value": val, "murmur3": got, "bucket16": b16(got), "source": "spec"}
        )
    for typ, val, data in EXT:
        got = h(data)
        hashes.append(
            {"type": typ, "value": val, "murmur3": got, "bucket16": b16(got), "source": "mmh3"}
        )
    multi = []
    for types, vals, data, expected in MULTI:
        got = None if data is None else h(data)
        if expected is not None:
            assert got == expected, (types, vals, got, expected)
        multi.append({"types": types, "values": vals, "murmur3": got, "bucket16": b16(got)})
    transforms = [
        {"transform": t, "params": p, "type": typ, "value": v, "expected": e}
        for t, p, typ, v, e in TRANSFORMS
    ]
    OUT.write_text(
        json.dumps(
            {"hash": hashes, "multi": multi, "transforms": transforms}, indent=1, ensure_ascii=False
        )
        + "\n"
    )
    print(
        f"wrote {OUT}: {len(hashes)} hash, {len(multi)} multi, {len(transforms)} transform vectors"
    )


if __name__ == "__main__":
    main()
