"""The step sheet (``step.toml``, fused by ``engine/fused.py``) times a step as the sheet does.

Against the step model it replaces (a Python restatement of the same formulas, kept here as
the oracle until it goes), and against the sheet's own itl / prefill cells at the
scenario's averages.
"""

from __future__ import annotations

import numpy as np
import pytest

from perfgraph.scenario.loading import ScenarioSpec, load
from perfgraph.whatif.simulate.step_sheet import StepSheet
from perfgraph.whatif.simulate.step_time import StepModel

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
}
#: (decodes, prefill tokens, KV tokens, Σ decode context, single-layer causal pairs, prompts)
STEPS = [(64, 0, 96_000, 96_000, 0, 1), (64, 512, 96_900, 96_000, 512 * 600, 1),
         (0, 1024, 1024, 0, 1024 ** 2 / 2, 1), (0, 4096, 4096, 0, 4096 ** 2 / 2, 3),
         (17, 2048, 18_300, 15_300, 2048 * 400, 2), (1, 0, 100, 100, 0, 1)]


def sheet_of(spec: ScenarioSpec):  # noqa: ANN201
    return load(spec).sheet


@pytest.mark.parametrize("name", SCENARIOS)
def test_step_sheet_equals_the_old_step_model(name: str) -> None:
    sheet = sheet_of(SCENARIOS[name])
    old, new = StepModel.from_sheet(sheet), StepSheet.from_sheet(sheet)
    m = sheet.magnitude
    # the old model left out the EP all-to-alls; it took one layer's pairs
    ep = m("tp_comm_exposed") * m("ep_comm_time_per_step", "s") / m("concurrency")
    layers = m("prefill_attended_pairs", "token**2") / (m("isl", "token") ** 2 / 2)
    for d, p, kv, ctx, pairs, prompts in STEPS:
        want = old.time(d, p, kv, ctx, pairs, prompts) + ep * d
        assert new.time(d, p, kv, ctx, pairs * layers, prompts) == pytest.approx(want, rel=1e-9)
    want = old.decode_run(64, 96_000, 5) + ep * 64
    np.testing.assert_allclose(new.decode_run(64, 96_000, 5), want, rtol=1e-9)

