"""Cells as text: a grouped table for the terminal, JSON, CSV and Markdown."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping

from perfgraph.engine.explanation import grouped
from perfgraph.engine.numbers import cell_text
from perfgraph.engine.views import CellView

#: a calibrated cell's 80% band (low, high), in the cell's unit, by cell name
Bands = Mapping[str, tuple[float, float]]


def as_json(cells: Iterable[CellView], bands: Bands | None = None, **extra: object) -> str:
    """``{"quantities": {NAME: {"value", "unit", "error"}}}``: values in declared units; a
    calibrated cell with a measured band also has ``"band": [low, high]`` beside its value."""
    quantities = {c.name: {"value": c.value, "unit": c.unit, "error": c.error,
                           **({"band": list(bands[c.name])} if bands and c.name in bands
                              else {})} for c in cells}
    return json.dumps({**extra, "quantities": quantities}, indent=2, allow_nan=False)


def band_text(band: tuple[float, float] | None) -> str:
    """``  (80% band 12.3–15.1)``: a band beside a value in the same unit, or nothing."""
    return "" if band is None else f"  (80% band {band[0]:.4g}–{band[1]:.4g})"


def as_csv(cells: Iterable[CellView], bands: Bands | None = None) -> str:
    """One row per cell; ``p10`` and ``p90`` the ends of a calibrated cell's 80% band, in
    its unit (empty for a cell without one)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["name", "value", "unit", "error", "group", "p10", "p90"])
    for c in cells:
        band = (bands or {}).get(c.name)
        writer.writerow([c.name, "" if c.value is None else repr(c.value), c.unit,
                         c.error or "", c.group, *(("", "") if band is None else
                                                   (repr(band[0]), repr(band[1])))])
    return out.getvalue()


def as_markdown(cells: Iterable[CellView], title: str = "", bands: Bands | None = None) -> str:
    lines = [f"## {title}", ""] if title else []
    for group, members in grouped(list(cells)):
        lines += [f"### {group}", "", "| cell | value | |", "|---|---:|---|"]
        for c in members:
            mark = "pinned" if c.pinned else ("input" if c.is_input else "")
            value = (cell_text(c) + band_text((bands or {}).get(c.name))).replace("|", "\\|")
            lines.append(f"| `{c.name}` | {value} | {mark} |")
        lines.append("")
    return "\n".join(lines)


def as_table(cells: Iterable[CellView], title: str = "", bands: Bands | None = None) -> str:
    """Grouped columns: name, value with a readable unit, and a marker for inputs/pins."""
    cells = list(cells)
    width = max((len(c.name) for c in cells), default=10) + 2
    lines = [title, ""] if title else []
    for group, members in grouped(cells):
        lines.append(group.upper())
        for c in members:
            mark = " (pinned)" if c.pinned else ""
            band = band_text((bands or {}).get(c.name))
            lines.append(f"  {c.name:<{width}}{cell_text(c)}{mark}{band}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def render(cells: Iterable[CellView], fmt: str, title: str = "", bands: Bands | None = None,
           **extra: object) -> str:
    """Cells in ``fmt``; ``bands`` go beside calibrated values (CSV: its p10, p90 columns)."""
    if fmt == "json":
        return as_json(cells, bands, **extra) + "\n"
    if fmt == "csv":
        return as_csv(cells, bands)
    if fmt == "markdown":
        return as_markdown(cells, title, bands)
    return as_table(cells, title, bands)
