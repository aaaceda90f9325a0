"""``perfgraph plot KIND``: a scenario's charts as SVG or PNG (matplotlib, Agg canvas).

``roofline``, ``concurrency``, ``tp``, ``measured`` and ``diff BASE HEAD``; the figures are
built by :mod:`perfgraph.output.charts` from the data :mod:`perfgraph.output.chart_data`
gathers. matplotlib is the ``plot`` extra (``pip install 'perfgraph[plot]'``): it is imported
only here, and its absence is one line naming the extra.
"""

from __future__ import annotations

import argparse
import importlib.util
from typing import Any

from perfgraph.cli.options import add_scenario_options, load_scenario, spec_from_args
from perfgraph.errors import InputError

KINDS = ("roofline", "concurrency", "tp", "measured", "diff")
MISSING = "perfgraph plot needs matplotlib: pip install 'perfgraph[plot]'"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plot", help="draw a scenario's charts to SVG or PNG",
                       description="Draw a chart: the roofline, throughput and latencies "
                                   "across concurrency or TP (with measured runs), every "
                                   "measured run against the model, or two scenarios' "
                                   "curves overlaid (diff BASE HEAD).")
    p.add_argument("kind", metavar="KIND", help=f"one of: {', '.join(KINDS)}")
    p.add_argument("files", nargs="*", metavar="FILE",
                   help="roofline/concurrency/tp/measured: a scenario file; diff: BASE HEAD")
    add_scenario_options(p, positional=False)
    p.add_argument("--measured", nargs="+", action="extend", default=[], metavar="RUN",
                   help="measured benchmark results (as for 'perfgraph compare')")
    p.add_argument("--relative", action="store_true",
                   help="measured runs as %% of what the model says is possible")
    p.add_argument("--x", dest="x", choices=("concurrency", "tp"), default=None,
                   help="the x axis of the across-configurations chart (default: the kind)")
    p.add_argument("--out", "-o", required=True, metavar="FILE.svg|FILE.png",
                   help="where to write the chart (its suffix picks the format)")
    p.set_defaults(func=run)


def _need_matplotlib() -> None:
    if importlib.util.find_spec("matplotlib") is None:
        raise InputError(MISSING)


def check(args: argparse.Namespace) -> None:
    """Bad arguments, refused before anything is evaluated."""
    if args.kind not in KINDS:
        raise InputError(f"unknown chart kind {args.kind!r}: expected one of "
                         f"{', '.join(KINDS)}")
    wanted = 2 if args.kind == "diff" else (0, 1)
    count = len(args.files)
    if (count != wanted) if isinstance(wanted, int) else count not in wanted:
        raise InputError("plot diff takes BASE HEAD" if args.kind == "diff" else
                         f"plot {args.kind} takes at most one scenario file, got {count}")
    if args.kind == "measured" and not args.measured:
        raise InputError("plot measured needs --measured FILE…")
    if args.relative and not args.measured:
        raise InputError("--relative needs --measured FILE… (it is % of the model)")


def run(args: argparse.Namespace) -> int:
    check(args)
    _need_matplotlib()
    from perfgraph.output import charts

    charts.suffix_format(args.out)
    if args.kind != "diff":
        args.scenario = args.files[0] if args.files else None
    fig = BUILDERS[args.kind](args)
    charts.save(fig, args.out)
    print(args.out)
    return 0


def _comparisons(args: argparse.Namespace) -> tuple[Any, Any]:
    from perfgraph.measured.compare import compare_runs
    from perfgraph.measured.reading import read_measured
    from perfgraph.measured.setup import Baseline

    base = Baseline.from_spec(spec_from_args(args))
    measured = read_measured(args.measured)
    return compare_runs(measured.runs, base, levers=False), base


def roofline(args: argparse.Namespace) -> Any:
    from perfgraph.output import chart_data, charts

    scenario = load_scenario(args)
    runs: list[Any] = []
    if args.measured:
        comparisons, base = _comparisons(args)
        runs = chart_data.measured_roofline_points(comparisons, base,
                                                   scenario.sheet.declaration(
                                                       "attainable_flops").unit)
    data = chart_data.roofline(scenario.sheet, [float(v) for s in runs for v in s.x])
    points = [*runs, *data.points]
    return charts.roofline(data.roof, data.ridge, points, title=f"Roofline: {scenario.title}",
                           x_unit=data.x_unit, y_unit=data.y_unit)


def across(args: argparse.Namespace) -> Any:
    from perfgraph.output import chart_data, charts

    x = args.x or args.kind
    scenario = load_scenario(args)
    if args.measured:
        comparisons, base = _comparisons(args)
        panels = chart_data.measured_panels(comparisons, base, x, args.relative)
        title = f"Measured runs against the model (reference: {base.reference})"
        if args.relative:
            title = "Measured runs as % of possible (reference: " + base.reference + ")"
    else:
        panels = chart_data.scenario_panels(scenario.sheet, x)
        title = scenario.title
    return charts.across(panels, x=x, title=f"{title}, against {charts.X_LABELS[x]}",
                         relative=args.relative)


def measured(args: argparse.Namespace) -> Any:
    from perfgraph.output import chart_data, charts

    comparisons, base = _comparisons(args)
    return charts.measured(chart_data.measured_pairs(comparisons),
                           title=f"Every measured run against the model at its "
                                 f"configuration ({base.reference})",
                           note="throughput in each run's own definition (as "
                                "'perfgraph compare' compares it); ITL: mean TPOT")


def diff(args: argparse.Namespace) -> Any:
    from perfgraph.cli.commands import diff as diff_command

    common = spec_from_args(args)
    sides = [diff_command.prepare(given, "auto") for given in args.files]
    diff_command.agree(*sides)
    base, head = (diff_command.load_side(s, common) for s in sides)
    return diff_figure(base, head, args.x or "concurrency")


def diff_figure(base: tuple[str, Any], head: tuple[str, Any], x: str = "concurrency") -> Any:
    """BASE's and HEAD's curves (each a (label, Scenario)) overlaid, against ``x``."""
    from perfgraph.output import chart_data, charts

    panels = chart_data.merge(
        chart_data.scenario_panels(base[1].sheet, x, f"BASE {base[0]}", "C0"),
        chart_data.scenario_panels(head[1].sheet, x, f"HEAD {head[0]}", "C3"))
    return charts.across(panels, x=x, title=f"{base[0]} → {head[0]}, against "
                                            f"{charts.X_LABELS[x]}")


def draw_diff(base: tuple[str, Any], head: tuple[str, Any], out: str) -> None:
    """``perfgraph diff --plot``: the diff chart, written to ``out``."""
    _need_matplotlib()
    from perfgraph.output import charts

    charts.suffix_format(out)
    charts.save(diff_figure(base, head), out)


BUILDERS = {"roofline": roofline, "concurrency": across, "tp": across, "measured": measured,
            "diff": diff}
