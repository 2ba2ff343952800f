"""Mutation check of the pyarrow-filter tests (issue 33): each deliberate translation bug (no
NaN rule, Kleene logic for non-Kleene `and`, SQL's IN for pyarrow's `is_in`, no balancing of
`|` chains) must make tests/test_pyarrow_filters.py fail.

    python tests/mutants/pyarrow_filters.py
"""

from runner import run

PATH = "rust/core/src/ns/infra/filter/pyarrow.rs"
MUTATIONS = {
    "no NaN rule in comparisons": (
        PATH,
        "    if maybe_nan.is_empty() {\n        return cmp;",
        "    if true {\n        return cmp;",
    ),
    "non-Kleene and/or as Kleene": (
        PATH,
        ".otherwise(binary_expr(x, op, y))?)",
        ".otherwise(binary_expr(x.clone(), op, y.clone()))?).map(|_| binary_expr(x, op, y))",
    ),
    "is_in as SQL IN (NULL stays NULL)": (
        PATH,
        "        0 | 1 => x.clone().is_not_null().and(found(list)),",
        "        0 | 1 => found(list),",
    ),
    "no balancing of | chains": (
        PATH,
        "            Arg::Chain(o, inner) if o == op => operands.extend(inner),",
        "            Arg::Chain(o, inner) if o == op && false => operands.extend(inner),",
    ),
}
run(MUTATIONS, ["tests/test_pyarrow_filters.py"])
