"""The measured view: runs on the model's curves at their own configuration, in the dashboard.

The InferenceMAX Llama-70B FP8 rows (tests/data/measured/PROVENANCE.md) are five
concurrencies at each TP; each (hardware, TP, ISL/OSL) is one line of the view.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, TabbedContent

from perfgraph.cli.main import main
from perfgraph.engine.numbers import quantity
from perfgraph.measured.curves import concurrency_grid, measured_view
from perfgraph.scenario.loading import ScenarioSpec, load
from perfgraph.tui.app import make_app
from perfgraph.tui.widgets.measured_panel import MeasuredPanel, MeasuredPlot

DATA = Path(__file__).parent / "data" / "measured"
IMAX = DATA / "inferencemax_llama70b_fp8"
SIZE = (160, 50)


@pytest.fixture(scope="module")
def view():
    return measured_view([str(IMAX), str(DATA / "bad" / "empty.json")], ScenarioSpec())


def test_one_line_per_configuration_the_runs_were_made_at(view):
    labels = [line.label for line in view.lines]
    # 1k1k: H100 at TP 2, 4, 8 and H200 at TP 1, 2, 4, 8; 8k1k: H100 at TP 2, 4, 8
    assert len(labels) == 10 and len(set(labels)) == 10
    assert labels[0] == "llama-3.3-70b · h100-sxm · fp8 · TP 2 · 921.6/921.6"
    assert "llama-3.3-70b · h100-sxm · fp8 · TP 8 · 7373/921.6" in labels
    assert all(len(line.runs) == 5 for line in view.lines)
    assert [p.source for p in view.measured.problems] == [str(DATA / "bad" / "empty.json")]


def test_each_curve_passes_through_what_compare_models_for_its_runs(view):
    """The curve at a run's concurrency is the modelled throughput and TPOT that
    `perfgraph compare` holds the run against (the same sheet, the same configuration)."""
    checked = 0
    for line in view.lines:
        x = list(line.model["concurrency"])
        for c in line.runs:
            i = x.index(c.setup.concurrency)
            tpot = c.metric("tpot")
            assert line.model["itl"][i] == pytest.approx(tpot.modelled, rel=1e-9)
            # InferenceMAX gives total tokens/s per GPU: output tokens/s of the run is that
            # × TP × OSL/(ISL + OSL), the model's ``throughput`` like for like
            share = c.setup.osl / (c.setup.isl + c.setup.osl)
            tput = c.metric("throughput")
            assert line.model["throughput"][i] == pytest.approx(
                tput.modelled * c.setup.tp * share, rel=1e-9)
            assert line.points["throughput"][line.runs.index(c)] == pytest.approx(
                tput.measured * c.setup.tp * share, rel=1e-9)
            checked += 1
    assert checked == 50


def test_no_run_sits_above_its_lines_throughput_or_below_its_tpot(view):
    for line in view.lines:
        x = list(line.model["concurrency"])
        for j, conc in enumerate(line.points["concurrency"]):
            i = x.index(conc)
            assert line.points["throughput"][j] <= line.model["throughput"][i]
            assert line.points["itl"][j] >= line.model["itl"][i]


def test_the_curve_at_the_seed_configuration_is_the_seeds():
    """1k1k, TP 2, concurrency 64 on H100 SXM with the seed's P = 7e10 and its FP8 KV cache
    (the vLLM rows' own is BF16, vLLM's --kv-cache-dtype auto): 4980 tok/s, 12.85 ms
    (seeds/how-fast-can-llm-inference-go.txt)."""
    seed = ScenarioSpec(sets=(("n_params", "7e10"), ("n_active_params", "7e10"),
                              ("kv_bytes", "1")))
    view = measured_view([str(IMAX / "1k1k" / "H100.json")], seed)
    line = view.lines[0]
    i = list(line.model["concurrency"]).index(64)
    # the runs drew lengths in [0.8, 1] × 1024 and are modelled at the mean, 921.6: the
    # seed's step at that context, by hand: (7e10 + 64 × 163,840 B × 1.5 × 921.6) ÷ 6.7 TB/s
    # = 12.61 ms (the seed's 12.85 ms at 1024), 64 / 12.61 ms × 2 / 2 GPUs = 5075 tok/s
    assert line.label.endswith("TP 2 · 921.6/921.6")
    itl = (7e10 + 64 * 163_840 * 1.5 * 921.6) / 6.70e12
    assert line.model["itl"][i] == pytest.approx(itl * 1e3, abs=0.01)
    assert line.model["throughput"][i] == pytest.approx(64 / itl, rel=4e-3)


def test_the_grid_spans_the_runs():
    grid = concurrency_grid([4, 64, 1000])
    assert grid[0] == 1 and grid[-1] == 2000
    assert {4, 64, 1000} <= set(grid) and np.all(np.diff(grid) > 0)


# ---------------------------------------------------------------------- in the dashboard
def test_the_measured_view_lists_the_runs_and_plots_the_highlighted_runs_line(view):
    app = make_app(load(), measured=view)

    async def script(pilot: Pilot) -> None:
        await pilot.pause()
        await pilot.press("5")
        assert app.query_one(TabbedContent).active == "measured"
        panel = app.query_one(MeasuredPanel)
        table = app.query_one("#runs", DataTable)
        assert table.row_count == 51  # 50 runs, 1 refused file
        assert panel.shown is view.lines[0]
        first = [str(c) for c in table.get_row_at(0)]
        tpot = view.lines[0].runs[0].metric("tpot")
        assert first[0] == "H100 #0 TP2 922/922"  # 921.6 in and out: 3 digits fit the column
        assert first[3] == f"{100 * tpot.possible:.3g}%"  # 62% (BF16 KV, vLLM's default)
        detail = str(app.query_one("#run-detail").render())  # what compare prints, whole
        assert detail.startswith("H100.json #0: TTFT ")
        tpot_text = f"{quantity(tpot.measured, tpot.unit)} / {quantity(tpot.modelled, tpot.unit)}"
        assert f"TPOT {tpot_text} (" in detail
        await pilot.press(*["down"] * 10)  # row 10: the 1k1k H100 TP 8 runs
        assert panel.shown is not None and panel.shown.label.endswith("TP 8 · 921.6/921.6")
        plot = app.query_one("#measured-throughput", MeasuredPlot)
        assert plot.which == "throughput"
        await pilot.press(*["down"] * 40)  # the refused file's row: the plot stays
        assert str(table.get_row_at(50)[0]) == "empty.json refused"
        assert "empty.json: refused: file is empty" in str(app.query_one("#run-detail").render())
        assert panel.shown.label.endswith("TP 8 · 7373/921.6")

    async def session() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await script(pilot)
    asyncio.run(session())


def test_without_runs_there_is_no_measured_view() -> None:
    app = make_app(load())

    async def session() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("5")
            assert app.query_one(TabbedContent).active == "explain"
            assert not app.query(MeasuredPanel)
    asyncio.run(session())


def test_perfgraph_tui_measured_reads_the_runs_before_any_screen(capsys) -> None:
    assert main(["tui", "--measured", str(IMAX), "--hardware", "h100-sxn"]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'h100-sxm'" in err and "Traceback" not in err


def test_runs_with_nearly_equal_random_lengths_share_a_line() -> None:
    """SGLang's random lengths give each run its own measured mean ISL/OSL: runs within 5%
    share one line, drawn at their median lengths and labelled ≈."""
    spec = ScenarioSpec(model="llama-3.3-70b", hardware="h200", precision="bf16",
                        sets=(("tp", "4"),))
    view = measured_view([str(DATA / "sglang_h200_datacrunch")], spec)
    sizes = {line.label: len(line.runs) for line in view.lines}
    assert sum(sizes.values()) == len([c for c in view.comparisons if c.error is None]) == 14
    assert sizes["llama-3.3-70b · h200 · bf16 · TP 4 · ≈ 509.4/513.9"] == 6
    assert sizes["llama-3.3-70b · h200 · bf16 · TP 4 · 2065/506.8"] == 2  # exactly equal
    for line in view.lines:
        isl = [c.setup.isl for c in line.runs]
        assert max(isl) <= 1.05 * min(isl) + 1e-9
