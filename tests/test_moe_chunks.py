"""Two realistic terms of issue 12 by hand: an MoE step carrying prefill chunks reads the
experts of whole chunks in the few steps that carry one (``prefill_chunk_steps``), and a
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
    """With prefill_chunk_steps (the calibration's structure) a step that carries a prompt's
    chunk streams the experts of the decodes and the whole chunk, the others those of the
    decodes alone; the share of chunk steps is the other 3 users' prompts over 922 steps."""
    s = _sheet(*REALISTIC, ("prefill_chunk_steps", "true"))
    m = s.magnitude
    assert m("chunk_step_tokens", "token") == 7373
    assert m("chunk_step_share") == pytest.approx(3 * 1 / 922)
    miss = 1 - 8 / 256  # a token's chance to miss one expert of 256 (top-8)
    shared, routed = m("shared_weights_bytes", "GB"), m("routed_weights_bytes", "GB")
    assert m("weights_bytes_per_step", "GB") == pytest.approx(
        shared + (1 - miss ** (4 + 7373)) * routed)  # every expert, nearly: 671 GB
    assert m("plain_weights_bytes_per_step", "GB") == pytest.approx(
        shared + (1 - miss ** 4) * routed)  # 4 decodes touch 11.9% of the experts
    mean = 3 / 922 * m("weights_bytes_per_step", "GB") \
        + (1 - 3 / 922) * m("plain_weights_bytes_per_step", "GB")
    # by hand: 17.12 GB shared + (3/922 × all + 919/922 × 11.9%) of 653.91 GB routed = 97.0 GB
    assert mean == pytest.approx(17.12 + (3 / 922 + 919 / 922 * (1 - miss ** 4)) * 653.91,
                                 rel=1e-3)


def test_spread_evenly_the_chunk_touches_two_thirds_of_the_experts_every_step() -> None:
    """Without prefill_chunk_steps every step carries the prompts spread over OSL steps: 32
    prompt tokens a step beside 4 decodes touch 68% of the experts in every step."""
    s = _sheet(*REALISTIC)
    m = s.magnitude
    assert m("chunk_step_share") == 1
    miss = 1 - 8 / 256
    spread = 1 - miss ** (4 + 4 * 7373 / 922)
    assert m("weights_bytes_per_step", "GB") == pytest.approx(
        m("shared_weights_bytes", "GB") + spread * m("routed_weights_bytes", "GB"))
    assert spread == pytest.approx(0.681, abs=1e-3)
    dense = _sheet(*REALISTIC, ("prefill_chunk_steps", "true"), model="llama-3.3-70b")
    assert dense.magnitude("plain_weights_bytes_per_step", "GB") == pytest.approx(
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


@pytest.mark.parametrize("users, share", [(1, 0.0), (2, 1.0), (4, 1.0)])
def test_a_prompt_that_finds_the_engine_idle_waits_for_no_poll(users, share) -> None:
    """One user's prompt arrives when its own request has ended: nothing runs, no step is in
    flight and the poll comes at once (SGLang's recv skipper counts decode steps only), so
    its wait is none; from two users on the others are always running and it waits the
    whole interval's half and ttft_wait_steps."""
    s = _sheet(*REALISTIC, ("concurrency", users), ("scheduler_recv_interval", 10),
               ("ttft_wait_steps", 2))
    assert s.magnitude("arrival_finds_batch") == share
    assert s.magnitude("ttft_chunk_wait", "ms") == pytest.approx(
        share * (s.magnitude("ttft_prefill_chunks") + 10 / 2 + 2)
        * s.magnitude("decode_step_time", "ms"))


def test_a_paced_prompt_finds_others_running_by_chance() -> None:
    """Paced at a rate with L = 0.25 requests in flight: Poisson arrivals see the time
    average, and the count in flight is Poisson, so a prompt finds one or more running with
    probability 1 − e^−0.25 = 22.1% (a closed loop of 0.25 users would say none)."""
    s = _sheet(*REALISTIC, ("concurrency", 0.25), ("open_arrivals", "true"))
    assert s.magnitude("arrival_finds_batch") == pytest.approx(0.2212, abs=1e-4)
    closed = _sheet(*REALISTIC, ("concurrency", 0.25))
    assert closed.magnitude("arrival_finds_batch") == 0
