"""The catalogs: every entry loads, cites its source, and evaluates with every other."""

from __future__ import annotations

import itertools

import pytest

from perfgraph.engine.units import parse_quantity
from perfgraph.scenario.catalog import catalog_dir, catalog_names
from tests.conftest import scenario

HARDWARE = catalog_names("hardware")
MODELS = catalog_names("model")
WORKLOADS = catalog_names("workload")
KEY_RESULTS = ("ttft", "itl", "throughput", "kv_bytes_per_token", "ridge_point",
               "decode_step_time", "e2e_latency", "mbu")


def test_the_catalogs_hold_what_the_issue_lists() -> None:
    assert set(HARDWARE) >= {"h100-sxm", "h100-pcie", "h200", "b200", "mi300x", "mi325x",
                             "mi355x", "a100-80gb", "l40s"}
    assert set(MODELS) >= {"llama-3.1-8b", "llama-3.1-70b", "llama-3.3-70b", "llama-3.1-405b",
                           "mixtral-8x7b", "qwen2.5-72b", "deepseek-v3", "gpt-oss-120b",
                           "deepseek-r1-0528", "qwen3-32b", "qwen3-30b-a3b", "qwen3-235b-a22b",
                           "llama-4-scout", "llama-4-maverick", "kimi-k2-instruct",
                           "gemma-3-27b", "qwen3-next-80b-a3b", "mistral-7b", "deepseek-v3.2",
                           "qwen3-coder-480b-a35b", "deepseek-v2.5", "glm-4.5"}
    assert set(WORKLOADS) >= {"chat-1k1k", "long-prompt-8k1k", "long-output-1k8k"}
    assert len(WORKLOADS) >= 4


@pytest.mark.parametrize("kind", ["hardware", "model", "workload"])
def test_every_file_cites_its_source_in_a_comment(kind: str) -> None:
    for path in catalog_dir(kind).glob("*.toml"):
        head = path.read_text().split("\n[", 1)[0]
        assert head.startswith("#"), path
        if kind != "workload":
            assert "Source" in head or "source" in head, path


@pytest.mark.parametrize(("hardware", "model"), list(itertools.product(HARDWARE, MODELS)))
def test_every_model_on_every_chip_evaluates(hardware: str, model: str) -> None:
    sc = scenario(("tp", 8), hardware=hardware, model=model, precision="bf16")
    for name in KEY_RESULTS:
        assert sc.sheet.error(name) is None, (name, sc.sheet.error(name))
        assert sc.sheet.magnitude(name) > 0, name


@pytest.mark.parametrize("workload", WORKLOADS)
def test_every_workload_evaluates_on_the_default(workload: str) -> None:
    sc = scenario(workload=workload)
    for name in KEY_RESULTS:
        assert sc.sheet.error(name) is None, (name, sc.sheet.error(name))


@pytest.mark.parametrize("hardware", HARDWARE)
def test_peak_flops_is_the_dense_figure_never_the_sparse_one(hardware: str) -> None:
    sc = scenario(hardware=hardware, precision="bf16")
    dense = sc.hardware.table("peak_flops")
    sparse = sc.hardware.table("peak_flops_sparse")
    used = sc.sheet.magnitude("peak_flops", "FLOP/s")
    assert used == pytest.approx(parse_quantity(dense["bf16"])[0])
    if "bf16" in sparse:
        assert parse_quantity(sparse["bf16"])[0] > used


def test_fp4_only_where_the_chip_has_it() -> None:
    # NVFP4 with its scales: 4 bits + one FP8 scale per 16 values = 4.5 bits
    assert scenario(hardware="b200", precision="fp4").sheet.magnitude("weight_bytes", "B") == 0.5625
    from perfgraph.errors import CatalogError

    with pytest.raises(CatalogError, match="no dense fp4"):
        scenario(hardware="h100-sxm", precision="fp4")
