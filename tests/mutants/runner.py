"""Runs mutation checks: applies one deliberate bug at a time, rebuilds the extension
(`make build`), runs the given tests, and restores the source. Each mutation must make a test
fail. Takes one incremental build per mutation."""

import subprocess
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])


def run(mutations: dict[str, tuple[str, str, str]], tests: list[str]) -> None:
    """``mutations``: name -> (path, old text, new text); ``tests``: pytest paths."""
    caught: list[bool] = []
    for name, (path, old, new) in mutations.items():
        p = Path(ROOT) / path
        src = p.read_text()
        assert src.count(old) == 1, name
        p.write_text(src.replace(old, new))
        try:
            b = subprocess.run(["make", "build"], cwd=ROOT, capture_output=True, text=True)
            if b.returncode != 0:
                print(f"{name}: BUILD FAILED\n{b.stderr[-2000:]}", flush=True)
                continue
            t = subprocess.run(
                [
                    f"{ROOT}/.venv/bin/python",
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    *tests,
                ],
                cwd=ROOT,
                capture_output=True,
                text=True,
            )
            failed = [line for line in t.stdout.splitlines() if line.startswith("FAILED")]
            summary = t.stdout.strip().splitlines()[-1] if t.stdout.strip() else "?"
            print(f"{name}: {summary}", flush=True)
            caught.append(bool(failed))
            for line in failed:
                print("   ", line[:160], flush=True)
        finally:
            p.write_text(src)
    b = subprocess.run(["make", "build"], cwd=ROOT, capture_output=True, text=True)
    print("rebuilt unmutated:", b.returncode, flush=True)
    if not all(caught) or len(caught) != len(mutations):
        raise SystemExit("a mutation survived the tests")
