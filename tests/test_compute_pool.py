"""Lance's compute pool (page encoding) gets every core unless the user sized it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = """
import json, os
from lance_partitioned import kernels as k
print(json.dumps({"threads": k.lance_compute_threads(),
                  "env": os.environ.get("LANCE_CPU_THREADS")}))
"""


def probe(env_threads: str | None) -> dict[str, object]:
    env = {key: v for key, v in os.environ.items() if key != "LANCE_CPU_THREADS"}
    if env_threads is not None:
        env["LANCE_CPU_THREADS"] = env_threads
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_the_pool_gets_every_core_and_the_environment_is_left_as_it_was() -> None:
    # Lance's own default would hold two cores back (one thread on a 2-core machine).
    got = probe(None)
    assert got == {"threads": len(os.sched_getaffinity(0)), "env": None}


def test_a_user_setting_wins() -> None:
    assert probe("1") == {"threads": 1, "env": "1"}
    assert probe("3") == {"threads": 3, "env": "3"}
