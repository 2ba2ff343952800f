"""What importing the package loads (issue 37: ``import lance_partitioned`` within 0.15 s of
``import pyarrow``). Timing is for the benches; these tests check the cause instead: modules
that cost tens of milliseconds and that only some calls need are imported by those calls, not
by the package. The expected set is written here, not derived from the package."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Each costs 15-230 ms on import (measured with `python -X importtime`); pandas comes with
# pyarrow.dataset.
DEFERRED = [
    "pandas",
    "pyarrow.dataset",
    "pyarrow.fs",
    "pyarrow.parquet",
    "lance_partitioned.dataset_view",
    "lance_partitioned.hive.exporter",
    "lance_partitioned.hive.importer",
]


def _loaded(code: str) -> list[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    return [m for m in json.loads(out.splitlines()[-1]) if m in DEFERRED]


@pytest.mark.parametrize(
    "code",
    ["import lance_partitioned", "import lance_partitioned.cli"],
    ids=["package", "cli"],
)
def test_importing_defers_what_only_some_calls_need(code: str) -> None:
    assert _loaded(code) == []


def test_the_calls_that_need_them_import_them(tmp_path: object) -> None:
    code = (
        "import pyarrow as pa, lance_partitioned as lp\n"
        f"ns = lp.PartitionedNamespace.create({str(tmp_path)!r} + '/ns', "
        "pa.schema([('k', pa.int64())]), "
        "lp.PartitionSpec([lp.PartitionField('k', 'k', lp.Identity())]))\n"
        "ns.write(pa.table({'k': [1, 2]}))\n"
        "assert ns.to_pyarrow_dataset().to_table().num_rows == 2\n"
        f"ns.export_hive({str(tmp_path)!r} + '/hive')\n"
    )
    # Everything deferred but the importer (nothing here imports a Hive tree).
    assert _loaded(code) == sorted(set(DEFERRED) - {"lance_partitioned.hive.importer"})
