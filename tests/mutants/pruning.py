"""Mutation check of the pruning tests (issue 32): applies one deliberate pruning bug at a time
(a microsecond bound, a truncate bound, the DST hour, an always-false filter), rebuilds the
extension (`make build`), runs the pruning, kernel and golden tests, and restores the source.
Each mutation must make a test fail. Takes one incremental build per mutation.

    python tests/mutants/pruning.py
"""

import subprocess
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])
MUTATIONS = {
    "microsecond bound (timestamp neighbour 2 us away)": (
        "rust/core/src/ns/scan/prune_expr.rs",
        "S::TimestampMicrosecond(Some(x.checked_add(step)?), tz.clone())",
        "S::TimestampMicrosecond(Some(x.checked_add(step * 2)?), tz.clone())",
    ),
    "truncate bound (always strict)": (
        "rust/core/src/ns/scan/prune.rs",
        "let op2 = if self.bound_is_exclusive(op, v, &[(k, x.clone())]) {",
        "let op2 = if true || self.bound_is_exclusive(op, v, &[(k, x.clone())]) {",
    ),
    "DST hour (old offset at the change instant)": (
        "rust/core/src/transform/zoned.rs",
        "+ usize::from(v - day * DAY * PER_SEC >= i64::from(d.change) * PER_SEC);",
        "+ usize::from(v - day * DAY * PER_SEC > i64::from(d.change) * PER_SEC);",
    ),
    "always-false (FALSE keeps everything)": (
        "rust/core/src/ns/scan/prune.rs",
        "                Some(lit(ScalarValue::Boolean(Some(false))))\n",
        "                None\n",
    ),
}
caught: list[bool] = []
for name, (path, old, new) in MUTATIONS.items():
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
                "tests/test_pruning_bounds.py",
                "tests/test_kernels.py",
                "tests/test_golden.py",
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
if not all(caught) or len(caught) != len(MUTATIONS):
    raise SystemExit("a mutation survived the tests")
