"""trtllm-bench's engine sizing (sheets/bench_sizing.toml), held against a hand computation of
the rule its source states."""

from __future__ import annotations

import pytest

from tests.conftest import scenario

#: 80 GB a GPU, 10 GB of weights, 100 kB of KV a token, ISL = OSL = 1000 (inputs pinned so the
#: arithmetic is the test's own)
PINNED = (("hbm_capacity", "80 GB"), ("weights_bytes", "10 GB"),
          ("kv_bytes_per_token", "100 kB/token"), ("isl", 1000), ("osl", 1000), ("tp", 1))
NAMES = ("bench_kv_requests", "bench_max_batch_size", "bench_max_num_tokens")


def _bench(*sets: tuple[str, object]) -> tuple[float, ...]:
    sheet = scenario(*PINNED, *sets).sheet
    return tuple(sheet.magnitude(n, "token" if n.endswith("tokens") else None) for n in NAMES)


@pytest.mark.parametrize(("sets", "expected"), [
    # 0.95 × (80 − 10) GB / (100 kB × 2000) = 332.5 requests → 128 × ceil(332.5 / 128) = 384;
    # tokens 332.5 × (1 + 1000/1000) = 665 → the 2048 floor
    ((), (332.5, 384, 2048)),
    # two pipeline stages: 0.95 × (160 − 10) / 0.2 = 712.5, 356.25 a stage → 384; 712.5 → 2048
    ((("pp", 2),), (712.5, 384, 2048)),
    # 70 GB of weights: 0.95 × 10 / 0.2 = 47.5 → the 64 floor; ISL 2000, OSL 100: 0.95 × 10 /
    # 0.21 = 45.24, tokens 45.24 × 21 = 950 → 2048
    ((("weights_bytes", "70 GB"), ("isl", 2000), ("osl", 100)), (9.5 / 0.21, 64, 2048)),
    # 1 kB a token: 0.95 × 70 / 0.002 = 33250 → capped at 4096 (256 × 16); tokens 8192 → 8192
    ((("kv_bytes_per_token", "1 kB/token"),), (33250, 4096, 8192)),
    # and ISL 3000, OSL 1000: 0.95 × 70 / 0.004 = 16625 → 4096; 4096 × 4 = 16384 → 16384
    ((("kv_bytes_per_token", "1 kB/token"), ("isl", 3000)), (16625, 4096, 16384)),
    # ISL 9000: 4096 × 10 = 40960 tokens → the 32768 cap
    ((("kv_bytes_per_token", "1 kB/token"), ("isl", 9000)), (6650, 4096, 32768)),
    # 0.95 × 70 / (0.1 × 6) = 110.8 → 32 × ceil(110.8 / 32) = 128; ISL 5000, OSL 1000:
    # 110.8 × 6 = 665 tokens → 2048
    ((("isl", 5000),), (66.5 / 0.6, 128, 2048)),
])
def test_trtllm_bench_heuristic_by_hand(sets, expected):
    assert _bench(*sets) == pytest.approx(expected)


def test_the_batch_rounds_to_256s_past_1024():
    # 10 kB a token: 0.95 × 70 / 0.02 = 3325 → 256 × ceil(12.99) = 3328; tokens 6650 → 512s:
    # 512 × ceil(12.99) = 6656
    assert _bench(("kv_bytes_per_token", "10 kB/token")) == pytest.approx((3325, 3328, 6656))
