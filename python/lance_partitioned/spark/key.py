"""The clustering key of a clustered Spark write.

A clustered write shuffles rows so that every partition's rows meet in one task. The key is
one Spark expression per partition field of the current spec, each a function of that field's
value, so rows of one partition always share a key:

- identity fields are their source column; year/month/day/hour of a DATE, or of a TIMESTAMP
  (an instant, evaluated in UTC from ``unix_micros``, so the session time zone plays no part),
  use Spark's date functions; truncate of a string or integer is ``substring`` or
  ``v - v % W`` (Spark's ``%`` truncates like the spec's);
- bucket and multi_bucket run in the JVM: two small Java UDFs of this package's jar
  (``jars/lance-partitioned-spark.jar``, loaded with ``ADD JAR``) compute the spec's
  murmur3 bucket bit-exactly over the same bytes as the Rust kernels, so the source columns
  never travel through Python.

A field Spark cannot compute (a custom expression, a hash of a type the JVM functions do not
take, or the jar missing) makes the key incomplete: ``key="exact"`` then computes the whole
key with the Rust kernel in an Arrow UDF (one pass of the source columns through Python), and
``key="native"`` shuffles by the fields that Spark did compute.
"""

from __future__ import annotations

import logging
from importlib import resources
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from lance_partitioned import _native
from lance_partitioned.namespace import PartitionedNamespace
from lance_partitioned.spec import source_fields

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

log = logging.getLogger("lance_partitioned.spark")

JAR = "lance-partitioned-spark.jar"
BUCKET_FUNCTION = "lance_partitioned_bucket"
MULTI_BUCKET_FUNCTION = "lance_partitioned_multi_bucket"
_JAVA_CLASSES = {
    BUCKET_FUNCTION: "io.lancepartitioned.spark.Bucket",
    MULTI_BUCKET_FUNCTION: "io.lancepartitioned.spark.MultiBucket",
}
_UTC = ("UTC", "Etc/UTC", "+00:00", "Z")
_KEY = "__lance_partitioned_key"

use_jvm = True
"""Whether bucket fields may use the JVM functions (benchmarks turn it off to measure the
Python pass they replace)."""


def jar_path() -> str | None:
    """The path of the jar with the JVM key functions inside the installed package, or None
    when this installation has none (a source tree built without ``make``)."""
    path = resources.files("lance_partitioned") / "jars" / JAR
    return str(path) if path.is_file() else None


def jvm_functions(spark: SparkSession) -> bool:
    """Registers the JVM bucket functions in ``spark`` (once per session: ``ADD JAR`` ships
    the jar to the executors); False, with a warning, when they cannot be loaded."""
    if not use_jvm:
        return False
    if all(spark.catalog.functionExists(name) for name in _JAVA_CLASSES):
        return True
    path = jar_path()
    if path is None:
        log.warning("lance-partitioned: %s is not installed; bucket keys go through Python", JAR)
        return False
    from pyspark.sql.types import IntegerType

    try:
        spark.sql("ADD JAR '{}'".format(path.replace("\\", "\\\\").replace("'", "\\'")))
        for name, cls in _JAVA_CLASSES.items():
            spark.udf.registerJavaFunction(name, cls, IntegerType())
    except Exception as e:  # Py4J and analysis errors: any of them means "not available"
        log.warning("lance-partitioned: cannot load %s (%s); bucket keys use Python", path, e)
        return False
    return True


def _spark_type(df: DataFrame, path: list[str]) -> Any:
    """The Spark type at a source path (``["loc", "city"]``), None when ``df`` lacks it."""
    from pyspark.sql.types import StructType

    t: Any = df.schema
    for part in path:
        if not isinstance(t, StructType) or part not in t.fieldNames():
            return None
        t = t[part].dataType
    return t


_SPARK_INTEGRAL = {8: "tinyint", 16: "smallint", 32: "int", 64: "bigint"}


def _is_text(ns_type: pa.DataType) -> bool:
    t = pa.types
    return bool(t.is_string(ns_type) or t.is_large_string(ns_type) or t.is_string_view(ns_type))


def _signed_integral(ns_type: pa.DataType, st: Any) -> str | None:
    """The Spark name of ``ns_type`` when it is a signed integer and ``st`` an integral Spark
    type, else None. Narrowing casts use ``try_cast``: a value out of the namespace type's
    range gets a NULL key and then fails the write with the cast error of staging."""
    from pyspark.sql.types import ByteType, IntegerType, LongType, ShortType

    integral = isinstance(st, (ByteType, ShortType, IntegerType, LongType))
    if not integral or not pa.types.is_signed_integer(ns_type):
        return None
    return _SPARK_INTEGRAL[ns_type.bit_width]


def _hash_input(col: Column, ns_type: pa.DataType, st: Any) -> Column | None:
    """``col`` as the Java value whose bytes the spec hashes for the namespace type
    ``ns_type`` (integers at their width, floats' bits, strings' UTF-8, dates as days,
    timestamps as microseconds), or None when the JVM functions cannot take it exactly."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    t = pa.types
    integral = _signed_integral(ns_type, st)
    if integral is not None:
        return col.try_cast(integral)
    if t.is_float32(ns_type) and isinstance(st, T.FloatType):
        return col
    if t.is_float64(ns_type) and isinstance(st, (T.FloatType, T.DoubleType)):
        return col.cast("double")
    if _is_text(ns_type) and isinstance(st, T.StringType):
        return col.cast("binary")
    if (
        t.is_binary(ns_type) or t.is_large_binary(ns_type) or t.is_binary_view(ns_type)
    ) and isinstance(st, T.BinaryType):
        return col
    if isinstance(st, T.DateType) and t.is_date32(ns_type):
        return F.unix_date(col)
    if isinstance(st, T.DateType) and t.is_date64(ns_type):
        return F.unix_date(col).cast("bigint") * F.lit(86_400_000)
    if isinstance(st, T.TimestampType) and t.is_timestamp(ns_type) and ns_type.unit == "us":
        return F.unix_micros(col)
    return None


def _temporal(kind: str, col: Column, ns_type: pa.DataType, st: Any) -> Column | None:
    """year/month/day/hour of a DATE or a UTC TIMESTAMP, as Spark computes it exactly."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DateType, TimestampType

    date = None
    if isinstance(st, DateType) and pa.types.is_date(ns_type) and kind != "hour":
        date = col
    elif (
        isinstance(st, TimestampType)
        and pa.types.is_timestamp(ns_type)
        and getattr(ns_type, "tz", None) in _UTC
    ):
        micros = F.unix_micros(col)
        day_us = F.lit(86_400_000_000)
        if kind == "hour":
            return F.floor(F.pmod(micros, day_us) / 3_600_000_000)
        days = ((micros - F.pmod(micros, day_us)) / day_us).cast("int")
        date = F.date_from_unix_date(days)
    if date is None:
        return None
    return {"year": F.year, "month": F.month, "day": F.dayofmonth}[kind](date)


def _truncate(width: int, col: Column, ns_type: pa.DataType, st: Any) -> Column | None:
    """truncate(W) of a string (first W characters) or a signed integer (``v - v % W``)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    if _is_text(ns_type) and isinstance(st, StringType):
        return F.substring(col, 1, width)
    if _signed_integral(ns_type, st) is None:
        return None
    v = col.cast("bigint")  # holds every value and any width
    return v - v % F.lit(width).cast("bigint")


def _bucket(n: int, inputs: list[tuple[Column, pa.DataType, Any]]) -> Column | None:
    """bucket / multi_bucket(n) by the JVM functions, None when a source type is not theirs."""
    from pyspark.sql import functions as F

    hashed = [h for h in (_hash_input(*i) for i in inputs) if h is not None]
    if len(hashed) < len(inputs):
        return None
    if len(hashed) == 1:
        return F.call_function(BUCKET_FUNCTION, F.lit(n), hashed[0])
    return F.call_function(MULTI_BUCKET_FUNCTION, F.lit(n), F.struct(*hashed))


def key_columns(ns: PartitionedNamespace, df: DataFrame, *, jvm: bool) -> tuple[list[Column], bool]:
    """Spark expressions for the current spec's partition fields that Spark can compute
    exactly (bucket fields only with ``jvm``), and whether they cover every field."""
    from pyspark.sql import functions as F

    sources = {fid: (name, t) for name, (fid, t) in source_fields(ns.schema).items()}
    specs = ns.specs
    cols: list[Column] = []
    complete = True
    for f in specs[max(specs)]["fields"]:
        transform = f.get("transform") or {}
        kind = transform.get("type")
        inputs: list[tuple[Column, pa.DataType, Any]] = []
        for sid in f["source_ids"]:
            name, ns_type = sources.get(sid, (None, None))
            # A top-level column (its name may hold dots), or a struct child (`loc.city`).
            path = [] if name is None else [name] if name in ns.schema.names else name.split(".")
            st = _spark_type(df, path) if path else None
            if st is not None and ns_type is not None:
                inputs.append((F.col(".".join(f"`{p}`" for p in path)), ns_type, st))
        col = None
        if len(inputs) != len(f["source_ids"]):
            pass
        elif kind == "identity":
            col = inputs[0][0]
        elif kind in ("year", "month", "day", "hour"):
            col = _temporal(kind, *inputs[0])
        elif kind == "truncate":
            col = _truncate(int(transform["width"]), *inputs[0])
        elif kind in ("bucket", "multi_bucket") and jvm:
            col = _bucket(int(transform["num_buckets"]), inputs)
        if col is None:
            complete = False
        else:
            cols.append(col)
    return cols, complete


class KeyPlan(Protocol):
    """What clustering needs of a distributed write or merge: its nonce (hashers are cached
    per plan) and its spec's key hasher."""

    @property
    def nonce(self) -> str: ...

    def key_hasher(self) -> _native.KeyHasher: ...


_HASHERS: dict[str, _native.KeyHasher] = {}


def _hasher(dw: KeyPlan) -> _native.KeyHasher:
    """The key hasher of one write (by its nonce), built once per worker process."""
    h = _HASHERS.get(dw.nonce)
    if h is None:
        h = dw.key_hasher()
        _HASHERS.clear()
        _HASHERS[dw.nonce] = h
    return h


def _key_function(dw: KeyPlan, names: list[str]) -> Any:
    """The Arrow UDF body: partition keys from the source columns (passed one argument per
    column; a struct argument measured ~20% slower)."""

    def partition_key(*sources: pa.Array) -> pa.Array:  # type: ignore[type-arg]
        batch = pa.RecordBatch.from_arrays(list(sources), names=names)
        return _hasher(dw).hash(batch)

    return partition_key


def cluster(
    df: DataFrame, ns: PartitionedNamespace, dw: KeyPlan, key: str, num_tasks: int | None
) -> DataFrame:
    """``df`` repartitioned so that every partition's rows meet in one task."""
    from pyspark.sql.pandas.functions import arrow_udf

    spark = df.sparkSession

    def shuffle(frame: DataFrame, *by: Any) -> DataFrame:
        # Without num_tasks, Spark's adaptive execution sizes the shuffle from the data (at
        # most spark.sql.shuffle.partitions tasks): 1,000 rows are one task, not 200.
        return frame.repartition(num_tasks, *by) if num_tasks else frame.repartition(*by)

    cols, complete = key_columns(ns, df, jvm=jvm_functions(spark))
    if cols and (complete or key == "native"):
        log.info("lance-partitioned: clustering by a key Spark computes (exact: %s)", complete)
        return shuffle(df, *cols)
    sources = [c for c in dw.key_hasher().source_columns if c in df.columns]
    if not sources:
        return df
    udf = arrow_udf(_key_function(dw, sources), "int")  # type: ignore[call-overload]
    log.info("lance-partitioned: clustering by the exact key (Rust Arrow UDF)")
    return shuffle(df.withColumn(_KEY, udf(*[df[c] for c in sources])), _KEY).drop(_KEY)
