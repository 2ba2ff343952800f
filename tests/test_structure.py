"""The house rules of docs/architecture.md, checked: no cycle among the modules of
`rust/core/src` (a module uses another through `crate::...` or `super::...` paths; a child
may use its parent), no function over 80 lines and no source file over 600 lines in `rust/`
and `python/`. Test code (`#[cfg(test)] mod tests`, `*_tests.rs`, `tests/`, `benches/`) is
exempt from the length rules."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "rust" / "core" / "src"
MAX_FN_LINES = 80
MAX_FILE_LINES = 600


def _code(text: str) -> str:
    """Rust text without comments and without its `#[cfg(test)] mod tests { ... }` tail."""
    text = re.split(r"#\[cfg\(test\)\]\s*mod \w+\s*\{", text)[0]
    return "\n".join(line.split("//")[0] for line in text.splitlines())


def modules() -> dict[str, Path]:
    """Module path (`ns::txn::leaf`) -> file, for every file of the core crate."""
    out = {}
    for p in CORE.rglob("*.rs"):
        parts = list(p.relative_to(CORE).with_suffix("").parts)
        if parts[-1] == "mod":
            parts = parts[:-1]
        if parts != ["lib"]:
            out["::".join(parts)] = p
    return out


def dependencies(mods: dict[str, Path]) -> dict[str, set[str]]:
    """The modules each module uses (not counting its own ancestors)."""

    def resolve(path: list[str]) -> str | None:
        for k in range(len(path), 0, -1):
            if "::".join(path[:k]) in mods:
                return "::".join(path[:k])
        return None

    deps: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        text = _code(p.read_text())
        here = m.split("::")
        parent = here[:-1]
        for kind, path in re.findall(r"\b(crate|super)::((?:\w+::)*\w+)", text):
            base = [] if kind == "crate" else parent
            target = resolve(base + path.split("::"))
            if target and target != m and not m.startswith(target + "::"):
                deps[m].add(target)
    return deps


def cycles(deps: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(deps[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(deps):
        if v not in index:
            visit(v)
    return found


def long_rust_functions(text: str) -> list[tuple[int, str, int]]:
    """(line, name, lines) of every function over the limit."""
    lines = _code(text).splitlines()
    out = []
    i = 0
    while i < len(lines):
        m = re.match(r"\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:const\s+)?fn\s+(\w+)", lines[i])
        if not m:
            i += 1
            continue
        depth, opened, j = 0, False, i
        while j < len(lines):
            line = re.sub(r'"(?:\\.|[^"\\])*"', '""', lines[j])
            line = re.sub(r"'(?:\\.|[^'\\])'", "''", line)
            for ch in line:
                depth += (ch == "{") - (ch == "}")
                opened = opened or ch == "{"
            if (opened and depth == 0) or (not opened and line.rstrip().endswith(";")):
                break
            j += 1
        if opened and j - i + 1 > MAX_FN_LINES:
            out.append((i + 1, m.group(1), j - i + 1))
        i = j + 1 if opened else i + 1
    return out


def long_python_functions(text: str) -> list[tuple[int, str, int]]:
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        m = re.match(r"(\s*)(?:async\s+)?def\s+(\w+)", line)
        if not m:
            continue
        indent, j = len(m.group(1)), i + 1
        while j < len(lines) and (
            not lines[j].strip()
            or len(lines[j]) - len(lines[j].lstrip()) > indent
            or lines[j].lstrip().startswith(")")
        ):
            j += 1
        while j > i and not lines[j - 1].strip():
            j -= 1
        if j - i > MAX_FN_LINES:
            out.append((i + 1, m.group(2), j - i))
    return out


def sources() -> list[Path]:
    rust = [
        p
        for p in (ROOT / "rust").rglob("*.rs")
        if "target" not in p.parts
        and "tests" not in p.parts
        and "benches" not in p.parts
        and not p.name.endswith("_tests.rs")
        and p.name != "tests.rs"
    ]
    return rust + sorted((ROOT / "python").rglob("*.py"))


def test_no_module_cycles() -> None:
    found = cycles(dependencies(modules()))
    assert not found, f"module cycles in rust/core/src: {found}"


def test_no_long_functions() -> None:
    long = []
    for p in sources():
        text = p.read_text()
        fns = long_rust_functions(text) if p.suffix == ".rs" else long_python_functions(text)
        long += [f"{p.relative_to(ROOT)}:{n} {name}: {size} lines" for n, name, size in fns]
    assert not long, f"functions over {MAX_FN_LINES} lines:\n" + "\n".join(long)


def test_no_long_files() -> None:
    long = [
        f"{p.relative_to(ROOT)}: {n} lines"
        for p in sources()
        if (
            n := len(_code(p.read_text()).splitlines())
            if p.suffix == ".rs"
            else len(p.read_text().splitlines())
        )
        > MAX_FILE_LINES
    ]
    assert not long, f"files over {MAX_FILE_LINES} lines:\n" + "\n".join(long)


def test_the_checks_see_what_they_forbid() -> None:
    deps = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(deps) == [["a", "b", "c"]]
    body = "\n".join(["    let x = 1;"] * MAX_FN_LINES)
    assert long_rust_functions(f"pub(crate) async fn f() {{\n{body}\n}}\n")
    assert not long_rust_functions('fn g() {\n    let s = "{";\n}\n')
    assert long_python_functions("def f():\n" + "    x = 1\n" * MAX_FN_LINES)
