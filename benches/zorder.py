"""Z-order against a lexicographic sort order: range filters on the first and on the second
sort column, with Lance zone-map indexes on both, in one run.

Data: ``--rows`` rows in 4 identity partitions, two independent uniform integer columns ``a``
and ``b`` in ``[0, 1,000,000)``, a float payload ``v``. Three namespaces of the same rows,
each written in one ``write`` (one file per partition), then indexed (``zonemap`` on ``a`` and
on ``b``):

- ``none``: no sort order;
- ``a, b``: ``set_sort_order(["a", "b"])``;
- ``zorder(a, b)``: ``set_sort_order(["zorder(a, b)"])``.

Queries read ``v`` under a filter: ``a`` in a 1% range, ``b`` in a 1% range, and both in 10%
ranges (1% of the rows together). Each cell is a fresh process (``cells.py``): the first call
(the median of ``--cold`` processes) and the best of ``--repeat``; every layout must return
the same number of rows.

    python benches/zorder.py [--rows 4000000] [--repeat 5] [--cold 3] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from cells import measure
from report import CELL_HEADER, cell_columns, update_section
from scratch import discard, scratch

import lance_partitioned as lp

SPAN = 1_000_000
LAYOUTS = {"none": [], "a, b": ["a", "b"], "zorder(a, b)": ["zorder(a, b)"]}
QUERIES = {
    "a in 1%": f"a >= 500000 AND a < {500_000 + SPAN // 100}",
    "b in 1%": f"b >= 500000 AND b < {500_000 + SPAN // 100}",
    "a and b in 10% each": (
        f"a >= 200000 AND a < {200_000 + SPAN // 10} AND b >= 600000 AND b < {600_000 + SPAN // 10}"
    ),
}


def data(rows: int) -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table(
        {
            "region": pa.array(np.arange(rows) % 4, pa.int32()),
            "a": rng.integers(0, SPAN, rows),
            "b": rng.integers(0, SPAN, rows),
            "v": rng.random(rows),
        }
    )


def build(root: Path, order: list[str], table: pa.Table) -> None:
    spec = lp.PartitionSpec([lp.PartitionField("region", "region", lp.Identity())])
    ns = lp.PartitionedNamespace.create(str(root), table.schema, spec)
    ns.set_sort_order(order)
    ns.write(table, max_buffer_bytes=4 * table.nbytes)
    ns.create_index("a", "zonemap")
    ns.create_index("b", "zonemap")


def case_read(root: str, where: str) -> Any:
    ns = lp.PartitionedNamespace.open(root)
    return lambda: ns.to_table(where, columns=["v"]).num_rows


CASES = {"read": case_read}


def run(args: argparse.Namespace) -> str:
    work = scratch("lp-zorder-")
    try:
        table = data(args.rows)
        roots = {}
        for i, (name, order) in enumerate(LAYOUTS.items()):
            roots[name] = work / f"ns{i}"
            build(roots[name], order, table)
        lines = []
        for query, where in QUERIES.items():
            cells = {
                name: measure(
                    "zorder",
                    "read",
                    {"root": str(root), "where": where},
                    repeat=args.repeat,
                    cold=args.cold,
                )
                for name, root in roots.items()
            }
            answers = {c.answer for c in cells.values()}
            if len(answers) != 1:
                raise SystemExit(f"{query}: the layouts disagree: {answers}")
            base = cells["a, b"].best
            for name, cell in cells.items():
                lines.append(
                    f"| {query} | {cell.answer} | {name} | {cell_columns(cell)} "
                    f"| {base / cell.best:.2f}x |"
                )
    finally:
        discard(work)
    head = (
        f"`python benches/zorder.py --rows {args.rows} --repeat {args.repeat} --cold "
        f"{args.cold}` (4 identity partitions, one file each; zone-map indexes on `a` and `b`; "
        "the query reads `v`; speed-up: the best call of `a, b` over the layout's):\n\n"
        f"| filter | rows | sort order | {CELL_HEADER} | speed-up over `a, b` |\n"
        "|---|---:|---|---:|---:|---:|---:|"
    )
    return "\n".join([head, *lines])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cold", type=int, default=3)
    ap.add_argument("--write", type=Path)
    args = ap.parse_args()
    text = run(args)
    print(text)
    if args.write:
        update_section(args.write, "zorder", text, "## Sort order: Z-order")


if __name__ == "__main__":
    main()
