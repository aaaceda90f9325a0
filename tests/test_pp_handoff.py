"""The pipeline's stage-to-stage sends (``pp_handoff_time``, ``prefill_pp_handoff_time``):
each TP rank sends its 1/tp slice of a microbatch's hidden states and residual to the next
stage, over the NIC when the stages sit on different nodes; the sheet's decode step and
prefill, and the simulator's steps, carry them once ``pp_handoffs`` is on (a calibration
turns it on; the pure roofline leaves it off, as every realistic term). By hand for the A100
PP runs' deployment (Llama-3.3-70B BF16, TP4 × PP2 on two nodes, 25 GB/s HDR NIC per GPU)."""

from __future__ import annotations

import pytest

from perfgraph.scenario.loading import ScenarioSpec, load, parse_set
from perfgraph.whatif.simulate.step_sheet import StepSheet
from tests.test_step_sheet import assert_the_step_is_the_sheets

SETS = ("tp=4", "pp=2", "microbatches=2", "pp_steady_state=true", "concurrency=64",
        "pp_handoffs=true")


def sheet(*extra: str):  # noqa: ANN201
    return load(ScenarioSpec(model="llama-3.3-70b", hardware="a100-40gb", precision="bf16",
                             sets=tuple(parse_set(s) for s in SETS + extra))).sheet


def test_the_handoff_by_hand() -> None:
    s = sheet("pp_across_nodes=true")
    per_token = 2 * 8192 * 2 / 4  # hidden + residual, d_model 8192, BF16, a quarter per rank
    assert s.magnitude("pp_handoff_bytes_per_token", "B") == per_token
    assert s.magnitude("pp_handoff_bandwidth", "GB/s") == 25  # the NIC
    latency = s.magnitude("collective_latency", "s")
    # 64 decodes in 2 microbatches of 32, one stage boundary
    assert s.magnitude("pp_handoff_time", "s") == pytest.approx(latency + 32 * per_token / 25e9)
    isl = s.magnitude("isl", "token")
    assert s.magnitude("prefill_pp_handoff_time", "s") == pytest.approx(
        latency + isl * per_token / 25e9)


def test_inside_a_node_the_link_carries_it_and_without_pp_nothing() -> None:
    s = sheet()  # tp × pp = 8 fits one NVLink domain of 8
    assert not s.magnitude("pp_across_nodes")
    assert s.magnitude("pp_handoff_bandwidth", "GB/s") == s.magnitude("link_bandwidth",
                                                                       "GB/s") / 2
    alone = load(ScenarioSpec(model="llama-3.3-70b", hardware="a100-40gb",
                              precision="bf16")).sheet
    assert alone.magnitude("pp_handoff_time", "s") == 0
    assert alone.magnitude("prefill_pp_handoff_time", "s") == 0


def test_the_decode_step_and_the_simulated_step_carry_it() -> None:
    near, far = sheet(), sheet("pp_across_nodes=true")
    step = far.magnitude("decode_step_time", "s") - near.magnitude("decode_step_time", "s")
    assert step == pytest.approx(far.magnitude("pp_handoff_time", "s")
                                 - near.magnitude("pp_handoff_time", "s"))
    a, b = StepSheet.from_sheet(near), StepSheet.from_sheet(far)
    ctx = 64 * 1536
    got = b.time(64, 0, ctx, ctx) - a.time(64, 0, ctx, ctx)
    assert got == pytest.approx(step, rel=1e-9)
    # a decode-only run and a single step agree, handoff included
    assert b.decode_run(64, ctx, 1)[0] == pytest.approx(b.time(64, 0, ctx, ctx))


@pytest.mark.parametrize("steady", ["true", "false"])
def test_a_lone_prompt_under_pp_runs_the_stages_in_turn(steady: str) -> None:
    """A prompt is one microbatch: alone in the engine it takes every stage in turn, the
    sheet's prefill_time (handoff included), not 1/m of it as a batch split over m would."""
    from perfgraph.whatif.simulate import Setup, simulate
    from perfgraph.whatif.simulate.summary import summarise

    s = sheet("pp_across_nodes=true", f"pp_steady_state={steady}")
    model = StepSheet.from_sheet(s)
    assert_the_step_is_the_sheets(s)
    isl = s.magnitude("isl", "token")
    assert model.time(0, isl, isl, 0, model.chunk_pairs(0, isl)) == pytest.approx(
        s.magnitude("prefill_time", "s") + s.magnitude("prefill_tp_comm_time", "s"), rel=1e-9)
    gap = 10 * s.magnitude("e2e_latency", "s")
    ttft = summarise(simulate(s, Setup(rate=1 / gap, cv=0.0, requests=5)), s).latency.ttft
    assert ttft.mean == pytest.approx(s.magnitude("ttft", "ms"), rel=1e-3)


def test_a_prompt_chunk_fills_one_microbatch_and_the_heaviest_sets_the_stage() -> None:
    """One prompt's chunk runs in one microbatch (a V0 virtual engine), so beside 64 decodes
    spread over 2 microbatches the stage time is that microbatch's: 32 decodes + the whole
    chunk, not 32 + half of it. By hand: the step's GEMMs are compute-bound at 4,096 prompt
    tokens; one prompt costs (4096 − 2048) × (FLOPs/token ÷ (pp × compute) + activation time
    per token ÷ pp) per stage more than two, over the pp_step_stages = 2 stages."""
    s = sheet("kernel_roofline=true", "replicated_activations=true")
    model = StepSheet.from_sheet(s)
    ctx, chunk = 64 * 1536, 4096
    one = model.time(64, chunk, ctx + chunk, ctx, 0.0, prompts=1)
    two = model.time(64, chunk, ctx + chunk, ctx, 0.0, prompts=2)
    many = model.time(64, chunk, ctx + chunk, ctx, 0.0, prompts=8)
    per_token = (s.magnitude("flops_per_token", "FLOP/token") / (2 * s.magnitude(
        "achievable_flops", "FLOP/s")) + s.magnitude("activation_time_per_token", "s/token") / 2)
    assert one - two == pytest.approx(2 * (chunk - chunk / 2) * per_token, rel=1e-9)
    assert many == pytest.approx(two)  # at most pp_microbatches carry chunks
    # the sheet's chunk step divides its prompt tokens the same way (chunk_microbatches)
    assert s.magnitude("chunk_microbatches") == 1  # the default 1k prompt, one a chunk step
    assert_the_step_is_the_sheets(s)


def test_the_pure_roofline_has_no_handoff() -> None:
    """The hand-offs are a realistic term: off in the roofline, in the sheet and the
    simulator alike, so the step is (m + p − 1) stage rooflines and nothing else."""
    on = sheet("pp_across_nodes=true")
    off = load(ScenarioSpec(model="llama-3.3-70b", hardware="a100-40gb", precision="bf16",
                            sets=tuple(parse_set(s) for s in SETS[:-1]
                                       + ("pp_across_nodes=true",)))).sheet
    assert not off.magnitude("pp_handoffs")
    assert off.magnitude("pp_handoff_time", "s") == 0
    assert off.magnitude("prefill_pp_handoff_time", "s") == 0
    assert on.magnitude("pp_handoff_time", "s") > 0
    # steady state, m = p = 2: max(m, p) = 2 stage times of the roofline, no send
    assert off.magnitude("decode_step_time", "s") == pytest.approx(
        2 * max(off.magnitude("decode_memory_time", "s"),
                off.magnitude("decode_compute_time", "s")), rel=1e-12)
    assert off.magnitude("sim_handoff_time", "s") == 0  # the simulator's step too
    assert_the_step_is_the_sheets(off)
