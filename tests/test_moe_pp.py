"""An MoE under pipeline parallelism: a decode step of T tokens runs as m microbatches, each
its own forward pass over T / m tokens, so each reads only the experts its own tokens route to,
1 − (1 − k/E)^(T/m) of them, not the 1 − (1 − k/E)^T the whole step's tokens would touch.

By hand, on a 70B MoE of 64 experts, top-2 (6e10 routed parameters, 1e10 shared), FP8
(1 byte a parameter, 1 a KV element) on H100 SXM (3.35 TB/s) at TP2 × PP4, 4 microbatches of
the 16 users' tokens, 4 each: every microbatch touches 1 − (31/32)^4 = 11.9% of the experts,
so reads 1e10 + 0.119 × 6e10 = 17.16 GB (the whole step's 16 tokens would touch 39.8%: 33.9 GB).
"""

from __future__ import annotations

import pytest

from perfgraph.engine.units import unit
from perfgraph.scenario.loading import ScenarioSpec, load, parse_set
from perfgraph.whatif.simulate.step_sheet import StepSheet
from tests.test_step_sheet import assert_the_step_is_the_sheets

MOE = ("n_params=7e10", "params_routed_experts=6e10", "n_routed_experts=64",
       "n_experts_per_tok=2", "n_active_params=1.1875e10", "tp=2", "concurrency=16")
PP4 = ("pp=4", "microbatches=4")
SHARED, ROUTED = 1e10, 6e10  # bytes at FP8
BANDWIDTH = 2 * 3.35e12  # a stage's TP2 group
KV_PER_TOKEN = 80 * 2 * 8 * 128  # layers × (K, V) × KV heads × head_dim × 1 byte


def sheet(*extra: str):  # noqa: ANN201
    return load(ScenarioSpec(model="llama-3.1-70b", hardware="h100-sxm", precision="fp8",
                             sets=tuple(parse_set(s) for s in MOE + extra))).sheet


def touched(tokens: float) -> float:
    return 1 - (1 - 2 / 64) ** tokens


def test_each_microbatch_reads_the_experts_of_its_own_tokens() -> None:
    s = sheet(*PP4)
    assert s.magnitude("shared_weights_bytes", "B") == pytest.approx(SHARED)
    assert s.magnitude("microbatch_tokens") == 4
    assert s.magnitude("experts_touched_fraction") == pytest.approx(touched(4), rel=1e-12)
    per_microbatch = SHARED + touched(4) * ROUTED  # 17.16 GB
    assert s.magnitude("weights_bytes_per_step", "B") == pytest.approx(per_microbatch,
                                                                        rel=1e-12)
    kv = 16 * (1024 + 512) * KV_PER_TOKEN  # the batch's KV at the mean context, one copy
    assert s.magnitude("kv_bytes_total", "B") == pytest.approx(kv, rel=1e-12)
    # the drained pipeline: m + p − 1 = 7 stage times of one microbatch's bytes over a stage
    stage = (per_microbatch + kv / 4) / (4 * BANDWIDTH)
    assert s.magnitude("decode_compute_time", "s") < stage / 100  # memory-bound
    assert s.magnitude("decode_step_time", "ms") == pytest.approx(7 * stage * 1e3, rel=1e-9)
    assert 7 * stage * 1e3 == pytest.approx(4.744, abs=5e-4)  # was 9.13 ms: 33.9 GB a pass
    # the whole step reads the weights once a microbatch, and every sequence's KV once
    assert s.magnitude("decode_bytes_per_step", "B") == pytest.approx(4 * per_microbatch + kv,
                                                                       rel=1e-12)


def test_the_ceiling_counts_each_microbatchs_experts() -> None:
    s = sheet(*PP4)
    assert s.magnitude("ceiling_batch") == 16
    assert s.magnitude("ceiling_weights_bytes_per_step", "B") == pytest.approx(
        SHARED + touched(4) * ROUTED, rel=1e-12)
    seq = (1024 + 512) * KV_PER_TOKEN
    assert s.magnitude("ceiling_step_bytes", "B") == pytest.approx(
        4 * (SHARED + touched(4) * ROUTED) + 16 * seq, rel=1e-12)


def test_without_pp_the_step_is_one_pass_of_every_token() -> None:
    s = sheet()
    assert s.magnitude("pp_microbatches") == 1
    assert s.magnitude("weights_bytes_per_step", "B") == pytest.approx(
        SHARED + touched(16) * ROUTED, rel=1e-12)


def test_the_simulated_step_follows_the_sheet() -> None:
    """The simulator's weight table is the sheet's formula over the step's tokens: a step of
    16 decodes reads 4 microbatches' experts of 4 tokens each, and times as the sheet's."""
    s = sheet(*PP4)
    model = StepSheet.from_sheet(s)
    ctx = 16 * 1536
    cells = model.values(16, 0, ctx, ctx)  # canonical magnitudes
    assert cells["sim_weights_bytes"] / unit("B").factor == pytest.approx(
        SHARED + touched(4) * ROUTED, rel=1e-12)
    assert model.time(16, 0, ctx, ctx) == pytest.approx(s.magnitude("decode_step_time", "s"),
                                                        rel=1e-9)
    assert model.decode_run(16, ctx, 1)[0] == pytest.approx(model.time(16, 0, ctx, ctx))
    assert_the_step_is_the_sheets(s)


def test_a_prompt_under_pp_is_one_microbatch_of_all_its_tokens() -> None:
    """A prompt is not split over microbatches: its 64 tokens touch 1 − (31/32)^64 = 87% of
    the experts, in the sheet's prefill and in the simulator's lone prompt alike (not the 33%
    that 16 tokens a microbatch would)."""
    s = sheet(*PP4, "isl=64 token")
    assert s.magnitude("prefill_weights_bytes", "B") == pytest.approx(
        SHARED + touched(64) * ROUTED, rel=1e-12)
    model = StepSheet.from_sheet(s)
    prompt = model.time(0, 64, 64, 0, model.chunk_pairs(0, 64))
    assert prompt == pytest.approx(s.magnitude("prefill_time", "s"), rel=1e-9)
    assert prompt == pytest.approx((SHARED + touched(64) * ROUTED + 64 * KV_PER_TOKEN)
                                   / BANDWIDTH, rel=1e-9)
