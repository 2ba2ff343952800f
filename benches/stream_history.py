"""What a long streaming history costs (issue 35, section 2).

A namespace of ``--partitions`` partitions (identity on ``p``) takes ``--commits`` micro-batches
of ``--rows`` rows each, the way a stream's driver commits them: one process, each batch staged
and committed under its stream write id (``stream:<id>:<batch>``, looked up before the commit),
each into one existing partition (batch ``i`` into partition ``i % --hot``). Every commit is
timed; at each checkpoint the table reports the latency of the last window of commits (p50,
p99, and apart the commits that also compacted the hot partition or ran the automatic expiry,
as their ``WriteResult`` says, against the p99 of the others), the fragments of
``__manifest``'s latest version and its bytes (the live data files that version reads, and
the whole directory with every retained version), the rows and files of the hot partitions
(and every file their directories hold). A copy of the namespace is
kept at each checkpoint; after the last commit, the copies are read in turn, ``--cold``
rounds of them, each read in a fresh process (its first call, then the best of ``--repeat``):
``open()``, a pruned read of one partition the stream does not write, ``stats()`` and
``partitions()``. Reading the copies alternately keeps the machine's drift during a long run
(as large as the 1.2x margin between two runs on one morning) out of the comparison.

Flat means: the last window's p50 and p99 within 1.2x of the first window's, and the reads at
the last checkpoint within 1.2x of those at the first.

    python benches/stream_history.py [--partitions 10000] [--commits 10000] [--rows 1000]
        [--hot 1] [--window 100] [--repeat 3] [--retain 0] [--cold 5] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
from cells import measure
from report import seconds, update_section
from scratch import discard, scratch

import lance_partitioned as lp

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.int64()), ("v", pa.float64())])


def _rows(start: int, n: int, part: int | None, parts: int = 1) -> pa.Table:
    ids = pa.array(range(start, start + n), pa.int64())
    p = [part] * n if part is not None else [i % parts for i in range(n)]
    return pa.table({"id": ids, "p": pa.array(p, pa.int64()), "v": pa.array([0.5] * n)})


def create(
    root: str, partitions: int, retain: int, extra: dict[str, str] | None = None
) -> lp.PartitionedNamespace:
    """The namespace; ``retain`` > 0: its automatic expiry keeps that many versions (no age
    rule), as a stream committing every second would set it; 0: the defaults (a week).
    ``extra``: more root properties."""
    spec = lp.PartitionSpec([lp.PartitionField("p", source="p", transform=lp.Identity())])
    props = dict(extra or {})
    if retain:
        props["lance_partitioned.expire.older_than_seconds"] = "0"
        props["lance_partitioned.expire.retain_versions"] = str(retain)
    ns = lp.PartitionedNamespace.create(root, schema=SCHEMA, spec=spec, properties=props)
    ns.write(_rows(0, partitions, None, partitions), max_new_partitions=None)
    return ns


def commit_batch(
    ns: lp.PartitionedNamespace, batch: int, rows: int, part: int, errors: list[str]
) -> tuple[float, str]:
    """One micro-batch as the stream sink commits it; returns its latency in seconds and what
    the commit also did: ``"compacted"`` (the hot partition), ``"expired"`` (manifest
    versions) or ``"plain"``. The maintenance steps that failed go to ``errors``."""
    t0 = time.perf_counter()
    dw = ns.distributed_write()
    write_id = f"stream:bench:{batch}"
    kind = "plain"
    if dw.committed(write_id) is None:
        msg = dw.stage(_rows(10**9 + batch * rows, rows, part))
        r = dw.commit([msg], write_id=write_id)
        kind = "expired" if r.expired else "compacted" if r.compacted else "plain"
        errors.extend(f"commit {batch}: {e}" for e in r.maintenance_errors)
    return time.perf_counter() - t0, kind


def _tree_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _live_bytes(manifest: Path) -> int:
    import lance

    ds = lance.dataset(str(manifest))
    return sum(
        (manifest / "data" / f.path).stat().st_size
        for frag in ds.get_fragments()
        for f in frag.data_files()
    )


def _hot_partition(root: str, hot: int) -> tuple[int, int, int]:
    """Rows and data files of the hot partitions (their latest versions), and every file in
    their directories (what their retained history keeps on disk)."""
    ns = lp.PartitionedNamespace.open(root)
    t = ns.stats(f"p < {hot}")
    on_disk = sum(
        1
        for location in ns.partitions(f"p < {hot}")["location"].to_pylist()
        for f in Path(root, location).rglob("*")
        if f.is_file()
    )
    return sum(t["rows"].to_pylist()), sum(t["files"].to_pylist()), on_disk


def case_open(root: str) -> Any:
    return lambda: lp.PartitionedNamespace.open(root).version


def case_read(root: str) -> Any:
    # A partition the stream does not write: its cost is what the history adds, not the rows.
    cold = 1 + int(json.loads(Path(root, "hot.json").read_text()))
    return lambda: (
        lp.PartitionedNamespace.open(root).to_table(f"p = {cold}", columns=["id"]).num_rows
    )


def case_stats(root: str) -> Any:
    return lambda: lp.PartitionedNamespace.open(root).stats().num_rows


def case_partitions(root: str) -> Any:
    return lambda: lp.PartitionedNamespace.open(root).partitions().num_rows


CASES = {
    "open": case_open,
    "read": case_read,
    "stats": case_stats,
    "partitions": case_partitions,
}


def quantile(xs: list[float], q: float) -> float:
    return statistics.quantiles(xs, n=100, method="inclusive")[int(q) - 1] if len(xs) > 1 else xs[0]


def _by_kind(window: list[tuple[float, str]]) -> list[str]:
    """The p99 of the window's plain commits, then the count and median latency of those
    that compacted and of those that expired."""
    plain = [t for t, k in window if k == "plain"]
    out = [seconds(quantile(plain, 99)) if plain else "-"]
    for kind in ("compacted", "expired"):
        ts = [t for t, k in window if k == kind]
        out.append(f"{len(ts)} / {seconds(statistics.median(ts))}" if ts else "0")
    return out


def checkpoint(
    root: str, args: argparse.Namespace, done: int, commits: list[tuple[float, str]]
) -> list[str]:
    """The commit latencies of ``commits`` (the window) and what the namespace holds after
    ``done`` commits."""
    window = [t for t, _ in commits]
    rows, files, on_disk = _hot_partition(root, args.hot)
    live = _live_bytes(Path(root) / "__manifest")
    fragments = len(lance.dataset(str(Path(root) / "__manifest")).get_fragments())
    whole = _tree_bytes(Path(root) / "__manifest")
    return [
        f"{done:,}",
        seconds(statistics.median(window)),
        seconds(quantile(window, 99)),
        seconds(max(window)),
        *_by_kind(commits),
        f"{fragments}",
        f"{live / 1024:,.0f}",
        f"{whole / 1024:,.0f}",
        f"{rows:,}",
        f"{files:,}",
        f"{on_disk:,}",
    ]


def reads(copies: list[str], args: argparse.Namespace) -> list[list[str]]:
    """The reads of every copy, measured in turn ``--cold`` times (copy after copy, then again),
    so that a drift of the machine spreads over every checkpoint instead of landing on one:
    per copy and read, the median first call of the rounds / the best of all repeats."""
    firsts: dict[tuple[int, str], list[float]] = {}
    bests: dict[tuple[int, str], float] = {}
    for _ in range(args.cold):
        for i, root in enumerate(copies):
            for name in CASES:
                cell = measure("stream_history", name, {"root": root}, repeat=args.repeat)
                firsts.setdefault((i, name), []).append(cell.first)
                bests[i, name] = min(bests.get((i, name), cell.best), cell.best)
    return [
        [f"{seconds(statistics.median(firsts[i, n]))} / {seconds(bests[i, n])}" for n in CASES]
        for i in range(len(copies))
    ]


def run(args: argparse.Namespace) -> str:
    work = scratch("lp-stream-history-")
    root = str(work / "ns")
    try:
        ns = create(root, args.partitions, args.retain)
        Path(root, "hot.json").write_text(json.dumps(args.hot))
        checkpoints = sorted({c for c in (10, 100, 1_000, 10_000, 100_000) if c <= args.commits})
        checkpoints = sorted({*checkpoints, args.commits})
        rows, commits, copies, errors = [], [], [], []
        for batch in range(args.commits):
            commits.append(commit_batch(ns, batch, args.rows, batch % args.hot, errors))
            if batch + 1 in checkpoints:
                rows.append(checkpoint(root, args, batch + 1, commits[-args.window :]))
                print(" | ".join(rows[-1]), flush=True)
                copies.append(str(work / f"at-{batch + 1}"))
                shutil.copytree(root, copies[-1])
        latencies = [t for t, _ in commits]
        first, last = latencies[: args.window], latencies[-args.window :]
        p50 = statistics.median(last) / statistics.median(first)
        p99 = quantile(last, 99) / quantile(first, 99)
        lines = [f"| {' | '.join(r + m)} |" for r, m in zip(rows, reads(copies, args), strict=True)]
    finally:
        discard(work)
    head = (
        f"`python benches/stream_history.py --partitions {args.partitions} --commits "
        f"{args.commits} --rows {args.rows} --hot {args.hot} --window {args.window} --repeat "
        f"{args.repeat} --retain {args.retain} --cold {args.cold}` (one process commits every "
        f"micro-batch under its stream write id, each into one of {args.hot} existing "
        f"partitions; latency of the last {args.window} commits before each checkpoint; "
        "compacting and expiring: the commits of the window that also compacted the hot "
        "partition or ran the automatic expiry, the others: every other commit of the window "
        "(a compaction of `__manifest` counts among them); manifest fragments: of its latest "
        "version (pylance); manifest KiB: the live data of its "
        "latest version, then the whole `__manifest` directory with every retained version; "
        "the reads: on a copy of the namespace taken at each checkpoint, all copies measured in "
        f"turn {args.cold} times after the last commit, each time in a fresh process; the "
        f"median of the {args.cold} first calls / the best of every {args.repeat} repeats):\n\n"
        "| commits | commit p50 | commit p99 | commit max | p99 of the others "
        "| compacting: n / median | expiring: n / median | manifest fragments "
        "| manifest live KiB | manifest dir KiB "
        "| hot rows | hot files | hot files on disk | open() | pruned read (cold partition) "
        "| stats() | partitions() |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    tail = (
        f"\nLast window against the first: p50 {p50:.2f}x, p99 {p99:.2f}x (flat: within 1.2x). "
        f"Maintenance steps that failed after a commit: {len(errors)}"
        + (f" (the first: {errors[0]})." if errors else ".")
    )
    return "\n".join([head, *lines, tail])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--commits", type=int, default=10_000)
    ap.add_argument("--rows", type=int, default=1_000)
    ap.add_argument("--hot", type=int, default=1)
    ap.add_argument("--window", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--retain", type=int, default=0)
    ap.add_argument("--cold", type=int, default=5)
    ap.add_argument("--write", type=Path)
    args = ap.parse_args()
    text = run(args)
    print(text)
    if args.write:
        update_section(args.write, "stream-history", text, "## Streaming history")


if __name__ == "__main__":
    main()
