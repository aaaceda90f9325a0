"""The dashboard, driven as a user drives it (Textual's Pilot), and its snapshots.

Values on screen are checked against ``perfgraph eval`` and the seed's worked numbers
(seeds/how-fast-can-llm-inference-go.txt): the dashboard shows the graph, nothing else.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from textual import events
from textual.pilot import Pilot
from textual.widgets import Input, OptionList, TabbedContent

from perfgraph.cli.main import main
from perfgraph.engine.numbers import quantity
from perfgraph.scenario.loading import Scenario, ScenarioSpec, load
from perfgraph.tui import plot_data as curves
from perfgraph.tui.app import PerfgraphApp, make_app
from perfgraph.tui.screens.dialogs import ConfirmScreen, SaveAsScreen
from perfgraph.tui.screens.help import HelpScreen
from perfgraph.tui.view_registry import VIEWS
from perfgraph.tui.widgets.edit_bar import EditBar
from perfgraph.tui.widgets.explain_panel import ExplainPanel

ROOT = Path(__file__).resolve().parent.parent
SIZE = (160, 50)
Script = Callable[[Pilot], Awaitable[None]]


def drive(app: PerfgraphApp, script: Script) -> None:
    async def session() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await script(pilot)
    asyncio.run(session())


def shown(app: PerfgraphApp, name: str, column: str = "value") -> str:
    return app.table.get_cell(name, column).plain


async def find(pilot: Pilot, name: str) -> None:
    """Jump to a cell as a user does from anywhere: the command palette, ``explain NAME``."""
    await pilot.press("ctrl+p")
    await paste(pilot, f"explain {name}")
    await pilot.press("enter")
    assert pilot.app.table.current == name  # type: ignore[attr-defined]


async def go_to(pilot: Pilot, name: str) -> None:
    """Put the cursor on a cell (what the arrow keys do, without a key per row)."""
    pilot.app.table.go_to(name)  # type: ignore[attr-defined]
    await pilot.pause()


async def paste(pilot: Pilot, text: str) -> None:
    """Paste into the focused input, as a terminal delivers a paste: one event."""
    assert pilot.app.focused is not None
    pilot.app.focused.post_message(events.Paste(text))
    await pilot.pause()


async def edit(pilot: Pilot, name: str, text: str, *, keep: bool = True) -> None:
    """Edit a cell: ``e``, then type short text key by key, or paste a formula."""
    await go_to(pilot, name)
    await pilot.press("e")
    if len(text) <= 6:
        await pilot.press(*text)
    else:
        await paste(pilot, text)
    await pilot.press("enter" if keep else "escape")


def eval_json(*sets: str) -> dict[str, dict]:
    args = ["eval", "--format", "json"]
    for s in sets:
        args += ["--set", s]
    return args


def test_changing_concurrency_shows_what_perfgraph_eval_gives(capsys) -> None:
    assert main(eval_json("concurrency=128")) == 0
    expected = json.loads(capsys.readouterr().out)["quantities"]
    app = make_app(load())

    async def script(pilot: Pilot) -> None:
        assert shown(app, "concurrency") == "64"
        await find(pilot, "concurrency")
        await pilot.press("e", "1", "2", "8", "enter")
        sheet = app.session.sheet
        for name in ("throughput", "itl", "e2e_latency", "throughput_per_gpu"):
            q = expected[name]
            assert sheet.magnitude(name) == pytest.approx(q["value"], rel=1e-12)
            assert shown(app, name) == quantity(q["value"], q["unit"])
        assert shown(app, "concurrency", "mark") == "edited"
        assert shown(app, "throughput", "delta").startswith("▲+")
        assert shown(app, "hbm_capacity", "delta") == ""
        assert "ITL " + shown(app, "itl") in str(app.query_one("#summary").render())

    drive(app, script)


def test_pinning_the_seeds_parameter_count_shows_the_seeds_numbers() -> None:
    app = make_app(load())

    async def script(pilot: Pilot) -> None:
        await edit(pilot, "n_params", "7.00e10")
        await edit(pilot, "n_active_params", "n_params")  # an input pinned to a formula
        # seeds/how-fast-can-llm-inference-go.txt: 36.22 ms, 12.85 ms, 13.20 s, 4980 tok/s
        assert shown(app, "ttft") == "36.22 ms"
        assert shown(app, "itl") == "12.85 ms"
        assert shown(app, "e2e_latency") == "13.2 s"
        assert shown(app, "throughput") == "4980 tok/s"
        assert shown(app, "compute_bound_threshold") == "295.4 tok"

    drive(app, script)


def test_pin_a_result_reset_it_and_undo() -> None:
    app = make_app(load())

    async def script(pilot: Pilot) -> None:
        await edit(pilot, "decode_step_time", "20 ms")
        assert shown(app, "decode_step_time", "mark") == "pinned"
        assert shown(app, "itl") == "20 ms"
        assert app.session.sheet.magnitude("throughput") == pytest.approx(
            65536 / (1024 * 0.020), rel=1e-9)  # 1024 steps of 20 ms for 64 × 1024 tokens
        await pilot.press("x")  # reset the pinned cell to its formula
        assert shown(app, "itl") == "12.93 ms"
        assert shown(app, "decode_step_time", "mark") == ""
        await pilot.press("u")  # undo the reset: the pin is back
        assert shown(app, "itl") == "20 ms"
        await pilot.press("u")
        assert shown(app, "itl") == "12.93 ms" and not app.session.can_undo

    drive(app, script)


def test_an_invalid_formula_shows_why_and_the_app_carries_on() -> None:
    app = make_app(load())

    async def script(pilot: Pilot) -> None:
        await go_to(pilot, "concurrency")
        await pilot.press("e")
        await paste(pilot, "nope + 1")
        bar = app.query_one(EditBar)
        assert "unknown name 'nope'" in str(bar.render())
        assert shown(app, "concurrency") == "64"  # the sheet shows the cell as it was
        await pilot.press("enter")  # not accepted: the edit stays open
        assert bar.editing and "unknown name 'nope'" in str(bar.render())
        assert app.focused is app.table  # the table keeps the focus; its keys are the edit's
        await pilot.press("escape")
        assert not bar.editing and shown(app, "concurrency") == "64"
        assert str(bar.render()) == "concurrency = 64"  # idle: what the cell holds
        # a formula that parses but fails is an error value, like a spreadsheet's #DIV/0!
        await edit(pilot, "decode_step_time", "decode_memory_time / (pp - 1)")
        assert shown(app, "decode_step_time").startswith("#ERR division by zero")
        assert shown(app, "itl").startswith("#ERR depends on decode_step_time")
        # the rest of the sheet still computes
        assert shown(app, "prefill_time") == "36.51 ms"
        await pilot.press("2")  # the roofline still draws
        assert app.query_one(TabbedContent).active == "roofline"

    drive(app, script)


def test_an_edit_takes_every_key_and_moves_no_focus_and_lays_nothing_out() -> None:
    """The formula bar never takes the focus: the table hands it the keys, so keys that act
    elsewhere (q quits, 2 shows a view, u undoes) are typed, and Enter repaints without a
    layout (issue 15: no layout refresh or restyle per edit)."""
    app = make_app(load())
    layouts: list[object] = []

    async def script(pilot: Pilot) -> None:
        app.screen.screen_layout_refresh_signal.subscribe(app, layouts.append)
        await go_to(pilot, "concurrency")
        bar = app.query_one(EditBar)
        await pilot.press("e", "q", "2", "u")
        assert bar.text == "q2u" and app.is_running and app.view == "explain"
        assert "unknown name 'q2u'" in str(bar.render()) and shown(app, "concurrency") == "64"
        await pilot.press("backspace", "backspace", "backspace", "9", "6", "left", "left", "1")
        assert bar.text == "196" and shown(app, "concurrency") == "196"  # previewed
        assert app.focused is app.table and "Esc cancel" in str(app.keys.render())
        layouts.clear()
        await pilot.press("enter")
        await pilot.pause()
        assert layouts == [] and app.focused is app.table
        assert not bar.editing and str(bar.render()) == "concurrency = 196"
        assert shown(app, "concurrency", "mark") == "edited"
        assert "e edit" in str(app.keys.render())
        await pilot.press("u")  # the table's keys are its own again
        assert shown(app, "concurrency") == "64" and not app.session.can_undo

    drive(app, script)


def test_the_formula_bar_shows_what_the_highlighted_cell_holds() -> None:
    app = make_app(load(), cell="itl")

    async def script(pilot: Pilot) -> None:
        bar = app.query_one(EditBar)
        formula = app.session.sheet.declaration("itl").formula
        assert formula is not None and str(bar.render()) == f"itl = {formula.text}"
        await edit(pilot, "decode_step_time", "20 ms")  # a pin: now a value in its unit
        assert str(bar.render()) == "decode_step_time = 20 (in ms)"
        await pilot.press("x")  # reset: the formula again
        loaded = app.session.sheet.declaration("decode_step_time").formula
        assert loaded is not None and str(bar.render()) == f"decode_step_time = {loaded.text}"
        await go_to(pilot, "concurrency")
        assert str(bar.render()) == "concurrency = 64"

    drive(app, script)


def test_explain_follows_precedents_and_dependents() -> None:
    app = make_app(load(), cell="itl")

    async def script(pilot: Pilot) -> None:
        panel = app.query_one(ExplainPanel)
        assert panel.name_shown == "itl"
        # the exposed TP comm: 160 all-reduces × (5 µs + 1,048,576 B ÷ 450 GB/s one way) = 1.173 ms
        assert panel.explanation.substituted == "(12.93 ms + 0 × (1.173 ms + 0 ms)) ÷ 1"
        reads = panel.query_one("#precedents", OptionList)
        assert reads.get_option_at_index(0).id == "decode_step_time"
        reads.focus()
        await pilot.press("down", "enter")  # highlight the first precedent, then go there
        assert app.table.current == "decode_step_time"
        assert panel.name_shown == "decode_step_time"
        dependents = panel.query_one("#dependents", OptionList)
        assert "itl" in [dependents.get_option_at_index(i).id
                         for i in range(dependents.option_count)]
        await pilot.press("question_mark")  # help, over whatever is shown
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)

    drive(app, script)


def test_switching_hardware_keeps_edits_and_undo_switches_back() -> None:
    app = make_app(load())
    h200 = load(ScenarioSpec(hardware="h200", sets=(("concurrency", "32"),))).sheet

    async def script(pilot: Pilot) -> None:
        await edit(pilot, "concurrency", "32")
        app.choose("hardware", "h200")
        await pilot.pause()
        assert app.session.choices()["hardware"] == "h200"
        assert shown(app, "concurrency") == "32"
        assert app.session.sheet.magnitude("itl") == h200.magnitude("itl")
        assert "H200" in app.sub_title
        await pilot.press("u")
        assert app.session.choices()["hardware"] == "h100-sxm"
        assert shown(app, "concurrency") == "32"
        # a choice the hardware cannot serve is refused, and the app stays as it was
        app.choose("precision", "fp4")
        await pilot.pause()
        assert app.session.choices()["precision"] == "fp8"

    drive(app, script)


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "long.toml"
    shutil.copy(ROOT / "workloads" / "long-prompt-8k1k.toml", path)
    return path


def test_save_then_reload_gives_the_same_values_and_the_comments(scenario_file: Path) -> None:
    app = make_app(load(ScenarioSpec(file=str(scenario_file))))

    async def script(pilot: Pilot) -> None:
        await edit(pilot, "concurrency", "32")
        await edit(pilot, "itl", "decode_step_time * 1.1")
        await pilot.press("ctrl+s")
        again = load(ScenarioSpec(file=str(scenario_file))).sheet
        sheet = app.session.sheet
        assert all(again.raw(n) == sheet.raw(n) for n in sheet.names)
        text = scenario_file.read_text()
        assert "concurrency = 32           # requests in flight" in text
        assert text.startswith("# Long prompt: 8k-token prompts")
        # changed on disk since: the app asks before overwriting it
        scenario_file.write_text(text + "# edited elsewhere\n")
        await pilot.press("ctrl+s")
        assert isinstance(app.screen, ConfirmScreen)
        assert "# edited elsewhere" in scenario_file.read_text()
        await pilot.press("y")
        assert scenario_file.read_text() == text

    drive(app, script)


def test_save_as_writes_a_new_scenario_file(tmp_path: Path) -> None:
    app = make_app(load())
    target = tmp_path / "mine.toml"

    async def script(pilot: Pilot) -> None:
        await edit(pilot, "tp", "4")
        await pilot.press("ctrl+s")  # no file yet: save asks where
        assert isinstance(app.screen, SaveAsScreen)
        field = app.screen.query_one(Input)
        field.value = str(target)
        await pilot.press("enter")
        assert 'workload = "chat-1k1k"' in target.read_text()
        assert load(ScenarioSpec(file=str(target))).sheet.magnitude("tp") == 4

    drive(app, script)


def test_apply_a_lever_and_undo_it() -> None:
    levers = pytest.importorskip("perfgraph.whatif.lever_advice")
    scenario: Scenario = load()
    advice = [a for a in levers.diagnose(scenario.sheet.fork()) if a.error is None]
    assert advice, "the default scenario has at least one applicable lever"
    app = make_app(scenario)
    before = {n: scenario.sheet.raw(n) for n in scenario.sheet.names}

    async def script(pilot: Pilot) -> None:
        await pilot.press("4")
        await app.workers.wait_for_complete()
        await pilot.pause()
        panel = app.query_one("#levers-panel")
        assert [a.lever.id for a in panel.advice] == \
            [a.lever.id for a in levers.diagnose(scenario.sheet.fork())]
        first = next(i for i, a in enumerate(panel.advice) if a.error is None)
        advice = panel.advice[first]
        await pilot.press(*["down"] * first, "a")
        await app.workers.wait_for_complete()
        for effect in advice.effects:  # the live sheet now shows what the advice computed
            assert app.session.value(effect.cell) == pytest.approx(effect.after, rel=1e-12)
        for name, _ in advice.lever.pins:
            assert shown(app, name, "mark") in ("edited", "pinned")
        assert advice.lever.id not in [a.lever.id for a in panel.advice]  # now in effect
        await pilot.press("u")
        assert {n: app.session.sheet.raw(n) for n in before} == before
        assert shown(app, advice.effects[0].cell, "delta") == ""

    drive(app, script)


# ---------------------------------------------------------------------- plots' data
def test_the_roofline_is_the_sheets_roof_with_the_scenario_on_it() -> None:
    sheet = load(ScenarioSpec(precision="bf16")).sheet
    roof = curves.dashboard_roofline(sheet)
    # llm-inference-performance: 989 TFLOP/s ÷ 3.35 TB/s ≈ 295 FLOP/B on an H100 in BF16
    assert round(roof.ridge) == 295
    peak, bandwidth = sheet.magnitude("peak_flops", "TFLOP/s"), sheet.magnitude(
        "hbm_bandwidth", "TB/s")
    for x, y in zip(roof.roof.x, roof.roof.y, strict=True):
        assert y == pytest.approx(min(peak, bandwidth * x), rel=1e-12)
    assert roof.roof.x[0] < sheet.magnitude("decode_intensity") < roof.ridge
    points = {p.label: (p.x[0], p.y[0]) for p in roof.points}
    assert points["decode"] == (sheet.magnitude("decode_intensity"),
                                sheet.magnitude("attainable_flops"))
    assert points["prefill"][1] == pytest.approx(peak)  # prefill sits on the flat roof


def test_the_concurrency_curves_pass_through_the_scenario() -> None:
    sheet = load().sheet
    data = curves.concurrency_curves(sheet)
    at = data.throughput.x.index(64.0)
    assert data.throughput.y[at] == pytest.approx(sheet.magnitude("throughput"), rel=1e-12)
    assert data.itl.y[at] == pytest.approx(sheet.magnitude("itl"), rel=1e-12)
    assert data.kv_limit == sheet.magnitude("max_concurrency_paged")
    assert data.throughput.x[0] == 1 and data.throughput.x[-1] >= data.kv_limit
    ys = data.throughput.y  # more users, never fewer tokens/s
    assert all(b >= a * (1 - 1e-12) for a, b in zip(ys, ys[1:], strict=False))


# ---------------------------------------------------------------------- the command
def test_perfgraph_tui_needs_a_terminal(capsys) -> None:
    assert main(["tui"]) == 2  # pytest's stdin and stdout are not a terminal
    err = capsys.readouterr().err
    assert err == ("perfgraph: error: perfgraph tui needs an interactive terminal; for "
                   "output to a pipe or a file use 'perfgraph eval'\n")


def test_perfgraph_tui_reports_a_bad_scenario_before_any_screen(capsys) -> None:
    assert main(["tui", "--hardware", "h100-sxn"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("perfgraph: error: ") and "did you mean 'h100-sxm'" in err
    assert "Traceback" not in err


# ---------------------------------------------------------------------- every lever
#: Scenarios (as ``perfgraph levers`` takes them) that, together, are advised every lever of
#: the shipped playbook; the tp_double ones start from TP 2 and TP 4 (issue 15: it set TP 1).
LEVER_SCENARIOS = {
    "tp-to-fit": ["--set", "tp=1", "--precision", "bf16"],
    "low-mbu": ["--set", "bandwidth_efficiency=0.5", "--set", "step_overhead=2 ms"],
    "blind-routing": ["--set", "chat_turn=20", "--set", "turn_tokens=1300",
                      "--set", "prefix_hit_rate=0.958", "--set", "replicas=4"],
    "spec-on-compute-bound": [str(ROOT / "tests/data/good/levers-healthy.toml"),
                              "--set", "spec_k=4"],
    "long-prompt": [str(ROOT / "tests/data/good/serving-8b-long-prompt.toml")],
    "naive-kv": [str(ROOT / "tests/data/good/serving-8b-naive-kv.toml")],
    "tp2-itl-slo": ["--set", "tp=2", "--set", "itl_slo=5 ms"],
    "tp4-itl-slo": ["--set", "tp=4", "--set", "itl_slo=5 ms"],
}


def cli_levers(args: list[str], capsys: pytest.CaptureFixture[str]) -> list[dict]:
    assert main(["levers", *args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["advice"]


def scenario_of(args: list[str]) -> Scenario:
    files = [a for a in args if a.endswith(".toml")]
    sets = tuple(tuple(v.split("=", 1)) for k, v in zip(args, args[1:], strict=False)
                 if k == "--set")
    precision = args[args.index("--precision") + 1] if "--precision" in args else None
    return load(ScenarioSpec(file=files[0] if files else None, sets=sets,  # type: ignore[arg-type]
                             precision=precision))


@pytest.mark.parametrize("name", list(LEVER_SCENARIOS))
def test_every_lever_applies_in_the_dashboard_as_perfgraph_levers_computes(
        name: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = LEVER_SCENARIOS[name]
    advice = cli_levers(args, capsys)
    app = make_app(scenario_of(args))
    before = {n: app.session.sheet.raw(n) for n in app.session.sheet.names}

    async def script(pilot: Pilot) -> None:
        await pilot.press("4")
        for row, expected in enumerate(advice):
            await app.workers.wait_for_complete()
            await pilot.pause()
            panel = app.query_one("#levers-panel")
            assert [a.lever.id for a in panel.advice] == [a["lever"]["id"] for a in advice]
            table = panel.query_one("#advice")
            table.move_cursor(row=row)
            await pilot.press("a")  # one key, one lever, one undo step
            await app.workers.wait_for_complete()
            assert app.session.undo_labels == [f"lever {expected['lever']['title']}"]
            for effect in expected["effects"]:  # what perfgraph levers computed on a fork
                assert app.session.value(effect["cell"]) == pytest.approx(
                    effect["after"], rel=1e-12), (expected["lever"]["id"], effect["cell"])
            await pilot.press("u")
            await pilot.pause()
            assert {n: app.session.sheet.raw(n) for n in before} == before
            assert not app.session.can_undo

    drive(app, script)


def test_double_tp_goes_from_two_to_four_and_from_four_to_eight(capsys) -> None:
    for tp, doubled in ((2, 4), (4, 8)):
        app = make_app(load(ScenarioSpec(sets=(("tp", str(tp)), ("itl_slo", "5 ms")))))

        async def script(pilot: Pilot, app: PerfgraphApp = app, doubled: int = doubled) -> None:
            await pilot.press("4")
            await app.workers.wait_for_complete()
            await pilot.pause()
            panel = app.query_one("#levers-panel")
            row = [a.lever.id for a in panel.advice].index("tp_double")
            panel.query_one("#advice").move_cursor(row=row)
            await pilot.press("a")
            await pilot.pause()
            assert app.session.value("tp") == doubled
            assert str(app.query_one("#choose-tp").value) == str(doubled)  # the bar follows
            assert len(app.session.undo_labels) == 1

        drive(app, script)


# ---------------------------------------------------------------------- quitting
def test_quit_with_unsaved_edits_asks_first(scenario_file: Path) -> None:
    app = make_app(load(ScenarioSpec(file=str(scenario_file))))

    async def script(pilot: Pilot) -> None:
        await edit(pilot, "concurrency", "32")
        await pilot.press("q")
        assert isinstance(app.screen, ConfirmScreen)  # not quit: it asks
        await pilot.press("n")
        assert not isinstance(app.screen, ConfirmScreen) and app.is_running
        await pilot.press("ctrl+q")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await pilot.press("ctrl+s")  # saved: nothing to lose
        assert not app.session.unsaved
        await pilot.press("u")  # undone after the save: unsaved again
        assert app.session.unsaved
        await pilot.press("q", "y")
        await pilot.pause()
        assert not app.is_running

    drive(app, script)


def test_quit_without_edits_quits_at_once() -> None:
    app = make_app(load())

    async def script(pilot: Pilot) -> None:
        await edit(pilot, "concurrency", "32")
        await pilot.press("u")  # back as loaded: nothing unsaved
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running

    drive(app, script)


# ---------------------------------------------------------------------- views
def test_every_view_has_the_protocols_members_and_its_own_key() -> None:
    assert [v.key for v in VIEWS] == [str(i) for i in range(1, len(VIEWS) + 1)]
    assert len({v.view_id for v in VIEWS}) == len(VIEWS)
    for view in VIEWS:
        for member in ("create", "refresh_from"):
            assert hasattr(view.widget_class(), member), (view, member)


def test_a_hidden_view_is_not_recomputed_by_an_edit(monkeypatch) -> None:
    calls: list[str] = []
    real = curves.dashboard_roofline
    monkeypatch.setattr(curves, "dashboard_roofline", lambda sheet: (
        calls.append("roofline"), real(sheet))[1])
    app = make_app(load())

    async def script(pilot: Pilot) -> None:
        await edit(pilot, "concurrency", "32")
        await edit(pilot, "concurrency", "16")
        assert calls == []  # the roofline is not on screen
        await pilot.press("2")
        await pilot.pause()
        assert calls == ["roofline"]  # drawn once, when shown
        await pilot.press("2")
        assert calls == ["roofline"]

    drive(app, script)


# ---------------------------------------------------------------------- snapshots
#: The snapshots render a frozen copy of the sheets and one catalog entry of each kind
#: (tests/data/tui/, see its PROVENANCE.md), so a new cell in a live sheet leaves them alone.
TUI_DATA = ROOT / "tests" / "data" / "tui"
SMALL = (80, 24)


@pytest.fixture
def fixture_load(monkeypatch) -> Callable[..., Scenario]:
    from perfgraph.scenario import catalog, choices, engine_files, loading, save

    folders = {"model": "models", "hardware": "hardware", "workload": "workloads"}
    monkeypatch.setattr(catalog, "sheet_paths",
                        lambda: sorted((TUI_DATA / "sheets").glob("*.toml")))
    for module in (catalog, choices, save):
        monkeypatch.setattr(module, "catalog_dir", lambda kind: TUI_DATA / folders[kind])
    monkeypatch.setattr(loading, "PRECISIONS_FILE", TUI_DATA / "precisions.toml")
    monkeypatch.setattr(engine_files, "ENGINES_DIR", TUI_DATA / "engines")
    for cached in (loading._sheet_declarations, loading.precisions):
        cached.cache_clear()
    yield load
    for cached in (loading._sheet_declarations, loading.precisions):
        cached.cache_clear()


def test_the_fixture_sheets_are_the_ones_rendered(fixture_load) -> None:
    sheet = fixture_load().sheet
    origin = sheet.declaration("throughput").origin
    assert origin is not None and str(TUI_DATA / "sheets") in str(origin.file)
    app = make_app(fixture_load())
    assert app.session.choices() == {"model": "llama-3.1-70b", "hardware": "h100-sxm",
                                     "workload": "chat-1k1k", "precision": "fp8"}


def test_snapshot_main_screen(snap_compare, fixture_load) -> None:
    assert snap_compare(make_app(fixture_load(), cell="throughput"), terminal_size=SIZE)


def test_snapshot_explain_view_after_a_pin(snap_compare, fixture_load) -> None:
    async def pin(pilot: Pilot) -> None:
        await edit(pilot, "decode_step_time", "20 ms")
        await pilot.press("down")  # to itl: its explanation shows the pinned value

    assert snap_compare(make_app(fixture_load()), terminal_size=SIZE, run_before=pin)


def test_snapshot_roofline_view(snap_compare, fixture_load) -> None:
    assert snap_compare(make_app(fixture_load()), press=["2"], terminal_size=SIZE)


def test_snapshot_80x24_editing(snap_compare, fixture_load) -> None:
    async def typing(pilot: Pilot) -> None:
        await go_to(pilot, "concurrency")
        await pilot.press("e", "1", "2", "8")

    assert snap_compare(make_app(fixture_load()), terminal_size=SMALL, run_before=typing)


def test_80x24_keeps_the_table_and_a_view_on_screen(fixture_load) -> None:
    app = make_app(fixture_load(), cell="throughput")

    async def script(pilot: Pilot) -> None:
        table, views = app.table.region, app.query_one(TabbedContent).region
        assert table.width >= 70 and table.height >= 8  # name, value and delta columns
        assert views.width >= 78 and views.height >= 8 and views.y >= table.bottom
        await pilot.press("2")
        await pilot.pause()
        plot = app.query_one("#roofline-plot").region
        assert plot.height >= 8 and plot.width >= 78

    async def small() -> None:
        async with app.run_test(size=SMALL) as pilot:
            await pilot.pause()
            await script(pilot)
    asyncio.run(small())
