"""``perfgraph tui``: the dashboard, on any scenario ``perfgraph eval`` takes.

Textual is imported inside :func:`run` only, so building the CLI's parser (and the engine)
never imports it.
"""

from __future__ import annotations

import argparse
import os
import sys

from perfgraph.cli.lifeline import exit_with_parent
from perfgraph.cli.options import (
    MEASURED_HELP,
    add_scenario_options,
    load_scenario,
    scenario_after_measured,
    spec_from_args,
)
from perfgraph.errors import InputError, PerfgraphError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tui",
                       description="Open the dashboard: edit inputs, pin cells, see every "
                                   "result, the roofline, explanations and levers; save the "
                                   "scenario back to its TOML file.")
    add_scenario_options(p)
    p.add_argument("--measured", nargs="+", action="extend", default=[], metavar="RUN",
                   help=MEASURED_HELP + "; shown against the model in the measured view")
    p.add_argument("--cell", metavar="NAME",
                   help="the cell to open on (highlighted, explained)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    served = "web_driver" in os.environ.get("TEXTUAL_DRIVER", "")  # a tab of perfgraph web
    if served:
        exit_with_parent()  # the tab's server, should it die without ending this dashboard
    scenario_after_measured(args)
    scenario = load_scenario(args)  # bad options fail here, before any screen is drawn
    if args.cell:
        scenario.sheet.declaration(args.cell)  # an unknown name, with its near miss
    measured = None
    if args.measured:  # the comparison (and its adapters) imported only when asked for
        from perfgraph.measured.curves import measured_view

        measured = measured_view(args.measured, spec_from_args(args))
    if not served and not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise InputError("perfgraph tui needs an interactive terminal; for output to a pipe "
                         "or a file use 'perfgraph eval'")
    from perfgraph.tui.app import make_app

    app = make_app(scenario, cell=args.cell, measured=measured)
    app.run()
    code = app.return_code or 0  # 1 when an exception ended it (Textual printed it)
    if code and app.session.unsaved:
        try:
            kept = f"are kept in {app.session.rescue()}"
        except PerfgraphError as exc:
            kept = f"could not be kept: {exc}"
        print(f"perfgraph tui: the dashboard failed; the edits not saved {kept}",
              file=sys.stderr)
    return code
