"""Build invariants."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

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


@pytest.mark.slow
def test_cargo_run_by_hand_with_make_cargo_env_reuses_the_graph(tmp_path: Path) -> None:
    """`eval "$(make -s cargo-env)"` gives a hand-run cargo the settings of the Makefile's own
    commands: `cargo test` of the core crate, which `make test` built before pytest runs,
    compiles nothing (a missing setting, such as the zig linker, would rebuild the graph).
    The command runs in a recipe of a sub-make, as pytest does under `make test`, where an
    "Entering directory" line in make's output would break the eval."""
    script = (
        'eval "$$(make -s cargo-env)" && cargo test --release -p lance-partitioned-core '
        "--no-run --message-format=json"
    )
    probe = tmp_path / "probe.mk"
    probe.write_text(
        f"include {ROOT}/Makefile\n"
        f"outer:\n\t$(MAKE) -f {probe} inner\n"
        f"inner:\n\t@bash -c '{script}'\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    out = subprocess.run(
        ["make", "-f", str(probe), "outer"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    artifacts = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    built = [a for a in artifacts if a.get("reason") == "compiler-artifact"]
    assert built, out[-2000:]
    rebuilt = [a["target"]["name"] for a in built if not a["fresh"]]
    assert not rebuilt, rebuilt


def test_the_longest_test_files_are_handed_out_first() -> None:
    """`make test` hands files to its two pytest workers in collection order, and conftest.py
    puts the longest first: every file it names exists (a renamed file would silently go back
    to the end of the run), and the Makefile keeps xdist from reordering the files by their
    number of tests (which put the one-test kill and cluster files last)."""
    from conftest import LONGEST_FIRST

    tests = ROOT / "tests"
    missing = [name for name in LONGEST_FIRST if not (tests / name).is_file()]
    assert not missing, missing
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
    makefile = (ROOT / "Makefile").read_text()
    (command,) = re.findall(r"^\tpytest .*$", makefile, flags=re.MULTILINE)
    assert "--dist loadfile" in command
    assert "--no-loadscope-reorder" in command


def test_conftest_orders_the_longest_files_first() -> None:
    """The collection hook on items of files of its own: the named files come first, in the
    named order, and every other item keeps its place (two tests of one file stay in order)."""
    from types import SimpleNamespace

    from conftest import LONGEST_FIRST, pytest_collection_modifyitems

    first, second = LONGEST_FIRST[0], LONGEST_FIRST[1]
    names = ["test_a.py", second, "test_z.py", first, "test_a.py"]
    items = [SimpleNamespace(path=ROOT / "tests" / n, n=i) for i, n in enumerate(names)]
    pytest_collection_modifyitems(items)  # type: ignore[arg-type]
    assert [(it.path.name, it.n) for it in items] == [
        (first, 3),
        (second, 1),
        ("test_a.py", 0),
        ("test_z.py", 2),
        ("test_a.py", 4),
    ]
