"""Paced runs held as the open loop they are, and maximum-load runs as bursts served in waves.

Hand computations: λ = 2 req/s × OSL 256 = 512 tok/s under capacity; above it, the capacity;
a burst of R = 10 at C = 4 goes in 3 waves of 4, 4 and 2, so its requests wait
(0·4 + 1·4 + 2·2)/10 = 0.8 wave lifetimes on average, and it serves 10 × OSL over 3 lifetimes.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from perfgraph.measured.achieved import in_unit
from perfgraph.measured.adapters import read_runs
from perfgraph.measured.baseline import BURST, CLOSED, PACED
from perfgraph.measured.calibration import per_run
from perfgraph.measured.comparison import compare_runs
from perfgraph.measured.open_loop import arrival_slack, evaluate_runs
from perfgraph.measured.setup import Baseline
from perfgraph.scenario.loading import ScenarioSpec, load

DATA = Path(__file__).parent / "data" / "measured"
ONLINE = DATA / "trtllm_perf_overview" / "perf-overview_258c7540_online.md"
THROUGHPUT = DATA / "trtllm_perf_overview" / "perf-overview_258c7540_throughput.md"


@pytest.fixture(scope="module")
def online():
    return read_runs(ONLINE).runs


def _h100_70b(runs, osl=256.0):
    """The online table's Llama-3.1-70B H100 TP4 rows at ISL/OSL 467/osl, QPS 2 … INF."""
    return [r for r in runs if r.model == "llama-3.1-70b" and r.hardware.startswith("H100")
            and r.osl == osl]


def test_an_open_loop_under_capacity_serves_what_it_is_offered() -> None:
    sheet = load(ScenarioSpec(sets=(("request_rate", "2 request/s"), ("osl", "256"),
                                    ("isl", "467")))).sheet
    assert not sheet.magnitude("open_loop_saturated")
    assert sheet.magnitude("open_loop_throughput") == pytest.approx(2 * 256)
    assert sheet.magnitude("open_loop_throughput_total") == pytest.approx(2 * (467 + 256))
    gpus = sheet.magnitude("n_gpus")
    assert sheet.magnitude("open_loop_throughput_total_per_gpu") == \
        pytest.approx(2 * (467 + 256) / gpus)


def test_an_open_loop_over_capacity_serves_its_capacity() -> None:
    sheet = load(ScenarioSpec(sets=(("request_rate", "32 request/s"), ("osl", "256"),
                                    ("saturated_throughput", "5000 token/s")))).sheet
    assert sheet.magnitude("open_loop_saturated")
    assert sheet.magnitude("open_loop_throughput") == pytest.approx(5000)


def test_a_burst_of_ten_at_four_a_time_goes_in_three_waves() -> None:
    sets = (("burst_requests", "10"), ("max_num_seqs", "4"), ("concurrency", "4"))
    sheet = load(ScenarioSpec(sets=(*sets, ("queueing", "true")))).sheet
    assert sheet.magnitude("capacity_batch") == 4
    assert sheet.magnitude("burst_waves") == 3 and sheet.magnitude("burst_last_wave") == 2
    assert sheet.magnitude("burst_wave_wait") == pytest.approx((0 * 4 + 1 * 4 + 2 * 2) / 10)
    # each wave's prompts queue for the prefill: (4·3/2 + 4·3/2 + 2·1/2)/10 = 1.3 ahead
    assert sheet.magnitude("burst_prompts_ahead") == pytest.approx(1.3)
    service = sheet.magnitude("loop_prefill_service_time")
    assert sheet.magnitude("burst_prefill_wait") == pytest.approx(1.3 * service)
    # prompts do not ride the decode steps here: a wave lives one cycle of the batch
    cycle_ms = sheet.magnitude("cycle_time") * 1000
    assert sheet.magnitude("burst_wave_time") == pytest.approx(cycle_ms)
    assert sheet.magnitude("burst_ttft") == pytest.approx(
        sheet.magnitude("ttft") - sheet.magnitude("loop_prefill_queue_wait") + 1.3 * service
        + 0.8 * cycle_ms)
    osl = sheet.magnitude("osl")
    assert sheet.magnitude("burst_throughput") == pytest.approx(10 * osl / (3 * cycle_ms / 1000))


def test_the_roofline_of_a_burst_waits_for_nothing() -> None:
    sets = (("burst_requests", "10"), ("max_num_seqs", "4"), ("concurrency", "4"))
    sheet = load(ScenarioSpec(sets=sets)).sheet
    assert sheet.magnitude("burst_ttft") == pytest.approx(sheet.magnitude("ttft"))
    # slots refilled the moment a request ends: 10 / 4 = 2.5 lifetimes, the closed loop's rate
    cycle_s, osl = sheet.magnitude("cycle_time"), sheet.magnitude("osl")
    assert sheet.magnitude("burst_throughput") == pytest.approx(10 * osl / (2.5 * cycle_s))
    assert sheet.magnitude("burst_throughput") == pytest.approx(sheet.magnitude("throughput"))


def test_no_burst_and_the_default_rate_leave_the_closed_loop_as_it_was() -> None:
    sheet = load().sheet
    for burst, closed, ratio in (("burst_ttft", "ttft", 1), ("burst_throughput", "throughput", 1),
                                 ("burst_wave_time", "cycle_time", 1000),  # ms and s
                                 ("open_loop_throughput", "throughput", 1),
                                 ("open_loop_throughput_total_per_gpu",
                                  "throughput_total_per_gpu", 1)):
        assert sheet.magnitude(burst) == pytest.approx(ratio * sheet.magnitude(closed)), burst


def test_a_paced_run_is_held_against_lambda_times_osl(online) -> None:
    runs = _h100_70b(online)
    assert [r.request_rate for r in runs] == [2, 4, 8, 16, 32, math.inf]
    compared = compare_runs(runs, Baseline.from_spec(ScenarioSpec()), levers=False)
    for c, rate in zip(compared[:3], (2, 4, 8), strict=True):
        m = c.metric("throughput")
        assert c.setup.arrivals == PACED and c.setup.request_rate == rate
        assert m.model_cell == "open_loop_throughput"
        assert m.modelled == pytest.approx(rate * 256)  # the roofline keeps up with 8 req/s
        assert c.setup.concurrency_source == "little"  # latencies stay at the in-flight count
    # at 16 and 32 req/s the server completed 12.4 and 15.9 (the table's output tok/s ÷ 256),
    # under 90% of the rate: its queue grew, so it ran at the batch Little's law counts, held
    # as that closed loop
    for fell_behind, rate in zip(compared[3:5], (16, 32), strict=True):
        assert fell_behind.run.metrics["request_throughput"].value < 0.9 * rate
        assert fell_behind.setup.arrivals == CLOSED
        assert fell_behind.metric("throughput").model_cell == "throughput"


def test_a_max_load_run_of_known_count_is_a_burst(online) -> None:
    *_, inf = _h100_70b(online)
    (c,) = compare_runs([inf], Baseline.from_spec(ScenarioSpec()), levers=False)
    assert (c.setup.arrivals, c.setup.burst_requests) == (BURST, 500)
    assert c.setup.concurrency_source == "capacity"
    sheet = load(ScenarioSpec(model="llama-3.1-70b", hardware="h100-sxm", precision="bf16",
                              engine="trtllm", sets=(("tp", "4"), ("isl", "467"),
                                                     ("osl", "256")))).sheet
    capacity = sheet.magnitude("capacity_batch")
    assert c.setup.concurrency == min(500, capacity)
    assert c.metric("ttft").model_cell == "burst_ttft"
    assert c.metric("throughput").model_cell == "burst_throughput"
    assert any("a burst" in n for n in c.setup.notes)


def test_a_max_load_run_of_unknown_count_stays_at_capacity() -> None:
    run = read_runs(THROUGHPUT).runs[0]
    assert run.completed is None and math.isinf(run.request_rate)
    (c,) = compare_runs([run], Baseline.from_spec(ScenarioSpec(engine="trtllm")), levers=False)
    assert c.setup.arrivals == CLOSED and c.setup.concurrency_source == "capacity"
    assert any("not as a burst" in n for n in c.setup.notes)


def test_a_saturated_paced_run_serves_its_capacity_and_says_so(online) -> None:
    # the engine holds 4 sequences: 8 req/s × 256 tokens is far beyond what 4 serve (the
    # measured server kept up with 8 req/s, so the run is held as the open loop it was)
    base = Baseline.from_spec(ScenarioSpec(sets=(("max_num_seqs", "4"),)))
    qps8 = _h100_70b(online)[2]
    (c,) = compare_runs([qps8], base, levers=False)
    sheet = load(ScenarioSpec(model="llama-3.1-70b", hardware="h100-sxm", precision="bf16",
                              engine="trtllm", sets=(("tp", "4"), ("isl", "467"),
                                                     ("osl", "256"), ("max_num_seqs", "4"),
                                                     ("concurrency", "4")))).sheet
    capacity = sheet.magnitude("throughput")  # the roofline is monotone: best at the most held
    assert c.metric("throughput").modelled == pytest.approx(capacity)
    assert capacity < 8 * 256
    assert any(n.startswith("saturated: ") and "queue grows" in n for n in c.setup.notes)


def test_the_capacity_is_the_throughput_at_the_batch_the_replica_holds() -> None:
    sheet = load(ScenarioSpec(sets=(("max_num_seqs", "64"),))).sheet
    columns = {"concurrency": np.array([8.0, 8.0]), "request_rate": np.array([1.0, np.nan])}
    values = evaluate_runs(sheet, columns, 2)
    assert sheet.magnitude("capacity_batch") == 64
    at_64 = sheet.evaluate_columns({"concurrency": np.array([64.0])}, 1, only=["throughput"])
    assert values["saturated_throughput"][0] == pytest.approx(at_64["throughput"][0])
    assert math.isnan(values["saturated_throughput"][1])  # a closed-loop row: not asked


def test_a_saturated_replica_runs_what_its_token_budget_admits() -> None:
    """Llama-3.1-8B on an H200 under TensorRT-LLM, 467 in / 16 out: each running request
    needs 1 decode token a step and its 467 prompt tokens over its 16 steps, so 8192 tokens
    a step sustain 8192 × 16 ÷ (467 + 16) = 271 requests however many wait; the capacity
    is the throughput of 271 running, the other users queued (before the cap, 1254 ran with
    prompt tokens far beyond the budget, and the sheet gave a fifth of it)."""
    sheet = load(ScenarioSpec(model="llama-3.1-8b", hardware="h200", engine="trtllm",
                              precision="bf16", calibration="auto",
                              sets=(("isl", "467"), ("osl", "16")))).sheet
    assert sheet.magnitude("admitted_batch") == pytest.approx(8192 * 16 / 483)
    capacity = sheet.magnitude("capacity_batch")
    assert capacity > 1000
    at = sheet.evaluate_columns({"concurrency": np.array([capacity, 271.0])}, 2,
                                only=["throughput", "running_batch"])
    assert np.asarray(at["running_batch"], dtype=float)[0] == pytest.approx(8192 * 16 / 483)
    tput = in_unit(sheet, at, "throughput", "token/s")
    assert tput[0] == pytest.approx(tput[1], rel=0.05)  # the queue adds no throughput


def test_a_fit_holds_paced_runs_against_their_open_loop_throughput(online) -> None:
    base = Baseline.from_spec(ScenarioSpec())
    compared = compare_runs(_h100_70b(online)[:2], base, levers=False)
    for c, rate in zip(per_run(base, compared, {}), (2, 4), strict=True):
        model, measured = c[1]["throughput"]
        assert model == pytest.approx(rate * 256) and measured == c[0].metric(
            "throughput").measured


def test_a_burst_lasts_until_its_longest_output() -> None:
    lambda_run = DATA / "lambda_vllm054_1xH100-80GB-SXM_prompt_10" / \
        "Meta-Llama-3.1-8B-FP8_tp1_len2048.json"
    (run,) = read_runs(lambda_run).runs
    (c,) = compare_runs([run], Baseline.from_spec(ScenarioSpec(hardware="h100-sxm",
                                                               sets=(("tp", "1"),))),
                        levers=False)
    assert (c.setup.arrivals, c.setup.burst_requests, c.setup.concurrency) == (BURST, 10, 10)
    longest = max(run.per_request.osl)  # 194 tokens over a mean of 442 / 10
    spread = dict(c.setup.deployment)["osl_spread"]
    assert float(spread) == pytest.approx(longest / c.setup.osl, rel=1e-6)
    assert any(n.startswith("osl_spread ") for n in c.setup.notes)


@pytest.mark.parametrize(("arrivals", "requests", "slack"), [
    (PACED, 400, 2 / 20), (PACED, None, 0.0), (CLOSED, 400, 0.0), (BURST, 400, 0.0)])
def test_a_paced_run_may_pass_its_offered_rate_by_its_poisson_draw(arrivals, requests, slack):
    assert arrival_slack(arrivals, requests) == pytest.approx(slack)
