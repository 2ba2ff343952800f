"""SQL filters for hypothesis: atoms joined by AND, OR and NOT, each side parenthesised."""

from __future__ import annotations

from hypothesis import strategies as st


def combined(atoms: st.SearchStrategy[str], max_leaves: int) -> st.SearchStrategy[str]:
    """Filters of up to ``max_leaves`` of ``atoms``, combined with ``AND``, ``OR`` and
    ``NOT``."""
    return st.recursive(
        atoms,
        lambda inner: st.one_of(
            st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(
                lambda t: f"({t[0]}) {t[1]} ({t[2]})"
            ),
            inner.map(lambda e: f"NOT ({e})"),
        ),
        max_leaves=max_leaves,
    )
