"""perfgraph plan: TTFT from prefill queueing at the rate (M/D/1, with the graph's numbers in
the reasons), engine as an axis of the space (brute-forced with sweep, the best re-checked with
eval at its engine), and a price for every catalog accelerator or the message that skips it."""

from __future__ import annotations

import math

import polars as pl
import pytest

from perfgraph._infra.tomlfile import read
from perfgraph.cli.commands.plan import best_spec
from perfgraph.cli.main import main
from perfgraph.engine.numbers import number
from perfgraph.output import plan_text, sweep_file
from perfgraph.scenario.catalog import catalog_names
from perfgraph.scenario.loading import ScenarioSpec, load
from perfgraph.whatif import plan_report
from perfgraph.whatif import plan_search as plan
from perfgraph.whatif import sweep_axes as sweep

# Long prompts on one tp=8 H200 replica: prefill takes ~73 ms of compute per prompt, so at
# 10 request/s one replica is ρ ≈ 73% busy prefilling and its prompts queue.
LONG = ScenarioSpec(model="llama-3.3-70b", hardware="h200", precision="fp8",
                    sets=(("isl", "8192"), ("osl", "256")))
LONG_SEARCH = ("tp=8", "pp=1", "disaggregated=0", "concurrency=1..256")


def _sheet(spec: ScenarioSpec, *sets: tuple[str, str]):
    return load(ScenarioSpec(model=spec.model, hardware=spec.hardware,
                             precision=spec.precision, sets=(*spec.sets, *sets))).sheet


# --------------------------------------------------------------------- the queue, by hand
def test_the_queue_is_off_by_default_so_the_roofline_numbers_stay() -> None:
    sheet = load().sheet
    assert sheet.magnitude("prefill_queueing") == 0
    assert sheet.magnitude("prefill_queue_wait", "ms") == 0
    assert sheet.magnitude("ttft_at_rate", "ms") == sheet.magnitude("ttft_served", "ms")


def test_the_wait_is_md1_at_rate_times_prefill_time_over_servers() -> None:
    sheet = _sheet(LONG, ("tp", "8"), ("concurrency", "6"), ("request_rate", "10 request/s"),
                   ("prefill_queueing", "true"))
    s = sheet.magnitude("prefill_flops", "TFLOP") / sheet.magnitude("achievable_flops",
                                                                    "TFLOP/s")
    assert sheet.magnitude("prefill_service_time", "s") == pytest.approx(s)
    servers = sheet.magnitude("colocated_replicas")
    rho = 10 * s / servers
    assert servers == 1 and 0.5 < rho < 1
    assert sheet.magnitude("prefill_utilisation") == pytest.approx(rho)
    wait = rho * s / (2 * (1 - rho))  # Pollaczek–Khinchine, deterministic service
    assert sheet.magnitude("prefill_queue_wait", "s") == pytest.approx(wait)
    assert sheet.magnitude("ttft_at_rate", "s") == pytest.approx(
        sheet.magnitude("ttft_served", "s") + wait)


def test_at_full_utilisation_the_queue_grows_without_bound() -> None:
    sheet = _sheet(LONG, ("tp", "8"), ("concurrency", "6"), ("request_rate", "30 request/s"),
                   ("colocated_replicas", "1"), ("prefill_queueing", "true"))
    assert sheet.magnitude("prefill_utilisation") > 1
    assert sheet.magnitude("prefill_queue_wait", "ms") >= 1e9
    assert sheet.magnitude("ttft_slo_met") == 0


def test_a_disaggregated_prefill_pool_is_the_fewest_replicas_that_keep_the_wait_in_budget(
        ) -> None:
    sets = (("tp", "8"), ("disaggregated", "1"), ("concurrency", "32"),
            ("request_rate", "40 request/s"), ("ttft_slo", "150 ms"))
    on = _sheet(LONG, *sets, ("prefill_queueing", "true"))
    off = _sheet(LONG, *sets)
    s, budget = on.magnitude("prefill_service_time", "s"), on.magnitude(
        "prefill_queue_budget", "s")
    assert budget == pytest.approx(0.150 - on.magnitude("ttft_served", "s"))

    def wait(replicas: float) -> float:
        rho = 40 * s / replicas
        return math.inf if rho >= 1 else rho * s / (2 * (1 - rho))

    pool = on.magnitude("prefill_pool_replicas")
    assert pool > off.magnitude("prefill_pool_replicas") == off.magnitude("prefill_replicas")
    assert wait(pool) <= budget < wait(pool - 1)  # enough, and one fewer is not
    assert on.magnitude("prefill_queue_wait", "s") == pytest.approx(wait(pool))
    assert on.magnitude("deployment_replicas") == pool + on.magnitude("decode_replicas_at_batch")


# --------------------------------------------------------------------- the reasons
@pytest.fixture(scope="module")
def queued() -> plan.Result:
    q = plan.question(LONG, ["ttft=150ms", "itl=50ms"], "10 request/s", "gpus")
    return plan.run(LONG, q, LONG_SEARCH)


def test_the_nearest_cheaper_candidate_misses_ttft_only_through_the_queue(
        queued: plan.Result) -> None:
    best = int(queued.order()[0])
    assert queued.values["deployment_gpus"][best] == 16  # two replicas, not one
    text = plan_report.reasons(queued, best)
    miss = next(r for r in text if r.startswith("nearest candidate"))
    assert "concurrency=6" in miss and "TTFT at" in miss
    # the one-replica candidate, by hand: its queue is what breaks the SLO
    one = _sheet(LONG, ("tp", "8"), ("concurrency", "6"), ("request_rate", "10 request/s"),
                 ("prefill_queueing", "true"))
    s = one.magnitude("prefill_service_time", "ms")
    rho = 10 * s / 1000
    wait = rho * s / (2 * (1 - rho))
    queue = next(r for r in text if r.startswith("TTFT from prefill queueing")
                 and "so it reaches" in r)
    assert f"1 prefill server(s) of {number(s, 4)} ms per prompt" in queue
    assert f"ρ = {number(100 * rho, 3)}%" in queue
    assert f"adds {number(wait, 4)} ms" in queue
    assert f"without the queue TTFT would be {number(one.magnitude('ttft_served', 'ms'), 4)}" \
        in queue
    assert one.magnitude("ttft_served", "ms") <= 150 < one.magnitude("ttft_at_rate", "ms")


def test_the_winners_binding_ttft_names_its_queue(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--model", "llama-3.3-70b", "--hardware", "h200", "--precision", "fp8",
                 "--set", "isl=8192", "--set", "osl=256", "--slo", "ttft=150ms", "--slo",
                 "itl=50ms", "--rate", "8 request/s", *[f"--search={s}" for s in LONG_SEARCH]])
    out = capsys.readouterr().out
    assert code == 0 and plan_text.QUEUE_NOTE in out
    assert "tightest constraint: TTFT" in out
    line = next(x for x in out.splitlines() if "TTFT from prefill queueing" in x)
    best = _sheet(LONG, ("tp", "8"), ("concurrency", "5"), ("request_rate", "8 request/s"),
                  ("prefill_queueing", "true"))
    assert "at 8 request/s" in line and "so the winner reaches TTFT " \
        f"{number(best.magnitude('ttft_at_rate', 'ms'), 4)} ms of the 150ms SLO" in line


# --------------------------------------------------------------------- engine as an axis
ENGINES = ("hardware=h100-sxm", "precision=fp8", "tp=1,2", "pp=1", "disaggregated=0,1",
           "concurrency=1..400:+7")


@pytest.fixture(scope="module")
def engines() -> plan.Result:
    spec = ScenarioSpec(model="llama-3.3-70b", workload="chat-1k1k")
    q = plan.question(spec, ["ttft=1s", "itl=40ms"], "20 request/s", "gpus")
    return plan.run(spec, q, ("engine=vllm,sglang,trtllm", *ENGINES))


def test_every_candidate_names_its_engine_and_the_engines_differ(engines: plan.Result) -> None:
    assert engines.searched == 3 * 2 * 2 * 58
    picked = [str(engines.choices(int(r))["engine"]) for r in engines.rows]
    counts = {e: picked.count(e) for e in ("vllm", "sglang", "trtllm")}
    # the memory rules differ (vLLM 0.9 of HBM, SGLang 0.87 at TP2, TensorRT-LLM 0.9 of free):
    # KV holds different batches, so different candidates fit
    assert len(set(counts.values())) == 3, counts


def test_the_engine_axis_agrees_with_a_brute_force_sweep(engines: plan.Result) -> None:
    spec = ScenarioSpec(model="llama-3.3-70b", workload="chat-1k1k",
                        sets=plan.question_sets(engines.question))
    brute = sweep.plan(spec, ["engine=vllm,sglang,trtllm", *ENGINES])
    frame = pl.concat(sweep_file.frames(brute, {"plan_feasible": "", "deployment_gpus": ""}))
    ok = frame.filter(pl.col("plan_feasible") == 1)
    assert ok.height == engines.feasible
    mine = pl.DataFrame({"engine": [str(engines.choices(int(r))["engine"])
                                    for r in engines.rows]})
    assert dict(ok.group_by("engine").len().iter_rows()) == \
        dict(mine.group_by("engine").len().iter_rows())
    best = int(engines.order()[0])
    assert ok["deployment_gpus"].min() == engines.values["deployment_gpus"][best]


def test_the_best_plan_re_evaluated_at_its_engine_meets_the_slos(engines: plan.Result) -> None:
    best = int(engines.order()[0])
    spec = best_spec(engines, best, None)
    assert spec.engine == engines.choices(int(engines.rows[best]))["engine"]
    scenario = load(spec)
    assert scenario.engine == spec.engine
    sheet = scenario.sheet
    assert sheet.magnitude("plan_feasible") == 1
    assert sheet.magnitude("ttft_at_rate", "ms") <= 1000
    assert sheet.magnitude("itl_worst", "ms") <= 40
    assert sheet.magnitude("deployment_gpus") == engines.values["deployment_gpus"][best]
    assert sheet.magnitude("max_concurrency") == pytest.approx(
        engines.values["max_concurrency"][best])


def test_launch_defaults_to_the_best_plans_engine(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["plan", "--model", "llama-3.3-70b", "--slo", "itl=40ms", "--rate", "20 request/s",
            "--search", "engine=sglang", *[f"--search={s}" for s in ENGINES], "--launch"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "--engine sglang" in out  # the re-check line
    assert "python -m sglang.launch_server" in out.strip().splitlines()[-1]


def test_an_unknown_engine_exits_2_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--model", "llama-3.3-70b", "--slo", "itl=40ms", "--rate",
                 "20 request/s", "--search", "engine=vllm,tgi"])
    assert code == 2 and "tgi" in capsys.readouterr().err


def test_sweep_rows_name_their_engine(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "--model", "llama-3.3-70b", "--hardware", "h200", "--axis",
                 "engine=vllm,trtllm", "--axis", "concurrency=8", "--only",
                 "max_concurrency"]) == 0
    rows = capsys.readouterr().out.strip().splitlines()
    assert rows[0] == "model,hardware,workload,precision,engine,max_concurrency"
    assert [r.split(",")[4] for r in rows[1:]] == ["vllm", "trtllm"]
    for row in rows[1:]:
        engine, kv = row.split(",")[4], float(row.split(",")[5])
        sheet = load(ScenarioSpec(model="llama-3.3-70b", hardware="h200", engine=engine)).sheet
        assert kv == pytest.approx(sheet.magnitude("max_concurrency"))


# --------------------------------------------------------------------- prices
def test_every_accelerator_has_a_dated_sourced_price_or_a_cost_plan_skips_it_aloud(
        capsys: pytest.CaptureFixture[str]) -> None:
    table = read(plan.PRICES_FILE).data["prices"]
    for name, entry in table.items():
        assert name in catalog_names("hardware"), name
        assert entry["usd_per_gpu_hour"] > 0 and entry["date"] and entry["source"], name
    for name in ("h100-pcie", "l40s"):  # issue 13 asked for these by name
        assert name in table
    unpriced = [n for n in catalog_names("hardware") if n not in table]
    code = main(["plan", "--model", "llama-3.3-70b", "--slo", "itl=50ms", "--rate",
                 "20 request/s", "--objective", "cost", "--search",
                 f"hardware=h200,{','.join(unpriced)}", "--search", "tp=8", "--search",
                 "pp=1", "--search", "concurrency=1..64:+9", "--format", "json"])
    import json

    ans = json.loads(capsys.readouterr().out)
    assert code == 0 and ans["skipped_unpriced"] == unpriced
    assert {p["choices"]["hardware"] for p in ans["frontier"]} == {"h200"}
    if unpriced:  # and alone, they cannot be ranked on cost at all
        code = main(["plan", "--model", "llama-3.3-70b", "--slo", "itl=50ms", "--rate",
                     "20 request/s", "--objective", "cost", "--search",
                     f"hardware={unpriced[0]}"])
        err = capsys.readouterr().err
        assert code == 2 and f"no accelerator searched has a price ({unpriced[0]})" in err


def test_the_skip_line_is_printed_with_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    table = read(plan.PRICES_FILE).data["prices"]
    unpriced = next(n for n in catalog_names("hardware") if n not in table)
    assert main(["plan", "--model", "llama-3.3-70b", "--slo", "itl=50ms", "--rate",
                 "20 request/s", "--objective", "cost", "--search",
                 f"hardware=h200,{unpriced}", "--search", "tp=8", "--search", "pp=1",
                 "--search", "concurrency=1..64:+9"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == ("skipped for --objective cost, no price (prices.toml or --prices FILE): "
                        f"{unpriced}")


# --------------------------------------------------------------------- the README's examples
def _readme_plan_examples() -> list[tuple[str, str]]:
    """(command, output) for each plan example of README.md: a sh block then its text block,
    or a text block that starts with the ``$ perfgraph plan`` line."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Planning a deployment"):]
    section = section[:section.index("\n## ", 10)]
    blocks = re.findall(r"```(\w+)\n(.*?)```", section, re.S)
    out = []
    for (lang, body), (_, after) in zip(blocks, [*blocks[1:], ("", "")], strict=True):
        if lang == "sh" and body.startswith("perfgraph plan"):
            out.append((body.strip(), after.rstrip("\n")))
        elif lang == "text" and body.startswith("$ perfgraph plan"):
            first, _, rest = body.partition("\n")
            out.append((first[2:], rest.rstrip("\n")))
    return out


def test_the_readme_plan_examples_are_what_plan_prints(
        capsys: pytest.CaptureFixture[str]) -> None:
    import shlex

    examples = _readme_plan_examples()
    assert len(examples) == 4  # the last: percentile SLOs, simulated
    for command, shown in examples:
        main(shlex.split(command)[1:])
        assert capsys.readouterr().out.rstrip("\n") == shown, command


def test_a_set_prefill_queueing_off_stands_and_the_output_says_so(
        capsys: pytest.CaptureFixture[str]) -> None:
    import json

    args = ["plan", "--model", "llama-3.3-70b", "--hardware", "h200", "--precision", "fp8",
            "--set", "isl=8192", "--set", "osl=256", "--slo", "ttft=150ms", "--slo", "itl=50ms",
            "--rate", "10 request/s", *[f"--search={s}" for s in LONG_SEARCH]]
    assert main([*args, "--format", "json"]) == 0
    on = json.loads(capsys.readouterr().out)
    assert main([*args, "--set", "prefill_queueing=false", "--format", "json"]) == 0
    off = json.loads(capsys.readouterr().out)
    assert on["question"]["ttft_includes_prefill_queue"] is True
    assert off["question"]["ttft_includes_prefill_queue"] is False
    # without the queue one replica carries 10 request/s; with it, the TTFT SLO needs two
    assert off["best"]["values"]["deployment_gpus"]["value"] == 8
    assert on["best"]["values"]["deployment_gpus"]["value"] == 16
    assert off["best"]["values"]["prefill_queue_wait"]["value"] == 0
    assert main([*args, "--set", "prefill_queueing=false", "--top", "0"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == plan_text.NO_QUEUE_NOTE
