"""Where routing time goes: k.route on 2M rows with one column type at a time.

Usage: .venv/bin/python benches/route_profile.py
Keys are (country utf8 ~50 values, bucket(city, 16)) as in benches/kernels.py; "keys only"
routes a 1-byte column (grouping + destinations, next to no data movement).
"""

import time

import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned import kernels as k

n = 2_000_000
ints = pa.array([(i * 0x9E3779B97F4A7C15) & 0x7FFFFFFFFFFFFFFF for i in range(n)], pa.int64())
pool = pa.array([f"city-{i:08d}-xx"[: 10 + (i * 7) % 11] for i in range(100000)])
city = pool.take(pa.array([(i * 2654435761) % 100000 for i in range(n)]))
country = pa.array([f"country{i % 50}" for i in range(50)]).take(
    pa.array([(i * 31) % 50 for i in range(n)])
)
keys = pa.record_batch({"c": country, "b": k.bucket(city, 16)})


def t(name, b, kk=keys):
    best = 1e9
    for _ in range(3):
        t0 = time.perf_counter()
        k.route(b, kk)
        best = min(best, time.perf_counter() - t0)
    print(f"{name:20s} {best * 1e3:8.1f} ms  {n / best / 1e6:6.1f} M rows/s")


t("keys only (1 col)", pa.record_batch({"x": pa.array([i % 100 for i in range(n)], pa.int8())}))
t("int64", pa.record_batch({"id": ints}))
t("city utf8", pa.record_batch({"city": city}))
t("country utf8", pa.record_batch({"country": country}))
t(
    "all",
    pa.record_batch(
        {"id": ints, "country": country, "ts": pc.cast(ints, pa.timestamp("us")), "city": city}
    ),
)
b1 = pa.record_batch({"x": pa.array([i % 100 for i in range(n)], pa.int8())})
t("key=bucket only", b1, pa.record_batch({"b": k.bucket(city, 16)}))
t("key=country only", b1, pa.record_batch({"c": country}))
t("key=country dict", b1, pa.record_batch({"c": country.dictionary_encode()}))
