"""How ingest and commits scale: rows, partitions, cores and history length, ours beside the
tuned peer of each curve, every point a cell (``cells.py``: a fresh process, first call and
best of ``--repeat``, peak RSS). Tables here, curves as PNG plots (``--plots``).

- rows: the events table (``events.py``, ~800 partitions) written by ours and by pyarrow's
  ``write_to_dataset`` on key-sorted input (its tuned form, ``ingest.py``);
- partitions: ``--part-rows`` rows of the events table with a key ``k = id % P``, partitioned
  by identity(k), P from 10 to 100k: ours and pyarrow sorted by ``k``;
- cores: the 10M-row ingest on 1 and on every core (the process pinned with
  ``sched_setaffinity`` before any pool starts; every pool sizes itself by the allowed cores);
- history: a namespace of 16 partitions after H commits (H = 1 ... 10,000; each commit an
  append of 100 rows into one partition), the latency of one more commit (1,000 rows into one
  partition) and of a pruned read (open + ``to_table`` of one partition), against a plain
  Lance dataset after the same number of appends (pylance: one more append, open + filtered
  read). Both keep their small fragments in check the same way: ours compacts ``__manifest``
  after a commit that leaves more than 32 fragments (the default policy); the pylance peer,
  tuned, runs ``compact_files()`` after an append that leaves more than 32.

    python benches/scaling.py [--quick] [--plots DIR] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import Any

import lance
import limits
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from cells import Cell, fresh_dirs, measure
from events import events
from report import CELL_HEADER, cell_columns, ratio, share, update_section
from scratch import discard, scratch

import lance_partitioned as lp

ROOT = Path(__file__).resolve().parent.parent
K_SPEC = lp.PartitionSpec([lp.PartitionField("k", source="k", transform=lp.Identity())])
H_SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("p", pa.int64())])
# The longest call of a peer at one point of the partitions curve, in seconds (predicted from
# its previous points: pyarrow's writer took 908 s at 100k partitions in an earlier run).
PEER_CAP_S = 120.0
H_SPEC = lp.PartitionSpec([lp.PartitionField("p", source="p", transform=lp.Identity())])


def keyed(rows: int, parts: int) -> pa.Table:
    t = events(rows)
    return t.append_column("k", pc.remainder(t["id"], parts))


def ours_parts(rows: int, parts: int, work: str) -> Any:
    table = keyed(rows, parts)
    fresh = fresh_dirs(work, f"ours-k{parts}")

    def prepare() -> Path:
        root = fresh()
        lp.PartitionedNamespace.create(str(root), table.schema, K_SPEC)
        return root

    def run(root: Path) -> Path:
        lp.PartitionedNamespace.open(str(root)).write(table, max_new_partitions=None)
        return root

    def answer(root: Path) -> str:
        n = lp.PartitionedNamespace.open(str(root)).partitions(with_rows=False).num_rows
        return _written(n, root)

    return prepare, run, answer


def pyarrow_parts(rows: int, parts: int, work: str) -> Any:
    table = keyed(rows, parts)

    def run(root: Path) -> Path:
        pq.write_to_dataset(
            table.sort_by("k"),
            str(root),
            partition_cols=["k"],
            max_open_files=4096,
            min_rows_per_group=64 * 1024,
            max_partitions=parts + 1,
        )
        return root

    def answer(root: Path) -> str:
        return _written(len(list(root.iterdir())), root)

    return fresh_dirs(work, f"pyarrow-k{parts}"), run, answer


def _predicted_seconds(curve: tuple[list[int], list[float]], rows: int, parts: int) -> float:
    """A writer's time at ``parts`` partitions from its last two points (rate in M rows/s),
    with the growth exponent they show (at least linear): a lower bound where it grows
    faster."""
    xs, ys = curve
    if len(xs) < 2:
        return 0.0
    t1, t2 = rows / ys[-2] / 1e6, rows / ys[-1] / 1e6
    exponent = max(1.0, math.log(t2 / t1) / math.log(xs[-1] / xs[-2]))
    return t2 * (parts / xs[-1]) ** exponent


def _written(partitions: int, root: Path) -> str:
    files, nbytes = limits.tree_size(root)
    return json.dumps({"partitions": partitions, "files": files, "bytes": nbytes})


def _small(start: int, n: int, part: int) -> pa.Table:
    ids = pa.array(range(start, start + n), pa.int64())
    return pa.table({"id": ids, "p": pa.array([part] * n, pa.int64())}, schema=H_SCHEMA)


def _commits(root: str, commit: Callable[[pa.Table], object]) -> Any:
    """Commits of 1,000 rows into one partition; the answer: the files one commit created."""
    step, calls = count(), count(1)
    before = limits.tree_size(root)[0]

    def run(_: None) -> int:
        next(calls)
        commit(_small(10**9 + 1000 * next(step), 1000, 3))
        return 1000

    def answer(_: int) -> str:
        return json.dumps({"files": (limits.tree_size(root)[0] - before) / (next(calls) - 1)})

    return lambda: None, run, answer


def commit_ours(root: str) -> Any:
    return _commits(root, lp.PartitionedNamespace.open(root).write)


def lance_append(root: str, table: pa.Table) -> None:
    """The tuned peer's append: compaction when the dataset passes 32 fragments, the same
    policy as our manifest's."""
    ds = lance.write_dataset(table, root, mode="append")
    if len(ds.get_fragments()) > 32:
        ds.optimize.compact_files()


def commit_lance(root: str) -> Any:
    return _commits(root, lambda t: lance_append(root, t))


def _live_bytes(uri: str) -> int:
    """The bytes of the data files the latest version of the Lance dataset at ``uri`` reads."""
    ds = lance.dataset(uri)
    return sum(
        (Path(uri) / "data" / f.path).stat().st_size
        for frag in ds.get_fragments()
        for f in frag.data_files()
    )


def _reads(read: Callable[[], int], dataset: str) -> Any:
    """A pruned read of one partition; the answer: the rows and the bytes it may have to read
    (the manifest's live data files, for ours; the dataset's, for pylance)."""

    def answer(rows: int) -> str:
        return json.dumps({"rows": rows, "bytes": _live_bytes(dataset)})

    return lambda: None, lambda _: read(), answer


def read_ours(root: str) -> Any:
    def run() -> int:
        n: int = lp.PartitionedNamespace.open(root).to_table("p = 5", columns=["id"]).num_rows
        return n

    return _reads(run, f"{root}/__manifest")


def read_lance(root: str) -> Any:
    def run() -> int:
        n: int = lance.dataset(root).to_table(columns=["id"], filter="p = 5").num_rows
        return n

    return _reads(run, root)


CASES = {
    "ours_parts": ours_parts,
    "pyarrow_parts": pyarrow_parts,
    "commit_ours": commit_ours,
    "read_ours": read_ours,
    "commit_lance": commit_lance,
    "read_lance": read_lance,
}


def plot(path: Path, title: str, xlabel: str, ylabel: str, curves: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    for label, (xs, ys) in curves.items():
        ax.plot(xs, ys, marker="o", label=label)
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


def rows_section(sizes: list[int], repeat: int, work: Path, plots: Path) -> list[str]:
    lines = [
        "Rows (the events table, ~800 partitions; M rows/s of the best call; share of limit: "
        "the bytes written at the page-cache write bandwidth):",
        "",
        f"| rows | writer | M rows/s | {CELL_HEADER} | share of limit | ours vs this |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    curves: dict[str, tuple[list[int], list[float]]] = {"ours": ([], []), "pyarrow": ([], [])}
    for n in sizes:
        cells = {
            "ours": measure("ingest", "ours", {"rows": n, "work": str(work)}, repeat, True),
            "pyarrow": measure(
                "ingest", "pyarrow_sorted", {"rows": n, "work": str(work)}, repeat, True
            ),
        }
        for name, c in cells.items():
            label = "ours" if name == "ours" else "pyarrow write_to_dataset, sorted (tuned)"
            at_limit = limits.write_seconds(0, json.loads(c.answer)["bytes"])
            lines.append(
                f"| {n:,} | {label} | {n / c.best / 1e6:.2f} | {cell_columns(c)} "
                f"| {share(at_limit, c.best)} | {ratio(c, cells['ours'])} |"
            )
            curves[name][0].append(n)
            curves[name][1].append(n / c.best / 1e6)
        _clear(work)
    plot(plots / "scaling-rows.png", "Ingest rate by rows", "rows", "M rows/s", curves)
    return [*lines, "", f"![ingest by rows]({_rel(plots / 'scaling-rows.png')})"]


def parts_section(rows: int, counts: list[int], repeat: int, work: Path, plots: Path) -> list[str]:
    lines = [
        f"Partitions ({rows:,} rows, identity(k) with k = id % P; past 10,000 partitions one "
        "call per writer, so best = first; share of limit: every file the writer made at the "
        "measured small-file latency plus its bytes at the page-cache write bandwidth):",
        "",
        f"| partitions | writer | M rows/s | {CELL_HEADER} | files | share of limit "
        "| ours vs this |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    curves: dict[str, tuple[list[int], list[float]]] = {"ours": ([], []), "pyarrow": ([], [])}
    skipped: list[str] = []
    for parts in counts:
        params = {"rows": rows, "parts": parts, "work": str(work)}
        # Past 10k partitions one call per writer; a peer whose call would take longer than
        # PEER_CAP_S (predicted from its previous two points) is not run at this point.
        n = repeat if parts <= 10_000 else 0
        cells: dict[str, Cell] = {}
        for name, case in (("ours", "ours_parts"), ("pyarrow", "pyarrow_parts")):
            predicted = _predicted_seconds(curves[name], rows, parts)
            if name != "ours" and predicted > PEER_CAP_S:
                xs = curves[name][0]
                skipped.append(
                    f"pyarrow at {parts:,} partitions: not run, {predicted:.0f} s or more "
                    f"predicted (its growth from {xs[-2]:,} to {xs[-1]:,} partitions, "
                    f"extrapolated), over the {PEER_CAP_S:.0f} s a peer's call may take here."
                )
                continue
            cells[name] = measure("scaling", case, params, n, True)
        written = {name: json.loads(c.answer) for name, c in cells.items()}
        if {w["partitions"] for w in written.values()} != {parts}:
            raise SystemExit(f"{parts} partitions: {[c.answer for c in cells.values()]}")
        for name, c in cells.items():
            label = "ours" if name == "ours" else "pyarrow write_to_dataset, sorted (tuned)"
            files, nbytes = written[name]["files"], written[name]["bytes"]
            lines.append(
                f"| {parts:,} | {label} | {rows / c.best / 1e6:.2f} | {cell_columns(c)} "
                f"| {files:,} | {share(limits.write_seconds(files, nbytes), c.best)} "
                f"| {ratio(c, cells['ours'])} |"
            )
            curves[name][0].append(parts)
            curves[name][1].append(rows / c.best / 1e6)
        _clear(work)
    lines += ["", *skipped] if skipped else []
    plot(
        plots / "scaling-partitions.png",
        "Ingest rate by partitions",
        "partitions",
        "M rows/s",
        curves,
    )
    return [*lines, "", f"![ingest by partitions]({_rel(plots / 'scaling-partitions.png')})"]


def cores_section(rows: int, repeat: int, work: Path) -> list[str]:
    cores = os.cpu_count() or 1
    lines = [
        f"Cores ({rows:,} rows of the events table; the process pinned to the first N cores; "
        "share of limit: the bytes written at the page-cache write bandwidth):",
        "",
        f"| cores | writer | M rows/s | {CELL_HEADER} | share of limit | speed-up over 1 core |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for case, label in (("ours", "ours"), ("pyarrow_sorted", "pyarrow sorted (tuned)")):
        one: Cell | None = None
        for n in sorted({1, cores}):
            c = measure("ingest", case, {"rows": rows, "work": str(work)}, repeat, True, cpus=n)
            one = one or c
            at_limit = limits.write_seconds(0, json.loads(c.answer)["bytes"])
            lines.append(
                f"| {n} | {label} | {rows / c.best / 1e6:.2f} | {cell_columns(c)} "
                f"| {share(at_limit, c.best)} | {one.best / c.best:.2f}x |"
            )
            _clear(work)
    return lines


def history_section(
    points: list[int], repeat: int, budget: float, work: Path, plots: Path
) -> list[str]:
    """The points whose history can be built within ``budget`` seconds (commits whose cost
    grows with the history make the later points unreachable: the table says so)."""
    ours_root, lance_root = work / "history-ours", str(work / "history-lance")
    ns = lp.PartitionedNamespace.create(str(ours_root), H_SCHEMA, H_SPEC)
    lines = [
        "History (16 partitions; H earlier commits of 100 rows each; one more commit of 1,000 "
        "rows into one partition, and a pruned read of one partition from a fresh open; share "
        "of limit: for a commit, the files it creates at the small-file latency (and their "
        "bytes at the write bandwidth, ignored: kilobytes); for a read, the bytes it may have "
        "to read (ours: the manifest; pylance: the dataset) at the one-core copy bandwidth):",
        "",
        f"| commits before | operation | system | {CELL_HEADER} | share of limit | ours vs this |",
        "|---:|---|---|---:|---:|---:|---:|---:|",
    ]
    curves: dict[str, tuple[list[int], list[float]]] = {
        name: ([], []) for name in ("ours commit", "pylance commit", "ours read", "pylance read")
    }
    done = 0
    started = time.perf_counter()
    for h in points:
        while done < h and time.perf_counter() - started < budget:
            batch = _small(100 * done, 100, done % 16)
            if done == 0:
                lance.write_dataset(batch, lance_root)
            else:
                lance_append(lance_root, batch)
            ns.write(batch)
            done += 1
        if done < h:
            lines += [
                "",
                f"Not reached: {', '.join(f'{p:,}' for p in points if p >= h)} commits. "
                f"{done:,} commits (of ours and of pylance, in turn) took "
                f"{time.perf_counter() - started:.0f} s, the section's budget: a commit's cost "
                "grows with the history.",
            ]
            break
        for op, ours_case, peer_case in (
            ("commit", "commit_ours", "commit_lance"),
            ("pruned read", "read_ours", "read_lance"),
        ):
            ours = measure("scaling", ours_case, {"root": str(ours_root)}, repeat)
            peer = measure("scaling", peer_case, {"root": lance_root}, repeat)
            done += repeat + 1 if op == "commit" else 0
            for system, c in (("ours", ours), ("pylance, one dataset", peer)):
                lines.append(
                    f"| {h:,} | {op} | {system} | {cell_columns(c)} "
                    f"| {share(_history_limit(c.answer), c.best)} | {ratio(c, ours)} |"
                )
            key = op.split()[-1]
            curves[f"ours {key}"][0].append(h)
            curves[f"ours {key}"][1].append(ours.best * 1000)
            curves[f"pylance {key}"][0].append(h)
            curves[f"pylance {key}"][1].append(peer.best * 1000)
    plot(
        plots / "scaling-history.png",
        "Latency by history length",
        "commits before",
        "ms (best)",
        curves,
    )
    return [*lines, "", f"![latency by history]({_rel(plots / 'scaling-history.png')})"]


def _history_limit(answer: str) -> float:
    got = json.loads(answer)
    if "files" in got:
        return limits.write_seconds(got["files"], 0)
    return float(got["bytes"]) / (limits.current()["copy_1_gbps"] * 1e9)


def _clear(work: Path) -> None:
    for p in work.iterdir():
        if not p.name.startswith("history"):
            discard(p)


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--plots", type=Path, default=ROOT / "docs" / "benchmarks")
    ap.add_argument("--write", type=Path)
    args = ap.parse_args()
    if args.quick:
        sizes, part_rows, counts, core_rows = (
            [500_000, 1_000_000],
            200_000,
            [10, 100, 1000],
            1_000_000,
        )
        history, budget = [1, 10, 100], 120.0
    else:
        sizes = [1_000_000, 5_000_000, 10_000_000, 50_000_000]
        part_rows, counts, core_rows = 1_000_000, [10, 100, 1_000, 10_000, 100_000], 5_000_000
        history, budget = [1, 10, 100, 1_000, 10_000], 900.0
    work = scratch("lp-scaling-")
    try:
        lines = [
            f"`python benches/scaling.py{' --quick' if args.quick else ''} --repeat "
            f"{args.repeat}`; plots in `{_rel(args.plots)}`.",
            "",
        ]
        lines += [*rows_section(sizes, args.repeat, work, args.plots), ""]
        lines += [*parts_section(part_rows, counts, args.repeat, work, args.plots), ""]
        lines += [*cores_section(core_rows, args.repeat, work), ""]
        lines += history_section(history, max(args.repeat, 3), budget, work, args.plots)
    finally:
        discard(work)
    text = "\n".join(lines)
    print(text)
    if args.write:
        update_section(args.write, "scaling", text, "## Scaling")


if __name__ == "__main__":
    main()
