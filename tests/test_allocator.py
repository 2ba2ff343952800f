"""The extension's allocator keeps freed memory for ten seconds, and the process has no
transparent huge pages, unless the user says else."""

from __future__ import annotations

import os

import pytest
from env_probe import probe

PROBE = "from lance_partitioned import _native; print(_native._allocator_purge_delay_ms())"


def purge_delay(env_value: str | None) -> int:
    return int(probe(PROBE, "MIMALLOC_PURGE_DELAY", env_value))


def test_freed_memory_waits_ten_seconds_for_reuse() -> None:
    assert purge_delay(None) == 10_000


def test_the_environment_wins_and_names_the_same_option() -> None:
    # mimalloc reads MIMALLOC_PURGE_DELAY into the option the extension sets: this proves
    # the option number is the purge delay's.
    assert purge_delay("123") == 123
    assert purge_delay("-1") == -1


# The flag is inherited from the parent process, and the test process has imported the
# extension already: the probe first clears it (PR_SET_THP_DISABLE = 41), as in a process whose
# parents never imported the extension.
THP_PROBE = (
    "import ctypes\n"
    "assert ctypes.CDLL(None).prctl(41, 0, 0, 0, 0) == 0\n"
    "from lance_partitioned import _native\n"
    "with open('/proc/self/status') as f:\n"
    "    status = dict(line.split(':', 1) for line in f)\n"
    "print(_native._allocator_allow_thp(), int(status['THP_enabled']))"
)


def huge_pages(env_value: str | None) -> tuple[int, int]:
    """(mimalloc's allow_thp option, the kernel's THP_enabled flag of the process)."""
    option, enabled = probe(THP_PROBE, "MIMALLOC_ALLOW_THP", env_value).split()
    return int(option), int(enabled)


def _kernel_reports_thp() -> bool:
    if not os.path.exists("/proc/self/status"):
        return False
    with open("/proc/self/status") as f:
        return "THP_enabled" in f.read()


@pytest.mark.skipif(
    not _kernel_reports_thp(),
    reason="the kernel reports no per-process transparent huge page flag",
)
def test_transparent_huge_pages_are_off_unless_the_user_says_else() -> None:
    # The process flag is the kernel's, read from /proc: the extension turned it off.
    assert huge_pages(None) == (0, 0)
    # mimalloc reads MIMALLOC_ALLOW_THP into the option the extension sets (7 is no other
    # option's value here): the option number is allow_thp's, and the user's choice stands.
    assert huge_pages("7") == (7, 1)
