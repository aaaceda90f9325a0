"""``perfgraph explain NAME``: how one cell is derived, the way the seed article shows it."""

from __future__ import annotations

import argparse
import json
import sys

from perfgraph.cli.options import add_scenario_options, load_scenario
from perfgraph.engine.explanation import explain, tree_dict, tree_lines, value_tree
from perfgraph.engine.numbers import cell_text
from perfgraph.engine.views import CellView, Explanation


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("explain",
                       description="Show a cell's formula, the formula with values, the "
                                   "result, and the cells it reads and that read it.")
    p.add_argument("name", help="the cell to explain")
    add_scenario_options(p)
    p.add_argument("--format", "-f", choices=("table", "json", "text"), default="table",
                   help="table (as the other commands say; 'text' is the same) or json "
                        "(default: table)")
    p.add_argument("--depth", type=_depth, default=1, metavar="N|all",
                   help="also show the precedent tree, N levels deep or down to the inputs "
                        "(all); default 1: the cells it reads")
    p.set_defaults(func=run)


def _depth(text: str) -> int | None:
    if text.strip().lower() == "all":
        return None
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1 or 'all', got {text!r}")
    return n


def _line(c: CellView) -> str:
    return f"{c.name} = {cell_text(c)}"


def as_text(e: Explanation, prediction: str = "roofline",
            band: tuple[float, float] | None = None) -> str:
    """The explanation, then what the number is (``prediction``) and its 80% band."""
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
    out.append(f"  prediction   {prediction}")
    if band is not None:
        out.append(f"  80% band     {band[0]:.4g}–{band[1]:.4g} {c.unit}".rstrip())
    return "\n".join(out) + "\n"


def as_json(e: Explanation, prediction: str = "roofline",
            band: tuple[float, float] | None = None) -> str:
    c = e.cell
    return json.dumps({
        "name": c.name, "doc": c.doc, "unit": c.unit, "value": c.value, "error": c.error,
        **({"band": list(band)} if band is not None else {}), "prediction": prediction,
        "formula": c.formula, "substituted": e.substituted, "source": c.source,
        "origin": e.origin, "reads": [p.name for p in e.precedents],
        "read_by": [d.name for d in e.dependents]}, indent=2) + "\n"


def run(args: argparse.Namespace) -> int:
    scenario = load_scenario(args)
    e = explain(scenario.sheet, args.name)
    judged = scenario.assessment
    band = judged.band(e.cell.name, e.cell.value)
    tree = value_tree(scenario.sheet, args.name, args.depth) if args.depth != 1 else None
    if args.format == "json":
        text = as_json(e, judged.text, band)
        if tree is not None:
            data = json.loads(text)
            data["tree"] = tree_dict(tree)
            text = json.dumps(data, indent=2) + "\n"
    else:
        text = as_text(e, judged.text, band)
        if tree is not None:
            text += "  derived from\n" + "".join(f"    {line}\n" for line in tree_lines(tree))
    sys.stdout.write(text)
    return 0
