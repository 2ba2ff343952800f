"""The main job (``make demo``): a realistic Spark ingest pipeline on a local namespace.

1. generate synthetic events in Spark (event_ts, country, city, user_id, amount, payload);
2. ingest them with Spark into a namespace partitioned by year, month and day of event_ts and
   identity(country);
3. evolve the spec to add bucket(user_id, 8) and ingest another day range;
4. run pruned queries and print the partition tree, rows per partition (top-k and skew), the
   pruning plan of a query, its result and timings;
5. show the namespace through the command line: ``lance-partitioned info``, ``tree`` and
   ``skew``.

``python -m lance_partitioned.demo [--rows N] [--uri URI [--replace]] [--storage-option K=V]...
[--master URL] [--keep]``

By default it runs on a local Spark (``local[2]``) and a temporary directory. ``--uri
s3://bucket/prefix`` (or ``gs://``, ``az://``) with ``--storage-option`` keys writes to object
storage instead, and ``--master spark://host:7077`` runs the job on a cluster whose executors
have this package installed (``PYSPARK_PYTHON`` names their interpreter).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow.compute as pc

import lance_partitioned as lp
import lance_partitioned.spark as lps
from lance_partitioned.lineage.show import compact, read_events

COUNTRIES = ["US", "IN", "BR", "DE", "FR", "GB", "JP", "MX", "NG", "ID", "CA", "ES"]
# A skewed mix: the first countries get most events.
WEIGHTS = [30, 15, 10, 8, 7, 6, 6, 5, 4, 4, 3, 2]


def _say(msg: str = "") -> None:
    print(msg, flush=True)


@contextmanager
def _timed(label: str, timings: dict[str, float]) -> Iterator[None]:
    t0 = time.perf_counter()
    yield
    timings[label] = time.perf_counter() - t0
    _say(f"   [{label}: {timings[label]:.2f} s]")


def events(spark: Any, n: int, start: int, first_day: str, days: int) -> Any:
    """n synthetic events over ``days`` days from ``first_day`` (UTC), computed in Spark."""
    from pyspark.sql import functions as F

    cum = []
    acc = 0
    for w in WEIGHTS:
        acc += w
        cum.append(acc)
    pick = F.abs(F.hash(F.col("id"), F.lit(7))) % acc
    country = F.lit(COUNTRIES[-1])
    for c, edge in reversed(list(zip(COUNTRIES, cum, strict=True))):
        country = F.when(pick < edge, F.lit(c)).otherwise(country)
    seconds = (F.abs(F.hash(F.col("id"), F.lit(11))) % (days * 86400)).cast("long")
    return spark.range(start, start + n).select(
        (F.to_timestamp(F.lit(f"{first_day} 00:00:00")) + F.make_dt_interval(secs=seconds)).alias(
            "event_ts"
        ),
        country.alias("country"),
        F.concat(
            country, F.lit("-city-"), (F.abs(F.hash(F.col("id"), F.lit(3))) % 300).cast("string")
        ).alias("city"),
        (F.abs(F.hash(F.col("id"), F.lit(5))) % 200_000).cast("long").alias("user_id"),
        (F.abs(F.hash(F.col("id"), F.lit(9))) % 100_000 / 100)
        .cast("decimal(12,2)")
        .alias("amount"),
        F.concat(
            F.lit("event-"),
            F.col("id").cast("string"),
            F.lit("-"),
            F.repeat(F.lit("x"), (F.col("id") % 16).cast("int")),
        ).alias("payload"),
    )


def _tree(ns: lp.PartitionedNamespace) -> None:
    parts = ns.partitions()
    _say(f"   {ns.root}: manifest version {ns.version}, {parts.num_rows} leaf tables")
    for spec_id, spec in sorted(ns.specs.items()):
        mine = [p for p in parts.to_pylist() if p["spec_id"] == spec_id]
        names = [f["field_id"] for f in spec["fields"]]
        _say(
            f"   v{spec_id}: {' / '.join(names)}  -> {len(mine)} partitions, "
            f"{sum(p['rows'] for p in mine):,} rows"
        )
        for level, name in enumerate(names, start=1):
            prefixes = {tuple(p[n] for n in names[:level]) for p in mine}
            _say(f"      level {level} ({name}): {len(prefixes)} namespaces")


def _skew(ns: lp.PartitionedNamespace, k: int = 8) -> None:
    parts = ns.partitions().to_pylist()
    rows = sorted((p["rows"] for p in parts), reverse=True)
    fields = [
        c
        for c in ns.partitions(with_rows=False).column_names
        if c not in ("object_id", "location", "read_version", "spec_id")
    ]
    _say(f"   top {k} partitions by rows:")
    for p in sorted(parts, key=lambda p: -p["rows"])[:k]:
        key = ", ".join(f"{f}={p[f]}" for f in fields if p[f] is not None)
        _say(f"      {p['rows']:>8,}  v{p['spec_id']}  {key}")
    med = statistics.median(rows)
    _say(
        f"   rows per partition: min {rows[-1]:,}, median {med:,.0f}, max {rows[0]:,}; "
        f"skew (max/median) {rows[0] / med:.1f}x"
    )
    by_country: Counter[str] = Counter()
    for p in parts:
        by_country[p["country"]] += p["rows"]
    _say("   rows per country: " + ", ".join(f"{c} {n:,}" for c, n in by_country.most_common()))


def _is_namespace(path: str) -> bool:
    return os.path.isdir(os.path.join(path, "__manifest"))


def _is_remote(uri: str) -> bool:
    return "://" in uri and not uri.startswith("file://")


def _remote_problem(uri: str, options: dict[str, str], replace: bool) -> str | None:
    """Why the demo may not write to an object-store ``uri``: it never overwrites a namespace
    there (pick a new prefix instead)."""
    try:
        lp.PartitionedNamespace.open(uri, storage_options=options)
    except lp.NamespaceNotFoundError:
        return None
    if replace:
        return f"--replace works on local directories only; {uri!r} holds a namespace"
    return f"{uri!r} already holds a namespace; pick another prefix"


def _root_problem(root: str, replace: bool) -> str | None:
    """Why the demo may not write to ``root``: it never deletes what it did not create."""
    if not os.path.exists(root):
        return None
    if not os.path.isdir(root):
        return f"--root {root!r} exists and is not a directory"
    if not os.listdir(root):
        return None
    if not _is_namespace(root):
        return (
            f"--root {root!r} is a non-empty directory that is not a lance-partitioned "
            "namespace; the demo will not touch it (pick an empty or new directory)"
        )
    if not replace:
        return (
            f"--root {root!r} already holds a namespace; pass --replace to delete it and start "
            "over, or pick another directory"
        )
    return None


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000, help="events of the first ingest")
    ap.add_argument(
        "--uri",
        "--root",
        dest="root",
        default=None,
        help="where the namespace goes: a directory or s3://, gs://, az:// URI (default: a "
        "temporary directory)",
    )
    ap.add_argument(
        "--storage-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an object-store option (aws_endpoint, aws_region, allow_http, ...); repeatable. "
        "Without them the standard AWS_*, GOOGLE_* and AZURE_* environment variables apply",
    )
    ap.add_argument(
        "--master",
        default="local[2]",
        help="the Spark master (default local[2]; e.g. spark://host:7077 for a cluster)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the namespace afterwards")
    ap.add_argument(
        "--replace",
        action="store_true",
        help="with --root: replace a lance-partitioned namespace already there (anything else "
        "in a non-empty directory is never deleted)",
    )
    args = ap.parse_args(argv)
    options = {}
    for item in args.storage_option:
        key, sep, value = item.partition("=")
        if not sep or not key:
            ap.error(f"--storage-option takes KEY=VALUE, not {item!r}")
        options[key] = value
    args.storage_options = options or None
    return args


def _start_spark(master: str, timings: dict[str, float]) -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    with _timed("spark startup", timings):
        spark = (
            SparkSession.builder.master(master)
            .appName("lance-partitioned-demo")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100000")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        lps.register(spark)
    return spark


SPEC = lp.PartitionSpec(
    [
        lp.PartitionField("year", source="event_ts", transform=lp.Year()),
        lp.PartitionField("month", source="event_ts", transform=lp.Month()),
        lp.PartitionField("day", source="event_ts", transform=lp.Day()),
        lp.PartitionField("country", source="country", transform=lp.Identity()),
    ]
)


def _ingest(
    spark: Any,
    root: str,
    options: dict[str, str] | None,
    n: int,
    start: int,
    days: tuple[str, int],
    step: str,
    timings: Any,
) -> lp.WriteResult:
    """Generates ``n`` events (cached, so the ingest alone is timed) and writes them (the
    first ingest creates the namespace with :data:`SPEC`)."""
    with _timed(f"generate {step} (Spark, cached)", timings):
        df = events(spark, n, start, days[0], days[1]).cache()
        df.count()
    with _timed(f"ingest {step}", timings):
        r = lps.write(
            df, root, spec=SPEC if start == 0 else None, num_tasks=4, storage_options=options
        )
    _say(
        f"   {r.rows:,} rows -> {r.partitions} partitions ({r.created} new), {r.files} files, "
        f"{r.bytes / 1e6:.1f} MB, {r.rows / timings[f'ingest {step}'] / 1e6:.2f} M rows/s"
    )
    return r


def _evolve(ns: lp.PartitionedNamespace, timings: dict[str, float]) -> int:
    _say("\n2. evolve the spec: add bucket(user_id, 8)")
    evolved = lp.PartitionSpec(
        [*SPEC.fields, lp.PartitionField("user_bucket", source="user_id", transform=lp.Bucket(8))]
    )
    with _timed("evolve", timings):
        spec_id = ns.evolve(evolved)
    _say(f"   new spec version v{spec_id}; old partitions stay readable under v1")
    return spec_id


QUERY = (
    "country = 'DE' AND event_ts >= TIMESTAMP '2026-01-05 00:00:00' "
    "AND event_ts < TIMESTAMP '2026-01-12 00:00:00'"
)


def _query(spark: Any, ns: lp.PartitionedNamespace, timings: dict[str, float]) -> bool:
    """Runs the pruned query with pyarrow and with Spark; False when they disagree."""
    _say(f"\n5. query: {QUERY}")
    _say("   pruning plan:")
    for line in ns.explain(QUERY).splitlines():
        _say(f"      {line}")
    with _timed("query (pyarrow, pruned)", timings):
        t = ns.to_table(filter=QUERY, columns=["event_ts", "country", "user_id", "amount"])
    _say(f"   {t.num_rows:,} rows, total amount {pc.sum(t['amount']).as_py():,}")
    with _timed("query (Spark, our filter: pruned)", timings):
        df = lps.read(spark, ns.root, QUERY, storage_options=ns.storage_options)
        n_pruned = df.count()
    _say(
        f"   Spark read {len(ns.partitions(QUERY, with_rows=False))} leaf tables of "
        f"{ns.partitions(with_rows=False).num_rows} in {df.rdd.getNumPartitions()} tasks: "
        f"{n_pruned:,} rows"
    )
    if n_pruned != t.num_rows:
        _say("   MISMATCH between the Spark and the pyarrow read")
        return False
    _per_day(df)
    _dataframe_filter(spark, ns, timings)
    return True


def _per_day(df: Any) -> None:
    from pyspark.sql import functions as F

    per_day = (
        df.groupBy(F.to_date("event_ts").alias("day"))
        .agg(F.count("*").alias("events"), F.sum("amount").alias("amount"))
        .orderBy("day")
        .collect()
    )
    for r in per_day:
        _say(f"      {r['day']}  {r['events']:>7,} events  amount {r['amount']:>14,}")


def _dataframe_filter(spark: Any, ns: lp.PartitionedNamespace, timings: dict[str, float]) -> None:
    from pyspark.sql import functions as F

    with _timed("query (Spark, DataFrame filter)", timings):
        reader = spark.read.format(lps.FORMAT)
        if ns.storage_options:
            reader = reader.option("storage_options", json.dumps(ns.storage_options))
        full = reader.load(ns.root).filter(
            (F.col("country") == "DE")
            & (F.col("event_ts") >= F.lit("2026-01-05").cast("timestamp"))
            & (F.col("event_ts") < F.lit("2026-01-12").cast("timestamp"))
        )
        n_full = full.count()
    _say(
        f"   same query as a DataFrame filter on the data source: {n_full:,} rows; Spark pushes "
        f"the country down (reads {full.rdd.getNumPartitions()} leaves) and filters timestamps "
        "itself"
    )


def _lineage_to_file(workdir: str) -> str | None:
    """Lineage into a file the demo prints from (through the OpenLineage client's file
    transport), unless OpenLineage is configured already or the client is not installed."""
    from lance_partitioned import lineage

    if lineage.enabled():
        return None
    try:
        import openlineage.client  # noqa: F401
    except ImportError:
        return None
    path = os.path.join(workdir, "lineage.jsonl")
    os.environ["OPENLINEAGE__TRANSPORT__TYPE"] = "file"
    os.environ["OPENLINEAGE__TRANSPORT__LOG_FILE_PATH"] = path
    os.environ["OPENLINEAGE__TRANSPORT__APPEND"] = "true"
    return path


def _show_lineage(path: str | None, seen: int, what: str) -> int:
    """Prints the lineage events emitted since the first ``seen`` (compact form)."""
    if path is None:
        return seen
    events = read_events(path)
    new = [e for e in events[seen:] if e["eventType"] != "START"]
    _say(f"   OpenLineage events of {what} ({path}):")
    for line in compact(new):
        _say(f"      {line}")
    return len(events)


CLI_COMMANDS = (
    ["info"],
    ["tree", "--max-children", "3", "--max-depth", "3"],
    ["skew", "--top", "5"],
)
"""What the demo shows of its namespace through ``lance-partitioned`` (step 7)."""


def _command_line(root: str, options: dict[str, str] | None) -> bool:
    """Runs :data:`CLI_COMMANDS` on the namespace in this process (``cli.main``, the console
    script's entry point); False when one fails (its error line is on stderr)."""
    from lance_partitioned.cli import main as cli_main

    extra = [a for k, v in (options or {}).items() for a in ("--storage-option", f"{k}={v}")]
    for command in CLI_COMMANDS:
        args = [command[0], root, *command[1:]]
        shown = " --storage-option ..." if extra else ""  # never print credentials
        _say(f"\n   $ lance-partitioned {' '.join(args)}{shown}")
        if cli_main([*args, *extra]) != 0:
            return False
        sys.stdout.flush()
    return True


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    options = args.storage_options
    remote = args.root is not None and _is_remote(args.root)
    if args.root is not None:
        if remote:
            problem = _remote_problem(args.root, options or {}, args.replace)
        else:
            problem = _root_problem(args.root, args.replace)
        if problem:
            print(f"demo: {problem}", file=sys.stderr)
            return 2
    workdir = args.root or tempfile.mkdtemp(prefix="lance-partitioned-demo-")
    root = os.path.join(workdir, "events") if args.root is None else args.root
    if args.root is not None and not remote and args.replace and _is_namespace(root):
        shutil.rmtree(root)
    timings: dict[str, float] = {}
    t_start = time.perf_counter()
    _say("== lance-partitioned demo ==")
    _say(f"   Spark master {args.master}; namespace at {root}")
    lineage_log = _lineage_to_file(tempfile.mkdtemp(prefix="lance-partitioned-lineage-"))
    spark = _start_spark(args.master, timings)
    n1 = args.rows
    _say(f"\n1. ingest {n1:,} events (2025-12-20 .. 2026-01-09)")
    _say("   partitioned by year(event_ts) / month(event_ts) / day(event_ts) / country")
    seen = len(read_events(lineage_log)) if lineage_log else 0
    _ingest(spark, root, options, n1, 0, ("2025-12-20", 21), "1", timings)
    seen = _show_lineage(lineage_log, seen, "the ingest")
    ns = lp.PartitionedNamespace.open(root, storage_options=options)
    spec_id = _evolve(ns, timings)
    n2 = max(n1 // 4, 1)
    _say(f"   ingest {n2:,} more events (2026-01-10 .. 2026-01-16) under v{spec_id}")
    _ingest(spark, root, options, n2, n1, ("2026-01-10", 7), "2", timings)
    ns.refresh()
    _say("\n3. partition tree")
    _tree(ns)
    _say("\n4. rows per partition")
    _skew(ns)
    seen = len(read_events(lineage_log)) if lineage_log else 0
    if not _query(spark, ns, timings):
        return 1
    _show_lineage(lineage_log, seen, "the queries")
    _say("\n6. timings")
    for k, v in timings.items():
        _say(f"   {k:<40} {v:8.2f} s")
    _say(f"   {'total':<40} {time.perf_counter() - t_start:8.2f} s")
    spark.stop()
    _say("\n7. the namespace seen through the command line (lance-partitioned)")
    if not _command_line(root, options):
        return 1
    if not args.keep and args.root is None:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        _say(f"\nnamespace kept at {root}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
