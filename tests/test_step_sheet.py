"""The step sheet (``step.toml``, fused by ``engine/fused.py``) times a step as the sheet does.

At the scenario's own averages a step is the sheet's itl (a chunk-carrying step and a plain
one, mixed by chunk_step_share) and a prompt alone its prefill; what-ifs on the sheet reach
the step; the KV pool and a chunk's attention pairs are the sheet's cells. (Until the step
sheet replaced it, a Python restatement of the step, ``StepModel``, was the oracle here: on
the first five scenarios below the two agreed to 1e-9, the EP all-to-alls aside.)
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfgraph.cli.main import main
from perfgraph.engine.fused import fuse
from perfgraph.engine.sheet import Sheet
from perfgraph.scenario.loading import ScenarioSpec, load
from perfgraph.whatif.simulate.step_sheet import INPUTS, StepSheet

SCENARIOS = {
    "dense": ScenarioSpec(),
    "dense calibrated, kernel roofline": ScenarioSpec(
        model="llama-3.3-70b", hardware="h100-sxm", precision="fp8",
        calibration="auto", engine="vllm"),
    "moe with ep": ScenarioSpec(model="qwen3-30b-a3b", sets=(
        ("tp", "4"), ("ep", "4"), ("dp_attention", "true"), ("attention_flops", "true"))),
    "pp": ScenarioSpec(model="llama-3.1-70b", sets=(
        ("tp", "4"), ("pp", "2"), ("microbatches", "2"), ("pp_handoff_latency", "20 us"))),
    "pp steady, kernel roofline": ScenarioSpec(model="llama-3.1-70b", sets=(
        ("tp", "2"), ("pp", "4"), ("microbatches", "3"), ("pp_steady_state", "true"),
        ("kernel_roofline", "true"), ("attention_flops", "true"))),
    "mla under tp": ScenarioSpec(model="deepseek-v3", hardware="b200", precision="fp8",
                                 sets=(("tp", "8"), ("attention_flops", "true"))),
    "sliding window": ScenarioSpec(model="gemma-3-27b", sets=(("attention_flops", "true"),)),
    "linear layers": ScenarioSpec(model="qwen3-next-80b-a3b", calibration="auto",
                                  engine="vllm"),
}


def averages(sheet: Sheet) -> dict[str, float]:
    """The step inputs at the scenario's averages: the input cells' own values."""
    return {n: float(sheet.raw(n)) for n in INPUTS}  # type: ignore[arg-type]


def step_at(model: StepSheet, given: dict[str, float]) -> float:
    return model.time(given["sim_decodes"], given["sim_prefill_tokens"],
                      given["sim_kv_tokens"], given["sim_decode_context"],
                      given["sim_chunk_pairs"], given["sim_prompts"])


def assert_the_step_is_the_sheets(sheet: Sheet, rel: float = 1e-9) -> None:
    """At the averages: the mean of a chunk step and a plain step is the sheet's itl; a
    prompt alone is its prefill_time plus the prefill's collectives and activations (but
    under DP attention: the sheet's prefill_weights_bytes reads one copy of the shared
    weights, its weights_bytes_per_step at T = ISL, which the step reads, dp_weight_copies)."""
    model, m = StepSheet.from_sheet(sheet), sheet.magnitude
    avg = averages(sheet)
    plain = {**avg, "sim_prefill_tokens": 0.0, "sim_chunk_pairs": 0.0,
             "sim_kv_tokens": avg["sim_decode_context"]}
    share = m("chunk_step_share")
    mixed = share * step_at(model, avg) + (1 - share) * step_at(model, plain)
    assert mixed == pytest.approx(m("itl", "s"), rel=rel)
    if m("dp_attention"):
        return
    isl = m("isl", "token")
    alone = model.time(0, isl, isl, 0, m("prefill_attended_pairs", "token**2"))
    assert alone == pytest.approx(m("prefill_time", "s") + m("prefill_tp_comm_time", "s")
                                  + m("prefill_activation_time", "s"), rel=rel)


@pytest.mark.parametrize("name", SCENARIOS)
def test_at_the_averages_a_step_is_the_sheets_itl_and_a_prompt_its_prefill(name: str) -> None:
    assert_the_step_is_the_sheets(load(SCENARIOS[name]).sheet)


def test_the_sheets_own_step_cells_show_the_average_step() -> None:
    sheet = load(SCENARIOS["dense calibrated, kernel roofline"]).sheet
    assert sheet.magnitude("chunk_step_share") < 1  # chunk steps are timed apart here
    assert sheet.magnitude("sim_step_time", "s") == pytest.approx(
        sheet.magnitude("chunk_step_time", "s"), rel=1e-9)
    assert step_at(StepSheet.from_sheet(sheet), averages(sheet)) == pytest.approx(
        sheet.magnitude("sim_step_time", "s"), rel=1e-12)


def test_a_pin_reaches_the_step_with_no_simulator_change() -> None:
    sheet = load(ScenarioSpec()).sheet
    before = step_at(StepSheet.from_sheet(sheet), averages(sheet))
    sheet.set("step_overhead", "3 ms")
    sheet.set("achievable_bandwidth", "system_bandwidth * 0.5")  # a formula pin
    after = StepSheet.from_sheet(sheet)
    assert step_at(after, averages(sheet)) == pytest.approx(sheet.magnitude("itl", "s"))
    assert step_at(after, averages(sheet)) > 2 * before - 0.001


def test_ep_all_to_alls_and_kv_replication_reach_the_step() -> None:
    """Beside 64 decodes at 1,536 tokens, MLA under TP8 (kv_replication 8) reads its KV on
    every rank; the EP all-to-alls add their sheet time at the step's own batch."""
    sheet = load(SCENARIOS["mla under tp"]).sheet
    model, m = StepSheet.from_sheet(sheet), sheet.magnitude
    assert m("kv_replication") == 8 and m("kv_bytes_per_token", "B/token") == 61 * 576
    cells = model.values(64, 0, 64 * 1536.0, 64 * 1536.0)
    assert cells["sim_kv_bytes"] == pytest.approx(  # canonical magnitudes, as raw has them
        8 * 64 * 1536 * sheet.raw("kv_bytes_per_token"), rel=1e-9)
    ep = load(ScenarioSpec(model="qwen3-30b-a3b", sets=(
        ("tp", "4"), ("ep", "4"), ("comm_overlap", "false")))).sheet  # nothing hidden
    with_ep = StepSheet.from_sheet(ep).values(32, 0, 32 * 1536.0, 32 * 1536.0)
    # the all-to-alls' bytes scale with the step's 32 decodes, not the scenario's 64
    per_token = 2 * ep.magnitude("n_moe_layers") * ep.raw("ep_alltoall_bytes") / 64
    assert with_ep["ep_alltoall_bytes"] * 2 * ep.magnitude("n_moe_layers") == pytest.approx(
        32 * per_token, rel=1e-9)
    assert with_ep["ep_comm_time_per_step"] > 0 and with_ep["sim_comm_time"] == pytest.approx(
        with_ep["tp_comm_time_per_token"] + with_ep["ep_comm_time_per_step"], rel=1e-12)


def test_a_decode_run_over_columns_is_each_step_in_turn() -> None:
    for name in ("dense calibrated, kernel roofline", "sliding window"):
        model = StepSheet.from_sheet(load(SCENARIOS[name]).sheet)
        run = model.decode_run(48, 48 * 900.0, 400)  # crosses gemma's 1,024-token window
        each = [model.time(48, 0, 48 * (900.0 + j), 48 * (900.0 + j)) for j in range(400)]
        np.testing.assert_allclose(run, each, rtol=1e-12)


def test_chunk_pairs_are_the_sheets_pairs_by_layer_kind() -> None:
    """Gemma 3 27B: 52 sliding layers (window 1,024), 10 full. A chunk of 512 tokens after
    2,048 attends, by hand: full layers 512 × 2,048 + 512² / 2 pairs each, sliding layers
    1,024 each token minus none (the window is full): 512 × 1,024."""
    sheet = load(SCENARIOS["sliding window"]).sheet
    model = StepSheet.from_sheet(sheet)
    full = sheet.magnitude("n_full_layers")
    sliding = sheet.magnitude("n_sliding_layers")
    window = sheet.magnitude("sliding_window", "token")
    assert (full, sliding, window) == (10, 52, 1024)
    want = full * (512 * 2048 + 512 ** 2 / 2) + sliding * 512 * 1024
    assert model.chunk_pairs(2048, 512) == pytest.approx(want, rel=1e-12)
    # chunks add up to the whole prompt's pairs
    whole = model.chunk_pairs(0, 3000)
    assert model.chunk_pairs(0, 1000) + model.chunk_pairs(1000, 2000) == pytest.approx(whole)


def test_the_kv_pool_is_the_sheets_cells() -> None:
    """Blocks = kv_memory ÷ (replication × (block bytes + block_size × fixed bytes a
    sequence ÷ its average context)): the old pool, kv_memory ÷ block bytes, for a dense
    GQA model; an eighth of it for MLA under TP8; less for Gemma's window bytes."""
    for name, replication, fixed in (("dense", 1, False), ("mla under tp", 8, False),
                                     ("sliding window", 1, True)):
        m = load(SCENARIOS[name]).sheet.magnitude
        block = m("kv_block_bytes", "B")
        spread = m("block_size", "token") * m("kv_fixed_bytes_per_seq", "B") / m(
            "avg_context", "token")
        assert m("kv_replication") == replication and (spread > 0) == fixed
        assert m("sim_kv_blocks") == math.floor(m("kv_memory", "B") / (replication * (
            block + spread)))


def test_fuse_follows_pins_bindings_and_columns() -> None:
    sheet = load(ScenarioSpec()).sheet
    f = fuse(sheet, ["avg_context"], ["kv_bytes_per_seq", "itl", "n_params"])
    assert f.call(sheet.raw("avg_context")) == (sheet.raw("kv_bytes_per_seq"), sheet.raw("itl"),
                                                 sheet.raw("n_params"))
    bound = fuse(sheet, ["isl"], ["kv_bytes_per_seq"], binds={"avg_context": "isl"})
    assert bound.call(1000.0)[0] == pytest.approx(1000 * sheet.raw("kv_bytes_per_token"))
    cols = fuse(sheet, ["avg_context"], ["itl"], columns=True)
    got = cols.call(np.array([1536.0, 3000.0]))[0]
    assert got[0] == pytest.approx(sheet.raw("itl"), rel=1e-12) and got[1] > got[0]


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(["dense calibrated, kernel roofline", "sliding window", "linear layers",
                        "mla under tp", "pp steady, kernel roofline"]),
       st.floats(1, 200_000), st.integers(1, 512))
def test_fused_cells_are_the_sheets_own_evaluation(name: str, context: float,
                                                   users: int) -> None:
    """A fused slice (folded, simplified, dead cells dropped) gives what the sheet gives
    with the same inputs pinned, floats and columns alike."""
    sheet = load(SCENARIOS[name]).sheet
    outs = ["itl", "ttft", "kv_bytes_per_seq", "decode_step_time", "chunk_step_time",
            "max_concurrency_paged", "sim_step_time"]
    fused = fuse(sheet, ["avg_context", "concurrency"], outs)
    cols = fuse(sheet, ["avg_context", "concurrency"], outs, columns=True)
    got = fused.call(context, float(users))
    col = cols.call(np.array([context, context]), np.array([users, users], dtype=float))
    sheet.set("avg_context", f"{context!r} token")
    sheet.set("concurrency", str(users))
    for n, a, c in zip(outs, got, col, strict=True):
        assert a == pytest.approx(sheet.raw(n), rel=1e-12), n
        assert np.broadcast_to(c, (2,)) == pytest.approx([sheet.raw(n)] * 2, rel=1e-12), n


def test_explain_step_shows_inputs_formulas_values_and_results(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Step 1 of a closed loop is the first prompt alone: the sheet's prefill_time; the
    explained result is the step's logged duration."""
    sheet = load(ScenarioSpec()).sheet
    assert main(["simulate", "--users", "8", "--requests", "20", "--explain-step", "1"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("step 1 of ") and lines[0].endswith(
        f"takes {sheet.magnitude('prefill_time', 'ms'):.4g} ms")
    assert lines[1:4] == ["inputs", "  sim_decodes = 0", "  sim_prefill_tokens = 1024 tok"]
    at = lines.index("sim_step_time: " + sheet.declaration("sim_step_time").doc)
    assert lines[at + 1] == ("  formula      sim_stages * sim_roofline_time + sim_comm_time "
                             "+ sim_handoff_time + sim_overhead_time")
    assert lines[at + 2].startswith("  with values  1 × 36.51 ms + ")
    assert lines[at + 3] == f"  result       {sheet.magnitude('prefill_time', 'ms'):.4g} ms"
    assert "  formula      sim_step_tokens   (the step's, in place of its own)" in lines


def test_explain_step_as_json_is_the_logged_step(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--users", "8", "--requests", "20", "--explain-step", "40",
                 "-f", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    cells = {c["name"]: c for c in doc["cells"]}
    assert doc["step"] == 40 and cells["sim_decodes"]["value"] in range(1, 9)
    assert cells["sim_step_time"]["value"] == pytest.approx(1e3 * doc["duration_s"], rel=1e-12)
    assert cells["step_tokens"]["bound"] == "sim_step_tokens"


def test_a_step_the_sheet_cannot_time_is_one_message(capsys: pytest.CaptureFixture[str]) -> None:
    """Pinned to 0 microbatches, the first step divides by zero: the folding of switched-off
    terms (0 × x) must not hide it as a step of 0 s."""
    code = main(["simulate", "--users", "4", "--requests", "10", "--set", "sim_microbatches=0"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "step 1: the step sheet has no value for a step of 0 decodes and 1024 prefill " \
           "tokens (division by zero in 'sim_step_time' or a cell it reads)" in err


def test_a_step_cell_that_fails_on_the_sheet_is_one_message(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["simulate", "--rate", "1 request/s", "--requests", "5", "--set",
                 "step_overhead=achievable_flops / (tp - tp) * ms * s / FLOP"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "step_overhead: read by sim_step_time, it has no value: division by zero" in err


@pytest.mark.parametrize("step, says", [("0", "--explain-step: 0: steps count from 1"),
                                        ("99999", "--explain-step: 99999: the run took ")])
def test_explain_step_out_of_the_run(step: str, says: str,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--users", "8", "--requests", "20", "--explain-step", step]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("flag", "mixed_efficiency"), [("true", 0.25), ("false", 0.5)])
def test_a_steps_prompt_tokens_reach_the_compute_the_engine_gives_them(
        flag: str, mixed_efficiency: float) -> None:
    """A chunk beside 64 decodes at prefill compute (0.25 of TP2's 3,957.8 FP8 TFLOP/s) where
    the engine times its rows apart, at the step's (0.5) where it runs the step as one batch
    (vLLM); a step of prompts alone at prefill compute either way."""
    sheet = load(ScenarioSpec(sets=(("compute_efficiency", "0.5"),
                                    ("prefill_compute_efficiency", "0.25"),
                                    ("chunk_gemm_at_prefill", flag)))).sheet
    model, peak = StepSheet.from_sheet(sheet), 2 * 1978.9e12  # FLOP/s
    mixed = model.values(64, 512, 64 * 1000.0 + 512, 64 * 1000.0)
    alone = model.values(0, 512, 512.0, 0.0)
    assert mixed["sim_chunk_flops"] == pytest.approx(mixed_efficiency * peak)
    assert alone["sim_chunk_flops"] == pytest.approx(0.25 * peak)
