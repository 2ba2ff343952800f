"""One measured cell of a benchmark table: a case run in a fresh Python process.

A case is a function in a bench script, listed in that script's ``CASES`` dict; called with
the cell's parameters it does its setup (reading the input, opening a namespace) and returns
the operation to time: a callable, or ``(prepare, run)`` or ``(prepare, run, answer)``, where
``prepare()`` makes what one call needs (a new directory) outside the timing, ``run(prepared)``
is timed and ``answer(result)`` turns the last call's result into the answer, untimed. The child
times the first call (the cost a batch job pays: it writes or reads once per process; imports
and setup excluded), then the best of ``repeat`` more, and reports the process's peak resident
memory during the calls (the high-water mark is reset after setup, so it counts what the
operation holds on top of its resident input) and the answer, which the tables compare across
systems. ``measure(..., cold=k)`` takes the first call from ``k`` fresh processes (their
median), since one cold sample is noise.

    from cells import measure
    cell = measure("ingest", "ours", {"rows": 10_000_000}, repeat=3)
"""

from __future__ import annotations

import compileall
import contextlib
import functools
import importlib
import importlib.util
import itertools
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Cell:
    first: float
    best: float
    peak_mib: float
    answer: str
    median: float
    # Median CPU seconds of the process (every thread, user and system) over the repeats:
    # what a call costs in work, far steadier on a shared machine than its wall time.
    cpu: float = 0.0
    # Peak resident memory of the first call alone (what one write of a process holds; the
    # repeats can only add the allocators' retained memory to it).
    peak_first_mib: float = 0.0
    # The first call of every fresh process measured (``first`` is their median).
    firsts: tuple[float, ...] = ()


def fresh_dirs(work: str, name: str) -> Callable[[], Path]:
    """A ``prepare`` for cases that write: a new directory under ``work`` for every call."""
    n = itertools.count()
    return lambda: Path(work) / f"{name}-{os.getpid()}-{next(n)}"


def _descendants() -> list[int]:
    """Live processes started by this one, at any depth (Spark's JVM, a CLI command)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = [], [os.getpid()]
    while frontier:
        pid = frontier.pop()
        kids = [child for child, parent in parents.items() if parent == pid]
        found += kids
        frontier += kids
    return found


def _hwm_mib(pid: int | str) -> float:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    match = re.search(r"VmHWM:\s+(\d+) kB", status)
    return int(match.group(1)) / 1024 if match else 0.0


def _peak_mib() -> float:
    """Peak RSS since the reset of this process plus each live descendant's (Spark's JVM), or
    the largest finished child's (a CLI command) if that is larger."""
    tree = _hwm_mib("self") + sum(_hwm_mib(pid) for pid in _descendants())
    return max(tree, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)


def _reset_peak() -> None:
    # Linux (>= 4.0): writing 5 resets the resident-set high-water mark to the current RSS.
    for pid in ["self", *_descendants()]:
        with contextlib.suppress(OSError):
            Path(f"/proc/{pid}/clear_refs").write_text("5")


def _child(
    script: str, case: str, params: dict[str, Any], repeat: int, sync: bool, cpus: int
) -> None:
    if cpus:
        # Before anything starts a thread pool: pools size themselves by the allowed cores.
        os.sched_setaffinity(0, range(cpus))
    sys.path.insert(0, str(HERE))
    module = importlib.import_module(script)
    made = module.CASES[case](**params)
    prepare: Callable[[], Any]
    run: Callable[[Any], Any]
    answer_of: Callable[[Any], Any] = str
    if isinstance(made, tuple) and len(made) == 3:
        prepare, run, answer_of = made
    elif isinstance(made, tuple):
        prepare, run = made
    else:

        def prepare() -> None:
            return None

        def run(_: Any) -> Any:
            return made()

    times, cpu = [], []
    answer: Any = None
    peak_first = 0.0
    _reset_peak()
    for _ in range(repeat + 1):
        state = prepare()
        if sync:
            os.sync()  # the previous call's dirty pages are not written back during this one
        t0, c0 = time.perf_counter(), time.process_time()
        answer = run(state)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        peak_first = peak_first or _peak_mib()
    rest = times[1:] or times
    # The larger of the two: a descendant that exited (a Spark Python worker) no longer counts
    # at the end.
    out = {"first": times[0], "best": min(rest), "peak_mib": max(_peak_mib(), peak_first)}
    out["peak_first_mib"] = peak_first
    out["median"] = statistics.median(rest)
    out["cpu"] = statistics.median(cpu[1:] or cpu)
    out["answer"] = str(answer_of(answer))
    print("CELL " + json.dumps(out), flush=True)
    # Leave without interpreter teardown: some peers' native threads (deltalake) can abort it
    # after everything measured is done.
    os._exit(0)


@functools.cache
def _bytecode() -> None:
    """Writes the bytecode of the package's modules, as installing its wheel does: from an
    editable install under ``PYTHONDONTWRITEBYTECODE`` every fresh process would compile each
    module it imports again, a cost no installed copy pays (about 0.1 s of a CLI command)."""
    spec = importlib.util.find_spec("lance_partitioned")
    if spec is not None and spec.origin is not None:
        compileall.compile_dir(Path(spec.origin).parent, quiet=1)


def _run_child(
    script: str,
    case: str,
    params: dict[str, Any] | None,
    repeat: int,
    sync: bool,
    env: dict[str, str] | None,
    cpus: int,
    python: str | None,
) -> dict[str, Any]:
    args = [python or sys.executable, str(HERE / "cells.py"), "--child", script, case]
    args += [json.dumps(params or {}), str(repeat), "1" if sync else "0", str(cpus)]
    out = subprocess.run(args, capture_output=True, text=True, env={**os.environ, **(env or {})})
    lines = [line for line in out.stdout.splitlines() if line.startswith("CELL ")]
    if out.returncode != 0 or not lines:
        raise SystemExit(f"{script} {case} failed:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}")
    got: dict[str, Any] = json.loads(lines[-1][len("CELL ") :])
    return got


def measure(
    script: str,
    case: str,
    params: dict[str, Any] | None = None,
    repeat: int = 3,
    sync: bool = False,
    env: dict[str, str] | None = None,
    cpus: int = 0,
    python: str | None = None,
    cold: int = 1,
) -> Cell:
    """Runs ``script.CASES[case](**params)`` in a fresh process of ``python`` (this one by
    default; on the first ``cpus`` cores only, when given); raises SystemExit with the child's
    error output when it fails. With ``cold`` above 1, ``cold - 1`` more fresh processes time
    one call each, and the cell's first call is the median of every process's first (one
    sample of a cold call is noise on a shared machine); its ``peak_first_mib`` is their
    largest."""
    _bytecode()
    got = _run_child(script, case, params, repeat, sync, env, cpus, python)
    more = [_run_child(script, case, params, 0, sync, env, cpus, python) for _ in range(cold - 1)]
    firsts = tuple(g["first"] for g in [got, *more])
    cell = Cell(
        statistics.median(firsts),
        got["best"],
        got["peak_mib"],
        got["answer"],
        got["median"],
        got["cpu"],
        max(g["peak_first_mib"] for g in [got, *more]),
        firsts,
    )
    print(
        f"  {script}/{case}: first {cell.first:.3f} s (of {len(firsts)}: "
        f"{', '.join(f'{t:.3f}' for t in firsts)}), best {cell.best:.3f} s, "
        f"peak {cell.peak_mib:.0f} MiB (first call {cell.peak_first_mib:.0f}), "
        f"cpu {cell.cpu:.3f} s",
        flush=True,
    )
    return cell


if __name__ == "__main__" and sys.argv[1:2] == ["--child"]:
    script_, case_, params_, repeat_, sync_, cpus_ = sys.argv[2:8]
    _child(script_, case_, json.loads(params_), int(repeat_), sync_ == "1", int(cpus_))
