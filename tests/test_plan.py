"""perfgraph plan: the best plan meets every SLO when re-evaluated, nothing better does, the
frontier has no dominated point, and bad or unreachable questions exit 1 or 2 with one line."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from perfgraph.cli.commands.plan import best_spec
from perfgraph.cli.main import main
from perfgraph.engine.numbers import number
from perfgraph.output import plan_json, sweep_file
from perfgraph.scenario.loading import ScenarioSpec, load
from perfgraph.whatif import plan_report
from perfgraph.whatif import plan_search as plan
from perfgraph.whatif import sweep_axes as sweep
from perfgraph.whatif.plan_answer import DisaggregatedPools, GpuPool

SPEC = ScenarioSpec(model="llama-3.3-70b", workload="chat-1k1k")
SEARCH = ("hardware=h100-sxm,h200", "precision=fp8", "tp=1,2,4", "pp=1",
          "concurrency=1..96:+5")


@pytest.fixture(scope="module")
def result() -> plan.Result:
    q = plan.question(SPEC, ["ttft=1s", "itl=20ms"], "20 request/s", "gpus")
    return plan.run(SPEC, q, SEARCH)


def test_best_plan_re_evaluated_meets_every_slo_and_the_rate(result: plan.Result) -> None:
    best = int(result.order()[0])
    sheet = load(best_spec(result, best, None)).sheet
    assert sheet.magnitude("plan_feasible") == 1
    assert sheet.magnitude("ttft_served", "ms") <= 1000
    assert sheet.magnitude("itl_worst", "ms") <= 20
    assert sheet.magnitude("goodput", "request/s") == pytest.approx(20)
    assert sheet.magnitude("deployment_gpus") == result.values["deployment_gpus"][best]


def test_no_searched_candidate_with_fewer_gpus_meets_the_slos(result: plan.Result) -> None:
    """Brute force: the same space with sweep, one row per candidate."""
    sets = (*SPEC.sets, *plan.question_sets(result.question))
    axes = [a.replace("hardware=", "hardware=") for a in SEARCH] + ["disaggregated=0,1"]
    brute = sweep.plan(ScenarioSpec(model=SPEC.model, workload=SPEC.workload, sets=sets), axes)
    frame = pl.concat(sweep_file.frames(brute, {"plan_feasible": "", "deployment_gpus": ""}))
    ok = frame.filter(pl.col("plan_feasible") == 1)
    assert ok.height == result.feasible
    assert ok["deployment_gpus"].min() == result.values["deployment_gpus"][result.order()[0]]


def test_frontier_has_no_dominated_point(result: plan.Result) -> None:
    front = plan_report.frontier(result)
    user = result.values["tokens_per_s_per_user"]
    gpu = result.values["served_throughput_per_gpu"]
    assert len(front) >= 2
    for i in front:
        dominated = (user >= user[i]) & (gpu >= gpu[i]) & ((user > user[i]) | (gpu > gpu[i]))
        assert not dominated.any()


def test_json_has_the_issues_shape(result: plan.Result) -> None:
    ans = plan_json.found_json(plan_report.answer(result, 3))
    assert set(ans) >= {"question", "searched", "feasible", "best", "frontier", "runners_up"}
    assert ans["searched"] == 2 * 3 * 2 * 20
    assert ans["best"]["values"]["itl_worst"]["unit"] == "ms"
    assert set(ans["best"]["choices"]) == {"engine", "hardware", "precision", "tp", "pp",
                                           "disaggregated", "concurrency"}
    assert ans["best"]["choices"]["engine"] == "vllm"  # the scenario's engine, the default


def test_cost_is_gpus_times_price_over_tokens(result: plan.Result) -> None:
    best = int(result.order()[0])
    sheet = load(best_spec(result, best, None)).sheet
    gpus, price = sheet.magnitude("deployment_gpus"), sheet.magnitude("gpu_hour_price")
    expected = gpus * price / (20 * 1024 * 3600) * 1e6
    assert sheet.magnitude("cost_per_mtok_output") == pytest.approx(expected)
    power = sheet.magnitude("board_power", "W")
    assert sheet.magnitude("energy_per_token", "J/token") == pytest.approx(
        gpus * power / (20 * 1024))


def test_unreachable_itl_exits_1_with_one_line_then_each_familys_best(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--model", "llama-3.3-70b", "--slo", "itl=0.1ms", "--rate",
                 "20 request/s", "--search", "hardware=h200", "--search", "tp=1,8",
                 "--search", "pp=1", "--search", "precision=fp8,bf16"])
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 1
    assert "itl=0.1ms is out of reach" in out[0] and "best ITL" in out[0]
    # one line per family: h200 × {fp8, bf16} × {agg, disagg}, closest to the SLO first
    families = out[1:]
    assert [f.split(":")[0].strip() for f in families] == [
        "h200 fp8 disagg", "h200 fp8 agg", "h200 bf16 disagg", "h200 bf16 agg"]
    # each family's best ITL: the least itl_worst over its rows that fit, brute-forced
    sets = (("request_rate", "20 request/s"), ("prefill_queueing", "true"))
    brute = sweep.plan(ScenarioSpec(model="llama-3.3-70b", hardware="h200", sets=sets),
                       ["precision=fp8,bf16", "tp=1,8", "disaggregated=0,1",
                        "concurrency=1..1024"])
    frame = pl.concat(sweep_file.frames(brute, {"itl_worst": "ms", "batch_fits": "",
                                           "model_fits": "", "disaggregated": ""}))
    best = frame.filter((pl.col("batch_fits") == 1) & (pl.col("model_fits") == 1)).group_by(
        "precision", "disaggregated").agg(pl.col("itl_worst").min())
    for line in families:
        precision, mode = line.split(":")[0].split()[1:]
        want = best.filter((pl.col("precision") == precision)
                           & (pl.col("disaggregated") == float(mode == "disagg")))["itl_worst"][0]
        assert f"best ITL {number(want, 4)} ms (SLO 0.1 ms, " in line
    # the overall best is the best family's
    assert families[0].split("best ITL ")[1].split(" ms")[0] in out[0]


def test_unreachable_as_json_gives_the_families(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    code = main(["plan", "--model", "llama-3.3-70b", "--slo", "itl=0.1ms", "--slo", "ttft=1s",
                 "--rate", "20 request/s", "--search", "hardware=h200,l4",
                 "--search", "precision=fp8", "--search", "tp=1,2", "--search", "pp=1",
                 "--format", "json"])
    ans = json.loads(capsys.readouterr().out)
    assert code == 1 and ans["feasible"] == 0 and "itl=0.1ms" in ans["unreachable"]
    fams = {(f["hardware"], f["disaggregated"]): f for f in ans["families"]}
    assert set(fams) == {("h200", False), ("h200", True), ("l4", False), ("l4", True)}
    assert not fams[("l4", False)]["fits"]  # 70B at fp8 needs 70 GB: 2 L4s of 24 GB do not hold it
    h200 = fams[("h200", True)]["best"]
    assert h200["itl_worst"]["slo"] == {"value": 0.1, "unit": "ms"}
    assert h200["itl_worst"]["value"] == pytest.approx(ans["best_reached"]["itl_worst"]["value"])
    assert h200["ttft_at_rate"]["value"] < 1000


def test_a_set_pins_an_axis_and_the_plan_reports_it(capsys: pytest.CaptureFixture[str]) -> None:
    """``--set tp=4`` takes TP out of the search: every candidate is TP4, the answer names
    it (from the sheet), and the re-check line sets it once."""
    import json

    code = main(["plan", "--model", "llama-3.3-70b", "--hardware", "h200", "--set", "tp=4",
                 "--slo", "itl=50ms", "--slo", "ttft=2s", "--rate", "5 request/s",
                 "--format", "json"])
    ans = json.loads(capsys.readouterr().out)
    assert code == 0
    plans = [ans["best"], *ans["frontier"]]
    assert {p["choices"]["tp"] for p in plans} == {4}
    v = ans["best"]["values"]
    assert v["n_gpus"]["value"] == 4 * ans["best"]["choices"]["pp"]
    assert v["deployment_gpus"]["value"] == v["n_gpus"]["value"] * v["deployment_replicas"]["value"]
    code = main(["plan", "--model", "llama-3.3-70b", "--hardware", "h200", "--set", "tp=4",
                 "--slo", "itl=50ms", "--slo", "ttft=2s", "--rate", "5 request/s"])
    line = capsys.readouterr().out.splitlines()[-1]
    assert code == 0 and line.count("tp=") == 1 and "(tp=4," not in line


@pytest.mark.parametrize(("args", "named"), [
    (["--slo", "itl=-1ms", "--rate", "20 request/s"], "itl"),
    (["--slo", "itl=50ms", "--rate", "20"], "rate"),
    (["--slo", "itl=50ms", "--rate", "20 request/s", "--search", "engin=1"], "engin"),
])
def test_bad_input_exits_2_naming_it(args: list[str], named: str,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--model", "llama-3.3-70b", *args])
    assert code == 2
    assert named in capsys.readouterr().err


def test_violation_is_inf_where_the_model_does_not_fit() -> None:
    cols = {n: np.array([1.0]) for n in plan.SERVED.values()}
    cols |= {"concurrency": np.array([1.0]), "max_concurrency": np.array([2.0]),
             "model_fits": np.array([0.0])}
    assert math.isinf(plan._violation(cols, {"ttft": 1, "itl": 1, "e2e": 1})[0])


def test_evaluate_columns_only_gives_what_the_full_evaluation_gives() -> None:
    sheet = load(SPEC).sheet
    cols = {"concurrency": np.array([1.0, 8.0, 64.0]), "tp": np.array([1.0, 2.0, 4.0])}
    full = sheet.evaluate_columns(cols, 3)
    some = sheet.evaluate_columns(cols, 3, ("itl", "deployment_gpus"))
    assert set(some) == {"itl", "deployment_gpus"}
    np.testing.assert_allclose(some["itl"], full["itl"])
    sheet.set("itl", "5 ms")  # the cached reach must follow the new edges
    np.testing.assert_allclose(sheet.evaluate_columns(cols, 3, ("itl",))["itl"], 5.0)


def test_cli_json_parquet_and_launch(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    out = tmp_path / "plans.parquet"
    args = ["plan", "--model", "llama-3.3-70b", "--slo", "ttft=1s", "--slo", "itl=20ms",
            "--rate", "20 request/s", *[f"--search={s}" for s in SEARCH]]
    assert main([*args, "--format", "json", "--out", str(out)]) == 0
    ans = json.loads(capsys.readouterr().out)
    assert ans["feasible"] == pl.read_parquet(out).height > 0
    assert ans["question"]["request_rate"] == {"value": 20.0, "unit": "request/s"}
    for engine, words in [("vllm", ["vllm serve meta-llama/Llama-3.3-70B-Instruct",
                                    "--tensor-parallel-size", "--max-num-seqs"]),
                          ("sglang", ["python -m sglang.launch_server --model-path",
                                      "--tp ", "--mem-fraction-static"]),
                          ("trtllm", ["trtllm-serve meta-llama/Llama-3.3-70B-Instruct",
                                      "--tp_size", "--kv_cache_free_gpu_memory_fraction"])]:
        assert main([*args, "--launch", engine]) == 0
        last = capsys.readouterr().out.strip().splitlines()[-1]
        tp = int(ans["best"]["choices"]["tp"])
        batch = int(ans["best"]["choices"]["concurrency"])
        assert all(w in last for w in words) and f" {tp} " in last and f" {batch} " in last


def test_a_users_prices_file_sets_the_cost(tmp_path) -> None:
    prices = tmp_path / "mine.toml"
    prices.write_text('[prices.h200]\nusd_per_gpu_hour = 4.0\n')
    assert plan.prices(str(prices))["h200"] == 4.0
    assert plan.prices(str(prices))["h100-sxm"] == plan.prices()["h100-sxm"]


def test_a_disaggregated_sglang_plan_is_one_command_per_pool() -> None:
    from perfgraph.whatif import launch

    scenario = load(ScenarioSpec(model="llama-3.3-70b", hardware="h200", precision="fp8",
                                 sets=(("tp", "2"), ("concurrency", "51"))))
    pools = DisaggregatedPools(GpuPool(3, "h200"), GpuPool(2, "h200"))
    text = launch.command("sglang", scenario, pools)
    lines = text.splitlines()
    assert lines[0] == "# 3 prefill replica(s):" and lines[2] == "# 2 decode replica(s):"
    assert lines[1].endswith("--disaggregation-mode prefill") and "--tp 2" in lines[1]
    assert lines[3].endswith("--disaggregation-mode decode")
