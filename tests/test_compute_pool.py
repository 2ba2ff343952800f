"""Lance's compute pool (page encoding) gets every core unless the user sized it."""

from __future__ import annotations

import json
import os

from env_probe import probe

PROBE = """
import json, os
from lance_partitioned import kernels as k
print(json.dumps({"threads": k.lance_compute_threads(),
                  "env": os.environ.get("LANCE_CPU_THREADS")}))
"""


def pool(env_threads: str | None) -> dict[str, object]:
    result: dict[str, object] = json.loads(probe(PROBE, "LANCE_CPU_THREADS", env_threads))
    return result


def test_the_pool_gets_every_core_and_the_environment_is_left_as_it_was() -> None:
    # Lance's own default would hold two cores back (one thread on a 2-core machine).
    got = pool(None)
    assert got == {"threads": len(os.sched_getaffinity(0)), "env": None}


def test_a_user_setting_wins() -> None:
    assert pool("1") == {"threads": 1, "env": "1"}
    assert pool("3") == {"threads": 3, "env": "3"}
