"""Speculative decoding and MTP in the simulation, against hand computations.

A decode step verifies k drafts a sequence and gives it 1 + (leading drafts accepted)
tokens, each draft accepted with probability spec_alpha: at α = 1 every step gives k + 1
tokens, at α = 0 one; on average (1 − α^(k+1)) ÷ (1 − α). The step's time is the step
sheet's, the verify pass's k + 1 tokens a decode and the drafts' forwards included.
"""

from __future__ import annotations

import numpy as np
import pytest

from perfgraph.cli.main import main
from perfgraph.scenario.loading import ScenarioSpec, load, parse_set
from perfgraph.whatif.simulate import Setup, simulate
from perfgraph.whatif.simulate.speculation import Speculation
from perfgraph.whatif.simulate.step_sheet import StepSheet
from perfgraph.whatif.simulate.summary import summarise
from tests.test_simulate_steady import PARALLELISMS
from tests.test_simulate_steady import STEADY as STEADY_SETS
from tests.test_step_sheet import averages, step_at

STEADY = ("prefill_in_step=true", "prefill_chunk_steps=true")


def sheet_of(*sets: str):  # noqa: ANN201
    return load(ScenarioSpec(sets=tuple(parse_set(s) for s in sets))).sheet


def one_request(k: int, alpha: float, osl: int = 100):  # noqa: ANN201
    sheet = sheet_of(f"spec_k={k}", f"spec_alpha={alpha}", f"osl={osl}")
    return simulate(sheet, Setup(users=1, requests=1)).engine


@pytest.mark.parametrize(("alpha", "per_step"), [(1.0, 4), (0.0, 1)])
def test_alpha_one_gives_k_plus_one_a_step_and_zero_gives_one(alpha: float,
                                                              per_step: int) -> None:
    e = one_request(3, alpha)
    steps, accepted = e.log.arrays(), e.log.accepted()
    decode = steps["decodes"] > 0
    # the prompt's step gives the first token; the other 99 come k + 1 = 4 (or 1) a step:
    # 25 decode steps at α = 1 (24 of 4, the last cut to 3), 99 at α = 0
    assert decode.sum() == -(-99 // per_step)
    assert steps["tokens"].sum() == 100 and e.reqs.gen == [100]
    assert accepted is not None and accepted.shape == (steps["end"].size, 4)
    if alpha == 1:
        assert accepted[decode].sum(axis=0).tolist() == [0, 0, 1, 24]
    else:
        assert accepted[decode].sum(axis=0).tolist() == [99, 0, 0, 0]


def test_each_step_is_the_step_sheets_time_at_k_plus_one_tokens_and_the_drafts() -> None:
    sheet = sheet_of("spec_k=3", "spec_alpha=1", "osl=100", "spec_draft_layers=1")
    e = simulate(sheet, Setup(users=1, requests=1)).engine
    model, steps = StepSheet.from_sheet(sheet), e.log.arrays()
    isl = int(sheet.magnitude("isl", "token"))
    kv = isl + 1.0  # after the prompt's step: its prompt and first token
    for dur in steps["dur"][steps["decodes"] > 0]:
        assert dur == pytest.approx(model.time(1, 0, kv, kv), rel=1e-12)
        kv += 4
    plain = StepSheet.from_sheet(sheet_of("spec_k=3", "spec_alpha=1", "osl=100"))
    draft = sheet_of("spec_k=3", "spec_alpha=1", "osl=100", "spec_draft_layers=1",
                     "concurrency=1", f"avg_context={isl + 1} token")
    assert model.time(1, 0, isl + 1, isl + 1) - plain.time(1, 0, isl + 1, isl + 1) == \
        pytest.approx(draft.magnitude("spec_draft_time", "s"), rel=1e-9)


def test_the_mean_tokens_a_step_is_the_sheets_tokens_per_pass() -> None:
    k, alpha, tokens = 3, 0.6, 200_000
    spec = Speculation(k, alpha, np.random.default_rng(1))
    steps = spec.join(0, 0, tokens)
    counts = spec.accepted(0, steps).sum(axis=0)
    # P(a) = α^(a−1)(1 − α) for a ≤ k, α^k for k + 1: 0.4, 0.24, 0.144, 0.216; mean 2.176
    p = np.array([0.4, 0.24, 0.144, 0.216])
    mean = (1 - alpha ** (k + 1)) / (1 - alpha)
    assert mean == pytest.approx(float(p @ np.arange(1, 5)))
    sd = float(np.sqrt(p @ (np.arange(1, 5) - mean) ** 2))
    assert tokens / steps == pytest.approx(mean, abs=4 * sd / np.sqrt(steps))
    assert (np.abs(counts / steps - p) <= 4 * np.sqrt(p * (1 - p) / steps)).all()
    assert load(ScenarioSpec(sets=(("spec_k", "3"), ("spec_alpha", "0.6")))).sheet \
        .magnitude("spec_tokens_per_pass") == pytest.approx(mean)


def test_a_preempted_request_gives_back_its_later_draws() -> None:
    spec = Speculation(2, 0.5, np.random.default_rng(0))
    n = spec.join(7, 10, 50)
    before = spec.tokens(10, n + 2)
    spec.join(8, 12, 30)
    spec.leave(8, 15)  # preempted at decode step 15: it gained its steps 12–14 only
    after = spec.tokens(10, n + 2)
    assert after[:2].tolist() == before[:2].tolist() and after[5:].tolist() == \
        before[5:].tolist()
    assert spec.gained(7, 10 + n) == 50 and spec.next(7, 10 + n) == 0


@pytest.mark.parametrize("sets", [("spec_k=3", "spec_alpha=0.7"),
                                  ("spec_k=2", "spec_alpha=0.8", "spec_draft_layers=1")])
def test_closed_loop_tpot_and_throughput_are_the_sheets_with_speculation(sets) -> None:
    # 64 users of 1k/1k, prompts in the decode steps (the sheet's steady state): simulated
    # mean TPOT against the sheet's itl (a step per spec_tokens_per_pass tokens), output
    # throughput against its throughput (measured 0.3% and 0.2% at k = 3, α = 0.7)
    sheet = sheet_of(*sets, *STEADY)
    step = step_at(StepSheet.from_sheet(sheet), averages(sheet))  # the sheet's own step
    assert sheet.magnitude("sim_step_time", "s") == pytest.approx(step, rel=1e-12)
    run = simulate(sheet, Setup(users=64, requests=2048))
    s = summarise(run, sheet)
    assert run.complete and s.preemptions == 0
    assert s.latency.tpot.mean == pytest.approx(sheet.magnitude("itl", "ms"),
                                                             rel=0.02)
    assert s.output_throughput == pytest.approx(sheet.magnitude("throughput"), rel=0.02)
    assert s.speculation.accepted == pytest.approx(
        sheet.magnitude("spec_tokens_per_pass"), rel=0.01)
    # ITL spreads each chunk over its tokens: its mean is the time per token, as TPOT
    assert s.latency.itl.mean == pytest.approx(
        s.latency.tpot.mean, rel=0.01)


@pytest.mark.parametrize(("model", "parallelism"), [
    ("deepseek-v3", "ep+dp-attention"), ("qwen3-30b-a3b", "tp+pp"), ("llama-3.1-70b", "tp"),
    ("gemma-3-27b", "tp"), ("gpt-oss-120b", "tp+pp")])
def test_with_mtp_models_and_parallelisms_agree_with_the_sheet(model: str,
                                                               parallelism: str) -> None:
    # k = 2 drafts from one MTP layer at α = 0.8, in the sheet's steady state (as
    # test_simulate_steady). Measured over the whole catalog × three parallelisms when this
    # was written: within 0.9% of the sheet's TPOT and throughput (Llama 4 Maverick under TP
    # with PP the furthest, −0.8% TPOT, as without speculation)
    sets = (("spec_k", "2"), ("spec_alpha", "0.8"), ("spec_draft_layers", "1"))
    sheet = load(ScenarioSpec(model=model, hardware="b200", precision="fp8",
                              sets=PARALLELISMS[parallelism] + STEADY_SETS + sets)).sheet
    assert sheet.magnitude("spec_draft_time", "s") > 0
    users = int(sheet.magnitude("concurrency"))
    s = summarise(simulate(sheet, Setup(users=users, requests=32 * users)), sheet)
    assert s.preemptions == 0
    assert s.output_throughput == pytest.approx(sheet.magnitude("throughput"), rel=0.01)
    assert s.latency.tpot.mean == pytest.approx(sheet.magnitude("itl"), rel=0.01)


def test_kv_pressure_under_speculation_still_gives_every_token() -> None:
    sheet = sheet_of("gpu_memory_utilization=0.5", "spec_k=4", "spec_alpha=0.8", *STEADY)
    run = simulate(sheet, Setup(users=64, requests=300))
    e = run.engine
    assert run.complete and e.preemptions > 0
    assert e.reqs.gen == e.reqs.osl
    assert e.log.arrays()["tokens"].sum() == sum(e.reqs.osl)
    assert not e.spec.draws and summarise(run, sheet).kv_use.max <= 1.0


@pytest.mark.parametrize("scheduler", ["vllm", "sglang", "trtllm", "static"])
def test_every_scheduler_gives_every_token_under_speculation(scheduler: str) -> None:
    # open loop, spread lengths, the API server's loop on: each request's draws end with it
    sheet = sheet_of("spec_k=4", "spec_alpha=0.6", "frontend_token_time=0.05 ms/token")
    run = simulate(sheet, Setup(rate=6, requests=120, lengths="workload", scheduler=scheduler))
    e = run.engine
    assert run.complete and e.reqs.gen == e.reqs.osl and not e.spec.draws
    assert e.log.arrays()["tokens"].sum() == sum(e.reqs.osl)


def test_a_seed_reproduces_a_run() -> None:
    sheet = sheet_of("spec_k=3", "spec_alpha=0.7")
    a, b, c = (summarise(simulate(sheet, Setup(users=8, requests=40, seed=s)), sheet)
               for s in (5, 5, 6))
    assert a.latency == b.latency and a.latency != c.latency


def test_the_cli_says_the_mean_tokens_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["simulate", "--users", "8", "--requests", "40", "--set", "spec_k=3",
                 "--set", "spec_alpha=0.7"])
    out = capsys.readouterr().out
    assert code == 0
    line = next(x for x in out.splitlines() if x.strip().startswith("speculation"))
    assert "tokens accepted a decode a step (k = 3; the sheet's spec_tokens_per_pass 2.533)" \
        in line


def test_the_readme_example_is_what_simulate_prints(capsys: pytest.CaptureFixture[str],
                                                    ) -> None:
    import re
    import shlex
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text("utf-8")
    shown = next(b for b in re.findall(r"```text\n(.*?)```", readme, re.S)
                 if b.startswith("$ perfgraph simulate ") and "spec_k" in b.split("\n")[0])
    command, expected = shown.split("\n", 1)
    code = main(shlex.split(command.removeprefix("$ perfgraph ")))
    assert code == 0 and capsys.readouterr().out == expected
