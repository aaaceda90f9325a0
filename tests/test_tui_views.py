"""The dashboard's plan and simulation views, driven under Textual's Pilot, and their snapshots.

Each view's numbers are held to the command it runs: the plan view's frontier and best plan
to ``perfgraph.whatif.plan_search`` for the same question and space, the simulation view's p50 and
p99 to ``perfgraph.whatif.simulate`` for the same seed and request count.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input

from perfgraph.engine.numbers import number
from perfgraph.output import plan_json
from perfgraph.scenario.loading import load
from perfgraph.tui import planning, simulation
from perfgraph.tui.app import PerfgraphApp, make_app
from perfgraph.tui.planning import PlanAnswer
from perfgraph.tui.simulation import SimAnswer
from perfgraph.whatif import plan_report
from perfgraph.whatif import plan_search as plan
from perfgraph.whatif.simulate import Setup, simulate
from perfgraph.whatif.simulate.summary import summarise
from tests import test_tui as base

SIZE, SMALL = base.SIZE, base.SMALL
TUI_DATA = base.TUI_DATA
fixture_load = base.fixture_load
#: A space small enough for a test: two accelerators, their precisions, a few batches.
TINY = ("hardware=h100-sxm,b200", "tp=1,2,4", "pp=1", "concurrency=8,32,128")


def drive(app: PerfgraphApp, script: base.Script, size: tuple[int, int] = SIZE) -> None:
    async def session() -> None:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await script(pilot)
    asyncio.run(session())


async def settle(pilot: Pilot) -> None:
    """Let the workers finish and their results reach the screen."""
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def ask(pilot: Pilot, **texts: str) -> None:
    """Type the question into the plan view's inputs (``e`` first), Enter to search."""
    await pilot.press("e")
    for key, text in texts.items():
        box = pilot.app.query_one(f"#plan-{key}", Input)
        box.focus()
        box.value = ""
        await pilot.pause()
        if text:
            await base.paste(pilot, text)
    await pilot.press("enter")
    await settle(pilot)


def plans_for(slos: list[str], rate: str) -> plan.Result:
    spec = planning.search_spec(load().spec)
    return plan.run(spec, plan.question(spec, slos, rate), TINY)


def points(rows: object) -> list[tuple[float, float]]:
    return [(r.plan.per_user, r.plan.per_gpu) for r in rows]  # type: ignore[attr-defined]


# ---------------------------------------------------------------------- plan
def tiny_app() -> PerfgraphApp:
    return make_app(load())


async def open_plan(pilot: Pilot) -> None:
    """Show the plan view, searching :data:`TINY` (its first search: the sheet's SLOs)."""
    pilot.app.views["plan"].space = TINY  # type: ignore[attr-defined]
    await pilot.press("6")
    await settle(pilot)


def test_the_plan_view_searches_the_slos_typed_and_draws_plans_frontier() -> None:
    app = tiny_app()
    result = plans_for(["ttft=1s", "itl=30ms"], "12 request/s")
    ans = plan_json.found_json(plan_report.answer(result, planning.TOP))

    async def script(pilot: Pilot) -> None:
        await open_plan(pilot)
        assert app.query_one("#plan-itl", Input).value == "50 ms"
        await ask(pilot, ttft="1 s", itl="30 ms", rate="12 request/s")
        panel = app.views["plan"]
        got = panel.answer
        assert got is not None and got.message is None
        assert (got.searched, got.feasible) == (result.searched, result.feasible)
        assert points(got.frontier) == [(r["values"]["tokens_per_s_per_user"]["value"],
                                         r["values"]["served_throughput_per_gpu"]["value"])
                                        for r in ans["frontier"]]
        assert got.rows[0].choices == ans["best"]["choices"]
        status = str(app.query_one("#plan-status").render())
        assert f"searched {result.searched:,}, feasible {result.feasible:,}" in status
        table = app.query_one("#plans", DataTable)
        assert table.row_count == 1 + len(ans["runners_up"]) + len(ans["frontier"])
        assert app.focused is table

    drive(app, script)


def test_applying_a_plan_sets_its_choices_and_undo_takes_them_back() -> None:
    app = tiny_app()

    async def script(pilot: Pilot) -> None:
        await open_plan(pilot)
        await ask(pilot, ttft="1 s", itl="30 ms", rate="12 request/s")
        answer = app.views["plan"].answer
        row = next(r for r in answer.rows if r.choices["hardware"] != "h100-sxm")
        await pilot.press(*["down"] * answer.rows.index(row))
        await pilot.press("a")
        await pilot.pause()
        session = app.session
        assert session.choices()["hardware"] == row.choices["hardware"]
        assert session.choices()["precision"] == row.choices["precision"]
        for cell in ("tp", "pp", "concurrency", "disaggregated"):
            assert session.value(cell) == row.choices[cell]
        assert session.value("request_rate") == pytest.approx(12)
        assert session.value("itl_slo") == pytest.approx(30)
        for cell in ("deployment_gpus", "itl_worst", "ttft_served"):  # the plan's own values
            assert session.value(cell) == pytest.approx(row.plan.values[cell].value, rel=1e-9)
        assert app.table.get_cell("hbm_bandwidth", "delta").plain.startswith("▲")
        assert len(session.undo_labels) == 1
        await pilot.press("u")
        await pilot.pause()
        assert session.choices()["hardware"] == "h100-sxm" and not session.undo_labels
        for cell in ("tp", "concurrency", "request_rate", "itl_slo", "hbm_bandwidth"):
            assert session.value(cell) == session.baseline[cell]
        assert app.table.get_cell("hbm_bandwidth", "delta").plain == ""

    drive(app, script)


def test_an_unreachable_slo_shows_plans_message() -> None:
    app = tiny_app()
    expected = plan_report.unreachable(plans_for(["itl=0.1 ms"], "12 request/s"))

    async def script(pilot: Pilot) -> None:
        await open_plan(pilot)
        await ask(pilot, ttft="", itl="0.1 ms", rate="12 request/s")
        assert app.views["plan"].answer.message == expected
        assert expected in str(app.query_one("#plan-status").render())
        assert app.query_one("#plans", DataTable).row_count == 0

    drive(app, script)


def test_a_rate_without_a_unit_is_refused_in_the_view_and_the_app_carries_on() -> None:
    app = tiny_app()

    async def script(pilot: Pilot) -> None:
        await open_plan(pilot)
        await ask(pilot, rate="20")
        status = str(app.query_one("#plan-status").render())
        assert "expected a number with a unit" in status
        await pilot.press("1")
        assert app.view == "explain"

    drive(app, script)


def test_the_applied_plan_shows_in_the_sheet_the_ttft_and_itl_of_its_row() -> None:
    """The row's TTFT and ITL are the cells the SLOs hold (at the rate, the worst gap); once
    applied, the sheet and its summary strip show those very numbers, for an aggregated
    plan (whose worst gap is a prefill's stall, not the decode step) as for the others."""
    app = tiny_app()

    async def script(pilot: Pilot) -> None:
        await open_plan(pilot)
        await ask(pilot, ttft="1 s", itl="30 ms", rate="12 request/s")
        answer = app.views["plan"].answer
        table = app.query_one("#plans", DataTable)
        row = answer.rows[0]
        cells = [str(c) for c in table.get_row_at(0)]
        assert cells[4] == number(row.plan.ttft)
        assert cells[5] == number(row.plan.itl)
        await pilot.press("a")
        await pilot.pause()
        sheet = app.session.sheet
        assert sheet.magnitude("ttft_at_rate") == pytest.approx(row.plan.ttft)
        assert sheet.magnitude("itl_worst") == pytest.approx(row.plan.itl)
        assert sheet.magnitude("itl") < sheet.magnitude("itl_worst")  # the case reported
        strip = str(app.query_one("#summary").render())
        assert f"(worst {cells[5]} ms)" in strip
        assert f"TTFT {cells[4]} ms" in strip or f"(at rate {cells[4]} ms)" in strip

    drive(app, script)


def test_a_malformed_slo_is_named_as_the_view_names_it_not_as_no_plan() -> None:
    app = tiny_app()

    async def script(pilot: Pilot) -> None:
        await open_plan(pilot)
        await ask(pilot, ttft="abc")
        status = str(app.query_one("#plan-status").render())
        assert status == ("malformed SLO in the plan's 'TTFT ≤' field ('abc'): expected a "
                          "number with a unit (like '20 ms')")
        assert "--slo" not in status
        chart = app.query_one("#plan-frontier")
        chart.plt.clear_figure()
        chart._painter(chart.plt)  # type: ignore[attr-defined]
        assert "malformed SLO" in chart.plt.monitor.title  # type: ignore[attr-defined]
        assert "no plan meets" not in chart.plt.monitor.title  # type: ignore[attr-defined]

    drive(app, script)


def test_keys_typed_at_once_after_e_or_tab_all_reach_the_field_that_has_the_focus() -> None:
    """A terminal delivers fast typing as keys queued together: they reach the plans table
    (or the field Tab leaves) before the binding has moved the focus, and must still land in
    the field that has it, in order."""
    from textual import events

    app = tiny_app()

    async def burst(keys: list[str]) -> None:
        for key in keys:
            event = events.Key(key, key if len(key) == 1 else None)
            event.set_sender(app)
            await app._post_message(event)  # no wait between them, as a burst arrives

    async def script(pilot: Pilot) -> None:
        await open_plan(pilot)
        await burst(["e", *"250ms"])
        await settle(pilot)
        assert app.query_one("#plan-ttft", Input).value == "250ms"
        assert app.view == "plan"
        await burst(["tab", *"40ms", "tab", "tab", *"9"])  # Tab, and on at once
        await settle(pilot)
        assert app.query_one("#plan-ttft", Input).value == "250ms"
        assert app.query_one("#plan-itl", Input).value == "40ms"
        assert app.query_one("#plan-rate", Input).value == "9"
        assert app.focused is app.query_one("#plan-rate")

    drive(app, script)


# ---------------------------------------------------------------------- simulate
def test_the_simulation_views_percentiles_are_simulates() -> None:
    app = make_app(load())
    sheet = load().sheet
    run = simulate(sheet, Setup(users=64, requests=simulation.REQUESTS, seed=simulation.SEED))
    expected = summarise(run, sheet).latency

    async def script(pilot: Pilot) -> None:
        await pilot.press("7")
        await settle(pilot)
        answer = app.views["simulate"].answer
        assert answer is not None and answer.loop == "closed loop, 64 users"
        assert answer.label == "roofline"
        text = str(app.query_one("#sim-summary").render())
        for metric in ("ttft", "itl"):
            for key in ("p50", "p99"):
                assert answer.stat(metric, key) == expected.of(metric).get(key)
                assert f"{key} {number(expected.of(metric).get(key))}" in text
            cdf = getattr(answer, metric).x  # a CDF: rising, through p50 at its middle
            assert list(cdf) == sorted(cdf)
            assert cdf[0] <= expected.of(metric).p50 <= cdf[-1]
        assert "simulated · roofline · closed loop, 64 users" in text

    drive(app, script)


def test_the_simulation_runs_only_when_shown_and_the_sheet_changed(monkeypatch) -> None:
    calls: list[float] = []
    real = simulation.run

    def counted(sheet, label, open_loop=False, **kw):  # type: ignore[no-untyped-def]
        calls.append(sheet.magnitude("concurrency"))
        return real(sheet, label, open_loop, requests=50)

    monkeypatch.setattr(simulation, "run", counted)
    app = make_app(load())

    async def script(pilot: Pilot) -> None:
        await base.edit(pilot, "concurrency", "32")
        assert calls == []  # not on screen
        await pilot.press("7")
        await settle(pilot)
        assert calls == [32]
        await pilot.press("1")
        await pilot.press("7")
        await settle(pilot)
        assert calls == [32]  # the sheet did not change
        await pilot.press("1")
        await base.edit(pilot, "concurrency", "16")
        await pilot.press("7")
        await settle(pilot)
        assert calls == [32, 16]

    drive(app, script)


def test_the_simulation_runs_the_scenarios_engines_scheduler(monkeypatch) -> None:
    from perfgraph.scenario.loading import ScenarioSpec

    schedulers: list[str] = []
    real = simulation.run

    def seen(sheet, label, open_loop=False, **kw):  # type: ignore[no-untyped-def]
        schedulers.append(kw["scheduler"])
        return real(sheet, label, open_loop, requests=50, scheduler=kw["scheduler"])

    monkeypatch.setattr(simulation, "run", seen)
    app = make_app(load(ScenarioSpec(engine="sglang")))

    async def script(pilot: Pilot) -> None:
        await pilot.press("7")
        await settle(pilot)
        assert schedulers == ["sglang"]  # as perfgraph simulate --engine sglang

    drive(app, script)


# ---------------------------------------------------------------------- snapshots
#: Frozen answers (tests/data/tui/PROVENANCE.md): the views draw them as they draw a search or a
#: run, so the snapshots do not move with the plan's or the simulator's physics.
def frozen_plan() -> PlanAnswer:
    doc = json.loads((TUI_DATA / "plan_answer.json").read_text())
    question = (("request_rate", "4.832 request/s"), ("ttft_slo", "500ms"), ("itl_slo", "50ms"))
    return PlanAnswer.from_json(doc, question, {}, seconds=0.5)


def frozen_simulation() -> SimAnswer:
    return SimAnswer.from_json(json.loads((TUI_DATA / "simulate_answer.json").read_text()))


@pytest.fixture
def frozen(monkeypatch) -> None:
    monkeypatch.setattr(planning, "search", lambda *a, **k: frozen_plan())
    monkeypatch.setattr(simulation, "run", lambda *a, **k: frozen_simulation())


def _show(key: str):  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot) -> None:
        await pilot.pause()  # the first paint: the hidden views mount after it
        await pilot.press(key)
        await settle(pilot)
    return run_before


#: 160 × 50 here; 80 × 24 and 120 × 40 in test_tui_sizes, with every other view.
@pytest.mark.parametrize("size", [SIZE], ids=["default"])
def test_snapshot_plan_view(snap_compare, fixture_load, frozen, size) -> None:
    assert snap_compare(make_app(fixture_load(), cell="throughput"), terminal_size=size,
                        run_before=_show("6"))


@pytest.mark.parametrize("size", [SIZE], ids=["default"])
def test_snapshot_simulation_view(snap_compare, fixture_load, frozen, size) -> None:
    assert snap_compare(make_app(fixture_load(), cell="throughput"), terminal_size=size,
                        run_before=_show("7"))


def test_the_frozen_answers_are_what_the_commands_answer() -> None:
    """The snapshots' answers came from ``perfgraph plan --format json`` and the simulation
    view's run: their shape is the live one (a renamed key fails here, not in a picture)."""
    doc = json.loads((TUI_DATA / "plan_answer.json").read_text())
    assert set(doc) >= {"searched", "feasible", "best", "frontier", "runners_up"}
    live = simulation.run(load().sheet, "roofline", requests=50).to_json()
    frozen_doc = json.loads((TUI_DATA / "simulate_answer.json").read_text())
    assert set(live) == set(frozen_doc)
    assert set(live["summary"]) == set(frozen_doc["summary"])
    assert Path(TUI_DATA / "PROVENANCE.md").read_text().count("_answer.json") >= 2


# ---------------------------------------------------------------------- the scenario bar
def test_the_bars_choice_opens_its_list_only_when_picked_and_switches() -> None:
    from textual.widgets import OptionList

    from perfgraph.tui.screens.dialogs import ChoiceScreen

    app = make_app(load())

    async def script(pilot: Pilot) -> None:
        assert not app.query(OptionList).filter("#choice-list")  # no list at startup
        choice = app.query_one("#choose-hardware")
        choice.focus()
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ChoiceScreen) and "h200" in screen.options
        screen.query_one(OptionList).highlighted = screen.options.index("h200")
        await pilot.press("enter")
        await pilot.pause()
        assert app.session.choices()["hardware"] == "h200"
        assert choice.value == "h200" and len(app.session.undo_labels) == 1
        await pilot.press("u")
        await pilot.pause()
        assert choice.value == "h100-sxm"  # the bar follows the undo, posting nothing
        assert app.session.choices()["hardware"] == "h100-sxm" and not app.session.undo_labels

    drive(app, script)


def test_80x24_keeps_the_table_and_the_plan_or_the_simulation_readable(frozen) -> None:
    app = make_app(load(), cell="throughput")

    async def script(pilot: Pilot) -> None:
        await pilot.press("6")
        await settle(pilot)
        table, plans = app.table.region, app.query_one("#plans").region
        assert table.height >= 8 and plans.y >= table.bottom
        assert plans.width >= 76 and plans.height >= 5  # the best plan and four more
        assert app.query_one("#plan-rate").region.width >= 16
        await pilot.press("7")
        await settle(pilot)
        summary = app.query_one("#sim-summary").region
        assert summary.width >= 76 and summary.height >= 6  # p50/p90/p99 of three metrics

    drive(app, script, size=SMALL)
