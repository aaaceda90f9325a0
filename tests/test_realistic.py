"""The realistic terms (perfgraph/scenario/sheets/realistic.toml), held to hand computations.

Each is off or zero in the pure roofline, so the default scenario is the seed's; switched on,
each adds what its mechanism says, computed here from the default scenario's inputs:
Llama-3.1 70B (70.55e9 parameters, 80 layers, d_model 8192), FP8, 2 × H100 SXM (1979 TFLOP/s,
3.35 TB/s and 900 GB/s NVLink each), 1024/1024 tokens, 64 users.
"""

from __future__ import annotations

import pytest

from perfgraph.scenario import ScenarioSpec, load

P = 70_553_706_496          # models/llama-3.1-70b.toml n_params
FLOPS = 2 * 1978.9e12       # TP2, FP8 dense
BW = 2 * 3.35e12


def sheet(**sets: str):
    return load(ScenarioSpec(sets=tuple(sets.items()))).sheet


def test_the_roofline_scenario_has_every_realistic_term_at_zero() -> None:
    s = sheet()
    assert s.magnitude("ttft") == pytest.approx(s.magnitude("prefill_time"))
    assert s.magnitude("itl") == pytest.approx(s.magnitude("decode_step_time"))
    for cell in ("step_prefill_tokens", "prefill_tp_comm_time", "ttft_in_batch",
                 "ttft_overhead", "seq_step_overhead", "ttft_wait_steps"):
        assert s.magnitude(cell) == 0, cell


def test_prefill_in_step_puts_each_requests_prompt_into_its_decode_steps() -> None:
    s = sheet(prefill_in_step="true")
    assert s.magnitude("step_prefill_tokens") == pytest.approx(64 * 1024 / 1024)
    assert s.magnitude("step_prefill_flops") == pytest.approx(64 * 2 * P / 1e12)  # TFLOP
    decode_and_chunk = (64 + 64) * 2 * P
    assert s.magnitude("decode_compute_time") == pytest.approx(decode_and_chunk / FLOPS * 1e3)
    # memory-bound still at this batch: the chunk's KV writes are its only extra bytes
    kv = s.magnitude("kv_bytes_per_token")  # KB/token
    assert s.magnitude("step_prefill_bytes") == pytest.approx(64 * kv * 1e3 / 1e9)
    assert s.magnitude("non_overlapped_prefill_tokens") == 0
    # a closed loop: each request's cycle is its TTFT, then OSL steps (Little's law)
    cycle = s.magnitude("ttft") / 1e3 + 1024 * s.magnitude("itl") / 1e3
    assert s.magnitude("throughput") == pytest.approx(64 * 1024 / cycle)


def test_the_kernel_roofline_sums_the_gemms_and_the_attention() -> None:
    s = sheet(kernel_roofline="true")
    weights = P * 1.0
    linear = max(weights / BW, 64 * 2 * P / FLOPS)
    kv_total = s.magnitude("kv_bytes_total") * 1e9
    assert s.magnitude("step_linear_time") == pytest.approx(linear * 1e3)
    assert s.magnitude("step_attention_time") == pytest.approx(kv_total / BW * 1e3)
    assert s.magnitude("decode_step_time") == pytest.approx((linear + kv_total / BW) * 1e3)


CHUNK_STEP = {"kernel_roofline": "true", "chunk_step_tokens": "60000 token",
              "compute_efficiency": "0.5", "prefill_compute_efficiency": "0.25"}


def test_a_prompt_chunk_runs_its_gemms_at_prefill_efficiency() -> None:
    """A compute-bound chunk step (a 60k-token chunk beside the 64 decodes), on an engine that
    times the chunk's rows apart: the decodes' FLOPs at compute_efficiency 0.5, the chunk's at
    prefill_compute_efficiency 0.25."""
    s = sheet(**CHUNK_STEP, chunk_gemm_at_prefill="true")
    gemms = (64 * 2 * P / (0.5 * FLOPS) + 60000 * 2 * P / (0.25 * FLOPS)) * 1e3  # ms
    assert gemms > P / BW * 1e3  # compute-bound: the FLOPs, not the weights, set it
    assert s.magnitude("step_linear_time", "ms") == pytest.approx(gemms)


def test_vllm_runs_a_step_as_one_batch_its_chunk_at_the_steps_compute() -> None:
    """vLLM (the default engine) flattens the decodes and the chunk into one batch: all
    60,064 tokens' FLOPs at compute_efficiency 0.5, half the time above."""
    s = sheet(**CHUNK_STEP)
    assert s.magnitude("chunk_gemm_at_prefill") == 0  # engines/vllm.toml [values]
    gemms = (64 + 60000) * 2 * P / (0.5 * FLOPS) * 1e3  # ms
    assert s.magnitude("step_linear_time", "ms") == pytest.approx(gemms)


def test_ttft_and_step_overheads_add_as_their_mechanisms_say() -> None:
    base = sheet()
    s = sheet(ttft_overhead="40 ms", seq_step_overhead="50 us")
    assert s.magnitude("ttft") == pytest.approx(base.magnitude("ttft") + 40)
    assert s.magnitude("decode_step_time") == pytest.approx(
        base.magnitude("decode_step_time") + 64 * 0.050)


def test_a_first_token_waits_whole_decode_steps_as_ttft_wait_steps_says() -> None:
    """Two steps' wait: TTFT grows by 2 × the decode step (12.93 ms here: the 64 users'
    step), alone (the prompt in a step of its own) and with the
    prompt riding the decode steps (their wait adds the same two steps)."""
    for on in ({}, {"prefill_in_step": "true"}):
        base, waited = sheet(**on), sheet(ttft_wait_steps="2", **on)
        step = base.magnitude("decode_step_time", "ms")
        assert waited.magnitude("decode_step_time", "ms") == pytest.approx(step)
        assert waited.magnitude("ttft", "ms") - base.magnitude("ttft", "ms") == \
            pytest.approx(2 * step, rel=1e-6)
    assert sheet().magnitude("decode_step_time", "ms") == pytest.approx(12.93, abs=0.01)


def test_exposed_tp_all_reduces_slow_the_prefill() -> None:
    s = sheet(comm_overlap="false", link_efficiency="0.5")
    # 2 all-reduces per layer, each 2(p-1)/p x ISL x d_model x 2 B over half of the link's
    # one-way 450 GB/s (900 GB/s is both directions together)
    per = 5e-6 + (2 * 1 / 2 * 1024 * 8192 * 2) / (0.5 * 450e9)
    assert s.magnitude("prefill_tp_comm_time") == pytest.approx(160 * per * 1e3)
    assert s.magnitude("ttft") == pytest.approx(s.magnitude("prefill_time")
                                               + s.magnitude("prefill_tp_comm_time"))


def test_a_prompt_longer_than_the_step_budget_spans_ceil_isl_over_what_is_left_steps() -> None:
    """vLLM's 8192-token budget less 64 running decodes leaves 8128 prompt tokens a step: a
    1024-token prompt is one chunk, an 8192-token one two, 20000 tokens three; each chunk's
    step also runs the decodes, and the prompt first waits half the step in flight."""
    for isl, chunks in ((1024, 1), (8192, 2), (20000, 3)):
        s = sheet(prefill_in_step="true", isl=str(isl))
        assert s.magnitude("ttft_prefill_budget") == 8192 - 64
        assert s.magnitude("ttft_prefill_chunks") == chunks
        step = s.magnitude("decode_step_time")
        assert s.magnitude("ttft_in_batch") == pytest.approx((chunks + 0.5) * step)
        assert s.magnitude("ttft") == pytest.approx(s.magnitude("prefill_time")
                                                    + (chunks + 0.5) * step)
    # the roofline: one chunk, the whole prompt at once, no wait
    s = sheet(isl="8192")
    assert s.magnitude("ttft_prefill_chunks") == 1 and s.magnitude("ttft_in_batch") == 0


def test_prefills_queue_behind_each_other_as_an_md1_queue() -> None:
    """Closed loop of C running users (64, or what the KV holds): λ = C / (TTFT + OSL × ITL);
    each prompt holds the budget for its prefill plus the decodes of the steps it fills; M/D/1
    wait ρ·S / (2(1 − ρ))."""
    s = sheet(prefill_in_step="true", queueing="true", isl="8192")
    life = s.magnitude("ttft_unqueued") / 1e3 + 1024 * s.magnitude("itl") / 1e3
    rate = min(64, int(s.magnitude("max_concurrency"))) / life
    assert s.magnitude("request_arrival_rate") == pytest.approx(rate)
    budget = 8192 - min(64, int(s.magnitude("max_concurrency")))  # the running decodes'
    assert s.magnitude("ttft_prefill_budget") == budget
    service = s.magnitude("prefill_time") + 8192 / budget * s.magnitude("decode_step_time")
    assert s.magnitude("loop_prefill_service_time") == pytest.approx(service)
    rho = rate * service / 1e3
    assert 0 < rho < 1
    assert s.magnitude("loop_prefill_queue_wait") == pytest.approx(rho / (2 * (1 - rho)) * service)
    assert sheet(prefill_in_step="true", isl="8192").magnitude("loop_prefill_queue_wait") == 0


def test_users_whose_kv_does_not_fit_wait_little_s_law_lifetimes() -> None:
    """At 8192/1024 on 2 × H100 with BF16 KV only floor(max_concurrency) sequences fit; the
    other users wait (N / C − 1) request lifetimes (Little's law, closed loop)."""
    s = sheet(prefill_in_step="true", queueing="true", isl="8192", kv_bytes="2")
    fits = s.magnitude("ceiling_batch")
    assert fits == int(s.magnitude("max_concurrency")) and fits < 64
    # only those run: the step reads their KV, not all 64 users'
    assert s.magnitude("running_batch") == fits
    assert s.magnitude("step_prefill_tokens") == pytest.approx(fits * 8192 / 1024)
    assert sheet(prefill_in_step="true", isl="8192", kv_bytes="2").magnitude(
        "running_batch") == 64  # the roofline runs every user
    life = (s.magnitude("ttft_unqueued") + s.magnitude("loop_prefill_queue_wait")
            + 1024 * s.magnitude("itl"))
    assert s.magnitude("kv_queue_wait") == pytest.approx((64 / fits - 1) * life)
    assert s.magnitude("ttft") == pytest.approx(
        s.magnitude("ttft_unqueued") + s.magnitude("loop_prefill_queue_wait")
        + s.magnitude("kv_queue_wait"))
    assert sheet(queueing="true").magnitude("kv_queue_wait") == 0  # 1k/1k FP8 KV: all fit
