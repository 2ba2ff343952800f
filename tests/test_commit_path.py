"""One commit path: only the transaction layer (`rust/core/src/ns/txn/`) makes Lance commits
on `__manifest` or a leaf table. Everything else plans (uncommitted fragments, staged deletes,
rewrite groups, rows) and hands its plan to `txn`. A Lance API that commits, used anywhere
else in `rust/core/src`, fails this test with its file and line.

What counts as committing: the builders and calls that write a new table version
(`CommitBuilder`, `MergeInsertBuilder`, `UpdateBuilder`, `.execute(` of an `InsertBuilder` or
`DeleteBuilder` (their `execute_uncommitted` is planning), `compact_files`, `add_columns`,
`drop_columns`, `alter_columns`, `update_metadata`, `update_config`, `restore`,
`Dataset::commit`, `Dataset::write`)."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "rust" / "core" / "src"
TXN = SRC / "ns" / "txn"

ALWAYS = re.compile(
    r"\b(CommitBuilder|MergeInsertBuilder|UpdateBuilder|compact_files|add_columns|drop_columns"
    r"|alter_columns|update_metadata|update_config|Dataset::commit|Dataset::write)\b|\.restore\("
)
EXECUTE = re.compile(r"\.execute\(")
BUILDERS = re.compile(r"\b(InsertBuilder|DeleteBuilder)\b")


def _code(line: str) -> str:
    return line.split("//", 1)[0]


def committing_lines(text: str) -> list[tuple[int, str]]:
    """Lines of ``text`` (a Rust file) that call a committing Lance API."""
    lines = [_code(line) for line in text.splitlines()]
    found = [(i + 1, line.strip()) for i, line in enumerate(lines) if ALWAYS.search(line)]
    if any(BUILDERS.search(line) for line in lines):
        found += [(i + 1, line.strip()) for i, line in enumerate(lines) if EXECUTE.search(line)]
    return sorted(found)


def test_only_the_transaction_layer_commits() -> None:
    outside = {
        f"{p.relative_to(SRC.parent.parent.parent)}:{n}: {line}"
        for p in SRC.rglob("*.rs")
        if TXN not in p.parents
        for n, line in committing_lines(p.read_text())
    }
    assert not outside, "Lance commits outside rust/core/src/ns/txn/:\n" + "\n".join(
        sorted(outside)
    )


def test_the_rule_sees_what_it_forbids() -> None:
    """The detector itself: each forbidden form is found, planning forms are not."""
    assert committing_lines("let b = MergeInsertBuilder::try_new(ds, k)?;")
    assert committing_lines("CommitBuilder::new(ds).execute(txn).await?;")
    assert committing_lines("use lance::dataset::InsertBuilder;\nlet d = b.execute(v).await?;")
    assert committing_lines("ds.add_columns(t, None, None).await?;")
    assert committing_lines("let ds = ds.restore().await?;")
    assert not committing_lines("let s = DeleteBuilder::from_expr(ds, e).execute_uncommitted()")
    assert not committing_lines("// CommitBuilder is only used in txn/")
    assert not committing_lines("plan.execute(ctx)")  # no Lance builder in the file
    # Every file of the transaction layer is a real file the rule would apply to.
    assert any(committing_lines(p.read_text()) for p in TXN.rglob("*.rs"))
