"""Views of a sheet for readers (CLI, dashboard): cells, groups, and explanations."""

from __future__ import annotations

from dataclasses import dataclass

from perfgraph.engine.numbers import cell_text as shown_view
from perfgraph.engine.numbers import quantity
from perfgraph.engine.sheet import Sheet
from perfgraph.engine.views import CellView, Explanation

#: The order groups are shown in; any other group follows, alphabetically.
GROUP_ORDER = ("hardware", "model", "serving", "compute", "memory", "latency", "throughput",
               "parallelism", "speculative", "measuring")


def cell_view(sheet: Sheet, name: str) -> CellView:
    decl = sheet.declaration(name)
    err = sheet.error(name)
    return CellView(
        name=name, unit=decl.unit, group=decl.group, doc=decl.doc, source=decl.source,
        value=None if err else sheet.magnitude(name), error=err.message if err else None,
        is_input=decl.is_input, pinned=sheet.is_pinned(name), flag=decl.flag,
        formula=decl.formula.text if decl.formula else None)


def cell_views(sheet: Sheet) -> list[CellView]:
    return [cell_view(sheet, n) for n in sheet.names]


def grouped(cells: list[CellView]) -> list[tuple[str, list[CellView]]]:
    """Cells by group, groups in :data:`GROUP_ORDER`, cells in declaration order."""
    groups: dict[str, list[CellView]] = {}
    for cell in cells:
        groups.setdefault(cell.group, []).append(cell)
    rank = {g: i for i, g in enumerate(GROUP_ORDER)}
    return sorted(groups.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0]))


def shown(sheet: Sheet, name: str) -> str:
    """A cell's value as it appears inside an explained formula."""
    err = sheet.error(name)
    if err:
        return f"#ERR({name})"
    decl = sheet.declaration(name)
    return quantity(sheet.magnitude(name), decl.unit, flag=decl.flag)


def explain(sheet: Sheet, name: str) -> Explanation:
    """Formula, formula with values put in, result, and the cells it reads and that read it."""
    decl = sheet.declaration(name)
    substituted = decl.formula.render(lambda n: shown(sheet, n)) if decl.formula else None
    return Explanation(
        cell=cell_view(sheet, name),
        substituted=substituted,
        precedents=tuple(cell_view(sheet, n) for n in sheet.precedents(name)),
        dependents=tuple(cell_view(sheet, n) for n in sheet.dependents(name)),
        origin=str(decl.origin) if decl.origin else None,
    )


@dataclass(frozen=True)
class TreeNode:
    """One cell of a precedent tree: its view, and the cells it reads (empty past the depth,
    or where the cell was already expanded higher up: ``repeated``)."""

    cell: CellView
    reads: tuple[TreeNode, ...]
    repeated: bool = False


def value_tree(sheet: Sheet, name: str, depth: int | None = None) -> TreeNode:
    """How ``name`` was derived, down to the inputs (``depth=None``) or ``depth`` levels.

    A cell reached a second time is listed but not expanded again (``repeated``), so a
    tree of a sheet with shared sub-expressions stays as long as the sheet (pycel's
    ``value_tree_str`` shows the same)."""
    seen: set[str] = set()

    def node(n: str, level: int) -> TreeNode:
        if n in seen:
            return TreeNode(cell_view(sheet, n), (), repeated=True)
        seen.add(n)
        deeper = depth is None or level < depth
        reads = tuple(node(r, level + 1) for r in sheet.precedents(n)) if deeper else ()
        return TreeNode(cell_view(sheet, n), reads)

    return node(name, 0)


def tree_lines(tree: TreeNode, indent: str = "") -> list[str]:
    """The tree as text, one cell a line, each under the cell that reads it."""
    c = tree.cell
    line = f"{indent}{c.name} = {shown_view(c)}"
    if tree.repeated and c.formula:
        line += "  (above)"
    elif c.formula:
        line += f"  = {c.formula}"
    out = [line]
    for child in tree.reads:
        out += tree_lines(child, indent + "  ")
    return out


def tree_dict(tree: TreeNode) -> dict[str, object]:
    """The tree as JSON-ready data: name, value, unit, error, formula, reads."""
    c = tree.cell
    return {"name": c.name, "value": c.value, "unit": c.unit, "error": c.error,
            "formula": c.formula, "repeated": tree.repeated,
            "reads": [tree_dict(t) for t in tree.reads]}
