"""The dashboard at every size: resizing keeps it alive and the edits, each view is laid out
from what fits, and every view's snapshot at 80 × 24 and 120 × 40.

The plan and the simulation draw frozen answers (tests/data/tui/PROVENANCE.md) and the
measured view one file of InferenceMAX runs (tests/data/measured/PROVENANCE.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, TabbedContent

from perfgraph.cli.main import main
from perfgraph.measured.curves import MeasuredView, measured_view
from perfgraph.scenario.loading import ScenarioSpec, load
from perfgraph.tui.app import NARROW, PerfgraphApp, make_app
from perfgraph.tui.screens.help import HELP, HelpScreen
from perfgraph.tui.view_registry import VIEWS
from perfgraph.tui.widgets.chart import MIN_HEIGHT, Chart
from tests import test_tui as base
from tests import test_tui_views as views_tests

fixture_load = base.fixture_load
frozen = views_tests.frozen
RUNS = Path(__file__).parent / "data" / "measured" / "inferencemax_llama70b_fp8" / "1k1k"
#: The walk the report of the crash took, and back up past where it started.
WALK = ((160, 50), (120, 40), (80, 24), (200, 60))
SNAPSHOT_SIZES = ((80, 24), (120, 40))


def runs() -> MeasuredView:
    return measured_view([str(RUNS / "H100.json")], ScenarioSpec())


def drive(app: PerfgraphApp, script: base.Script, size: tuple[int, int]) -> None:
    async def session() -> None:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await script(pilot)
    asyncio.run(session())


async def show(pilot: Pilot, key: str) -> None:
    await pilot.press(key)
    await views_tests.settle(pilot)


# ---------------------------------------------------------------------- resizing
def test_resizing_through_every_size_on_every_view_keeps_the_app_and_the_edits(frozen) -> None:
    """160×50 → 120×40 → 80×24 → 200×60 on each view: the plots are drawn afresh at each
    size (a log axis built twice took the log of its logs: ``math domain error``)."""
    app = make_app(load(), measured=runs())

    async def script(pilot: Pilot) -> None:
        await base.edit(pilot, "concurrency", "32")
        for view in VIEWS:
            await show(pilot, view.key)
            assert app.view == view.view_id
            for size in (*WALK[1:], WALK[0]):
                await pilot.resize_terminal(*size)
                await pilot.pause()
                assert app.size == size
                for chart in app.screen.query(Chart):
                    chart.render()  # the hidden ones too: each would crash as it did
        assert app.session.sheet.magnitude("concurrency") == 32
        assert app.session.undo_labels and base.shown(app, "concurrency") == "32"
        assert app.return_code is None  # running: no exception ended it

    drive(app, script, WALK[0])


def test_an_exception_in_the_dashboard_exits_non_zero_and_keeps_the_edits(
        monkeypatch, capsys, tmp_path) -> None:
    """``perfgraph tui`` returns 1 when an uncaught exception ends the app (it returned 0,
    the edits lost): the edits not saved go to a new scenario file, which loads them."""
    from textual.app import App

    def crash(self: PerfgraphApp) -> None:
        self.session.set("concurrency", "32")
        raise RuntimeError("a widget failed")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    monkeypatch.setattr(PerfgraphApp, "on_mount", crash)
    monkeypatch.setattr(PerfgraphApp, "run", lambda self: App.run(self, headless=True,
                                                                  size=(80, 24)))
    assert main(["tui"]) == 1
    err = capsys.readouterr().err
    assert "a widget failed" in err
    assert "the edits not saved are kept in perfgraph-scenario.recovered.toml" in err
    kept = load(ScenarioSpec(file="perfgraph-scenario.recovered.toml"))
    assert kept.sheet.magnitude("concurrency") == 32
    assert main(["tui"]) == 1  # again: a second file, the first untouched
    assert (tmp_path / "perfgraph-scenario.recovered-2.toml").exists()


# ---------------------------------------------------------------------- layout
@pytest.mark.parametrize("size", [(120, 40), (NARROW - 1, 40)])
def test_below_156_columns_the_views_go_under_the_table_at_full_width(frozen, size) -> None:
    app = make_app(load())

    async def script(pilot: Pilot) -> None:
        await show(pilot, "6")
        table, tabs = app.table.region, app.query_one(TabbedContent).region
        assert tabs.y >= table.bottom and tabs.width == size[0]
        assert app.query_one("#plans", DataTable).region.width >= size[0] - 2
        await show(pilot, "3")
        for chart in app.query_one("#concurrency-view").query(Chart):
            assert chart.region.width >= size[0] - 2 and chart.region.height >= 9

    drive(app, script, size)


def test_from_156_columns_the_views_sit_beside_the_table_with_80_columns(frozen) -> None:
    app = make_app(load())

    async def script(pilot: Pilot) -> None:
        table, tabs = app.table.region, app.query_one(TabbedContent).region
        assert tabs.x >= table.right and tabs.width >= 80
        await show(pilot, "6")
        plans = app.query_one("#plans", DataTable)
        assert plans.virtual_size.width <= plans.scrollable_content_region.width  # no cut

    drive(app, script, (NARROW, 40))


def test_at_80x24_each_view_draws_charts_with_room_or_none(frozen) -> None:
    app = make_app(load(), measured=runs())

    async def script(pilot: Pilot) -> None:
        for view in VIEWS:
            await show(pilot, view.key)
            for chart in app.screen.query(Chart):
                if chart.display and chart.region.height:
                    assert chart.region.height >= MIN_HEIGHT, view.view_id
        await show(pilot, "3")  # throughput and ITL side by side, each its own canvas
        plots = [c.region for c in app.query_one("#concurrency-view").query(Chart)]
        assert len(plots) == 2 and plots[0].y == plots[1].y and plots[0].height >= 9
        await show(pilot, "5")  # the runs, with a line saying where the plots went
        assert app.query_one("#runs", DataTable).region.height >= 4
        assert "32 rows" in str(app.query_one("#measured-room").render())
        assert app.query_one("#measured-room").region.height == 1

    drive(app, script, (80, 24))


@pytest.mark.parametrize("size", [(80, 24), (160, 50)])
def test_no_marker_hides_under_a_legend(frozen, size) -> None:
    """The roofline's decode and prefill points and the plan's best are on the canvas
    (below the title, which carries their key): plotext's legend used to cover them."""
    app = make_app(load())

    async def script(pilot: Pilot) -> None:
        for key, chart_id, markers in (("2", "#roofline-plot", "●◆"),
                                       ("6", "#plan-frontier", "◆")):
            await show(pilot, key)
            chart = app.query_one(chart_id, Chart)
            if not chart.display or not chart.region.height:
                continue  # the plan's frontier gives way under 32 rows
            canvas = "\n".join(str(chart.render()).splitlines()[1:])
            for marker in markers:  # once: the point itself, no legend's ●● or ◆◆
                assert canvas.count(marker) == 1, (chart_id, marker)

    drive(app, script, size)


def test_the_help_fits_the_screen_and_names_every_key() -> None:
    app = make_app(load())

    async def script(pilot: Pilot) -> None:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        box = app.screen.query_one("#help").region
        assert box.x >= 0 and box.right <= 80 and box.bottom <= 24

    drive(app, script, (80, 24))
    assert "| `b` | the scenario bar" in HELP


# ---------------------------------------------------------------------- keys
def test_b_goes_to_the_scenario_bar_and_escape_comes_back() -> None:
    app = make_app(load())

    async def script(pilot: Pilot) -> None:
        assert " b bar " in str(app.keys.render())
        await pilot.press("b")
        await pilot.pause()
        assert app.focused is not None and app.focused.id == "choose-model"
        assert "Enter choose" in str(app.keys.render())
        await pilot.press("tab")
        assert app.focused.id == "choose-hardware"  # type: ignore[union-attr]
        await pilot.press("escape")
        await pilot.pause()
        assert app.focused is app.table

    drive(app, script, (160, 50))


def test_5_without_measured_runs_says_what_it_needs() -> None:
    app = make_app(load())

    async def script(pilot: Pilot) -> None:
        await pilot.press("5")
        await pilot.pause()
        said = [n.message for n in app._notifications]
        assert said == ["no measured runs: start with perfgraph tui --measured RUN…"]
        assert app.view == "explain"

    drive(app, script, (160, 50))


def test_the_levers_and_runs_tables_cut_no_text(frozen) -> None:
    """Every cell's text fits its column (runs) or wraps onto more lines of its row
    (levers), and the columns fit the narrowest view, beside the table or at 80 × 24 (76
    columns, a scroll bar beside them); the plans table too."""
    app = make_app(load(), measured=runs())

    async def script(pilot: Pilot) -> None:
        for key, table_id in (("4", "#advice"), ("5", "#runs"), ("6", "#plans")):
            await show(pilot, key)
            table = app.query_one(table_id, DataTable)
            assert table.row_count > 0
            columns = list(table.columns.values())
            assert sum(c.width + 2 * table.cell_padding for c in columns) <= 76
            for row_key, row in table.rows.items():
                for column, text in zip(columns, table.get_row(row_key), strict=True):
                    assert len(str(text)) <= column.width * row.height, (table_id, text)

    drive(app, script, (160, 50))


# ---------------------------------------------------------------------- snapshots
def _before(key: str) -> Callable[[Pilot], object]:
    async def run_before(pilot: Pilot) -> None:
        await pilot.pause()  # the first paint: the hidden views mount after it
        if key != "1":
            await show(pilot, key)
    return run_before


@pytest.fixture
def live_measured(request) -> object:
    """The measured view of two runs, compared on the live sheets (the comparison reads cells,
    achieved.toml's, that the frozen fixture sheets do not have); requested before
    ``fixture_load`` swaps the sheets out. The fixture catalog's model: the runs' is not in it."""
    if request.node.callspec.params.get("key") != "5":
        return None
    return measured_view([str(RUNS / "H100.json")], ScenarioSpec(model="llama-3.1-70b"))


@pytest.mark.parametrize("size", SNAPSHOT_SIZES, ids=["80x24", "120x40"])
@pytest.mark.parametrize("key", [v.key for v in VIEWS], ids=[v.view_id for v in VIEWS])
def test_snapshot_every_view(snap_compare, live_measured, fixture_load, frozen, key,
                             size) -> None:
    measured = live_measured
    app = make_app(fixture_load(), cell="throughput", measured=measured)
    assert snap_compare(app, terminal_size=size, run_before=_before(key))
