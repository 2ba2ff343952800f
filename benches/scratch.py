"""Scratch directories of the benches, and their removal outside the measured run.

Removing a directory of 100k partitions takes minutes on ext4, longer than writing it. Under
`benches/all.py` (which sets ``LP_BENCH_TRASH``) a discarded directory is renamed into the
run's trash, an instant rename on the same file system, and `empty_trash` removes the trash in
a detached, low-priority process once every section is written. A bench run on its own removes
its directories at once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

TRASH_ROOT = Path.home() / ".cache" / "lance-partitioned" / "bench-trash"


def scratch(prefix: str) -> Path:
    """A new, empty directory for one bench: under ``LP_BENCH_DIR`` when set (to measure on
    another file system), else in the home directory, on the same file system as the trash."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir=os.environ.get("LP_BENCH_DIR", Path.home())))


def discard(path: Path) -> None:
    """Removes ``path`` now, or moves it into the run's trash when a run set one."""
    trash = os.environ.get("LP_BENCH_TRASH")
    if not path.exists():
        return
    if trash:
        Path(trash).mkdir(parents=True, exist_ok=True)
        try:
            path.rename(Path(trash) / f"{path.name}-{uuid.uuid4().hex[:8]}")
            return
        except OSError:
            pass  # another file system: remove it here
    shutil.rmtree(path, ignore_errors=True)


def empty_trash() -> None:
    """Removes every run's trash in a detached, idle-priority process that outlives the run."""
    if TRASH_ROOT.exists():
        subprocess.Popen(
            ["nice", "-n", "19", "ionice", "-c", "3", "rm", "-rf", str(TRASH_ROOT)],
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
