"""Every worked number of seeds/how-fast-can-llm-inference-go.txt, from the catalogs.

The seed's configuration is the default scenario: Llama-3 70B, FP8, 2 × H100 SXM,
ISL = OSL = 1024, 64 concurrent users, chunked prefill on. Its one rounded input is the
parameter count: the article writes P = 7.00E10 for Llama-3 70B, where the architecture
counts 70.55e9 (models/llama-3.1-70b.toml). So the exact checks pin ``n_params`` (and
``n_active_params``) to the seed's 7.00E10 — an input, not a formula — and a second test
shows the catalog's own count lands within 1% of every figure.
"""

from __future__ import annotations

import pytest

from perfgraph.scenario.loading import Scenario
from tests.conftest import scenario

SEED_P = "7.00e10"


@pytest.fixture(scope="module")
def seed() -> Scenario:
    return scenario(("n_params", SEED_P), ("n_active_params", SEED_P))


def value(sc: Scenario, name: str, unit: str | None = None) -> float:
    return sc.sheet.magnitude(name, unit)


def test_the_default_scenario_is_the_seeds_configuration(seed: Scenario) -> None:
    assert value(seed, "tp") == 2
    assert value(seed, "concurrency") == 64
    assert value(seed, "isl") == value(seed, "osl") == 1024
    assert value(seed, "chunked_prefill") == 1
    assert value(seed, "weight_bytes", "B") == value(seed, "kv_bytes", "B") == 1
    # "3.96E15" and "6.70E12": TP multiplies compute and bandwidth.
    assert value(seed, "system_flops", "FLOP/s") == pytest.approx(3.96e15, rel=1e-3)
    assert value(seed, "system_bandwidth", "B/s") == pytest.approx(6.70e12, rel=1e-9)


def test_compute_bound_threshold_is_295_tokens(seed: Scenario) -> None:
    # B ≥ 3.96E15 ÷ (6.70E12 ÷ 1) ÷ 2 = 295 tokens
    assert round(value(seed, "compute_bound_threshold", "token")) == 295


def test_prefill(seed: Scenario) -> None:
    # 1024 × 2 × 7.00E10 = 1.43E14 FLOPs; 1.43E14 ÷ 3.96E15 = 36.22 ms
    assert value(seed, "prefill_flops", "FLOP") == pytest.approx(1.4336e14, rel=1e-9)
    assert f"{value(seed, 'prefill_flops', 'FLOP'):.2e}" == "1.43e+14"
    assert value(seed, "prefill_time", "ms") == pytest.approx(36.22, abs=0.005)
    assert value(seed, "ttft", "ms") == pytest.approx(36.22, abs=0.005)


def test_kv_cache(seed: Scenario) -> None:
    # 2 × 80 × 8 × 128 × 1 = 1.64E5 bytes per token
    assert value(seed, "kv_bytes_per_token", "B/token") == 163840
    assert value(seed, "avg_context", "token") == 1536
    # 2.52E8 bytes ≈ 251.66 MB per sequence; 64 × 2.52E8 = 1.61E10 in total
    assert value(seed, "kv_bytes_per_seq", "MB") == pytest.approx(251.66, abs=0.005)
    assert value(seed, "kv_bytes_total", "B") == pytest.approx(1.61e10, rel=5e-3)


def test_decode_step(seed: Scenario) -> None:
    assert value(seed, "weights_bytes", "B") == pytest.approx(7.00e10)
    # 7.00E10 + 64 × 2.52E8 = 8.61E10 bytes per decode step
    assert value(seed, "decode_bytes_per_step", "B") == pytest.approx(8.61e10, rel=5e-4)
    # 8.61E10 ÷ 6.70E12 = 12.85 ms, and the bytes win over the FLOPs, as in the seed
    assert value(seed, "decode_step_time", "ms") == pytest.approx(12.85, abs=0.005)
    assert value(seed, "decode_memory_time", "ms") > value(seed, "decode_compute_time", "ms")
    assert value(seed, "decode_compute_bound") == 0
    assert value(seed, "itl", "ms") == pytest.approx(12.85, abs=0.005)


def test_end_to_end_latency(seed: Scenario) -> None:
    # 36.22 + (1024 × 12.85) = 13196.32 ms ≈ 13.20 s
    assert value(seed, "e2e_latency", "s") == pytest.approx(13.20, abs=0.005)


def test_throughput_with_chunked_prefill(seed: Scenario) -> None:
    # 64 × (1024 + 1024) − 1024 × 295 = 0 tokens: every prefill hides under decodes
    assert value(seed, "non_overlapped_prefill_tokens", "token") == 0
    assert value(seed, "total_prefill_time", "ms") == 0
    # 1024 steps × 12.85 ms = 13160.10 ms
    assert value(seed, "total_decode_time", "ms") == pytest.approx(13160.1, abs=0.5)
    assert value(seed, "output_tokens_per_cycle", "token") == 65536
    # 65536 ÷ 13.16 s = 4980 tokens/s; 2490 per GPU at TP = 2
    assert value(seed, "throughput", "token/s") == pytest.approx(4980, abs=1)
    assert value(seed, "throughput_per_gpu", "token/s") == pytest.approx(2490, abs=0.5)


def test_without_chunked_prefill_every_prompt_pauses_the_decodes() -> None:
    sc = scenario(("n_params", SEED_P), ("n_active_params", SEED_P),
                  ("chunked_prefill", "false"))
    # 64 prompts × 36.22 ms each are added to the 13.16 s of decode
    assert value(sc, "non_overlapped_prefill_tokens", "token") == 64 * 1024
    assert value(sc, "total_prefill_time", "ms") == pytest.approx(64 * 36.22, abs=0.5)
    assert value(sc, "throughput", "token/s") == pytest.approx(
        65536 / (13.1601 + 64 * 0.03622), rel=1e-3)


def test_catalog_parameter_count_lands_within_one_percent() -> None:
    sc = scenario()
    assert value(sc, "n_params") == 70_553_706_496
    assert value(sc, "prefill_time", "ms") == pytest.approx(36.22, rel=0.01)
    assert value(sc, "decode_step_time", "ms") == pytest.approx(12.85, rel=0.01)
    assert value(sc, "throughput", "token/s") == pytest.approx(4980, rel=0.01)
    assert round(value(sc, "compute_bound_threshold", "token")) == 295
