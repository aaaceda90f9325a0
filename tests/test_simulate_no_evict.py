"""``[scheduler] preemption = "none"`` (TensorRT-LLM's GUARANTEED_NO_EVICT): a request is
admitted only when the KV pool can hold its whole request, prompt and output, so none is
ever preempted; the engines that recompute (vLLM) admit on the prompt and preempt later."""

from __future__ import annotations

import pytest

from perfgraph.scenario import engine_files
from perfgraph.scenario.loading import ScenarioSpec, load, parse_set
from perfgraph.whatif.simulate import Setup, simulate


def _sheet(blocks: int):  # noqa: ANN202
    return load(ScenarioSpec(engine="trtllm", sets=(parse_set(f"sim_kv_blocks={blocks}"),))).sheet


def test_tensorrt_llms_file_says_it_does_not_evict() -> None:
    scheduling = engine_files.engine("trtllm").scheduling
    assert scheduling is not None and scheduling.preemption == "none"


# ISL = OSL = 1024 and TensorRT-LLM's 32-token blocks: a request reserves
# ⌈(1024 + 1024 − 1) ÷ 32⌉ = ⌈2047 ÷ 32⌉ = 64 blocks, so a pool of N blocks holds ⌊N ÷ 64⌋.
@pytest.mark.parametrize(("blocks", "resident"), [(255, 3), (256, 4), (319, 4), (320, 5)])
def test_admission_waits_for_the_whole_requests_kv(blocks: int, resident: int) -> None:
    sheet = _sheet(blocks)
    assert sheet.magnitude("block_size", "token") == 32
    result = simulate(sheet, Setup(users=8, requests=12, scheduler="trtllm"))
    e = result.engine
    assert result.complete and e.preemptions == 0
    assert e.log.arrays()["decodes"].max() == resident
    assert e.reqs.gen == e.reqs.osl
    assert e.pool.prefill == 0 and e.pool.decode == 0  # every reservation given back


def test_a_recomputing_scheduler_admits_on_the_prompt_and_preempts() -> None:
    # the same pool under vLLM's rule: prompts of 32 blocks, ⌊266 ÷ 32⌋ = 8 admitted at once,
    # more than the pool holds once they grow: some are preempted and recomputed
    result = simulate(_sheet(266), Setup(users=8, requests=12, scheduler="vllm"))
    assert result.complete and result.engine.preemptions > 0
    assert result.engine.log.arrays()["decodes"].max() > 4
