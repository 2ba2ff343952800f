"""The extension's allocator keeps freed memory for ten seconds unless the user says else."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = "from lance_partitioned import _native; print(_native._allocator_purge_delay_ms())"


def purge_delay(env_value: str | None) -> int:
    env = {k: v for k, v in os.environ.items() if k != "MIMALLOC_PURGE_DELAY"}
    if env_value is not None:
        env["MIMALLOC_PURGE_DELAY"] = env_value
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip().splitlines()[-1])


def test_freed_memory_waits_ten_seconds_for_reuse() -> None:
    assert purge_delay(None) == 10_000


def test_the_environment_wins_and_names_the_same_option() -> None:
    # mimalloc reads MIMALLOC_PURGE_DELAY into the option the extension sets: this proves
    # the option number is the purge delay's.
    assert purge_delay("123") == 123
    assert purge_delay("-1") == -1
