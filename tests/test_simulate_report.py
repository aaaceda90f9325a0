"""The simulation's renderers (``perfgraph.output.simulate_report``) on summaries built by
hand: the JSON ``perfgraph simulate --format json`` prints, the table, the dashboard's plain
form (and back), the per-request rows and the trace."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from perfgraph.output.simulate_report import (
    ROW_UNITS,
    as_json,
    request_rows,
    step_json,
    step_text,
    summary_doc,
    summary_from_doc,
    table,
    trace,
)
from perfgraph.scenario.loading import load
from perfgraph.whatif.simulate import Setup, simulate
from perfgraph.whatif.simulate.sim_summary import (
    FrontendLoad,
    Latencies,
    LatencyStats,
    MeanMax,
    Overload,
    ReplicaLoad,
    SeriesPoint,
    SimSummary,
    SloLimits,
    SpeculationYield,
    TokenLag,
)
from perfgraph.whatif.simulate.step_sheet import ExplainedStep, StepCell

TUI_DATA = Path(__file__).parent / "data" / "tui"


def _ms(mean: float) -> LatencyStats:
    return LatencyStats("ms", mean, mean, 2 * mean, 4 * mean)


PLAIN = SimSummary(
    partial=False, requests=10, measured=8, warmup=2, simulated_s=4.0, steps=100,
    window_s=2.0, latency=Latencies(_ms(50.0), _ms(10.0), _ms(10.0), LatencyStats("s", 1.5)),
    output_throughput=800.0, total_throughput=1600.0, request_throughput=4.0, goodput=3.0,
    goodput_share=0.75, slo=SloLimits(500.0, 50.0), preemptions=1, dropped=0,
    batch=MeanMax(6.5, 8.0), speculation=None, kv_use=MeanMax(0.25, 0.5),
    series=(SeriesPoint(1.0, 4.0, 0.1), SeriesPoint(2.0, 8.0, 0.5)), overload=None,
    frontend=None)
#: Every optional part present: a pool with sessions, speculation, the API server's loop,
#: an overload (TTFT and E2E hidden), a replayed run, and p99.9.
FULL = replace(
    PLAIN, partial=True,
    latency=Latencies(LatencyStats("ms", keys=("mean", "p50", "p90", "p99", "p99.9")),
                      LatencyStats("ms", 10.0, 9.0, 11.0, 12.0, 13.0,
                                   keys=("mean", "p50", "p90", "p99", "p99.9")),
                      _ms(10.0), LatencyStats("s")),
    speculation=SpeculationYield(3, 2.5, 2.4),
    overload=Overload(8.0, 4.0, 30),
    frontend=FrontendLoad(1.0, 5.0, False, 0.97, TokenLag(20.0, 80.0, 90.0)),
    replicas=(ReplicaLoad("serve", 0, 6, 0.6, 0.9, 5.0, 0.3, 40.0, 60.0, 0.5, 0.25),
              ReplicaLoad("serve", 1, 4, 0.4, 0.7, 3.0, 0.2, 30.0, 50.0, 0.0, 0.0)),
    run_measured={"ttft": {"mean": 40.0, "p99": 100.0}}, measured_source="run.json")


def test_the_json_gives_each_number_its_unit_in_the_order_simulate_printed_it() -> None:
    doc = json.loads(as_json(PLAIN, {"model": "m"}, "roofline"))
    assert list(doc) == [
        "scenario", "prediction", "partial", "requests", "measured", "warmup", "steps",
        "simulated", "window", "latency", "output_throughput", "total_throughput",
        "request_throughput", "goodput", "goodput_share", "slo", "preemptions", "dropped",
        "batch", "kv_use", "speculation", "run_measured", "frontend", "overloaded",
        "overload", "series", "replicas"]
    assert doc["latency"]["ttft"] == {"mean": {"value": 50.0, "unit": "ms"},
                                      "p50": {"value": 50.0, "unit": "ms"},
                                      "p90": {"value": 100.0, "unit": "ms"},
                                      "p99": {"value": 200.0, "unit": "ms"}}
    assert doc["latency"]["e2e"]["mean"] == {"value": 1.5, "unit": "s"}
    assert doc["latency"]["e2e"]["p50"] == {"value": None, "unit": "s"}
    assert doc["slo"] == {"ttft": {"value": 500.0, "unit": "ms"},
                          "itl": {"value": 50.0, "unit": "ms"}}
    assert doc["goodput_share"] == {"value": 0.75, "unit": ""}
    assert doc["batch"] == {"mean": {"value": 6.5, "unit": ""}, "max": {"value": 8.0, "unit": ""}}
    assert doc["series"] == {"unit": {"t": "s", "batch": "", "kv_use": ""},
                             "points": [{"t": 1.0, "batch": 4.0, "kv_use": 0.1},
                                        {"t": 2.0, "batch": 8.0, "kv_use": 0.5}]}
    assert (doc["speculation"], doc["frontend"], doc["overload"]) == (None, None, None)
    assert (doc["run_measured"], doc["replicas"], doc["overloaded"]) == ({}, [], False)
    nan = json.loads(as_json(replace(PLAIN, output_throughput=math.nan), {}))
    assert nan["output_throughput"] == {"value": None, "unit": "token/s"}  # not finite: null


def test_the_json_of_every_optional_part() -> None:
    doc = json.loads(as_json(FULL, {}))
    assert doc["partial"] is True and doc["overloaded"] is True
    assert doc["latency"]["ttft"]["p99.9"] == {"value": None, "unit": "ms"}
    assert doc["latency"]["tpot"]["p99.9"] == {"value": 13.0, "unit": "ms"}
    assert doc["speculation"] == {"k": 3, "accepted_per_step": {"value": 2.5, "unit": "token"},
                                  "spec_tokens_per_pass": {"value": 2.4, "unit": "token"}}
    assert doc["overload"] == {"offered": {"value": 8.0, "unit": "request/s"},
                               "sustained": {"value": 4.0, "unit": "request/s"},
                               "queue_growth": 30}
    assert doc["frontend"]["lag"]["p99"] == {"value": 80.0, "unit": "ms"}
    assert doc["frontend"]["coalesce"] is False
    assert doc["run_measured"] == {"ttft": {"mean": {"value": 40.0, "unit": "ms"},
                                            "p99": {"value": 100.0, "unit": "ms"}}}
    first = doc["replicas"][0]
    assert first["pool"] == "serve" and first["requests"] == 6
    assert first["hit_rate"] == {"value": 0.5, "unit": ""}
    assert doc["replicas"][1]["ttft_p99"] == {"value": 50.0, "unit": "ms"}


def test_the_table_of_a_plain_run() -> None:
    text = table(PLAIN, "title", "the sheet: …")
    lines = text.splitlines()
    assert lines[0] == "title"
    assert lines[1] == "10 requests (8 measured, 2 warm-up left out), 100 steps, 4 s simulated"
    assert lines[3].split() == ["mean", "p50", "p90", "p99"]
    assert lines[4].split() == ["TTFT", "(ms)", "50", "50", "100", "200"]
    assert lines[7].split() == ["E2E", "(s)", "1.5", "—", "—", "—"]
    assert "  goodput             3 request/s (75 % of requests: TTFT ≤ 500 ms, TPOT ≤ 50 ms)" \
        in lines
    assert "  KV in use           mean 25 %, max 50 %" in lines
    assert lines[-1] == "the sheet: …" and text.endswith("\n")
    assert "OVERLOADED" not in text and "replica" not in text and "speculation" not in text


def test_the_table_of_every_optional_part() -> None:
    text = table(FULL, "title", "")
    assert text.startswith("title · PARTIAL (interrupted)\n")
    assert "OVERLOADED: requests arrive at 8 request/s, the system sustained 4 request/s; " \
           "the queue grew by 30 requests" in text
    assert "speculation         mean 2.5 tokens accepted a decode a step (k = 3; the sheet's " \
           "spec_tokens_per_pass 2.4)" in text
    assert "busy 97 % of the run (1 ms a request, 5 ms a chunk): saturated" in text
    assert "token lag           mean 20 ms, p99 80 ms, max 90 ms" in text
    assert "against the measured run (run.json)" in text
    assert "TTFT  mean — / 40 ms (—), p99 — / 100 ms (—)" in text
    rows = [line for line in text.splitlines() if line.startswith("  serve ")]
    assert rows[0].split() == ["serve", "0", "6", "(", "60", "%)", "90", "%", "5", "30", "%",
                               "40", "60", "50", "%", "(25", "%)"]


@pytest.mark.parametrize("summary", [PLAIN, FULL], ids=["plain", "full"])
def test_the_plain_form_comes_back_as_the_summary(summary: SimSummary) -> None:
    doc = summary_doc(summary)
    assert "run_measured" not in doc and "measured_source" not in doc
    again = summary_from_doc(json.loads(json.dumps(doc)))
    assert again == replace(summary, run_measured={}, measured_source="")
    assert summary_doc(again) == doc
    assert doc["latency"]["ttft"] == [summary.latency.ttft.unit,
                                      dict(summary.latency.ttft.items())]


def test_the_dashboards_frozen_answer_reads_back_unchanged() -> None:
    doc = json.loads((TUI_DATA / "simulate_answer.json").read_text())["summary"]
    summary = summary_from_doc(doc)
    assert summary_doc(summary) == doc
    assert summary.latency.ttft.p99 == doc["latency"]["ttft"][1]["p99"]
    assert summary.series[0].batch == doc["series"][0]["batch"]


def test_the_rows_and_the_trace_of_a_small_run() -> None:
    sheet = load().sheet
    run = simulate(sheet, Setup(users=2, requests=4))
    rows = request_rows(run)
    assert list(rows) == list(ROW_UNITS)
    assert rows["request"].tolist() == [0, 1, 2, 3]
    t = run.engine.reqs.table()
    assert np.array_equal(rows["ttft"], t["ttft"] * 1e3)  # ms
    events = json.loads(trace(run))["traceEvents"]
    steps = run.engine.log.arrays()
    assert len(events) == 1 + 2 * steps["end"].size  # a slice and a counter a step
    first = events[1]
    start = float(steps["end"][0] - steps["dur"][0])  # the first step starts at its end − dur
    assert first["ph"] == "X" and first["ts"] == pytest.approx(start * 1e6, abs=1e-3)
    assert first["dur"] == round(float(steps["dur"][0]) * 1e6, 3)
    assert first["args"] == {"decodes": int(steps["decodes"][0]),
                             "prefill_tokens": int(steps["prefill"][0])}


STEP = ExplainedStep(
    40, 1200, 1.5, 0.0125,
    (StepCell("sim_decodes", "decodes in the step", "", 8.0, "8"),
     StepCell("sim_step_time", "the step's time", "ms", 12.5, "12.5 ms",
              formula="a + b", substituted="10 ms + 2.5 ms"),
     StepCell("sim_kv", "KV read", "GB", 3.0, "3 GB", formula="kv_bytes_per_seq * n",
              bound="sim_decodes")))


def test_an_explained_step_as_text_and_json() -> None:
    assert step_text(STEP).splitlines() == [
        "step 40 of 1,200: ends at 1.5 s, takes 12.5 ms", "inputs", "  sim_decodes = 8",
        "sim_step_time: the step's time", "  formula      a + b",
        "  with values  10 ms + 2.5 ms", "  result       12.5 ms",
        "sim_kv: KV read",
        "  formula      kv_bytes_per_seq * n   (the step's, in place of its own)",
        "  result       3 GB"]
    doc = json.loads(step_json(STEP))
    assert (doc["step"], doc["steps"], doc["end_s"], doc["duration_s"]) == (40, 1200, 1.5, 0.0125)
    assert doc["cells"][1] == {"name": "sim_step_time", "doc": "the step's time", "unit": "ms",
                               "value": 12.5, "shown": "12.5 ms", "formula": "a + b",
                               "substituted": "10 ms + 2.5 ms", "bound": None}
