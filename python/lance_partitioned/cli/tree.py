"""``tree``: the namespace hierarchy (spec version -> one level per partition field -> leaf)
with rows summed up the tree, from ``stats()``."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import click
from rich.text import Text
from rich.tree import Tree

from lance_partitioned.cli.app import as_of_option, cli, namespace_options, open_namespace
from lance_partitioned.cli.keys import Partition, partitions_of
from lance_partitioned.cli.output import count, emit_json, human_bytes, plural, stdout_console

__all__ = ["Node", "build", "render"]


@dataclass
class Node:
    """One namespace of the hierarchy (a spec version, a partition value) or a leaf."""

    name: str
    value: Any = None
    field: str | None = None
    rows: int = 0
    partitions: int = 0
    files: int = 0
    bytes: int = 0
    order: Any = ()
    children: dict[str, Node] = dataclasses.field(default_factory=dict)

    def add(self, p: Partition) -> None:
        self.rows += p.rows
        self.partitions += 1
        self.files += p.files or 0
        self.bytes += p.bytes or 0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.field is not None:
            out["field"] = self.field
            out["value"] = self.value
        out.update(rows=self.rows, partitions=self.partitions, files=self.files, bytes=self.bytes)
        if self.children:
            out["children"] = [c.to_json() for c in self.sorted_children("values")]
        return out

    def sorted_children(self, by: str) -> list[Node]:
        kids = list(self.children.values())
        if by == "rows":
            return sorted(kids, key=lambda n: (-n.rows, n.order))
        return sorted(kids, key=lambda n: n.order)


def build(parts: Iterable[Partition], root_name: str) -> Node:
    """The hierarchy of ``parts``: under the root one node per spec version (``v1``), then one
    level per partition field of that version; every node sums the partitions below it."""
    root = Node(root_name)
    for p in parts:
        root.add(p)
        spec = root.children.get(f"v{p.spec_id}")
        if spec is None:
            spec = root.children[f"v{p.spec_id}"] = Node(f"v{p.spec_id}", order=p.spec_id)
        spec.add(p)
        node = spec
        for depth, ((fid, text), value) in enumerate(
            zip(p.key, p.values.values(), strict=True), start=1
        ):
            label = f"{fid}={text}"
            child = node.children.get(label)
            if child is None:
                child = node.children[label] = Node(
                    label, value=value, field=fid, order=p.order[depth]
                )
            child.add(p)
            node = child
    return root


def _label(node: Node, leaf: bool) -> Text:
    out = Text(node.name, style="bold" if node.field is None else "")
    detail = f"  {plural(node.rows, 'row')}"
    if not leaf or node.partitions != 1:
        detail += f", {plural(node.partitions, 'partition')}"
    detail += f", {human_bytes(node.bytes)}"
    out.append(detail, style="dim")
    return out


def render(
    root: Node,
    *,
    max_children: int,
    max_depth: int | None,
    sort: str,
    specs_fields: dict[int, list[str]],
) -> Tree:
    """``root`` as a rich Tree; at most ``max_children`` children per node (then one line
    "... and K more" with their rows), at most ``max_depth`` levels below the spec versions."""
    tree = Tree(_label(root, False))

    def add(parent: Tree, node: Node, depth: int, is_leaf: Callable[[Node], bool]) -> None:
        kids = node.sorted_children(sort)
        if max_depth is not None and depth > max_depth:
            return
        for kid in kids[:max_children]:
            leaf = is_leaf(kid)
            branch = parent.add(_label(kid, leaf))
            if not leaf:
                add(branch, kid, depth + 1, is_leaf)
        rest = kids[max_children:]
        if rest:
            parent.add(
                Text(
                    f"... and {len(rest):,} more ({count(sum(k.rows for k in rest))} rows)",
                    style="italic dim",
                )
            )

    for spec in root.sorted_children("values"):
        fields = specs_fields.get(int(spec.order), [])
        spec_label = _label(spec, False)
        spec_label.append(f"  ({' / '.join(fields)})", style="cyan")
        branch = tree.add(spec_label)
        add(branch, spec, 1, lambda n: not n.children)
    return tree


@cli.command(short_help="The partition hierarchy with rows per node.")
@namespace_options
@click.option(
    "--max-children",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="Children shown per node; the rest are summed in one '... and K more' line.",
)
@click.option(
    "--max-depth",
    type=click.IntRange(min=1),
    default=None,
    help="Partition levels shown below the spec versions (default: all).",
)
@click.option(
    "--sort",
    type=click.Choice(["values", "rows"]),
    default="values",
    show_default=True,
    help="Children in partition-value order, or largest first.",
)
@as_of_option
def tree(
    uri: str,
    storage_options: dict[str, str] | None,
    as_json: bool,
    max_children: int,
    max_depth: int | None,
    sort: str,
    as_of: int | str | None,
) -> None:
    """The namespace hierarchy: spec version -> one level per partition field -> leaf, with
    rows, partitions and bytes summed up the tree.

    --json prints the whole tree (no --max-children/--max-depth cut).
    """
    ns = open_namespace(uri, storage_options)
    snap = ns.snapshot(as_of)
    root = build(partitions_of(snap.stats(), snap.specs), ns.root)
    if as_json:
        emit_json({"manifest_version": snap.version, "tree": root.to_json()})
        return
    fields = {sid: [str(f["field_id"]) for f in s["fields"]] for sid, s in snap.specs.items()}
    stdout_console().print(
        render(root, max_children=max_children, max_depth=max_depth, sort=sort, specs_fields=fields)
    )
