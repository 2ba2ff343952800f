"""Runs a snippet in a fresh Python process with one environment variable set or unset: how
tests see what the extension does at import, which a process does once."""

from __future__ import annotations

import os
import subprocess
import sys


def probe(code: str, name: str, value: str | None) -> str:
    """The last line ``code`` prints in a fresh process whose environment is this one's with
    ``name`` set to ``value`` (removed when ``None``)."""
    env = {k: v for k, v in os.environ.items() if k != name}
    if value is not None:
        env[name] = value
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip().splitlines()[-1]
