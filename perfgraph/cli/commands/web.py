"""``perfgraph web``: the dashboard of ``perfgraph tui``, served to a browser.

Textualize's textual-serve (the ``web`` extra) starts one ``perfgraph tui`` per browser tab,
with Textual's web driver in place of the terminal, and relays it over a websocket; each
tab's dashboard ends with its tab and with the server, however the server is stopped
(:mod:`perfgraph.cli.webserve`), and the page loads nothing from the network. It
listens on 127.0.0.1 unless ``--host`` says otherwise: the dashboard can write the scenario
file it was opened on, so it is not offered to the network by default.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys

from perfgraph.cli.options import add_scenario_options, load_scenario
from perfgraph.errors import InputError

MISSING = "perfgraph web needs textual-serve: pip install 'perfgraph[web]'"
#: The options passed on to each tab's ``perfgraph tui``, as (attribute, flag).
FORWARDED = (("model", "--model"), ("hardware", "--hardware"), ("workload", "--workload"),
             ("precision", "--precision"), ("calibration", "--calibration"),
             ("cell", "--cell"))


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("web",
                       description="Serve the 'perfgraph tui' dashboard to a browser "
                                   "(textual-serve), one live dashboard per tab.")
    add_scenario_options(p)
    p.add_argument("--measured", nargs="+", action="extend", default=[], metavar="RUN",
                   help="measured benchmark results, as for 'perfgraph tui'")
    p.add_argument("--host", default="127.0.0.1",
                   help="the address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="the port (default 8000)")
    p.add_argument("--cell", metavar="NAME", help="the cell each tab opens on")
    p.set_defaults(func=run)


def tui_command(args: argparse.Namespace) -> list[str]:
    """The ``perfgraph tui`` each browser tab runs, with this command's scenario options."""
    argv = [sys.executable, "-m", "perfgraph.cli.main", "tui"]
    if args.scenario:
        argv.append(args.scenario)
    for attr, flag in FORWARDED:
        if getattr(args, attr, None):
            argv += [flag, getattr(args, attr)]
    for text in args.sets:
        argv += ["--set", text]
    if args.measured:
        argv += ["--measured", *args.measured]
    return argv


def run(args: argparse.Namespace) -> int:
    if not 0 < args.port < 65536:
        raise InputError(f"--port must be 1–65535, got {args.port}")
    load_scenario(args)  # bad options fail here, not in every tab
    if importlib.util.find_spec("textual_serve") is None:
        raise InputError(MISSING)
    from perfgraph.cli.webserve import DashboardServer

    print(f"perfgraph web: starting the dashboard at "
          f"http://{args.host}:{args.port} (Ctrl+C stops)",
          file=sys.stderr)
    try:
        DashboardServer(tui_command(args), host=args.host, port=args.port).serve()
    except OSError as exc:  # the port is taken, or the host is not this machine's
        raise InputError(f"cannot serve on {args.host}:{args.port}: "
                         f"{exc.strerror or exc}") from None
    return 0
