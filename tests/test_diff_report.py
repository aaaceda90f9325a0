"""``perfgraph diff``'s renderers (``perfgraph.output.diff_report``) on a report built by
hand: a choice, an input, a result that moved (by that input alone), one that fails in
HEAD, and one that did not move past the threshold."""

from __future__ import annotations

import json

from perfgraph.output.diff_report import FORMATTERS, TOGETHER, as_json, as_markdown, as_table
from perfgraph.whatif.scenario_diff import (
    ChoiceChange,
    Contribution,
    DiffReport,
    InputChange,
    MovedResult,
)

REPORT = DiffReport(
    "a.toml", "b.toml", (ChoiceChange("hardware", "h100-sxm", "h200"),),
    (InputChange("hbm_bandwidth", "TB/s", "value", "3.35 TB/s", "4.8 TB/s", 3.35, 4.8),),
    (MovedResult("itl", "ms", False, 20.0, 15.0, None, None,
                 (Contribution("hbm_bandwidth", 15.0, -5.0),)),
     MovedResult("ttft", "ms", False, 100.0, None, None, "div by zero",
                 (Contribution("hbm_bandwidth", None, None, "fails here"),)),
     MovedResult("mfu", "", False, 0.5, 0.5, None, None, ())))
SHOWN = REPORT.moved(0.01)  # itl (25 %) and ttft (fails); mfu did not move


def test_the_table() -> None:
    assert as_table(REPORT, SHOWN, 0.01).splitlines() == [
        "a.toml → b.toml", "",
        "hardware: h100-sxm → h200", "",
        "inputs changed (1)",
        "  hbm_bandwidth  3.35 TB/s → 4.8 TB/s", "",
        "results moved past 1% (2 of 3), largest change first",
        "  name  old     new               delta  ratio",
        "  itl   20 ms   15 ms             -5 ms  0.75×",
        "      hbm_bandwidth alone → 15 ms (-5 ms)",
        "  ttft  100 ms  #ERR div by zero  —      —",
        "      hbm_bandwidth alone: fails here"]


def test_the_markdown() -> None:
    lines = as_markdown(REPORT, SHOWN, 0.01).splitlines()
    assert lines[0] == "### perfgraph diff: `a.toml` → `b.toml`"
    assert "| `hbm_bandwidth` | 3.35 TB/s | 4.8 TB/s |" in lines
    assert "**Results moved past 1% (2 of 3)**" in lines
    assert lines[-2] == ("| `itl` | 20 ms | 15 ms | -5 ms | 0.75× | "
                         "hbm_bandwidth alone → 15 ms (-5 ms) |")
    assert lines[-1] == ("| `ttft` | 100 ms | #ERR div by zero | — | — | "
                         "hbm_bandwidth alone: fails here |")


def test_the_json() -> None:
    doc = json.loads(as_json(REPORT, SHOWN, 0.01))
    assert doc["threshold_percent"] == 1.0 and doc["moved"] == 2
    assert doc["choices"] == [{"kind": "hardware", "old": "h100-sxm", "new": "h200"}]
    assert doc["inputs"] == [{"name": "hbm_bandwidth", "unit": "TB/s", "kind": "value",
                              "old": 3.35, "new": 4.8, "old_text": "3.35 TB/s",
                              "new_text": "4.8 TB/s"}]
    itl, ttft = doc["results"]
    assert (itl["delta"], itl["ratio"]) == (-5.0, 0.75)
    assert itl["contributions"] == [{"input": "hbm_bandwidth", "alone": 15.0, "delta": -5.0,
                                     "error": None}]
    assert (ttft["new"], ttft["delta"], ttft["new_error"]) == (None, None, "div by zero")


def test_a_result_no_single_edit_moves_says_the_edits_together_do() -> None:
    together = MovedResult("itl", "ms", False, 20.0, 10.0, None, None, ())
    report = DiffReport("a", "b", (), REPORT.inputs, (together,))
    assert f"      {TOGETHER}" in as_table(report, (together,), 0.0).splitlines()
    assert as_markdown(report, (together,), 0.0).splitlines()[-1].endswith(f"| {TOGETHER} |")
    assert set(FORMATTERS) == {"table", "markdown", "json"}
