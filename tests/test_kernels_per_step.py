"""The step's fixed cost per kernel launched (kernels.toml, achievable.toml step_overhead):
kernels counted per layer kind, so that a cost fitted on one model carries over to another
by its kernel count. Every expected value below is counted by hand from the per-kind counts:
GQA attention 6, MLA attention 13, dense MLP 4, routed-expert block 8, shared expert 4, TP
all-reduces 2 a layer at tp > 1, an EP dispatch and combine a MoE layer at ep > 1."""

from __future__ import annotations

import pytest

from perfgraph.scenario.loading import ScenarioSpec, load, parse_set
from perfgraph.scenario.profiles import PROFILES_DIR


def _sheet(model: str, *sets: str, **spec: str):  # noqa: ANN202
    return load(ScenarioSpec(model=model, sets=tuple(parse_set(s) for s in sets),
                             **spec)).sheet


@pytest.mark.parametrize(("model", "tp", "kernels"), [
    ("llama-3.1-70b", 1, 80 * (6 + 4)),                            # 800
    ("llama-3.1-70b", 8, 80 * (6 + 4 + 2)),                        # 960
    ("deepseek-v3", 1, 61 * 13 + 3 * 4 + 58 * (8 + 4)),            # 793 + 12 + 696 = 1501
    ("deepseek-v3", 8, 61 * 13 + 3 * 4 + 58 * (8 + 4) + 61 * 2),   # 1623
])
def test_kernels_per_step_counted_by_layer_kind(model: str, tp: int, kernels: int) -> None:
    sheet = _sheet(model, f"tp={tp}")
    assert sheet.magnitude("kernels_per_step") == kernels


@pytest.mark.parametrize(("model", "tp", "overhead_ms"), [
    ("llama-3.1-70b", 1, 1 + 800 * 5e-3),    # 5.0 ms
    ("llama-3.1-70b", 8, 1 + 960 * 5e-3),    # 5.8 ms
    ("deepseek-v3", 1, 1 + 1501 * 5e-3),     # 8.505 ms
    ("deepseek-v3", 8, 1 + 1623 * 5e-3),     # 9.115 ms
])
def test_the_step_overhead_is_the_host_plus_every_kernel(model: str, tp: int,
                                                          overhead_ms: float) -> None:
    sheet = _sheet(model, f"tp={tp}", "step_host_time=1 ms", "kernel_step_time=5 us")
    assert sheet.magnitude("step_overhead", "ms") == pytest.approx(overhead_ms, rel=1e-12)


def test_expert_parallelism_adds_a_dispatch_and_a_combine_per_moe_layer() -> None:
    # DeepSeek-V3 at tp 8, ep 8: 1623 + 2 × 58 = 1739
    assert _sheet("deepseek-v3", "tp=8", "ep=8").magnitude("kernels_per_step") == 1739


def test_zero_in_the_roofline() -> None:
    sheet = _sheet("deepseek-v3", "tp=8")
    assert sheet.magnitude("step_overhead", "ms") == 0
    assert sheet.magnitude("eager_step_time", "ms") == 0


def test_sglang_folds_the_shared_expert_into_the_grouped_gemm() -> None:
    # its engine file sets shared_expert_kernels = 0: 1623 - 58 × 4 = 1391 at tp 8
    sheet = _sheet("deepseek-v3", "tp=8", engine="sglang")
    assert sheet.magnitude("kernels_per_step") == 1391


def test_a_deepseek_fit_carries_to_llama_by_kernel_count() -> None:
    """The shipped H200 SGLang profile, fitted jointly on DeepSeek-R1 (TP 8) and Llama-3.3-70B
    (TP 4): each model's step overhead is the host's share plus its own kernel count times the
    one fitted time a kernel (Llama 960 kernels, DeepSeek-R1 1391 under SGLang)."""
    profile = {"hardware": "h200", "engine": "sglang",
               "calibration": str(PROFILES_DIR / "h200.sglang.toml")}
    llama = _sheet("llama-3.3-70b", "tp=4", **profile)
    r1 = _sheet("deepseek-r1-0528", "tp=8", **profile)
    kernel_ms, host_ms = (llama.magnitude(c, "ms") for c in ("kernel_step_time", "step_host_time"))
    assert kernel_ms > 0
    assert llama.magnitude("step_overhead", "ms") == pytest.approx(host_ms + 960 * kernel_ms)
    assert r1.magnitude("step_overhead", "ms") == pytest.approx(host_ms + 1391 * kernel_ms)
