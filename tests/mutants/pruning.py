"""Mutation check of the pruning tests (issue 32): applies one deliberate pruning bug at a time
(a microsecond bound, a truncate bound, the DST hour, an always-false filter), rebuilds the
extension (`make build`), runs the pruning, kernel and golden tests, and restores the source.
Each mutation must make a test fail. Takes one incremental build per mutation.

    python tests/mutants/pruning.py
"""

from runner import run

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
run(MUTATIONS, ["tests/test_pruning_bounds.py", "tests/test_kernels.py", "tests/test_golden.py"])
