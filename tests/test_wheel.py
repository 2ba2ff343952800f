"""The wheel users install: built by ``make wheel`` into ``dist/``, installed here into a fresh
virtual environment outside the source tree, where a smoke script creates, writes and scans a
namespace and runs a kernel. A file missing from the wheel fails this test."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
import wheel_env

SMOKE = textwrap.dedent(
    """
    import sys, tempfile
    import pyarrow as pa
    import lance_partitioned as lp
    from lance_partitioned import kernels
    assert "site-packages" in lp.__file__, lp.__file__
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("c", pa.string())])
    spec = lp.PartitionSpec([lp.PartitionField("c", source="c", transform=lp.Identity())])
    root = tempfile.mkdtemp() + "/ns"
    ns = lp.PartitionedNamespace.create(root, schema, spec)
    res = ns.write(pa.table({"id": [1, 2, 3], "c": ["a", "b", "a"]}))
    assert res.rows == 3 and res.created == 2, res
    got = sorted(ns.to_table(filter="c = 'a'")["id"].to_pylist())
    assert got == [1, 3], got
    assert kernels.bucket(pa.array([1, 2, 3], pa.int64()), 16).to_pylist() == [4, 12, 13]
    try:
        lp.PartitionedNamespace.open(root + "-missing")
    except lp.NamespaceNotFoundError:
        pass
    else:
        raise AssertionError("expected NamespaceNotFoundError")
    # Package data: the lineage facet's JSON schema ships in the wheel.
    assert lp.lineage.partitions_schema()["$defs"]["PartitionDatasetFacet"]
    # ... and so does the jar of the JVM key functions for Spark.
    import zipfile
    from lance_partitioned.spark.key import jar_path
    assert "site-packages" in jar_path(), jar_path()
    names = zipfile.ZipFile(jar_path()).namelist()
    assert "io/lancepartitioned/spark/Bucket.class" in names, names
    # The test-only functions exist only when the test suite's switch is set at import.
    from lance_partitioned import _native
    for hook in ("_panic_for_tests", "_allocator_purge_delay_ms", "_allocator_allow_thp"):
        assert not hasattr(_native, hook), hook
    import inspect
    import lance_partitioned.spark as lps
    assert "_after_stage" not in inspect.signature(lps.write).parameters
    print("smoke ok", lp.__version__)
    print("root=" + root)
    """
)


@pytest.mark.slow
def test_wheel_installs_and_runs_outside_the_source_tree(wheel_python: str, tmp_path: Path) -> None:
    assert "abi3" in wheel_env.wheel().name, wheel_env.wheel().name
    env = wheel_env.clean_env()
    out = subprocess.run(
        [wheel_python, "-c", SMOKE],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "smoke ok" in out.stdout
    # The console script is installed with the wheel.
    root = out.stdout.split("root=")[1].strip()
    cli = subprocess.run(
        [str(Path(wheel_python).parent / "lance-partitioned"), "info", root, "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cli.returncode == 0, cli.stderr
    info = json.loads(cli.stdout)
    assert (info["rows"], info["partitions"]) == (3, 2), info
    # The base install needs only pyarrow (and its numpy): no pyspark, no pandas.
    listed = subprocess.run(
        [wheel_python, "-m", "pip", "list", "--format=freeze"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.lower()
    assert "pyspark" not in listed, listed
    assert "pandas" not in listed, listed


@pytest.mark.slow
def test_the_spark_extra_resolves_a_pandas_that_pyspark_supports(
    wheel_python: str, tmp_path: Path
) -> None:
    """PySpark 4 prints a FutureWarning on every session under pandas 3: ``[spark]`` must
    resolve pandas 2 (pip's own resolution, nothing installed)."""
    report = tmp_path / "report.json"
    subprocess.run(
        [
            wheel_python,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--quiet",
            "--report",
            str(report),
            f"{wheel_env.wheel()}[spark]",
        ],
        env=wheel_env.clean_env(),
        check=True,
        timeout=600,
    )
    got = {
        item["metadata"]["name"].lower(): item["metadata"]["version"]
        for item in json.loads(report.read_text())["install"]
    }
    assert "pyspark" in got, got
    assert got["pandas"].split(".")[0] == "2", got


def elf_section_names(data: bytes) -> set[str]:
    """The section names of a 64-bit little-endian ELF file (read here, not by a tool of the
    build)."""
    assert data[:4] == b"\x7fELF", "not an ELF file"
    assert (data[4], data[5]) == (2, 1), "not a 64-bit little-endian ELF file"
    shoff = int.from_bytes(data[0x28:0x30], "little")
    shentsize = int.from_bytes(data[0x3A:0x3C], "little")
    shnum = int.from_bytes(data[0x3C:0x3E], "little")
    shstrndx = int.from_bytes(data[0x3E:0x40], "little")

    def header(i: int) -> tuple[int, int, int]:
        h = data[shoff + i * shentsize : shoff + (i + 1) * shentsize]
        name = int.from_bytes(h[0:4], "little")
        offset = int.from_bytes(h[0x18:0x20], "little")
        size = int.from_bytes(h[0x20:0x28], "little")
        return name, offset, size

    _, str_off, str_size = header(shstrndx)
    strtab = data[str_off : str_off + str_size]
    names = set()
    for i in range(shnum):
        name = header(i)[0]
        names.add(strtab[name : strtab.index(b"\0", name)].decode())
    return names


@pytest.mark.slow
def test_the_wheels_extension_is_stripped() -> None:
    """The wheel users download: its extension carries no symbol table or debug info (the
    symbol table was 43 MB of the unstripped 267 MB)."""
    import zipfile

    with zipfile.ZipFile(wheel_env.wheel()) as z:
        (so,) = [n for n in z.namelist() if n.endswith(".so")]
        data = z.read(so)
    sections = elf_section_names(data)
    assert {".text", ".dynsym"} <= sections, sections  # the reader works
    assert not {".symtab", ".debug_info", ".debug_line"} & sections, sections


@pytest.mark.slow
def test_the_wheel_installs_on_glibc_2_28_as_auditwheel_judges_it() -> None:
    """The wheel's tag is manylinux_2_28 (RHEL 8, Amazon Linux 2023, EMR 7 and newer), and
    auditwheel, reading the symbol versions its extension needs, agrees that it may carry it."""
    import sys

    whl = wheel_env.wheel()
    assert "manylinux_2_28_x86_64" in Path(whl).name, whl
    shown = subprocess.run(
        [str(Path(sys.executable).parent / "auditwheel"), "show", whl],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    flat = " ".join(shown.split())
    assert 'consistent with the following platform tag: "manylinux_2_28_x86_64"' in flat, shown
