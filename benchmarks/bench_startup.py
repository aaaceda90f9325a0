"""Start-up, each against its baseline in the same run: fresh processes, alternated.

Run: python3 benchmarks/bench_startup.py [--rounds N]
Targets: ``perfgraph --help`` ≤ 1.5× ``python -c "import numpy"``; the dashboard ≤ 2× a bare
Textual app.

* help: ``perfgraph --help`` as the installed script runs it (``main()`` of
  ``perfgraph.cli.main``), against a Python that imports NumPy and exits.
* dashboard: a process that imports what ``perfgraph tui`` imports, loads the default
  scenario, builds the dashboard and runs it headless (Textual's Pilot) until its first
  screen is painted, then exits; against a process that does the same with a bare Textual app
  (a header, a DataTable of as many rows as the dashboard's default scenario shows, 453,
  and a footer).

Prints figures, asserts nothing: speed is measured here, not in the tests.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

HELP = ("import sys; from perfgraph.cli.main import main; sys.argv[0] = 'perfgraph'; "
        "sys.exit(main())")
NUMPY = "import numpy"
DASHBOARD = """
import asyncio
import perfgraph.cli.commands.tui
from perfgraph import load
from perfgraph.tui.app import make_app

async def first_paint():
    async with make_app(load()).run_test(size=(160, 50)) as pilot:
        await pilot.pause()

asyncio.run(first_paint())
"""
BARE = """
import asyncio
from textual.app import App
from textual.widgets import DataTable, Footer, Header

class Bare(App):
    def compose(self):
        yield Header()
        yield DataTable()
        yield Footer()

    def on_mount(self):
        table = self.query_one(DataTable)
        for key in ("cell", "value", "delta", "mark"):
            table.add_column(key, key=key)
        for i in range(453):
            table.add_row(f"cell_{i}", "1.000 ms", "", "")

async def first_paint():
    async with Bare().run_test(size=(160, 50)) as pilot:
        await pilot.pause()

asyncio.run(first_paint())
"""


#: Byte-code as an installed package has it (pip compiles it; a checkout writes it on the first
#: run), in a folder of this run's own: with PYTHONDONTWRITEBYTECODE set, perfgraph's modules
#: would be compiled from source in every run while NumPy and Textual load theirs.
PYCACHE = tempfile.mkdtemp(prefix="perfgraph-bench-pyc-")


def seconds(code: str, *args: str) -> tuple[float, float]:
    """(wall, CPU) seconds of a fresh ``python -c code args…`` run from the checkout. The CPU
    time (user + system) is the steadier on a shared machine: waiting for a core is not in it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": PYCACHE}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def line(what: str, ours: list[float], base: list[float], base_name: str,
         target: str) -> str:
    """Best and median of each, and the median of the paired ratios (each run over the
    baseline run beside it: under a load that drifts, the steadiest)."""
    paired = statistics.median(x / y for x, y in zip(ours, base, strict=True))
    return (f"{what:<22} {min(ours) * 1e3:6.0f} ms (median {statistics.median(ours) * 1e3:.0f})"
            f"   {base_name} {min(base) * 1e3:6.0f} ms (median "
            f"{statistics.median(base) * 1e3:.0f})   ratio {min(ours) / min(base):4.2f}× "
            f"(paired {paired:4.2f}×)   target {target}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="runs of each (default 7)")
    args = parser.parse_args(argv)
    runs = {"numpy": (NUMPY,), "help": (HELP, "--help"), "bare": (BARE,),
            "dashboard": (DASHBOARD,)}
    try:
        wall, cpu = _measure(runs, args.rounds)
    finally:
        shutil.rmtree(PYCACHE, ignore_errors=True)
    print(f"python {sys.version.split()[0]}; {args.rounds} rounds; load "
          f"{os.getloadavg()[0]:.1f}")
    for kind, times in (("wall", wall), ("CPU", cpu)):
        print(line(f"perfgraph --help, {kind}", times["help"], times["numpy"], "import numpy",
                   "≤ 1.5×"))
        print(line(f"dashboard, {kind}", times["dashboard"], times["bare"], "bare Textual",
                   "≤ 2×"))
    return 0


def _measure(runs: dict[str, tuple[str, ...]], rounds: int
             ) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Each command once to warm the caches (and write its byte-code), then ``rounds`` times,
    alternated: a load that drifts hits every command alike."""
    for command in runs.values():
        seconds(*command)
    wall: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, command in runs.items():
            w, c = seconds(*command)
            wall[name].append(w)
            cpu[name].append(c)
    return wall, cpu

if __name__ == "__main__":
    sys.exit(main())
