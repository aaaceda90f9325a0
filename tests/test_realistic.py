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
                 "ttft_overhead", "seq_step_overhead"):
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


def test_ttft_and_step_overheads_add_as_their_mechanisms_say() -> None:
    base = sheet()
    s = sheet(ttft_overhead="40 ms", seq_step_overhead="50 us")
    assert s.magnitude("ttft") == pytest.approx(base.magnitude("ttft") + 40)
    assert s.magnitude("decode_step_time") == pytest.approx(
        base.magnitude("decode_step_time") + 64 * 0.050)


def test_exposed_tp_all_reduces_slow_the_prefill() -> None:
    s = sheet(comm_overlap="false", link_efficiency="0.5")
    # 2 all-reduces per layer, each 2(p-1)/p x ISL x d_model x 2 B over half of 900 GB/s
    per = 5e-6 + (2 * 1 / 2 * 1024 * 8192 * 2) / (0.5 * 900e9)
    assert s.magnitude("prefill_tp_comm_time") == pytest.approx(160 * per * 1e3)
    assert s.magnitude("ttft") == pytest.approx(s.magnitude("prefill_time")
                                               + s.magnitude("prefill_tp_comm_time"))
