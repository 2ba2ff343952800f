"""Mutation check of the distributed (Spark) merge and of weak-mode row changes (issue 34):
applies one deliberate bug at a time (a task's deletions dropped at the commit, the
partitions the tasks read never checked for concurrent changes, a weak-mode failure after
some partitions committed reported as the bare cause), rebuilds the extension
(`make build`), runs the tests, and restores the source. Each mutation must make a test
fail. Takes one incremental build per mutation.

    python tests/mutants/spark_merge.py
"""

from runner import run

MUTATIONS = {
    "a task's deletions are dropped at the commit": (
        "rust/core/src/ns/ops/merge/distributed.rs",
        "            rows.entry(i).or_default().extend(&l.deleted);",
        "            rows.entry(i).or_default();",
    ),
    "the partitions the tasks read are never checked": (
        "rust/core/src/ns/ops/merge/distributed.rs",
        "        read: read.into_iter().collect(),",
        "        read: Vec::new(),",
    ),
    "a weak-mode partial commit is reported as its cause": (
        "rust/core/src/ns/txn/row_change.rs",
        "        if self.strong || visible.is_empty() {",
        "        if self.strong || !visible.is_empty() || visible.is_empty() {",
    ),
}
run(
    MUTATIONS,
    ["tests/test_spark_merge.py", "tests/test_merge_races.py"],
)
