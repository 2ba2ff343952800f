"""Mutation check of the merge tests (issue 34): applies one deliberate merge bug at a time
(no conflict on a partition changed since it was read, clauses after the first never
applying, insert and delete conditions ignored), rebuilds
the extension (`make build`), runs the merge tests, and restores the source. Each mutation
must make a test fail. Takes one incremental build per mutation.

    python tests/mutants/merge.py
"""

from runner import run

MUTATIONS = {
    "no conflict when a read partition changed": (
        "rust/core/src/ns/txn/conflict/row_change.rs",
        "Some(l) if self.strong && l.read_version != *version => {",
        "Some(l) if self.strong && l.read_version != *version && false => {",
    ),
    "inserts ignore their condition": (
        "rust/core/src/ns/ops/merge/mod.rs",
        "    let chosen = matcher::first_true(&plan.not_matched, &rows)?;",
        "    let chosen = vec![Some(0); rows.num_rows()];",
    ),
    "later clauses never apply": (
        "rust/core/src/ns/ops/merge/matcher.rs",
        "        if open == 0 {\n            break;\n        }",
        "        if open == 0 || k > 0 {\n            break;\n        }",
    ),
    "not-matched-by-source deletes ignore their condition": (
        "rust/core/src/ns/ops/merge/matcher.rs",
        "        let chosen = first_true(&inputs.plan.by_source, &rows)?;",
        "        let chosen = vec![Some(0); rows.num_rows()];",
    ),
}
run(
    MUTATIONS,
    ["tests/test_merge.py", "tests/test_merge_model.py", "tests/test_merge_races.py"],
)
