"""SQL filters for hypothesis: atoms joined by AND, OR and NOT, each side parenthesised; and
the oracle of the rows a filter matches, a three-valued model over pylance's atoms."""

from __future__ import annotations

from dataclasses import dataclass

import lance
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import strategies as st


@dataclass(frozen=True)
class Filter:
    """A filter as the tree it was built from: ``op`` is ``"atom"`` (``parts`` holds its
    SQL), ``"NOT"`` (one operand) or ``"AND"``/``"OR"`` (two); ``str()`` is its SQL."""

    op: str
    parts: tuple[Filter | str, ...]

    def __str__(self) -> str:
        if self.op == "atom":
            return str(self.parts[0])
        if self.op == "NOT":
            return f"NOT ({self.parts[0]})"
        return f"({self.parts[0]}) {self.op} ({self.parts[1]})"


def atom(sql: str) -> Filter:
    return Filter("atom", (sql,))


def combined(atoms: st.SearchStrategy[str], max_leaves: int) -> st.SearchStrategy[Filter]:
    """Filters of up to ``max_leaves`` of ``atoms``, combined with ``AND``, ``OR`` and
    ``NOT``."""
    return st.recursive(
        atoms.map(atom),
        lambda inner: st.one_of(
            st.tuples(st.sampled_from(["AND", "OR"]), inner, inner).map(
                lambda t: Filter(t[0], (t[1], t[2]))
            ),
            inner.map(lambda e: Filter("NOT", (e,))),
        ),
        max_leaves=max_leaves,
    )


def matching(dataset: lance.LanceDataset, flt: Filter) -> pa.Table:
    """The rows of ``dataset`` where ``flt`` is true.

    Each atom is evaluated alone by pylance (the rows where it is true, and where its
    ``NOT`` is; NULL elsewhere), and the atoms are combined by Kleene's three-valued logic in
    pyarrow. Not pylance's filter of the whole: pylance 14.0.2 folds a contradiction such as
    ``f = 0.0 AND f <> 0.0`` to false as if ``f`` were never NULL, so ``NOT (...)`` of it
    keeps rows where ``f`` is NULL, which SQL rules out. DuckDB and datafusion-python are no
    stand-in for the atoms either: they differ from Lance's reads (which our answers are) on
    ``-0.0 = 0.0`` and on timestamp literals compared with zoned columns."""
    whole = dataset.to_table(with_row_id=True)
    mask = _truth(dataset, whole["_rowid"], flt)
    return whole.filter(mask).drop_columns(["_rowid"])


def _truth(dataset: lance.LanceDataset, ids: pa.ChunkedArray, flt: Filter) -> pa.ChunkedArray:
    if flt.op == "atom":
        is_true = pc.is_in(ids, _ids_where(dataset, str(flt)))
        is_false = pc.is_in(ids, _ids_where(dataset, f"NOT ({flt})"))
        unknown = pa.scalar(None, pa.bool_())
        return pc.if_else(is_true, True, pc.if_else(is_false, False, unknown))
    operands = [_truth(dataset, ids, p) for p in flt.parts if isinstance(p, Filter)]
    if flt.op == "NOT":
        return pc.invert(operands[0])
    combine = pc.and_kleene if flt.op == "AND" else pc.or_kleene
    return combine(operands[0], operands[1])


def _ids_where(dataset: lance.LanceDataset, sql: str) -> pa.Array:
    return dataset.to_table(filter=sql, columns=[], with_row_id=True)["_rowid"].combine_chunks()
