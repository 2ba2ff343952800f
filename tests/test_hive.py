"""Hive trees: export read back by pyarrow and Spark, import of trees Spark writes, the hard
strings of docs/partition-values.md, type inference, refusals and atomicity."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lance_partitioned as lp

HARD = ["/=%", "a{b", "hello world", "Serbia/srb%", "100%25", " lead", "naïve 日本", "", None]
UTC = datetime.timezone.utc
SCHEMA = pa.schema(
    [
        ("country", pa.string()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("n", pa.int64()),
    ]
)
SPEC = lp.PartitionSpec(
    [
        lp.PartitionField("event_year", "ts", lp.Year()),
        lp.PartitionField("country", "country", lp.Identity()),
        lp.PartitionField("n_bucket", "n", lp.Bucket(4)),
    ]
)


def _table() -> pa.Table:
    ts = [datetime.datetime(2024 + i % 2, 6, 15, 12, 30, tzinfo=UTC) for i in range(len(HARD))]
    return pa.table({"country": HARD, "ts": ts, "n": list(range(len(HARD)))}, schema=SCHEMA)


def _ns(tmp_path: Path) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    ns.write(_table())
    return ns


def _expected_rows() -> list[dict[str, Any]]:
    """The rows as a Hive reader sees them: '' reads back as NULL (a Hive layout cannot tell
    them apart), partition fields are extra columns."""
    out = []
    for row in _table().to_pylist():
        country = row["country"] or None
        out.append(
            {
                "n": row["n"],
                "country": country,
                "event_year": row["ts"].year,
                "n_bucket": lp.kernels.bucket(pa.array([row["n"]], pa.int64()), 4)[0].as_py(),
            }
        )
    return sorted(out, key=lambda r: r["n"])


def test_export_reads_back_with_pyarrow(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    dst = tmp_path / "hive"
    result = ns.export_hive(str(dst))
    assert result.rows == len(HARD)
    assert (dst / "_SUCCESS").exists()
    dirs = {p.relative_to(dst).as_posix() for p in dst.glob("*/*/*") if p.is_dir()}
    assert (
        "event_year=2025/country=Serbia%2Fsrb%25/n_bucket="
        + str(lp.kernels.bucket(pa.array([3], pa.int64()), 4)[0].as_py())
        in dirs
    )
    assert any(d.startswith("event_year=2024/country=__HIVE_DEFAULT_PARTITION__/") for d in dirs)
    table = pads.dataset(str(dst), format="parquet", partitioning="hive").to_table()
    rows = [
        {k: r[k] for k in ("n", "country", "event_year", "n_bucket")} for r in table.to_pylist()
    ]
    assert sorted(rows, key=lambda r: r["n"]) == _expected_rows()
    # The files hold every column but the one an identity field carries in the directory.
    files = list(dst.rglob("*.parquet"))
    assert pq.read_schema(files[0]).names == ["ts", "n"]


def test_round_trip_through_import(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    ns.export_hive(str(tmp_path / "hive"))
    back = lp.PartitionedNamespace.import_hive(str(tmp_path / "hive"), str(tmp_path / "back"))
    assert back.schema.names == ["ts", "n", "event_year", "country", "n_bucket"]
    assert back.schema.field("event_year").type == pa.int32()
    got = sorted(back.to_table().to_pylist(), key=lambda r: r["n"])
    assert [r["country"] for r in got] == [r["country"] for r in _expected_rows()]
    assert [r["ts"] for r in got] == _table()["ts"].to_pylist()
    # One identity field per tree column, all rows in one commit after the create.
    assert [f["transform"]["type"] for f in back.spec.to_dict(back.schema)["fields"]] == [
        "identity"
    ] * 3
    fresh = lp.PartitionedNamespace.create(str(tmp_path / "fresh"), back.schema, back.spec)
    assert back.version == fresh.version + 1


def test_export_filter_and_evolved_specs(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    ns.evolve(lp.PartitionSpec([lp.PartitionField("country", "country", lp.Identity())]))
    ns.write(_table().slice(0, 2))
    result = ns.export_hive(str(tmp_path / "hive"), filter="country = 'a{b'")
    assert result.rows == 2
    # Old and new partitions alike are laid out by the current spec.
    dirs = sorted(p.name for p in (tmp_path / "hive").iterdir() if p.is_dir())
    assert dirs == ["country=a%7Bb"]


def test_types_are_inferred_like_spark(tmp_path: Path) -> None:
    src = tmp_path / "tree"
    layout = {
        ("i=1", "big=1", "d=2024-01-31", "x=1.5", "t=2024-01-01 10:00:00", "s=007"): 1,
        ("i=-5", "big=99999999999", "d=2024-02-29", "x=2", "t=2024-01-02", "s=abc"): 2,
        (
            "i=__HIVE_DEFAULT_PARTITION__",
            "big=3",
            "d=2024-03-01",
            "x=1e3",
            "t=2024-01-03",
            "s=x",
        ): 3,
    }
    for segs, n in layout.items():
        d = src.joinpath(*segs)
        d.mkdir(parents=True)
        pq.write_table(pa.table({"v": [n]}), d / "part-0.parquet")
    (src / "_SUCCESS").touch()
    ns = lp.PartitionedNamespace.import_hive(str(src), str(tmp_path / "ns"))
    types = {f.name: f.type for f in ns.schema}
    assert types == {
        "v": pa.int64(),
        "i": pa.int32(),
        "big": pa.int64(),
        "d": pa.date32(),
        "x": pa.float64(),
        "t": pa.timestamp("us"),
        "s": pa.string(),
    }
    rows = sorted(ns.to_table().to_pylist(), key=lambda r: r["v"])
    assert [r["i"] for r in rows] == [1, -5, None]
    assert [r["s"] for r in rows] == ["007", "abc", "x"]
    assert rows[1]["t"] == datetime.datetime(2024, 1, 2)
    # Given types win.
    ns2 = lp.PartitionedNamespace.import_hive(
        str(src), str(tmp_path / "ns2"), partition_types={"i": pa.int64(), "s": pa.string()}
    )
    assert ns2.schema.field("i").type == pa.int64()


def _tree(root: Path, n: int) -> Path:
    """A Hive tree `a=0/ .. a=<n-1>/`, one Parquet file of one row each."""
    for k in range(n):
        (root / f"a={k}").mkdir(parents=True)
        pq.write_table(pa.table({"v": [k]}), root / f"a={k}" / "part-0.parquet")
    return root


def test_refusals_leave_nothing_behind(tmp_path: Path) -> None:
    src = tmp_path / "tree"
    (src / "a=1").mkdir(parents=True)
    pq.write_table(pa.table({"v": [1]}), src / "a=1" / "part-0.parquet")
    (src / "b=2").mkdir()
    pq.write_table(pa.table({"v": [2]}), src / "b=2" / "part-0.parquet")
    with pytest.raises(lp.InvalidArgumentError, match=r"b=2/part-0.parquet"):
        lp.PartitionedNamespace.import_hive(str(src), str(tmp_path / "ns"))
    assert not (tmp_path / "ns").exists()

    # A file that is not Parquet fails the import after the namespace was created: removed.
    bad = _tree(tmp_path / "bad", 3)
    (bad / "a=2" / "part-0.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(lp.LancePartitionedError, match="a=2"):
        lp.PartitionedNamespace.import_hive(str(bad), str(tmp_path / "ns"))
    assert not (tmp_path / "ns").exists()

    # A value that does not parse as the type given.
    good = _tree(tmp_path / "good", 2)
    with pytest.raises(lp.InvalidArgumentError, match="a=0"):
        lp.PartitionedNamespace.import_hive(
            str(good), str(tmp_path / "ns"), partition_types={"a": pa.date32()}
        )
    assert not (tmp_path / "ns").exists()

    # dst must be new (or empty); a tree without partitions is refused.
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    with pytest.raises(lp.NamespaceExistsError):
        lp.PartitionedNamespace.import_hive(str(bad), str(tmp_path / "full"))
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"
    flat = tmp_path / "flat"
    flat.mkdir()
    pq.write_table(pa.table({"v": [1]}), flat / "part-0.parquet")
    with pytest.raises(lp.InvalidArgumentError, match="no partition directories"):
        lp.PartitionedNamespace.import_hive(str(flat), str(tmp_path / "ns"))
    with pytest.raises(lp.InvalidArgumentError, match="format"):
        lp.PartitionedNamespace.import_hive(str(src), str(tmp_path / "ns"), format="xml")


def test_export_refuses_name_clashes_and_non_empty_dst(tmp_path: Path) -> None:
    schema = pa.schema([("n", pa.int64()), ("b", pa.int64())])
    spec = lp.PartitionSpec([lp.PartitionField("b", "n", lp.Bucket(4))])
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema, spec)
    ns.write(pa.table({"n": [1], "b": [2]}, schema=schema))
    with pytest.raises(lp.InvalidArgumentError, match="two columns"):
        ns.export_hive(str(tmp_path / "hive"))
    ok = _ns(tmp_path / "x")
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "f").write_text("x")
    with pytest.raises(lp.NamespaceExistsError):
        ok.export_hive(str(tmp_path / "used"))


@pytest.mark.parametrize("fmt", ["orc", "csv", "arrow"])
def test_other_formats_round_trip(tmp_path: Path, fmt: str) -> None:
    ns = _ns(tmp_path)
    ns.export_hive(str(tmp_path / "hive"), format=fmt)
    back = lp.PartitionedNamespace.import_hive(
        str(tmp_path / "hive"),
        str(tmp_path / "back"),
        format=fmt,
    )
    got = sorted(back.to_table().to_pylist(), key=lambda r: r["n"])
    assert [r["country"] for r in got] == [r["country"] for r in _expected_rows()]


@pytest.mark.s3
def test_export_and_import_on_s3(tmp_path: Path, s3_uri: tuple[str, dict[str, str]]) -> None:
    uri, opts = s3_uri
    ns = _ns(tmp_path)
    ns.export_hive(f"{uri}/hive", storage_options=opts)
    back = lp.PartitionedNamespace.import_hive(f"{uri}/hive", f"{uri}/back", storage_options=opts)
    got = sorted(back.to_table().to_pylist(), key=lambda r: r["n"])
    assert [r["country"] for r in got] == [r["country"] for r in _expected_rows()]


@pytest.mark.spark
def test_spark_reads_the_export(spark: Any, tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    ns.export_hive(str(tmp_path / "hive"))
    df = spark.read.parquet(str(tmp_path / "hive"))
    rows = [
        {
            "n": r["n"],
            "country": r["country"],
            "event_year": r["event_year"],
            "n_bucket": r["n_bucket"],
        }
        for r in df.collect()
    ]
    assert sorted(rows, key=lambda r: r["n"]) == _expected_rows()


@pytest.mark.spark
def test_import_of_a_spark_partitionby_tree(spark: Any, tmp_path: Path) -> None:
    day = datetime.date(2024, 6, 15)
    data = [(i, c, day) for i, c in enumerate(HARD)]
    df = spark.createDataFrame(data, "n long, country string, day date")
    src = str(tmp_path / "spark")
    df.write.partitionBy("day", "country").parquet(src)
    ns = lp.PartitionedNamespace.import_hive(src, str(tmp_path / "ns"))
    assert ns.schema.field("day").type == pa.date32()
    got = sorted(ns.to_table().to_pylist(), key=lambda r: r["n"])
    assert [(r["n"], r["country"], r["day"]) for r in got] == [
        (i, c or None, day) for i, c in enumerate(HARD)
    ]


def _key(row: tuple[str | None, int]) -> tuple[bool, str, int]:
    return (row[0] is not None, row[0] or "", row[1])


_TEXT = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs",), blacklist_characters="\x00", min_codepoint=1
    ),
    max_size=12,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    values=st.lists(st.one_of(st.none(), _TEXT), min_size=1, max_size=8),
    numbers=st.lists(st.integers(-(2**63), 2**63 - 1), min_size=8, max_size=8),
)
def test_any_strings_round_trip_through_a_hive_tree(
    tmp_path_factory: pytest.TempPathFactory, values: list[str | None], numbers: list[int]
) -> None:
    """Against a simple model: whatever the strings (any characters but NUL), pyarrow reads
    the export back as the same value (empty as NULL) and the import restores them."""
    tmp = tmp_path_factory.mktemp("hive")
    schema = pa.schema([("s", pa.string()), ("k", pa.int64())])
    spec = lp.PartitionSpec([lp.PartitionField("s", "s", lp.Identity())])
    ns = lp.PartitionedNamespace.create(str(tmp / "ns"), schema, spec)
    rows = list(zip(values, numbers, strict=False))
    ns.write(pa.table({"s": [v for v, _ in rows], "k": [k for _, k in rows]}, schema=schema))
    model = sorted((((v or None), k) for v, k in rows), key=_key)  # '' reads back as NULL
    ns.export_hive(str(tmp / "tree"))
    hive = pads.partitioning(pa.schema([("s", pa.string())]), flavor="hive")
    read = pads.dataset(str(tmp / "tree"), format="parquet", partitioning=hive).to_table()
    got = sorted(zip(read["s"].to_pylist(), read["k"].to_pylist(), strict=True), key=_key)
    assert got == model
    back = lp.PartitionedNamespace.import_hive(
        str(tmp / "tree"), str(tmp / "back"), partition_types={"s": pa.string()}
    )
    t = back.to_table()
    assert sorted(zip(t["s"].to_pylist(), t["k"].to_pylist(), strict=True), key=_key) == model
