"""Every file, name and test the docs cite exists.

One test per document: README.md and every docs/**/*.md. Only inline code spans (`...`) are
read, outside fenced code blocks. A paragraph is a run of non-blank lines.

(a) Paths, in every paragraph. A span starting with one of the repository's top directories
    (rust/, python/, tests/, benches/, docs/, java/, .github/, .ci/) must exist: a file or a
    directory, a directory when it ends in `/`; a `*` must match at least one path; a
    `#anchor` is ignored.
    A bare file name ending in .rs, .py or .java (`writes.rs`) must be the name of some file
    of the repository. Other spans are not paths of ours and are not checked (`_versions/`,
    `dist/`, `America/New_York`, `lance_partitioned/jars/`).
(b) Paragraphs starting with **Code.**: every span that is an identifier, optionally
    qualified and called (`name`, `name()`, `Type::method`, `Class.method`), must have every
    part defined in rust/, python/ or java/ sources: a Rust fn, struct, enum, trait, type,
    const, static, mod or macro, an enum variant or a struct field; a Python def, class or
    assignment (constants, dataclass fields); a Java class, method or field; or a module (a
    .rs/.py file's stem or a directory). Code. paragraphs cite our code, never a dependency's.
(c) Paragraphs starting with **Tests.**: a `test_*` span must be a `def` or `fn` in one of
    the files that paragraph cites (a cited directory covers the files under it). Any other
    snake_case span containing `_` (a Rust test such as `fast_rem_is_exact`) must be a `def`
    or `fn` somewhere in rust/, python/ or tests/.

Definitions are found with regular expressions over the source text, not by parsing, so a
name defined anywhere counts: the check catches files moved and names renamed or removed, not
a name cited next to the wrong file of a paragraph (except for (c)'s test functions).
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

PATH_PREFIXES = ("rust/", "python/", "tests/", "benches/", "docs/", "java/", ".github/", ".ci/")
BARE_FILE = re.compile(r"[\w.-]+\.(?:rs|py|java)")
IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:(?:::|\.)[A-Za-z_]\w*)*(?:\(\))?")
TEST_NAME = re.compile(r"[a-z]\w*_\w+")
SOURCE_DIRS = ("rust", "python", "java")
SKIP_DIRS = {".git", ".venv", "target", "build", "dist", "__pycache__", "node_modules"}

SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.S)
FENCE = re.compile(r"^\s*(```|~~~)")

RUST_DEF = re.compile(
    r"\b(?:fn|struct|enum|trait|type|const|static|mod|union)\s+(?:r#)?([A-Za-z_]\w*)"
    r"|\bmacro_rules!\s*([A-Za-z_]\w*)"
    # struct fields (and named arguments): `pub name: T`, `name: T,`
    r"|^\s*(?:pub(?:\([^)]*\))?\s+)?([A-Za-z_]\w*)\s*:(?!:)"
    # enum variants: `Name,`, `Name(T)`, `Name { .. }`, `Name = 1`
    r"|^\s*([A-Z]\w*)\s*(?:[,({=]|$)",
    re.M,
)
PY_DEF = re.compile(
    r"^\s*(?:async\s+)?def\s+(\w+)|^\s*class\s+(\w+)"
    # assignments, annotated or not: constants, class attributes, dataclass fields
    r"|^\s*([A-Za-z_]\w*)\s*(?::|=(?!=))",
    re.M,
)
JAVA_DEF = re.compile(
    r"\b(?:class|interface|enum|record)\s+(\w+)"
    r"|^\s*(?:(?:public|private|protected|static|final|abstract|synchronized)\s+)+"
    r"[\w<>\[\], ?]+?\s+(\w+)\s*[(=;]",
    re.M,
)
FUNCTION_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)|\bfn\s+(\w+)", re.M)


def _walk(top: Path) -> list[Path]:
    """The files under `top`, without build outputs, caches and virtual environments."""
    files = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        files.extend(Path(dirpath, f) for f in filenames)
    return files


@functools.cache
def _repo_files() -> tuple[Path, ...]:
    """Files of the repository: those at its root and under each cited top directory."""
    files = [p for p in ROOT.iterdir() if p.is_file()]
    for prefix in PATH_PREFIXES:
        files.extend(_walk(ROOT / prefix.rstrip("/")))
    return tuple(files)


@functools.cache
def _file_names() -> frozenset[str]:
    return frozenset(p.name for p in _repo_files())


def _names(pattern: re.Pattern[str], text: str) -> set[str]:
    return {g for m in pattern.finditer(text) for g in m.groups() if g}


@functools.cache
def _defined_names() -> frozenset[str]:
    """Every name (b) accepts: definitions in the sources, module and directory names."""
    names: set[str] = set()
    for path in _repo_files():
        rel = path.relative_to(ROOT)
        if rel.parts[0] not in SOURCE_DIRS:
            continue
        names.update(rel.parts[1:-1])
        text = path.read_text(errors="replace")
        if path.suffix == ".rs":
            names.add(path.stem)
            names |= _names(RUST_DEF, text)
        elif path.suffix in (".py", ".pyi"):
            names.add(path.stem)
            names |= _names(PY_DEF, text)
        elif path.suffix == ".java":
            names.add(path.stem)
            names |= _names(JAVA_DEF, text)
    return frozenset(names)


@functools.cache
def _functions(path: Path) -> frozenset[str]:
    """The `def`/`fn` names of one source file."""
    if path.suffix not in (".rs", ".py"):
        return frozenset()
    return frozenset(_names(FUNCTION_DEF, path.read_text(errors="replace")))


@functools.cache
def _function_files() -> dict[str, tuple[str, ...]]:
    """Where each `def`/`fn` name of rust/, python/ and tests/ is defined."""
    where: dict[str, list[str]] = {}
    for path in _repo_files():
        if path.relative_to(ROOT).parts[0] in ("rust", "python", "tests"):
            for name in _functions(path):
                where.setdefault(name, []).append(str(path.relative_to(ROOT)))
    return {name: tuple(sorted(files)) for name, files in where.items()}


def _resolve(path: str) -> list[Path]:
    """The files and directories a cited repository path names (none: it does not exist)."""
    path = path.split("#", 1)[0]
    if "*" in path:
        pattern = path.rstrip("/")
        return [p for p in _repo_files() if fnmatch.fnmatch(str(p.relative_to(ROOT)), pattern)]
    target = ROOT / path
    return [target] if target.is_dir() or (target.is_file() and not path.endswith("/")) else []


def _paragraphs(text: str) -> list[tuple[int, str]]:
    """(first line number, text) of each paragraph outside fenced code blocks."""
    paragraphs: list[tuple[int, str]] = []
    current: list[str] = []
    start = 0
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            line = ""
        if fenced or not line.strip():
            if current:
                paragraphs.append((start, "\n".join(current)))
            current = []
            continue
        if not current:
            start = number
        current.append(line)
    if current:
        paragraphs.append((start, "\n".join(current)))
    return paragraphs


def _spans(start: int, paragraph: str) -> list[tuple[int, str]]:
    """(line number, content) of each inline code span of a paragraph."""
    return [
        (start + paragraph.count("\n", 0, m.start()), " ".join(m.group(2).split()))
        for m in SPAN.finditer(paragraph)
    ]


def _is_path(span: str) -> bool:
    return span.startswith(PATH_PREFIXES) and not any(c.isspace() for c in span)


def _problems(doc: Path) -> list[str]:
    rel = doc.relative_to(ROOT)
    problems = []
    for start, paragraph in _paragraphs(doc.read_text()):
        kind = paragraph.split(None, 1)[0]
        spans = _spans(start, paragraph)
        cited: list[Path] = []
        for line, span in spans:
            where = f"{rel}:{line}: `{span}`"
            if _is_path(span):
                found = _resolve(span)
                cited.extend(found)
                if not found:
                    kind_of = "directory" if span.endswith("/") else "file or directory"
                    problems.append(f"{where}: no such {kind_of}")
            elif BARE_FILE.fullmatch(span):
                if span not in _file_names():
                    problems.append(f"{where}: no file of the repository has this name")
            elif kind == "**Code.**" and IDENTIFIER.fullmatch(span):
                parts = re.split(r"::|\.", span.removesuffix("()"))
                missing = [p for p in parts if p not in _defined_names()]
                if missing:
                    problems.append(
                        f"{where} (Code. paragraph): {', '.join(missing)} defined nowhere in "
                        "rust/, python/ or java/"
                    )
        if kind != "**Tests.**":
            continue
        files = [f for c in cited for f in (_walk(c) if c.is_dir() else [c])]
        for line, span in spans:
            where = f"{rel}:{line}: `{span}` (Tests. paragraph)"
            if not TEST_NAME.fullmatch(span):
                continue
            defined_in = _function_files().get(span, ())
            if span.startswith("test_"):
                if not any(span in _functions(f) for f in files):
                    cited_names = ", ".join(sorted({str(f.relative_to(ROOT)) for f in cited}))
                    actual = ", ".join(defined_in) or "nowhere"
                    problems.append(
                        f"{where}: not a def/fn of the files the paragraph cites "
                        f"({cited_names or 'none'}); defined in: {actual}"
                    )
            elif not defined_in:
                problems.append(f"{where}: no def/fn of this name in rust/, python/ or tests/")
    return problems


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(ROOT)) for d in DOCS])
def test_cited_files_names_and_tests_exist(doc: Path) -> None:
    problems = _problems(doc)
    if problems:
        pytest.fail(f"{len(problems)} stale reference(s):\n" + "\n".join(problems), pytrace=False)
