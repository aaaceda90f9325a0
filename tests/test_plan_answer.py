"""plan's answer as frozen data: a searched answer written as JSON and read back
(``plan_answer.from_json``) is the answer it was written from, pools are typed, and each
renderer (``output/plan_text.py``, ``output/plan_json.py``) says the answer's own numbers,
held here to answers built by hand."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from perfgraph.output import plan_json, plan_text
from perfgraph.scenario.loading import ScenarioSpec
from perfgraph.whatif import plan_report
from perfgraph.whatif import plan_search as plan
from perfgraph.whatif.plan_answer import (
    AskedQuestion,
    DisaggregatedPools,
    FamilyReach,
    GpuPool,
    HoldReport,
    NoPlan,
    PlanBenchmark,
    PlanCandidate,
    PlanFound,
    SimulatedCandidate,
    SloReach,
    UnitValue,
    candidate_json,
    from_json,
)

SPEC = ScenarioSpec(model="llama-3.3-70b", hardware="h200", precision="fp8")
SPACE = ("tp=2,4", "pp=1", "disaggregated=0,1", "concurrency=8,32,64")
#: one plan's values, as the search returns them (plan_search.VALUES, in its order)
VALUES = {"deployment_replicas": (2, ""), "prefill_replicas": (1, ""),
          "decode_replicas_at_batch": (3, ""), "deployment_gpus": (16, ""), "n_gpus": (4, ""),
          "ttft_served": (40.0, "ms"), "itl_worst": (12.5, "ms"), "e2e_served": (13000.0, "ms"),
          "served_throughput_per_gpu": (2560.0, "token/s"),
          "tokens_per_s_per_user": (80.0, "token/s"), "cost_per_mtok_input": (0.05, "USD"),
          "cost_per_mtok_output": (0.25, "USD"), "cost_per_mtok_total": (0.125, "USD"),
          "energy_per_token": (0.137, "J/token"), "max_concurrency": (500.0, ""),
          "ttft_at_rate": (43.21, "ms"), "prefill_queue_wait": (3.21, "ms"),
          "prefill_pool_replicas": (2, ""), "capacity_throughput_per_gpu": (3000.0, "token/s")}


def by_hand(disaggregated: bool = False, batch: float = 64.0) -> PlanCandidate:
    choices = {"engine": "vllm", "hardware": "h200", "precision": "fp8", "tp": 4.0, "pp": 1.0,
               "disaggregated": float(disaggregated), "concurrency": batch}
    return PlanCandidate.of(choices, {n: UnitValue(float(v), u) for n, (v, u) in VALUES.items()})


QUESTION = AskedQuestion({"ttft_slo": UnitValue(1000.0, "ms"), "itl_slo": UnitValue(50.0, "ms")},
                         UnitValue(20.0, "request/s"), True, "gpus", "llama-3.3-70b", None)
HOLD = HoldReport({"ttft.p99": 1000.0, "itl.p99": 40.0},
                  (SimulatedCandidate("vllm h200 fp8 TP4 PP1 batch 64 × 2 replicas", False,
                                      None, {"ttft.p99": math.inf, "itl.p99": 39.25}),
                   SimulatedCandidate("vllm h200 fp8 TP8 PP1 batch 64 × 1 replicas", True,
                                      None, {"ttft.p99": 26.81, "itl.p99": 9.653})),
                  chosen_rank=2, skipped_disaggregated=1)
FOUND = PlanFound(QUESTION, 1200, 30, (), by_hand(), ("why: four GPUs",),
                  (by_hand(batch=8.0), by_hand()), (by_hand(True),))


@pytest.fixture(scope="module")
def result() -> plan.Result:
    q = plan.question(SPEC, ["ttft=300ms", "itl=30ms"], "40 request/s")
    return plan.run(SPEC, q, SPACE, jobs=1)


def round_trip(doc: dict) -> PlanFound | NoPlan:
    return from_json(json.loads(plan_json.dumps(doc)))


def test_a_searched_answer_written_and_read_back_is_the_same(result: plan.Result) -> None:
    ans = plan_report.answer(result, 2)
    assert len(ans.runners_up) == 2 and ans.frontier
    bench = PlanBenchmark(1024, 1024, "meta-llama/Llama-3.3-70B-Instruct", "localhost:8000",
                          UnitValue(40.0, "request/s"), 2000, "vllm", "vllm bench serve …",
                          "vllm-bench.json")
    full = replace(ans, simulated=HOLD, prediction="roofline", benchmark=bench)
    for answer in (ans, full):
        assert round_trip(plan_json.found_json(answer)) == answer
    assert list(plan_json.found_json(full)) == [
        "question", "searched", "feasible", "skipped_unpriced", "best", "reasons", "frontier",
        "runners_up", "simulated", "prediction", "benchmark"]
    assert tuple(ans.best.values) == plan.VALUES  # the search's cells, in its order


def test_a_no_plan_answer_written_and_read_back_is_the_same() -> None:
    q = plan.question(SPEC, ["itl=0.1ms", "e2e=30s"], "40 request/s")
    none = plan_report.no_plan(plan.run(SPEC, q, SPACE, jobs=1))
    assert none.families and none.question.objective is None
    assert round_trip(plan_json.no_plan_json(none)) == none


def test_pools_are_typed_fields() -> None:
    assert by_hand().pools == GpuPool(2, "h200")  # deployment_replicas
    # disaggregated: the prefill pool sized for the queue (prefill_pool_replicas, not the
    # prefill_replicas that carry the tokens) and the decode pool at the batch
    assert by_hand(True).pools == DisaggregatedPools(GpuPool(2, "h200"), GpuPool(3, "h200"))
    older = {k: {"value": float(v), "unit": u} for k, (v, u) in VALUES.items()
             if k != "prefill_pool_replicas"}  # an answer saved before the queue sizing
    doc = {"choices": {"hardware": "b200", "precision": "fp8", "tp": 1.0, "pp": 1.0,
                       "disaggregated": 1.0, "concurrency": 8.0}, "values": older}
    saved = candidate_json(doc)
    assert saved.pools == DisaggregatedPools(GpuPool(1, "b200"), GpuPool(3, "b200"))
    assert saved.engine is None


def test_the_table_and_markdown_say_the_plans_numbers() -> None:
    text = plan_text.table(FOUND).splitlines()
    assert text[:2] == ["searched 1,200 candidates; 30 meet the SLOs", plan_text.QUEUE_NOTE]
    assert text[4].split() == ["best", "vllm", "h200", "fp8", "4", "1", "agg", "64", "2", "16",
                               "43.21", "12.5", "13", "2560", "80", "0.05", "0.25", "0.125",
                               "0.137"]
    assert text[5].split()[5:9] == ["disagg", "64", "2P3D", "16"]  # prefill 2, decode 3
    assert text[7:9] == ["why the best plan:", "  why: four GPUs"]
    assert text[10] == "Pareto frontier (tok/s per user vs tok/s per GPU), 2 plans:"
    assert text[12].split()[:8] == ["vllm", "h200", "fp8", "4", "1", "agg", "8", "2"]
    unqueued = replace(QUESTION, ttft_includes_prefill_queue=False)
    md = plan_text.markdown(replace(FOUND, skipped_unpriced=("h20",),
                                    question=unqueued)).splitlines()
    assert md[:3] == ["Searched 1,200 candidates; 30 meet the SLOs.",
                      "skipped for --objective cost, no price (prices.toml or --prices FILE): "
                      "h20.", plan_text.NO_QUEUE_NOTE + "."]
    assert md[7] == "| " + " | ".join(text[5].split()) + " |" and md[-1] == "- why: four GPUs"


def test_the_no_plan_lines_say_each_familys_best_against_its_slo() -> None:
    best = (SloReach("itl_worst", UnitValue(0.9252, "ms"), UnitValue(0.1, "ms")),
            SloReach("e2e_served", UnitValue(25000.0, "ms"), UnitValue(30.0, "s")))
    asked = replace(QUESTION, objective=None, model=None)  # as the no-plan answer has it
    none = NoPlan(asked, 64, "no plan: itl=0.1ms is out of reach", (),
                  {"itl_worst": UnitValue(0.9252, "ms")},
                  (FamilyReach("vllm", "h200", "fp8", True, True, best),
                   FamilyReach("sglang", "l4", "fp8", False, False, best)))
    assert plan_text.no_plan(none).splitlines() == [
        "no plan: itl=0.1ms is out of reach",
        # 0.9252 / 0.1 = 925%; 25000 ms = 25 s of 30 s = 83.3%
        "  vllm · h200 fp8 disagg: best ITL 0.9252 ms (SLO 0.1 ms, 925%); best E2E 25 s "
        "(SLO 30 s, 83.3%)",
        "  sglang · l4 fp8 agg: holds no searched batch in memory (or its engine would not "
        "start)"]
    doc = plan_json.no_plan_json(none)
    assert doc["feasible"] == 0 and list(doc["question"]) == [
        "slos", "request_rate", "ttft_includes_prefill_queue"]  # objective etc. not repeated
    assert doc["families"][0]["best"]["e2e_served"] == {
        "value": 25000.0, "unit": "ms", "slo": {"value": 30.0, "unit": "s"}}


def test_the_percentile_hold_as_lines_and_as_json() -> None:
    lines = plan_text.hold_lines(HOLD).splitlines()
    assert lines[0].startswith("held to percentile SLOs (ttft.p99 ≤ 1000 ms, itl.p99 ≤ 40 ms): "
                               "simulated 2 candidates")
    assert lines[0].endswith("; 1 disaggregated passed over (not simulated)")
    assert lines[1:] == [
        "   #1 vllm h200 fp8 TP4 PP1 batch 64 × 2 replicas: ttft.p99 ∞ (≤ 1000), "
        "itl.p99 39.25 (≤ 40): misses",
        " → #2 vllm h200 fp8 TP8 PP1 batch 64 × 1 replicas: ttft.p99 26.81 (≤ 1000), "
        "itl.p99 9.653 (≤ 40): meets"]
    doc = plan_json.hold_json(HOLD)
    assert (doc["simulated"], doc["chosen_rank"], doc["skipped_disaggregated"]) == (2, 2, 1)
    assert doc["candidates"][0]["percentiles"] == {"ttft.p99": None, "itl.p99": 39.25}
    unmet = plan_json.hold_unmet_json(replace(HOLD, chosen_rank=None))
    assert unmet["unreachable"] == plan_json.HOLD_UNMET and unmet["simulated"]["chosen_rank"] \
        is None


def test_the_json_of_a_plan_is_its_choices_and_values_in_order() -> None:
    doc = plan_json.found_json(FOUND)
    assert list(doc) == ["question", "searched", "feasible", "skipped_unpriced", "best",
                         "reasons", "frontier", "runners_up"]  # nothing the CLI adds
    assert list(doc["question"]) == ["slos", "request_rate", "objective", "model", "workload",
                                     "ttft_includes_prefill_queue"]
    assert doc["question"]["slos"]["itl_slo"] == {"value": 50.0, "unit": "ms"}
    assert doc["best"]["choices"]["concurrency"] == 64.0
    assert list(doc["best"]["values"]) == list(VALUES)
    assert doc["best"]["values"]["ttft_at_rate"] == {"value": 43.21, "unit": "ms"}
    assert doc["runners_up"][0]["choices"]["disaggregated"] == 1.0


def test_compare_plan_reads_the_saved_answer_and_refuses_a_rank_it_lacks(
        tmp_path, capsys) -> None:
    from pathlib import Path

    from perfgraph.cli.main import main

    run = str(Path(__file__).parent / "data/measured/synthetic/vllm_bench_serve_conc64.json")
    doc = plan_json.found_json(replace(FOUND, simulated=replace(HOLD, chosen_rank=3)))
    path = tmp_path / "plans.json"
    path.write_text(plan_json.dumps(doc))  # two candidates simulated, the third chosen
    assert main(["compare", "--plan", str(path), run]) == 2
    err = capsys.readouterr().err
    assert "a plan JSON without" in err and "Traceback" not in err
    path.write_text(plan_json.dumps(plan_json.found_json(FOUND)))
    assert main(["compare", "--plan", str(path), run]) == 0  # TPOT 29.04 ms within 50 ms
    out = capsys.readouterr().out
    # the plan in words from its fields: 2 replicas, 16 GPUs in all
    assert "vllm h200 fp8 tp=4 pp=1 aggregated, batch 64, 2 replica(s), 16 GPUs" in out
    # the predictions are the plan's: ITL 12.5 ms; throughput 2560 token/s per GPU × 16
    assert "ITL (mean TPOT)    12.5 ms" in out and "40960 token/s" in out
