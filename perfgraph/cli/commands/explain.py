"""``perfgraph explain NAME``: how one cell is derived, the way the seed article shows it."""

from __future__ import annotations

import argparse
import json
import sys

from perfgraph.cli.options import add_scenario_options, load_scenario
from perfgraph.engine.explain import explain
from perfgraph.engine.numbers import cell_text
from perfgraph.engine.views import CellView, Explanation


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("explain", help="show how a cell is computed",
                       description="Show a cell's formula, the formula with values, the "
                                   "result, and the cells it reads and that read it.")
    p.add_argument("name", help="the cell to explain")
    add_scenario_options(p)
    p.add_argument("--format", "-f", choices=("text", "json"), default="text")
    p.set_defaults(func=run)


def _line(c: CellView) -> str:
    return f"{c.name} = {cell_text(c)}"


def as_text(e: Explanation) -> str:
    c = e.cell
    out = [f"{c.name}: {c.doc}" if c.doc else c.name]
    if c.formula:
        out.append(f"  formula      {c.formula}")
        out.append(f"  with values  {e.substituted}")
        out.append(f"  result       {cell_text(c)}")
        if c.pinned:
            out.append(f"  pinned       (set at {e.origin})")
    else:
        out.append(f"  input        {cell_text(c)}" + (f"   (set at {e.origin})"
                                                       if e.origin else ""))
    if c.source:
        out.append(f"  source       {c.source}")
    out.append("  reads        " + (", ".join(_line(p) for p in e.precedents) or "—"))
    out.append("  read by      " + (", ".join(d.name for d in e.dependents) or "—"))
    return "\n".join(out) + "\n"


def as_json(e: Explanation) -> str:
    c = e.cell
    return json.dumps({
        "name": c.name, "doc": c.doc, "unit": c.unit, "value": c.value, "error": c.error,
        "formula": c.formula, "substituted": e.substituted, "source": c.source,
        "origin": e.origin, "reads": [p.name for p in e.precedents],
        "read_by": [d.name for d in e.dependents]}, indent=2) + "\n"


def run(args: argparse.Namespace) -> int:
    scenario = load_scenario(args)
    e = explain(scenario.sheet, args.name)
    sys.stdout.write(as_json(e) if args.format == "json" else as_text(e))
    return 0
