"""The simulator's token budget: where the sheet models the engine's chunking (the realistic
terms, ``prefill_rides_decode_step``), a step carries the running decodes and then prompt
chunks up to ``max_num_batched_tokens``, as vLLM's scheduler fills it and as the sheet's
``ttft_prefill_chunks`` counts; in the seed's idealised scheduler it keeps ``chunk_size``
while that keeps up with the batch's prompts (``roofline_chunk_tokens``)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from perfgraph.scenario.loading import ScenarioSpec, load, parse_set
from perfgraph.whatif.simulate import Setup, simulate
from perfgraph.whatif.simulate.scheduler import policy
from perfgraph.whatif.simulate.step_sheet import StepSheet
from perfgraph.whatif.simulate.summary import summarise
from tests.test_step_sheet import assert_the_step_is_the_sheets

H100_8K = ScenarioSpec(model="llama-3.3-70b", hardware="h100-sxm", precision="fp8",
                       workload="long-prompt-8k1k", calibration="auto",
                       sets=(parse_set("tp=4"), parse_set("concurrency=8")))


def test_the_budget_is_the_engines_under_the_realistic_terms() -> None:
    sheet = load(H100_8K).sheet
    assert sheet.magnitude("prefill_rides_decode_step")
    pol = policy("vllm", sheet, None, 8)
    assert pol.fixed == 8192 and pol.prefill_budget(8) == 8184  # decodes first
    assert policy("vllm", sheet, 2048, 8).fixed == 2048  # --token-budget still wins
    roofline = load(ScenarioSpec()).sheet  # the seed's scheduler: threshold − B beside decodes
    assert not roofline.magnitude("prefill_rides_decode_step")
    seed = policy("vllm", roofline, None, 64)
    assert seed.fixed == 0
    assert seed.with_decodes == math.ceil(roofline.magnitude("chunk_size", "token"))


def test_an_8k_prompt_in_a_closed_loop_takes_the_sheets_two_chunks() -> None:
    """8 users of 8k/1k at TP4: a prompt's first chunk is 8192 − 8 decodes = 8184 tokens, its
    second the last 8 (the sheet's ttft_prefill_chunks = 2); a user's request arrives as its
    last one ends, at a step boundary, so the median TTFT is those two steps plus the fixed
    TTFT cost, by hand from the step model."""
    sheet = load(H100_8K).sheet
    assert sheet.magnitude("ttft_prefill_chunks") == 2
    model = StepSheet.from_sheet(sheet)
    b, isl, osl = 8, 8192, 1024
    ctx = b * (isl + osl / 2)  # the decoders' KV, mid-way through their outputs
    first = model.time(b, isl - b, ctx + isl - b, ctx, model.chunk_pairs(0, isl - b))
    second = model.time(b, b, ctx + isl, ctx, model.chunk_pairs(isl - b, b))
    s = summarise(simulate(sheet, Setup(users=8, requests=200)), sheet)
    ttft = s.latency.ttft
    assert ttft.p50 == pytest.approx(1e3 * (first + second + model.ttft_overhead), rel=0.01)
    # every other user's first chunk stalls this user's decodes once per request
    plain = model.time(b, 0, ctx, ctx)
    tpot = plain + (b - 1) / (osl - 1) * (first - plain + second - plain)
    assert s.latency.tpot.mean == pytest.approx(1e3 * tpot, rel=0.01)  # ms


@pytest.mark.parametrize("spec", [
    ScenarioSpec(model="llama-3.3-70b", hardware="h100-sxm", precision="fp8",
                 workload="long-prompt-8k1k", calibration="auto",
                 sets=(parse_set("tp=4"), parse_set("concurrency=8"),
                       parse_set("prefill_chunk_steps=true"))),
    ScenarioSpec(calibration="auto", sets=(parse_set("prefill_chunk_steps=true"),)),
], ids=["8k1k-tp4-8users", "1k1k-tp2-64users"])
def test_with_chunk_steps_the_sheet_agrees_with_the_simulation(spec: ScenarioSpec) -> None:
    """prefill_chunk_steps: the sheet times the steps that carry a prompt's chunks at the
    chunk's size, as the simulated engine fills them; its throughput and itl then agree
    with the closed loop's within 3% (with the even spread they part by 12–16%)."""
    sheet = load(spec).sheet
    s = summarise(simulate(sheet, Setup(users=int(sheet.magnitude("concurrency")),
                                        requests=400)), sheet)
    assert s.output_throughput == pytest.approx(sheet.magnitude("throughput"), rel=0.03)
    assert s.latency.tpot.mean == pytest.approx(sheet.magnitude("itl"), rel=0.03)
    assert_the_step_is_the_sheets(sheet)


def test_chunk_steps_by_hand() -> None:
    """8 users, 8k/1k, budget 8192: each of the 7 other users' prompts takes 2 chunk steps
    per 1024 decode steps, of 4096 tokens on average; one user alone sees none."""
    sets = H100_8K.sets + (parse_set("prefill_chunk_steps=true"),)
    sheet = load(replace(H100_8K, sets=sets)).sheet
    assert sheet.magnitude("chunk_step_share") == pytest.approx(7 * 2 / 1024)
    assert sheet.magnitude("chunk_step_tokens", "token") == 4096
    alone = load(replace(H100_8K, sets=sets + (parse_set("concurrency=1"),))).sheet
    assert alone.magnitude("chunk_step_share") == 0
    assert alone.magnitude("decode_step_time", "s") == pytest.approx(
        alone.magnitude("pp_step_stages") * alone.magnitude("plain_step_roofline_time", "s")
        + alone.magnitude("step_overhead", "s") + alone.magnitude("seq_overhead_step_time", "s"))
    # the even spread (the profile turns chunk steps on; off here): every step carries B × ISL ÷ OSL
    spread = H100_8K.sets + (parse_set("prefill_chunk_steps=false"),)
    off = load(replace(H100_8K, sets=spread)).sheet
    assert off.magnitude("chunk_step_share") == 1
    assert off.magnitude("chunk_step_tokens", "token") == 8 * 8192 / 1024


def test_v0_pipeline_steps_carry_one_budget_per_virtual_engine() -> None:
    """vLLM V0 under PP runs one scheduler per virtual engine, each with the whole
    max_num_batched_tokens: in pipeline steady state a step carries up to two budgets of
    prompt chunks (two microbatches), one prompt's chunk at most one budget."""
    sets = ("tp=4", "pp=2", "microbatches=2", "max_num_batched_tokens=2048 token")
    flat = load(replace(H100_8K, sets=tuple(map(parse_set, sets)))).sheet
    steady = load(replace(H100_8K, sets=tuple(map(parse_set, sets + (
        "pp_steady_state=true",))))).sheet
    assert flat.magnitude("step_schedulers") == 1
    assert steady.magnitude("step_schedulers") == 2
    pol = policy("vllm", steady, None, 8)
    assert pol.prefill_budget(0) == 4096 and pol.prefill_budget(6) == 4090
    assert pol.chunk_cap(0) == pol.chunk_cap(6) == 2048
    assert policy("vllm", flat, None, 8).chunk_cap(0) > 1 << 40  # one scheduler: no cap

    def first_steps(sheet):  # noqa: ANN001, ANN202
        run = simulate(sheet, Setup(rate=float("inf"), requests=3, lengths="fixed"))
        return list(run.engine.log.arrays()["prefill"][:4])

    # three 8k prompts at once: one scheduler takes 2048 of the first a step; two take
    # 2048 of each of the first two, then the third prompt's as the first two finish
    assert first_steps(flat)[:4] == [2048, 2048, 2048, 2048]
    assert first_steps(steady)[:4] == [4096, 4096, 4096, 4096]
    run = simulate(steady, Setup(rate=float("inf"), requests=2, lengths="fixed"))
    t = run.engine.reqs.table()
    steps = run.engine.log.arrays()
    # two prompts side by side: both first tokens come with the 4th step (4 × 2048 = 8192)
    assert t["first_token"][0] == pytest.approx(t["first_token"][1])
    assert t["first_token"][0] == pytest.approx(steps["end"][3] + run.model.ttft_overhead)


def test_the_roofline_chunk_is_the_seeds_until_the_batch_outruns_it() -> None:
    """Beside decodes the seed's scheduler takes chunk_size, threshold − B (231.4 tokens at
    the default 64 users, above the 64 × 1024 ÷ 1024 = 64 its prompts need a step); at 200
    users threshold − B is 95.4, under the 200 needed, and at 512 it is none: the engine's
    budget then, 8192 − B."""
    chunk = {}
    for users in (64, 200, 512):
        sheet = load(ScenarioSpec(sets=(parse_set(f"concurrency={users}"),))).sheet
        chunk[users] = sheet.magnitude("roofline_chunk_tokens", "token")
        if users == 64:
            assert chunk[64] == pytest.approx(sheet.magnitude("chunk_size", "token"))
            threshold = sheet.magnitude("compute_bound_threshold", "token")
    assert chunk[64] == pytest.approx(threshold - 64)
    assert threshold - 200 < 200
    assert (chunk[200], chunk[512]) == (8192 - 200, 8192 - 512)
    assert policy("vllm", sheet, None, 512).with_decodes == 8192 - 512


def test_a_roofline_batch_past_the_threshold_stays_full() -> None:
    """320 users of 256/256 on one H100 (threshold 295 tokens): the seed's chunk is none, and
    a step of 1 prompt token beside the decodes left the batch to drain to a few sequences;
    with the engine's budget beside them it holds (≥ 95% of the users, no preemption)."""
    sets = ("tp=1", "concurrency=320", "isl=256", "osl=256")
    sheet = load(ScenarioSpec(model="llama-3.1-8b", hardware="h100-sxm", precision="fp8",
                              sets=tuple(parse_set(s) for s in sets))).sheet
    assert sheet.magnitude("chunk_size", "token") == 0
    s = summarise(simulate(sheet, Setup(users=320, requests=1280)), sheet)
    assert s.preemptions == 0 and s.batch.mean >= 0.95 * 320


def _first_after_last_step(requests: int) -> tuple[float, float, float]:
    """The last request's first token, the end of the last step that carried its prompt and
    that step's time, for ``requests`` 8k prompts sent at once (ttft_wait_steps = 2)."""
    sets = ("tp=4", "ttft_wait_steps=2", "ttft_overhead=5 ms")
    run = simulate(load(replace(H100_8K, sets=tuple(map(parse_set, sets)))).sheet,
                   Setup(rate=float("inf"), requests=requests, lengths="fixed"))
    steps, first = run.engine.log.arrays(), run.engine.reqs.table()["first_token"][-1]
    last = int(sum(1 for p in steps["prefill"] if p > 0)) - 1
    dt = steps["end"][last] - (steps["end"][last - 1] if last else 0.0)
    assert run.model.ttft_wait_steps == 2
    return first, steps["end"][last], dt


def test_a_first_token_comes_ttft_wait_steps_steps_after_its_prompts_last_step() -> None:
    """ttft_wait_steps = 2: the second of two 8k prompts, whose last chunk runs beside the
    first's decode, has its first token two of its last step's times after that step ends
    (the step's own time stands for a step's), as the sheet's ttft_chunk_wait adds two
    decode steps; one prompt alone finds the engine idle and waits for none
    (arrival_finds_batch = 0)."""
    first, end, dt = _first_after_last_step(2)
    assert first == pytest.approx(end + 0.005 + 2 * dt)
    first, end, _ = _first_after_last_step(1)
    assert first == pytest.approx(end + 0.005)
