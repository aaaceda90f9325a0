"""``perfgraph plot KIND``: a scenario's charts as SVG or PNG (matplotlib, Agg canvas).

``roofline``, ``concurrency``, ``tp``, ``measured`` and ``diff BASE HEAD``; the figures are
built by :mod:`perfgraph.output.charts` from the data :mod:`perfgraph.output.chart_data`
gathers. matplotlib is the ``plot`` extra (``pip install 'perfgraph[plot]'``): it is imported
only here, and its absence is one line naming the extra.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

from perfgraph.cli.options import (
    MEASURED_HELP,
    add_scenario_options,
    load_scenario,
    scenario_after_measured,
    spec_from_args,
)
from perfgraph.errors import InputError
from perfgraph.output.diff_chart import MISSING, diff_figure, need_matplotlib  # noqa: F401
from perfgraph.scenario.loading import Scenario

KINDS = ("roofline", "concurrency", "tp", "measured", "diff", "pareto", "simulation")
#: Kinds drawn from a file another command wrote: plan --out, simulate --out.
FROM_FILE = {"pareto": "perfgraph plan … --out PLANS.parquet",
             "simulation": "perfgraph simulate … --out REQUESTS.parquet"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plot",
                       description="Draw a chart: the roofline, throughput and latencies "
                                   "across concurrency or TP (with measured runs), every "
                                   "measured run against the model, or two scenarios' "
                                   "curves overlaid (diff BASE HEAD).")
    p.add_argument("kind", metavar="KIND", help=f"one of: {', '.join(KINDS)}")
    p.add_argument("files", nargs="*", metavar="FILE",
                   help="roofline/concurrency/tp/measured: a scenario file; diff: BASE HEAD")
    add_scenario_options(p, positional=False)
    p.add_argument("--measured", nargs="+", action="extend", default=[], metavar="RUN",
                   help=MEASURED_HELP)
    p.add_argument("--relative", action="store_true",
                   help="measured runs as %% of what the model says is possible")
    p.add_argument("--x", dest="x", choices=("concurrency", "tp"), default=None,
                   help="the x axis of the across-configurations chart (default: the kind)")
    p.add_argument("--out", "-o", required=True, metavar="FILE.svg|FILE.png",
                   help="where to write the chart (its suffix picks the format)")
    p.set_defaults(func=run)


def check(args: argparse.Namespace) -> None:
    """Bad arguments, refused before anything is evaluated."""
    scenario_after_measured(args, "files")
    if args.kind not in KINDS:
        raise InputError(f"unknown chart kind {args.kind!r}: expected one of "
                         f"{', '.join(KINDS)}")
    if args.kind in FROM_FILE:
        if len(args.files) != 1 or not args.files[0].endswith((".parquet", ".pq")):
            raise InputError(f"plot {args.kind} takes the Parquet file that "
                             f"'{FROM_FILE[args.kind]}' writes")
        return
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
    need_matplotlib()
    from perfgraph.output import charts

    charts.suffix_format(args.out)
    if args.kind != "diff":
        args.scenario = args.files[0] if args.files else None
    fig = BUILDERS[args.kind](args)
    charts.save(fig, args.out)
    print(args.out)
    return 0


def _comparisons(args: argparse.Namespace) -> tuple[Any, Any]:
    from perfgraph.measured.comparison import compare_runs
    from perfgraph.measured.reading import read_measured
    from perfgraph.measured.setup import Baseline

    base = Baseline.from_spec(spec_from_args(args))
    measured = read_measured(args.measured)
    return compare_runs(measured.runs, base, levers=False), base


def labelled(title: str, scenario: Scenario) -> str:
    """A chart's title with, for a calibrated scenario, what its numbers are (its label:
    the domain verdict, the error and the band), wrapped below; the roofline's unchanged."""
    import textwrap

    if scenario.calibration is None:
        return title
    return "\n".join([title, *textwrap.wrap(scenario.prediction, 110)])


def plot_roofline(args: argparse.Namespace) -> Any:
    from perfgraph.output import chart_data, charts

    scenario = load_scenario(args)
    runs: list[Any] = []
    named = None
    if args.measured:
        comparisons, base = _comparisons(args)
        named, runs = chart_data.measured_roofline_points(
            comparisons, base, scenario.sheet.declaration("attainable_flops").unit,
            scenario.sheet)
    data = chart_data.roofline_data(scenario.sheet, [float(v) for s in runs for v in s.x])
    roof = replace(data.roof, label=named) if named else data.roof
    return charts.roofline_figure(roof, data.ridge, [*runs, *data.points],
                           title=labelled(f"Roofline: {scenario.title}", scenario),
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
    title = f"{title}, against {charts.X_LABELS[x]}"
    return charts.across(panels, x=x, title=title if args.measured else
                         labelled(title, scenario),
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


def _parquet(path: str, columns: tuple[str, ...], kind: str) -> dict[str, Any]:
    """The columns of a Parquet file another perfgraph command wrote (one message if not)."""
    import polars as pl
    from polars.exceptions import PolarsError

    try:
        frame = pl.read_parquet(path)
    except (OSError, PolarsError) as exc:
        raise InputError(f"cannot read it as Parquet: {str(exc).splitlines()[0]}",
                         file=path) from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(f"has no column {missing[0]!r}: plot {kind} reads what this "
                         f"version's '{FROM_FILE[kind]}' writes", file=path)
    return {c: frame[c].to_numpy() for c in columns}


def pareto(args: argparse.Namespace) -> Any:
    """The feasible plans of ``plan --out``: what each serves per GPU at capacity against
    tokens/s per user, one frontier per family, the chosen plan marked."""
    from perfgraph.output import charts
    from perfgraph.output.pareto_data import COLUMNS, pareto_data

    data = pareto_data(_parquet(args.files[0], COLUMNS, "pareto"))
    return charts.pareto(data.frontiers, data.scatter, data.chosen, data.others,
                         title=f"Feasible plans: each family's frontier ({data.plans} plans, "
                               f"{Path(args.files[0]).name})")


def simulation(args: argparse.Namespace) -> Any:
    """The per-request rows of ``simulate --out``: TTFT and TPOT (a request's mean ITL)."""
    from perfgraph.output import charts

    cols = _parquet(args.files[0], ("ttft", "tpot"), "simulation")
    return charts.simulation(cols["ttft"] / 1e3, cols["tpot"] / 1e3, second="TPOT",
                             title=f"Simulated requests ({len(cols['ttft'])}, "
                                   f"{Path(args.files[0]).name})")


BUILDERS = {"roofline": plot_roofline, "concurrency": across, "tp": across, "measured": measured,
            "diff": diff, "pareto": pareto, "simulation": simulation}
