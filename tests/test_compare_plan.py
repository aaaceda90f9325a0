"""compare --plan: a shipped measured vLLM run held against a plan, SLO by SLO and prediction
by prediction, to hand-computed numbers; and plan --bench, the command that makes such a run."""

from __future__ import annotations

import copy
import json
import shlex
from pathlib import Path

import pytest

from perfgraph.cli.main import main
from perfgraph.scenario.loading import ScenarioSpec, load
from perfgraph.whatif import bench

RUN = str(Path(__file__).parent / "data/measured/synthetic/vllm_bench_serve_conc64.json")
# the file's numbers: mean TTFT 134.8 ms, mean TPOT 29.04 ms, mean E2EL 26937.8 ms, p99 TTFT
# 262.0 ms, output_throughput 2214.183864915572 token/s, mean ISL 920.8, OSL 922, rate inf
PLAN = {
    "question": {"slos": {"ttft_slo": {"value": 200.0, "unit": "ms"},
                          "itl_slo": {"value": 25.0, "unit": "ms"},
                          "e2e_slo": {"value": 30.0, "unit": "s"}},
                 "request_rate": {"value": 2.4, "unit": "request/s"}},
    "best": {"choices": {"engine": "vllm", "hardware": "h100-sxm", "precision": "fp8",
                         "tp": 2.0, "pp": 1.0, "disaggregated": 0.0, "concurrency": 64.0},
             "values": {"ttft_at_rate": {"value": 100.0, "unit": "ms"},
                        "itl_worst": {"value": 24.0, "unit": "ms"},
                        "e2e_served": {"value": 24000.0, "unit": "ms"},
                        "served_throughput_per_gpu": {"value": 1000.0, "unit": "token/s"},
                        "served_output_rate": {"value": 2000.0, "unit": "token/s"},
                        "deployment_gpus": {"value": 2.0, "unit": ""},
                        "deployment_replicas": {"value": 1.0, "unit": ""},
                        "n_gpus": {"value": 2.0, "unit": ""}}},
    "benchmark": {"isl": 1024, "osl": 1024},
}


def _compare(plan: dict, tmp: Path, capsys, *extra: str) -> tuple[int, dict]:
    path = tmp / "plans.json"
    path.write_text(json.dumps(plan))
    code = main(["compare", "--plan", str(path), RUN, "--format", "json", *extra])
    return code, json.loads(capsys.readouterr().out)


def test_each_slo_and_prediction_against_hand_computed_numbers(tmp_path, capsys) -> None:
    code, out = _compare(PLAN, tmp_path, capsys)
    assert code == 1 and out["all_met"] is False  # the ITL SLO is missed
    run = out["runs"][0]
    slos = {s["slo"]: s for s in run["slos"]}
    assert (slos["ttft"]["measured_ms"], slos["ttft"]["met"]) == (134.8, True)
    assert (slos["itl"]["measured_ms"], slos["itl"]["met"]) == (29.04, False)  # mean TPOT
    assert (slos["e2e"]["limit_ms"], slos["e2e"]["met"]) == (30000.0, True)
    errors = {p["metric"]: p["error"] for p in run["predictions"]}
    assert errors["ttft"] == pytest.approx(134.8 / 100 - 1)  # +34.8%
    assert errors["itl"] == pytest.approx(29.04 / 24 - 1)  # +21.0%
    assert errors["e2e"] == pytest.approx(26937.8 / 24000 - 1)  # +12.24%
    assert errors["throughput"] == pytest.approx(2214.183864915572 / (1000 * 2) - 1)  # +10.7%
    said = " ".join(run["caveats"])
    assert "mean ISL 920.8 is 10% from the plan's 1024" in said
    assert "as fast as it could, at most 64 in flight" in said


def test_a_plan_saved_before_served_output_rate_still_reads(tmp_path, capsys) -> None:
    old = copy.deepcopy(PLAN)
    del old["best"]["values"]["served_output_rate"]
    code, out = _compare(old, tmp_path, capsys)
    run = out["runs"][0]
    predicted = {p["metric"]: p["predicted"] for p in run["predictions"]}
    assert code == 1 and predicted["throughput"] == 1000.0 * 2  # per GPU × deployment GPUs
    assert any("predates served_output_rate" in c for c in run["caveats"])


def test_the_table_says_met_and_missed_with_the_margin(tmp_path, capsys) -> None:
    path = tmp_path / "plans.json"
    path.write_text(json.dumps(PLAN))
    assert main(["compare", "--plan", str(path), RUN]) == 1
    text = capsys.readouterr().out
    assert "mean TTFT 134.8 ms  met (67.4% of the limit)" in text
    assert "mean TPOT 29.04 ms  MISSED by 4.04 ms (116% of the limit)" in text
    assert "+34.8%" in text and "+21.0%" in text and "+12.2%" in text and "+10.7%" in text


def test_a_percentile_slo_reads_the_measured_percentile(tmp_path, capsys) -> None:
    # plan ran the analytic search with the p99 limit standing for the mean (ttft_slo 300 ms)
    question = {**PLAN["question"], "slos": {"ttft_slo": {"value": 300.0, "unit": "ms"}}}
    plan = {**PLAN, "question": question,
            "simulated": {"slos": {"ttft.p99": 300.0}, "chosen_rank": 1,
                          "candidates": [{"percentiles": {"ttft.p99": 200.0}}]}}
    code, out = _compare(plan, tmp_path, capsys)
    (slo,) = out["runs"][0]["slos"]  # the stand-in mean is not the user's SLO
    assert (slo["slo"], slo["reads"], slo["measured_ms"], slo["met"]) == \
        ("ttft.p99", "p99 TTFT", 262.0, True)
    simulated = next(p for p in out["runs"][0]["predictions"] if p["metric"] == "ttft.p99")
    assert simulated["error"] == pytest.approx(262.0 / 200.0 - 1)  # +31%
    assert code == 0


def test_a_plan_from_plan_format_json(tmp_path, capsys) -> None:
    args = ["plan", "--model", "llama-3.3-70b", "--hardware", "h100-sxm", "--precision", "fp8",
            "--slo", "ttft=1s", "--slo", "itl=25ms", "--rate", "2.4 request/s", "--search",
            "tp=2,4", "--search", "pp=1", "--search", "disaggregated=0", "--top", "0"]
    assert main([*args, "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["benchmark"]["isl"] == plan["benchmark"]["osl"] == 1024
    code, out = _compare(plan, tmp_path, capsys)
    v = plan["best"]["values"]
    run = out["runs"][0]
    assert [(s["slo"], s["met"]) for s in run["slos"]] == [("ttft", True), ("itl", False)]
    predicted = {p["metric"]: p["predicted"] for p in run["predictions"]}
    assert predicted["ttft"] == v["ttft_at_rate"]["value"]
    # the sheet's served_output_rate, read, not rebuilt from the per-GPU figure
    assert predicted["throughput"] == v["served_output_rate"]["value"]
    assert predicted["throughput"] == pytest.approx(2.4 * 1024)  # the rate, all served
    assert code == 1


@pytest.mark.parametrize("content, says", [
    (None, "no such file"),
    ("{not json", "not the JSON plan --format json writes"),
    (json.dumps({"unreachable": "no plan: itl=0.1ms is out of reach"}), "holds no plan (no plan"),
    (json.dumps({"best": {}}), "a plan JSON without"),
])
def test_a_bad_plan_file_exits_2_in_one_line(content, says, tmp_path, capsys) -> None:
    path = tmp_path / "plans.json"
    if content is not None:
        path.write_text(content)
    assert main(["compare", "--plan", str(path), RUN]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_steady_state_request_count() -> None:
    # 2.4 request/s × 21.283 s in flight = 51.08 requests; ten turnovers: 510.8 → 511
    assert bench.requests_for(2.4 * 21.283) == 511
    assert bench.requests_for(0.1 * 1.0) == bench.MIN_REQUESTS == 100


def test_requests_in_flight_is_littles_law_on_the_served_e2e() -> None:
    sheet = load(ScenarioSpec(sets=(("request_rate", "2.4 request/s"),))).sheet
    # L = λW: 2.4 request/s × the served end-to-end latency
    assert sheet.magnitude("requests_in_flight") == pytest.approx(
        2.4 * sheet.magnitude("e2e_served", "s"), rel=1e-12)


@pytest.mark.parametrize("tool, expect", [
    ("vllm", ["vllm", "bench", "serve", "--random-input-len 1024", "--random-output-len 1024",
              "--request-rate 2.4", "--num-prompts 511", "--save-result",
              "--result-filename vllm-bench.json"]),
    ("sglang", ["python -m sglang.bench_serving --backend sglang", "--random-range-ratio 1",
                "--random-input-len 1024", "--request-rate 2.4", "--output-file "
                "sglang-bench.jsonl"]),
    ("aiperf", ["aiperf profile", "--synthetic-input-tokens-mean 1024",
                "--output-tokens-mean 1024", "--request-count 511", "--request-rate 2.4",
                "--artifact-dir aiperf-bench"]),
])
def test_plan_bench_prints_the_plans_question(tool, expect, capsys) -> None:
    args = ["plan", "--model", "llama-3.3-70b", "--hardware", "h100-sxm", "--precision", "fp8",
            "--slo", "ttft=1s", "--slo", "itl=25ms", "--rate", "2.4 request/s", "--search",
            "tp=2,4", "--search", "pp=1", "--search", "disaggregated=0", "--top", "0",
            "--bench", tool]
    assert main(args) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-2].startswith("# the plan's question: ISL 1024, OSL 1024, 2.4 request/s")
    assert all(e in lines[-1] for e in expect), lines[-1]
    assert shlex.split(lines[-1])  # one shell line


def test_out_never_writes_over_the_plan_it_read(tmp_path, capsys) -> None:
    path = tmp_path / "plans.json"
    path.write_text(json.dumps(PLAN))
    assert main(["compare", "--plan", str(path), RUN, "--out", str(path)]) == 2
    assert json.loads(path.read_text()) == PLAN
    out = tmp_path / "check.json"
    assert main(["compare", "--plan", str(path), RUN, "--format", "json", "--out", str(out)]) == 1
    assert json.loads(out.read_text())["all_met"] is False


def test_compare_plan_refuses_a_format_it_does_not_write(tmp_path, capsys) -> None:
    path = tmp_path / "plans.json"
    path.write_text(json.dumps(PLAN))
    assert main(["compare", "--plan", str(path), RUN, "--format", "markdown"]) == 2
    assert "compare --plan writes table or json, not markdown" in capsys.readouterr().err
