"""The engine never imports textual: only perfgraph.tui does (and the CLI only when run)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import perfgraph

ROOT = Path(__file__).resolve().parent.parent


def engine_modules() -> list[str]:
    """Every module of the package outside perfgraph.tui."""
    found = pkgutil.walk_packages(perfgraph.__path__, prefix="perfgraph.")
    return sorted(m.name for m in found
                  if m.name != "perfgraph.tui" and not m.name.startswith("perfgraph.tui.")
                  and not m.name.endswith(".__main__"))


def imports_textual(code: str) -> bool:
    probe = f"{code}\nimport sys\nprint('textual' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                            text=True, check=True)
    return result.stdout.strip().splitlines()[-1] == "True"


CORE = ("perfgraph", "perfgraph.scenario.loading", "perfgraph.engine.sheet", "perfgraph.cli.main",
        "perfgraph.scenario.save", "perfgraph.cli.commands.tui")


def test_the_engine_does_not_import_textual() -> None:
    """The core modules, then every other engine module that imports at all.

    (A module that fails to import for its own reasons is another test's failure.)
    """
    others = [m for m in engine_modules() if m not in CORE]
    code = "\n".join([
        "import importlib",
        *(f"importlib.import_module({m!r})" for m in CORE),
        f"for m in {others!r}:",
        "    try:",
        "        importlib.import_module(m)",
        "    except ImportError:",
        "        pass",
    ])
    assert not imports_textual(code)


def test_the_cli_parser_does_not_import_textual() -> None:
    assert not imports_textual("from perfgraph.cli.main import build_parser\nbuild_parser()")


def test_the_probe_sees_textual_when_the_dashboard_is_imported() -> None:
    assert imports_textual("import perfgraph.tui.app")


PAINT = """
import asyncio, sys
from perfgraph import load
from perfgraph.tui.app import make_app

def heavy():
    print([m for m in ("numpy", "plotext") if m in sys.modules])

async def paint():
    async with make_app(load()).run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        heavy()
        await pilot.press("2")
        await pilot.pause()
        heavy()

asyncio.run(paint())
"""


def test_the_dashboards_first_paint_imports_neither_numpy_nor_plotext() -> None:
    """The cells and the explain view need neither (each is start-up time); the roofline
    view, once shown, needs both."""
    result = subprocess.run([sys.executable, "-c", PAINT], cwd=ROOT, capture_output=True,
                            text=True, check=True)
    assert result.stdout.splitlines() == ["[]", "['numpy', 'plotext']"]


def test_the_command_list_imports_no_command() -> None:
    """``perfgraph --help`` lists the commands from the table in ``perfgraph.cli.main``:
    no command's module, and none of NumPy, Polars, Pint or NetworkX, is imported for it."""
    probe = ("import contextlib, io, sys\nfrom perfgraph.cli.main import main\n"
             "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
             "    try:\n        main(['--help'])\n    except SystemExit:\n        pass\n"
             "heavy = ('numpy', 'polars', 'pint', 'networkx', 'perfgraph.cli.commands')\n"
             "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
             "print('simulate' in out.getvalue())")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                            text=True, check=True)
    assert result.stdout.splitlines() == ["[]", "True"]


def test_a_command_imports_its_own_module_only() -> None:
    probe = ("import sys\nfrom perfgraph.cli.main import build_parser\nbuild_parser('explain')\n"
             "print(sorted(m for m in sys.modules if m.startswith('perfgraph.cli.commands.')))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                            text=True, check=True)
    assert result.stdout.strip() == "['perfgraph.cli.commands.explain']"


def test_the_dashboard_starts_without_the_comparison_or_the_simulator() -> None:
    """The measured view imports the comparison when it shows runs, the simulation view the
    simulator when it first runs: the dashboard's start needs neither."""
    probe = ("import sys\nimport perfgraph.cli.commands.tui\nimport perfgraph.tui.app\n"
             "heavy = ('perfgraph.measured.comparison', 'perfgraph.whatif.simulate', 'polars')\n"
             "print(sorted(m for m in heavy if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                            text=True, check=True)
    assert result.stdout.strip() == "[]"
