"""Engines as data: each engine file's memory rule gives the KV budget a hand computation gives;
an unknown engine is one message naming the engines; a scenario file and a measured run can name
the engine, and the run's wins."""

from __future__ import annotations

import dataclasses

import pytest

from perfgraph.cli.main import main
from perfgraph.errors import CatalogError
from perfgraph.measured.adapters import MeasuredRun, read_runs
from perfgraph.measured.derived import derive_runs
from perfgraph.measured.setup import Baseline, setup_run
from perfgraph.scenario.loading import ScenarioSpec, engine_names, load

IX = "tests/data/measured/inferencex_dsr1/benchmarks.json"


def _runs(path: str) -> list[MeasuredRun]:
    """A file's runs as compare models them: derived first (their ISL/OSL are cells)."""
    return derive_runs(None, read_runs(path).runs)


def _kv(engine: str | None, tp: int = 1, *sets: tuple[str, str]) -> tuple[float, float, float]:
    sheet = load(ScenarioSpec(engine=engine, sets=(("tp", str(tp)), *sets))).sheet
    return (sheet.magnitude("kv_memory", "GB"), sheet.magnitude("weights_bytes", "GB"),
            sheet.magnitude("hbm_total", "GB"))


def test_engines_shipped():
    assert engine_names() == ["atom", "sglang", "trtllm", "vllm"]


# vLLM's start-up reserve for Llama 3.1 70B at TP1 (its defaults: 8192 batched tokens, 256
# sequences): activations 8192 × 2 B × (4 × 8192 + 3 × 28,672.67) = 1.9462 GB, logits
# 3 × 256 × 128,256 × 4 B = 0.3940 GB, non-torch 0.2 GB, CUDA graphs 0.5 GB (in the budget
# since v0.21), and block tables of 256 sequences × 2048 ÷ 16 blocks × 4 B = 0.13 MB:
# 3.0403 GB.
VLLM_RESERVE_70B_TP1 = 8192 * 2 * (4 * 8192 + 3 * 28672.67) / 1e9 + 3 * 256 * 128256 * 4 / 1e9 \
    + 0.2 + 0.5 + 256 * 128 * 4 / 1e9


def test_vllm_is_the_default_and_its_rule():
    kv, weights, hbm = _kv(None)
    # 0.9 × 85.52 GB − 70.55 GB − 3.04 GB = 3.37 GB (6.42 GB before the start-up reserve)
    assert kv == pytest.approx(0.9 * hbm - weights - VLLM_RESERVE_70B_TP1, abs=1e-4)
    assert kv == pytest.approx(_kv("vllm")[0])
    assert _kv("vllm", 1, ("gpu_memory_utilization", "0.95"))[0] == pytest.approx(
        0.95 * hbm - weights - VLLM_RESERVE_70B_TP1, abs=1e-4)
    assert _kv("vllm", 1, ("runtime_reserve", "1 GB"))[0] == pytest.approx(0.9 * hbm - weights - 1)
    # before v0.21 the graphs were captured after the KV was sized: 0.5 GB more KV
    assert _kv("vllm", 1, ("cuda_graph_in_budget", "false"))[0] == pytest.approx(kv + 0.5)


@pytest.mark.parametrize(("tp", "fraction"), [(1, 0.88), (2, 0.87), (4, 0.85), (8, 0.81)])
def test_sglang_mem_fraction_static_by_tp(tp, fraction):
    kv, weights, hbm = _kv("sglang", tp)
    assert hbm == pytest.approx(81559 * 2**20 / 1e9 * tp)  # H100 SXM: 81559 MiB as reported
    # only the non-torch memory (0.2 GB a GPU) comes out before the pool is sized
    assert kv == pytest.approx(max(0.0, fraction * hbm - weights - 0.2 * tp))


def test_trtllm_takes_its_share_of_the_free_memory():
    kv, weights, hbm = _kv("trtllm", 1)
    # the dry run of 8192 tokens and the graph warm-up come out first: activations 1.9462 GB,
    # greedy FP32 logits of 2048 sequences 2048 × 128,256 × 4 B = 1.0506 GB, non-torch 0.2,
    # graphs 0.5, K and V block offsets of 2048 requests × 2048 ÷ 32 blocks × 8 B = 1 MB
    reserve = 8192 * 2 * (4 * 8192 + 3 * 28672.67) / 1e9 + 2048 * 128256 * 4 / 1e9 + 0.7 \
        + 2048 * 64 * 8 / 1e9
    assert kv == pytest.approx(0.9 * (hbm - weights - reserve), abs=1e-4)  # 10.14 GB
    kv, weights, hbm = _kv("trtllm", 2, ("runtime_reserve", "2 GB"))
    assert kv == pytest.approx(0.9 * (hbm - weights - 2 * 2))


def test_atom_takes_vllms_rule_with_its_own_defaults():
    kv, weights, hbm = _kv("atom", 1)
    # gpu_memory_utilization 0.9 (atom/config.py) less the profiled peak of its 16384 batched
    # tokens and 512 sequences' logits, and non-torch memory; the graphs come after
    reserve = 16384 * 2 * (4 * 8192 + 3 * 28672.67) / 1e9 + 3 * 512 * 128256 * 4 / 1e9 + 0.2 \
        + 512 * 128 * 4 / 1e9  # and its block tables
    assert kv == pytest.approx(0.9 * hbm - weights - reserve, abs=1e-4)
    sheet = load(ScenarioSpec(engine="atom")).sheet
    assert sheet.magnitude("block_size") == 16 and sheet.magnitude("max_num_seqs") == 512
    assert sheet.magnitude("max_num_batched_tokens") == 16384


def test_scheduling_defaults_follow_the_engine():
    got = {e: load(ScenarioSpec(engine=e)).sheet for e in engine_names()}
    assert [got[e].magnitude("block_size") for e in ("vllm", "sglang", "trtllm")] == [16, 1, 32]
    assert got["trtllm"].magnitude("max_num_seqs") == 2048
    assert got["vllm"].magnitude("max_num_seqs") == 256
    assert got["sglang"].magnitude("max_num_batched_tokens") == 8192


def test_unknown_engine_is_one_message_with_a_near_miss():
    with pytest.raises(CatalogError, match=r"unknown engine 'sglng' \(did you mean 'sglang'\?\); "
                       "known engines: atom, sglang, trtllm, vllm"):
        load(ScenarioSpec(engine="sglng"))


def test_engine_from_a_scenario_file_and_its_bad_line(tmp_path):
    good = tmp_path / "s.toml"
    good.write_text('engine = "trtllm"\n')
    assert load(ScenarioSpec(file=str(good))).engine == "trtllm"
    assert load(ScenarioSpec(file=str(good), engine="vllm")).engine == "vllm"  # option wins
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nengine = "tensorrt"\n')
    with pytest.raises(CatalogError) as exc:
        load(ScenarioSpec(file=str(bad)))
    assert exc.value.file == str(bad) and exc.value.line == 2


def test_cli_engine_option(capsys):
    assert main(["eval", "--engine", "nope", "--format", "json"]) == 2
    assert "unknown engine 'nope'" in capsys.readouterr().err


def test_the_runs_engine_wins():
    runs = _runs(IX)
    base = Baseline.from_spec(ScenarioSpec(model="deepseek-v3", engine="vllm"))
    trt = setup_run(runs[2], base)  # framework trt
    assert trt.engine == "trtllm" and "--engine vllm not used: the file says trtllm" in trt.notes
    assert trt.spec(base.spec).engine == "trtllm"
    atom = setup_run(runs[16], base)  # AMD's ATOM: its own engine file (engines/atom.toml)
    assert atom.engine == "atom" and not any("has no engine file" in n for n in atom.notes)
    assert atom.isl_source == "expected" and atom.isl == pytest.approx(921.6)
    other = setup_run(dataclasses.replace(runs[16], engine="lmdeploy"), base)
    assert other.engine is None and any("'lmdeploy' has no engine file" in n
                                        for n in other.notes)  # the scenario's rule
    dpa = setup_run(runs[21], base)
    # EP, DP attention and the pools are cells now: passed on, not noted as unmodelled
    assert ("ep", "8") in dpa.deployment and ("dp_attention", "true") in dpa.deployment
    assert ("disaggregated", "true") in dpa.deployment
    assert not any("not modelled" in n for n in dpa.notes)


IMAX_H100 = "tests/data/measured/inferencemax_llama70b_fp8/1k1k/H100.json"
KV_AUTO = ("kv_bytes", "activation_bytes")


def test_inferencemax_rows_carry_their_framework_and_get_its_kv_rule():
    """InferenceMAX's "Framework": "VLLM" → vllm; vLLM's --kv-cache-dtype auto keeps KV in the
    activations' BF16 for the FP8 model: 2 × 80 layers × 8 heads × 128 × 2 B = 327,680 B a
    token (FP8: 163,840)."""
    run = _runs(IMAX_H100)[0]
    assert run.engine == "vllm"  # the file's word, lower-cased; setup maps it
    setup = setup_run(run, Baseline.from_spec(ScenarioSpec()))
    assert setup.engine == "vllm" and KV_AUTO in setup.deployment
    sheet = load(setup.spec(ScenarioSpec())).sheet
    assert sheet.magnitude("kv_bytes", "B") == 2
    assert sheet.magnitude("kv_bytes_per_token", "B/token") == 327_680
    # a run served with an FP8 KV cache says so with --set kv_bytes=1: the rule steps aside
    fp8 = setup_run(run, Baseline.from_spec(ScenarioSpec(sets=(("kv_bytes", "1"),))))
    assert KV_AUTO not in fp8.deployment
    assert load(fp8.spec(ScenarioSpec(sets=(("kv_bytes", "1"),)))).sheet.magnitude(
        "kv_bytes_per_token", "B/token") == 163_840


def test_the_kv_rule_is_each_engines_data():
    runs = _runs(IX)
    base = Baseline.from_spec(ScenarioSpec())
    sglang = setup_run(runs[6], base)  # H200 SGLang FP8: --kv-cache-dtype auto, BF16 KV
    assert sglang.engine == "sglang" and KV_AUTO in sglang.deployment
    trt = setup_run(runs[2], base)  # B200 TensorRT-LLM FP8: KV dtype follows the checkpoint
    assert trt.engine == "trtllm" and KV_AUTO not in trt.deployment
    atom = setup_run(runs[16], base)  # ATOM FP8: kv_cache_dtype defaults to bf16
    assert atom.engine == "atom" and KV_AUTO in atom.deployment
    other = setup_run(dataclasses.replace(runs[16], engine="lmdeploy"), base)
    assert other.engine is None and KV_AUTO not in other.deployment  # no engine file: no rule
    bf16 = setup_run(dataclasses.replace(_runs(IMAX_H100)[0], precision="BF16"), base)
    assert KV_AUTO not in bf16.deployment  # BF16 weights: KV is BF16 either way, no note


@pytest.mark.parametrize(("said", "engine"), [("TRT", "trtllm"), ("dynamo-sglang", "sglang"),
                                              ("VLLM", "vllm"), ("TensorRT-LLM", "trtllm")])
def test_a_files_framework_name_maps_to_an_engine_by_the_engine_files_aliases(said, engine):
    run = dataclasses.replace(_runs(IMAX_H100)[0], engine=said.lower())
    assert setup_run(run, Baseline.from_spec(ScenarioSpec())).engine == engine
