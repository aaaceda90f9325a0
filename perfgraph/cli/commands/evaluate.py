"""``perfgraph eval``: evaluate a scenario and print every cell (or some).

With ``--out FILE`` and no ``--format`` the file's suffix picks the format (``.parquet``,
``.json``, ``.csv``, ``.md``; any other is a table); a ``--format`` the suffix contradicts is
refused. ``perfgraph.output.parquet`` imports Polars only when Parquet is written.
"""

from __future__ import annotations

import argparse
import sys

from perfgraph._infra.atomic import write_text_atomic
from perfgraph.cli.options import (
    FORMATS,
    add_force_option,
    add_format_option,
    add_scenario_options,
    load_scenario,
)
from perfgraph.engine.explanation import cell_view
from perfgraph.errors import InputError, did_you_mean
from perfgraph.output import parquet as export
from perfgraph.output.cells import render
from perfgraph.scenario.loading import Scenario

OUT_FORMATS = (*FORMATS, "parquet")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval",
                       description="Evaluate a scenario and print every cell, grouped.")
    add_scenario_options(p)
    add_format_option(p, OUT_FORMATS)
    p.set_defaults(format=None)  # None: from --out's suffix, else table
    p.add_argument("--out", "-o", metavar="FILE",
                   help="write to FILE instead of stdout, in the format its suffix names "
                        "(.parquet: one row, every cell a column, units in the file's "
                        "metadata; .json, .csv, .md; any other: --format, else a table)")
    add_force_option(p)
    p.add_argument("--only", metavar="NAME[,NAME…]",
                   help="print only these cells (comma-separated)")
    p.add_argument("--group", "-g", action="append", default=[],
                   help="print only this group, in any case (repeatable; the groups are "
                        "the table's headings)")
    p.set_defaults(func=run)


def selected(scenario: Scenario, only: str | None, groups: list[str]) -> list[str]:
    sheet = scenario.sheet
    names = sheet.names
    if only:
        wanted = [n.strip() for n in only.split(",") if n.strip()]
        for n in wanted:
            sheet.declaration(n)  # UnknownNameError with a near miss
        names = wanted
    if groups:
        wanted_groups = _groups(scenario, groups)
        names = [n for n in names if sheet.declaration(n).group in wanted_groups]
    return names


def _groups(scenario: Scenario, given: list[str]) -> set[str]:
    """The groups ``--group`` names, in any case (the table prints them in capitals); an
    unknown one is refused, listing the groups there are."""
    known = sorted({scenario.sheet.declaration(n).group for n in scenario.sheet.names})
    by_lower = {g.lower(): g for g in known}
    out = set()
    for text in given:
        group = by_lower.get(text.strip().lower())
        if group is None:
            raise InputError(f"no group {text!r}{did_you_mean(text.lower(), known)}; groups: "
                             f"{', '.join(known)}", name="--group")
        out.add(group)
    return out


def run(args: argparse.Namespace) -> int:
    fmt = export.output_format(args.out, args.format, OUT_FORMATS, "table")
    scenario = load_scenario(args)
    names = selected(scenario, args.only, args.group)
    if fmt == "parquet":
        export.write_scenario(args.out, scenario, names)
        return 0
    cells = [cell_view(scenario.sheet, n) for n in names]
    judged = scenario.assessment
    bands = {c.name: b for c in cells if (b := judged.band(c.name, c.value)) is not None}
    extra = {"scenario": {"model": scenario.model.slug, "hardware": scenario.hardware.slug,
                          "workload": scenario.workload.slug,
                          "precision": scenario.precision},
             "prediction": judged.text, "calibration": judged.as_dict()}
    text = render(cells, fmt, f"{scenario.title} · {judged.text}", bands, **extra)
    if args.out:
        write_text_atomic(args.out, text)
        return 0
    sys.stdout.write(text)
    return 0
