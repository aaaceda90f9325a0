"""Two realistic terms of issue 12 by hand: an MoE step carrying prefill chunks reads the
experts of whole chunks in the few steps that carry one (``step_weights_bytes``), and a
prompt waits for the scheduler's next poll (``scheduler_recv_interval``)."""

from __future__ import annotations

import pytest

from tests.conftest import scenario

#: DeepSeek-R1-0528 on 8 × H200 at 8k/1k with 4 users, every prompt one 7373-token chunk
REALISTIC = (("tp", 8), ("concurrency", 4), ("isl", 7373), ("osl", 922),
             ("prefill_in_step", "true"), ("kernel_roofline", "true"),
             ("max_num_batched_tokens", "32768 * token"))


def _sheet(*sets: tuple[str, object], model: str = "deepseek-r1-0528"):
    return scenario(*sets, model=model, hardware="h200", engine="sglang").sheet


def test_an_moe_step_reads_the_experts_of_whole_chunks() -> None:
    s = _sheet(*REALISTIC)
    m = s.magnitude
    share = (4 * 7373 / 922) / 7373  # the prefill tokens a step carries over one chunk's
    assert m("prefill_chunk_tokens", "token") == 7373
    assert m("prefill_step_share") == pytest.approx(share)
    miss = 1 - 8 / 256  # a token's chance to miss one expert of 256 (top-8)
    touched = (1 - share) * (1 - miss ** 4) + share * (1 - miss ** (4 + 7373))
    want = m("shared_weights_bytes", "GB") + touched * m("routed_weights_bytes", "GB")
    assert m("step_weights_bytes", "GB") == pytest.approx(want)  # 97.6 GB of 688 GB
    assert want == pytest.approx(17.12 + 0.1230 * 653.91, rel=1e-3)
    # the chunk's 32 tokens a step spread over every step would touch 68% of the experts
    spread = 1 - miss ** (4 + 4 * 7373 / 922)
    assert m("weights_bytes_per_step", "GB") == pytest.approx(
        m("shared_weights_bytes", "GB") + spread * m("routed_weights_bytes", "GB"))
    assert spread == pytest.approx(0.681, abs=1e-3)
    compute = m("step_tokens") * m("flops_per_token", "GFLOP/token") * 1e9 / (
        m("pp_microbatches") * m("pp") * m("achievable_flops", "TFLOP/s") * 1e12)
    memory = want * 1e9 / (m("pp") * m("achievable_bandwidth", "GB/s") * 1e9)
    assert m("step_linear_time", "s") == pytest.approx(max(memory, compute), rel=1e-9)


def test_without_chunks_in_the_step_or_for_a_dense_model_nothing_changes() -> None:
    roofline = _sheet(("tp", 8), ("concurrency", 4), ("isl", 7373), ("osl", 922))
    assert roofline.magnitude("prefill_step_share") == 0
    assert roofline.magnitude("step_weights_bytes", "GB") == pytest.approx(
        roofline.magnitude("weights_bytes_per_step", "GB"), rel=1e-12)
    dense = _sheet(*REALISTIC, model="llama-3.3-70b")
    assert dense.magnitude("step_weights_bytes", "GB") == pytest.approx(
        dense.magnitude("weights_bytes_per_step", "GB"), rel=1e-12)  # every weight, every step


@pytest.mark.parametrize("interval", [1, 10, 30])
def test_a_prompt_waits_half_the_schedulers_poll_interval(interval) -> None:
    s = _sheet(*REALISTIC, ("scheduler_recv_interval", interval))
    # one chunk's step, plus half the interval (the step in flight when it polls every step)
    assert s.magnitude("ttft_chunk_wait", "ms") == pytest.approx(
        (s.magnitude("ttft_prefill_chunks") + interval / 2) * s.magnitude("decode_step_time",
                                                                           "ms"))
    if interval == 1:  # SGLang's default: the half step the sheet always had
        assert s.magnitude("ttft_chunk_wait", "ms") == pytest.approx(
            1.5 * s.magnitude("decode_step_time", "ms"))
