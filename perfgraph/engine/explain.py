"""Views of a sheet for readers (CLI, dashboard): cells, groups, and explanations."""

from __future__ import annotations

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
