"""A fresh virtual environment holding the wheel of ``dist/`` (``make wheel`` builds it), the
way a user or a cluster node installs the package."""

from __future__ import annotations

import os
import subprocess
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def wheel() -> Path:
    wheels = sorted((ROOT / "dist").glob("lance_partitioned-*.whl"))
    if not wheels:
        raise FileNotFoundError("no wheel in dist/: `make wheel` builds it (make test does)")
    return wheels[-1]


def clean_env() -> dict[str, str]:
    """The environment without this checkout's venv (and without the test-hooks switch), so
    the new venv stands alone as a user's would."""
    dropped = (
        "PYTHONPATH",
        "VIRTUAL_ENV",
        "PYSPARK_PYTHON",
        "PYSPARK_DRIVER_PYTHON",
        "LANCE_PARTITIONED_TEST_HOOKS",
    )
    return {k: v for k, v in os.environ.items() if k not in dropped}


def create(where: Path, *extra: str) -> str:
    """Creates a venv in ``where``, installs the wheel (and ``extra`` requirements) and returns
    its python."""
    venv.create(where, with_pip=True)
    py = where / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", str(wheel()), *extra],
        check=True,
        env=clean_env(),
        timeout=900,
    )
    return str(py)
