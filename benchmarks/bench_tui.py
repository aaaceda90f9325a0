"""Dashboard speed against a bare Textual app, both measured in this run (Textual's Pilot).

Run: python3 benchmarks/bench_tui.py [--rounds N]
Targets: Enter on an edit → the changed cells repainted in ≤ 50 ms and within 2× a
bare DataTable app updating the same cells; startup to first paint within 3× the bare app.

* startup: from building the app (the scenario already loaded) until the first screen is
  composed, mounted and painted (``run_test`` entered and the first ``pilot.pause()``
  returned: every message handled, the screen rendered).
* edit: the cursor on ``concurrency``, ``e``, a value typed, then the time from pressing
  Enter until the app is idle again with the screen repainted; the bare app updates, on
  Enter, the same cells in a DataTable of the same rows and columns.
* key: the same edit's last key (``8`` of ``128``: concurrency 12 → 128), timed to the last
  paint it causes: the sheet recomputed and the changed cells repainted (the dashboard
  previews every key; Enter then keeps what is on screen). Against the same bare Enter.

Prints figures, asserts nothing: speed is measured here, not in the tests. Under a drifting
load the median of the paired ratios (each dashboard measurement over the bare app's taken
beside it) is the steadiest figure.

What keeps the dashboard near the bare app (each measured one change at a time): the formula
bar stays on screen and never takes the focus (a focus change restyles the whole table and
refreshes the screen; hiding a bar lays the screen out), so Enter only closes an edit the
sheet already shows; a row repaints only where its text changed; views other than explain
mount when first shown; the scenario bar's choices open their list only when picked.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual.app import App, ComposeResult  # noqa: E402
from textual.widgets import DataTable, Footer, Header  # noqa: E402

from perfgraph.scenario.loading import Scenario, load  # noqa: E402
from perfgraph.tui.app import make_app  # noqa: E402

SIZE = (160, 50)
EDITED = "concurrency"
VALUES = ("128", "96", "32", "200")


class BareApp(App[None]):
    """A DataTable of ``rows`` × 4 columns; Enter rewrites the value and delta of ``cells``."""


    def __init__(self, rows: list[str], cells: list[str]) -> None:
        super().__init__()
        self.rows, self.cells, self.round = rows, cells, 0

    def compose(self) -> ComposeResult:
        yield Header()
        yield DataTable(id="t", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for key, width in (("cell", 32), ("value", 16), ("delta", 9), ("mark", 6)):
            table.add_column(key, key=key, width=width)
        for name in self.rows:
            table.add_row(name, "1.000 ms", "", "", key=name)

    def on_data_table_row_selected(self) -> None:  # Enter on the focused table
        self.round += 1
        table = self.query_one(DataTable)
        for name in self.cells:
            table.update_cell(name, "value", f"{self.round}.000 ms")
            table.update_cell(name, "delta", f"▲+{self.round}.0%")


class Paints:
    """When ``app`` last painted: every screen update passes through ``App._display``
    (headless too: the compositor renders the update, the driver just does not write it)."""

    def __init__(self, app: App) -> None:
        self.last = 0.0
        display = app._display

        def timed(screen: object, renderable: object) -> None:
            display(screen, renderable)  # type: ignore[arg-type]
            if renderable is not None:
                self.last = time.perf_counter()

        app._display = timed  # type: ignore[method-assign]


async def _press_to_paint(pilot: object, paints: Paints, key: str) -> float:
    """Seconds from pressing ``key`` to the last paint it caused."""
    start = time.perf_counter()
    await pilot.press(key)  # type: ignore[attr-defined]
    await pilot.pause()  # type: ignore[attr-defined]
    return paints.last - start


async def _startup(make: object) -> float:
    start = time.perf_counter()
    app = make()  # type: ignore[operator]
    paints = Paints(app)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
    return paints.last - start


async def _edits_dashboard(scenario: Scenario, rounds: int) -> tuple[list[float], list[float]]:
    """(Enter times, last-key times) of ``rounds`` edits of EDITED."""
    app = make_app(scenario, cell=EDITED)
    paints, enters, keys = Paints(app), [], []
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        for i in range(rounds):
            value = VALUES[i % len(VALUES)]
            await pilot.press("e", *value[:-1])
            await pilot.pause()
            keys.append(await _press_to_paint(pilot, paints, value[-1]))
            enters.append(await _press_to_paint(pilot, paints, "enter"))
    return enters, keys


async def _edits_bare(rows: list[str], cells: list[str], rounds: int) -> list[float]:
    app = BareApp(rows, cells)
    paints, times = Paints(app), []
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        for _ in range(rounds):
            times.append(await _press_to_paint(pilot, paints, "enter"))
    return times


def _row_keys(scenario: Scenario) -> tuple[list[str], list[str]]:
    """The dashboard's row keys (headings and cells), and the cells one edit changes."""
    from perfgraph.engine.explanation import cell_views, grouped

    rows = []
    for group, cells in grouped(cell_views(scenario.sheet)):
        rows.append("group:" + group)
        rows += [c.name for c in cells]
    fork = scenario.sheet.fork()
    before = {n: fork.raw(n) for n in fork.names}
    fork.set(EDITED, VALUES[0])
    changed = [n for n in fork.names if fork.raw(n) != before[n]]
    return rows, changed


def _line(what: str, ours: list[float], bare: list[float], target: str) -> str:
    """Best and median of each, their ratios, and the median of the paired ratios (each
    measurement of the dashboard over the bare app's taken beside it: under a load that
    drifts, the steadiest of the three)."""
    o, b = min(ours), min(bare)
    mo, mb = statistics.median(ours), statistics.median(bare)
    paired = statistics.median(x / y for x, y in zip(ours, bare, strict=True))
    return (f"{what:<30} dashboard {o * 1e3:7.1f} ms (median {mo * 1e3:.1f})"
            f"   bare {b * 1e3:6.1f} ms (median {mb * 1e3:.1f})"
            f"   ratio {o / b:4.2f}× (medians {mo / mb:4.2f}×, paired {paired:4.2f}×)"
            f"   target {target}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=24,
                        help="edits to time (a startup of each app per 4 edits)")
    args = parser.parse_args(argv)
    scenario = load()
    rows, changed = _row_keys(scenario)
    bare_start: list[float] = []
    ours_start: list[float] = []
    bare_edit: list[float] = []
    ours_edit: list[float] = []
    ours_key: list[float] = []
    per_block = 4
    for _ in range(max(1, args.rounds // per_block)):  # interleaved: a load drift hits both
        loaded = load()
        bare_start.append(asyncio.run(_startup(lambda: BareApp(rows, changed))))
        ours_start.append(asyncio.run(_startup(lambda s=loaded: make_app(s))))
        bare_edit += asyncio.run(_edits_bare(rows, changed, per_block))
        enters, keys = asyncio.run(_edits_dashboard(load(), per_block))
        ours_edit += enters
        ours_key += keys
    print(f"python {sys.version.split()[0]}; {len(rows)} rows; "
          f"an edit of {EDITED} changes {len(changed)} cells; terminal {SIZE[0]}×{SIZE[1]}")
    print(_line("startup to first paint", ours_start, bare_start, "≤ 3×"))
    print(_line("Enter on an edit → repainted", ours_edit, bare_edit, "≤ 50 ms and ≤ 2×"))
    print(_line("a key typed → cells repainted", ours_key, bare_edit, "(the preview)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
