"""The foreachBatch path (``lps.write_batch``) with its driver SIGKILLed around commits and
restarted from its checkpoint (see test_stream_kills.py; a file of its own so the test
processes run both at once)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_stream_kills import killed_and_restarted

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_foreach_batch_driver_killed_around_commits_lands_every_row_once(tmp_path: Path) -> None:
    killed_and_restarted(tmp_path, "foreach_batch", 6)
