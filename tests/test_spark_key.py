"""The clustering key of clustered Spark writes: the JVM bucket functions against the Rust
kernels on random data of every type they take, and the key Spark computes without a Python
pass (plans checked, one file per partition)."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

import lance_partitioned as lp
import lance_partitioned.spark as lps
from lance_partitioned import kernels
from lance_partitioned.spark import key as _spark_key

pytestmark = pytest.mark.spark

N_ROWS = 3000
BUCKETS = (1, 7, 16, 1000, 2**31 - 1)  # the last keeps 31 bits of every hash


def _text(rng: random.Random) -> str:
    alphabet = "aZ09 -_/é€𝄞中\x00"  # 1- to 4-byte UTF-8, NUL
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 24)))


def _random_table(seed: int) -> pa.Table:
    """Every type the JVM functions hash, with extremes, NULLs and every string tail length."""
    rng = random.Random(seed)

    def maybe(v: Any) -> Any:
        return None if rng.random() < 0.1 else v

    def ints(bits: int) -> list[Any]:
        lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        picks = [lo, hi, 0, -1, 1]
        return [
            maybe(rng.choice(picks) if rng.random() < 0.1 else rng.randint(lo, hi))
            for _ in range(N_ROWS)
        ]

    floats = [float("nan"), float("inf"), -float("inf"), -0.0, 0.0, 1e-310, 3.5]
    f64 = [
        maybe(rng.choice(floats) if rng.random() < 0.2 else rng.uniform(-1e9, 1e9))
        for _ in range(N_ROWS)
    ]
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    micros = [maybe(rng.randint(-(2**60), 2**60) // 1000) for _ in range(N_ROWS)]
    return pa.table(
        {
            "i8": pa.array(ints(8), pa.int8()),
            "i16": pa.array(ints(16), pa.int16()),
            "i32": pa.array(ints(32), pa.int32()),
            "i64": pa.array(ints(64), pa.int64()),
            "f32": pa.array(
                [None if v is None else float(pa.scalar(v, pa.float32()).as_py()) for v in f64],
                pa.float32(),
            ),
            "f64": pa.array(f64, pa.float64()),
            "s": pa.array([maybe(_text(rng)) for _ in range(N_ROWS)], pa.string()),
            "b": pa.array([maybe(rng.randbytes(rng.randrange(0, 21))) for _ in range(N_ROWS)]),
            "d": pa.array(
                [maybe(rng.randint(-700_000, 2_900_000)) for _ in range(N_ROWS)], pa.int32()
            ).cast(pa.date32()),
            "ts": pa.array(
                [None if m is None else epoch + dt.timedelta(microseconds=m) for m in micros],
                pa.timestamp("us", tz="UTC"),
            ),
        }
    )


def _jvm_buckets(spark: Any, table: pa.Table, combos: list[list[str]], n: int) -> pa.Table:
    df = spark.createDataFrame(table)
    types = {f.name: f.type for f in table.schema}
    cols = []
    for names in combos:
        inputs = [(F.col(c), types[c], df.schema[c].dataType) for c in names]
        col = _spark_key._bucket(n, inputs)
        assert col is not None, names
        cols.append(col.alias("+".join(names)))
    return df.select(*cols).toArrow()


def test_jvm_bucket_is_bit_exact_with_the_kernel(spark: Any) -> None:
    assert _spark_key.jvm_functions(spark)
    table = _random_table(7)
    singles = [[c] for c in table.column_names]
    rng = random.Random(3)
    multis = [rng.sample(table.column_names, rng.randrange(2, 5)) for _ in range(12)]
    for n in BUCKETS:
        got = _jvm_buckets(spark, table, singles + multis, n)
        for names in singles + multis:
            arrays = [table[c].combine_chunks() for c in names]
            want = (
                kernels.bucket(arrays[0], n) if len(names) == 1 else kernels.multi_bucket(arrays, n)
            )
            assert got["+".join(names)].combine_chunks().equals(want), (names, n)


def test_jvm_functions_refuse_types_they_cannot_hash_exactly(spark: Any) -> None:
    df = spark.createDataFrame(
        pa.table({"l": pa.array([1], pa.int64()), "x": pa.array([1.5]), "t": ["a"]})
    )
    st = {f.name: f.dataType for f in df.schema}
    # Unsigned and decimal types, narrowing floats, millisecond timestamps, strings as ints.
    assert _spark_key._hash_input(F.col("l"), pa.uint64(), st["l"]) is None
    assert _spark_key._hash_input(F.col("x"), pa.decimal128(10, 2), st["x"]) is None
    assert _spark_key._hash_input(F.col("x"), pa.float32(), st["x"]) is None
    assert _spark_key._hash_input(F.col("t"), pa.int64(), st["t"]) is None
    assert _spark_key._hash_input(F.col("t"), pa.timestamp("ms"), st["t"]) is None


def test_narrowing_integer_keys_are_null_out_of_range(spark: Any) -> None:
    assert _spark_key.jvm_functions(spark)
    df = spark.createDataFrame(pa.table({"l": pa.array([5, 2**40, None], pa.int64())}))
    col = _spark_key._bucket(16, [(F.col("l"), pa.int32(), df.schema["l"].dataType)])
    assert col is not None
    got = df.select(col.alias("k")).toArrow()["k"].to_pylist()
    assert got == [kernels.bucket(pa.array([5], pa.int32()), 16)[0].as_py(), None, None]


def _plan(df: Any) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())


def _events(spark: Any, n: int) -> Any:
    return spark.range(n).select(
        F.col("id"),
        F.concat(F.lit("city-"), (F.col("id") % 37).cast("string")).alias("city"),
        (F.col("id") % 11 - 5).alias("score"),
        F.when(F.col("id") % 9 == 0, F.lit(None)).otherwise(F.col("id") % 53).alias("user"),
    )


SPECS = {
    "bucket": [lp.PartitionField("b", source="city", transform=lp.Bucket(5))],
    "multi_bucket": [lp.PartitionField("mb", source=["city", "user"], transform=lp.MultiBucket(6))],
    "truncate": [
        lp.PartitionField("t", source="city", transform=lp.Truncate(6)),
        lp.PartitionField("s", source="score", transform=lp.Truncate(4)),
    ],
}


@pytest.mark.parametrize("kind", sorted(SPECS))
def test_clustered_writes_compute_the_key_in_spark(spark: Any, tmp_path: Path, kind: str) -> None:
    spec = lp.PartitionSpec(SPECS[kind])
    uri = str(tmp_path / kind)
    df = _events(spark, 2000)
    res = lps.write(df, uri, spec=spec, num_tasks=3)
    ns = lp.PartitionedNamespace.open(uri)
    assert res.files == res.partitions  # every partition met in one task
    assert sorted(ns.scan().read_all()["id"].to_pylist()) == list(range(2000))
    dw = ns.distributed_write("append")
    clustered = _spark_key.cluster(df, ns, dw, "exact", 3)
    plan = _plan(clustered)
    assert "Exchange hashpartitioning" in plan
    assert "ArrowEvalPython" not in plan
    assert "BatchEvalPython" not in plan


def test_without_the_jvm_functions_the_key_goes_through_python(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_spark_key, "use_jvm", False)
    spec = lp.PartitionSpec(SPECS["bucket"])
    uri = str(tmp_path / "ns")
    df = _events(spark, 1000)
    res = lps.write(df, uri, spec=spec, num_tasks=3)
    assert res.files == res.partitions == 5
    ns = lp.PartitionedNamespace.open(uri)
    plan = _plan(_spark_key.cluster(df, ns, ns.distributed_write("append"), "exact", 3))
    assert "ArrowEvalPython" in plan


def test_expression_fields_keep_the_python_key(spark: Any, tmp_path: Path) -> None:
    spec = lp.PartitionSpec(
        [
            lp.PartitionField("b", source="city", transform=lp.Bucket(4)),
            lp.PartitionField("e", source=["score"], expression="col0 * 2", result_type=pa.int64()),
        ]
    )
    uri = str(tmp_path / "ns")
    df = _events(spark, 1000)
    res = lps.write(df, uri, spec=spec, num_tasks=3)
    assert res.files == res.partitions
    ns = lp.PartitionedNamespace.open(uri)
    cols, complete = _spark_key.key_columns(ns, df, jvm=True)
    assert not complete
    assert len(cols) == 1
    plan = _plan(_spark_key.cluster(df, ns, ns.distributed_write("append"), "exact", 3))
    assert "ArrowEvalPython" in plan
