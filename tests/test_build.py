"""Build invariants."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_one_major_of_arrow_and_datafusion_in_cargo_lock() -> None:
    text = (ROOT / "Cargo.lock").read_text()
    majors: dict[str, set[str]] = defaultdict(set)
    for name, version in re.findall(r'name = "([^"]+)"\nversion = "([^"]+)"', text):
        if name.startswith(("arrow", "datafusion")):
            majors[name].add(version.split(".")[0])
    assert majors, "no arrow/datafusion crates found in Cargo.lock"
    assert "arrow-array" in majors
    assert "datafusion" in majors
    multi = {n: v for n, v in majors.items() if len(v) > 1}
    assert not multi, f"crates with more than one major in Cargo.lock: {multi}"
    arrow = {v for n, vs in majors.items() if n.startswith("arrow") for v in vs}
    df = {v for n, vs in majors.items() if n.startswith("datafusion") for v in vs}
    assert len(arrow) == 1, f"arrow crates span majors {arrow}"
    assert len(df) == 1, f"datafusion crates span majors {df}"
