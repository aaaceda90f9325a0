"""The simulation's MoE steps: each step reads the shared weights once plus the distinct
routed experts its own tokens touch, E × (1 − (1 − k/E)^T) a layer (the sheet's
``experts_touched_fraction`` over ``step_tokens``), not the scenario batch's figure.

Hand computations from models/qwen3-30b-a3b.toml (config.json): n_params 30,532,122,624,
n_active_params 3,353,032,704, routed experts 28,991,029,248 params, E = 128, k = 8; at
BF16 every weight is 2 B."""

from __future__ import annotations

import pytest

from perfgraph.engine.units import unit
from perfgraph.scenario.loading import ScenarioSpec, load, parse_set
from perfgraph.whatif.simulate import Setup, simulate
from perfgraph.whatif.simulate.step_sheet import StepSheet
from tests.test_step_sheet import assert_the_step_is_the_sheets

N_PARAMS, N_ACTIVE, ROUTED = 30_532_122_624, 3_353_032_704, 28_991_029_248
SHARED = N_PARAMS - ROUTED  # attention, norms, routers, embeddings, LM head
QWEN = ScenarioSpec(model="qwen3-30b-a3b", hardware="h100-sxm", precision="bf16",
                    sets=(parse_set("tp=1"),))


def _model(spec: ScenarioSpec = QWEN) -> StepSheet:
    return StepSheet.from_sheet(load(spec).sheet)


def weights(model: StepSheet, tokens: float) -> float:
    """Bytes of weights a decode step of ``tokens`` sequences reads (the step sheet's)."""
    return model.values(tokens, 0, 0, 0)["sim_weights_bytes"] / unit("B").factor


def test_one_token_reads_the_active_weights_and_4096_every_expert() -> None:
    model = _model()
    assert weights(model, 1) == pytest.approx(2 * N_ACTIVE, rel=1e-9)
    assert weights(model, 4096) == pytest.approx(2 * N_PARAMS, rel=1e-9)
    # in between: 16 tokens touch 1 − (120/128)^16 = 64.4% of each layer's experts
    sixteen = 2 * (SHARED + (1 - (1 - 8 / 128) ** 16) * ROUTED)
    assert weights(model, 16) == pytest.approx(sixteen, rel=1e-9)
    # 2 × (1.541 + 0.644 × 28.991)
    assert weights(model, 16) / 1e9 == pytest.approx(40.42, abs=0.01)
    # a step far larger: every expert (the fraction is 1 to 1e-12 long before)
    assert weights(model, 100_000) == pytest.approx(2 * N_PARAMS, rel=1e-9)


def test_a_step_is_timed_by_its_own_tokens_not_the_scenarios_batch() -> None:
    model = _model()
    sheet = load(QWEN).sheet
    m = sheet.magnitude
    # a lone decode (memory-bound): active weights ÷ bandwidth, + its (zero) KV and overheads
    # (TP1: no collectives)
    assert model.time(1, 0, 0, 0) == pytest.approx(
        2 * N_ACTIVE / m("achievable_bandwidth", "B/s") + m("step_overhead", "s")
        + m("seq_step_overhead", "s"), rel=1e-9)
    # the scenario's own step (64 decodes) is the sheet's weights_bytes_per_step
    assert weights(model, 64) == pytest.approx(m("weights_bytes_per_step", "B"), rel=1e-9)
    run = model.decode_run(1, 0.0, 2)
    assert run[0] == pytest.approx(model.time(1, 0, 0, 0), rel=1e-12)
    assert_the_step_is_the_sheets(sheet)


def test_the_sheets_prefill_reads_every_expert_a_prompt_touches() -> None:
    sheet = load(QWEN).sheet
    isl = sheet.magnitude("isl", "token")
    assert sheet.magnitude("prefill_weights_bytes", "B") == pytest.approx(
        2 * (SHARED + (1 - (1 - 8 / 128) ** isl) * ROUTED), rel=1e-9)


def test_dense_models_read_all_weights_every_step() -> None:
    model = _model(ScenarioSpec(model="llama-3.1-8b", precision="bf16",
                                sets=(parse_set("tp=1"),)))
    full = load(ScenarioSpec(model="llama-3.1-8b", precision="bf16", sets=(
        parse_set("tp=1"),))).sheet.magnitude("weights_bytes", "B")
    assert weights(model, 1) == weights(model, 4096) == pytest.approx(full, rel=1e-12)


def test_a_lone_moe_request_decodes_at_the_active_weights_speed() -> None:
    sheet = load(QWEN).sheet
    gap = 100 * sheet.magnitude("e2e_latency", "s")
    result = simulate(sheet, Setup(rate=1 / gap, cv=0.0, requests=3))
    model = result.model
    t = result.engine.reqs.table()
    osl = int(t["osl"][0])
    # every decode step of a lone request reads 1 token's experts: its TPOT is that step
    # (KV grows by one token a step, a few hundred bytes against 6.7 GB of weights)
    ctx = sheet.magnitude("isl") + osl / 2
    assert float(t["tpot"][0]) == pytest.approx(model.time(1, 0, ctx, ctx), rel=1e-3)
