"""The profiles fitted on InferenceX's DeepSeek-R1 rows (SGLang and TensorRT-LLM on B200 and
H200, SGLang and ATOM on MI355X): each loads, ``--calibration auto`` picks it for its hardware ×
engine and labels what it prints, and the B200 SGLang profile, never fitted on an H200 run,
predicts H200 SGLang rows it was held against (the GPU split)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from perfgraph._infra import tomlfile
from perfgraph.cli.main import main
from perfgraph.measured.adapters import read_runs
from perfgraph.measured.comparison import compare_runs
from perfgraph.measured.setup import Baseline
from perfgraph.scenario import ScenarioSpec, load
from perfgraph.scenario.profiles import PROFILES_DIR, find_profile

IX = Path(__file__).parent / "data" / "measured" / "inferencex_dsr1" / "aggregated" / \
    "benchmarks.json"
PAIRS = (("b200", "sglang"), ("h200", "sglang"), ("b200", "trtllm"), ("h200", "trtllm"),
         ("mi355x", "sglang"), ("mi355x", "atom"))
#: the joint profiles: their pair's other models, and those models' runs (DataCrunch's SGLang
#: Llama-3.3-70B file; NVIDIA's TensorRT-LLM 0.14 online table, H200 rows)
JOINT = {("h200", "sglang"): (("llama-3.3-70b",), 7),
         ("h200", "trtllm"): (("llama-3.1-70b", "llama-3.1-8b"), 36)}


def _domain(hardware: str, engine: str) -> str:
    """The domain a pair's profile labels DeepSeek-R1 with."""
    others, _ = JOINT.get((hardware, engine), ((), 0))
    return "MoE/MLA (deepseek-r1-0528)" if not others else \
        f"dense/MoE/MLA (deepseek-r1-0528, {', '.join(others)})"


def test_the_rows_are_the_aggregated_ones_without_mtp() -> None:
    runs = read_runs(IX).runs
    assert len(runs) == 94  # of the shared file's 235 (PROVENANCE.md)
    assert all(r.disaggregated is False and r.spec_decoding == "none" for r in runs)
    fp8 = [((r.hardware or "").lower(), r.engine) for r in runs if r.precision == "fp8"]
    assert [fp8.count(p) for p in PAIRS] == [12, 9, 9, 9, 9, 6]


@pytest.mark.parametrize(("hardware", "engine"), PAIRS)
def test_auto_picks_the_profile_of_its_hardware_and_engine(hardware, engine) -> None:
    path = PROFILES_DIR / f"{hardware}.{engine}.toml"
    assert find_profile(hardware, engine) == path
    profile = tomlfile.read(path).data["profile"]
    assert "InferenceX" in profile["engine_version"]
    # the workloads as the benchmark named them (modelled at 0.9 × nominal, their mean)
    assert {"1024/1024", "1024/8192", "8192/1024"} <= set(profile["workloads"])
    runs = [r for r in read_runs(IX).runs if (r.hardware or "").lower() == hardware
            and r.engine == engine and r.precision == "fp8"]
    others, other_runs = JOINT.get((hardware, engine), ((), 0))
    assert profile["runs"] == len(runs) + other_runs  # every FP8 row of the pair, and more
    scenario = load(ScenarioSpec(model="deepseek-r1-0528", hardware=hardware, engine=engine,
                                 calibration="auto"))
    held = profile["held_out"]
    assert scenario.prediction.startswith(
        f"calibrated: {hardware}.{engine}, {profile['runs']} runs, in domain: "
        f"{_domain(hardware, engine)}, held-out error ttft {100 * held['ttft']:.0f}%, tpot "
        f"{100 * held['tpot']:.0f}%, throughput {100 * held['throughput']:.0f}%; 80% band ")
    assert profile["domain"]["models"] == ["deepseek-r1-0528", *others]
    if not others:
        assert profile["domain"]["isl"] == [1024, 8192]
        assert profile["domain"]["osl"] == [1024, 8192]


def test_a_dense_model_on_a_moe_profile_quotes_the_leave_one_model_out_error() -> None:
    # the case, on the B200 TensorRT-LLM profile (fitted on DeepSeek-R1 alone; the
    # H200 one now fits the dense Llamas of its pair too)
    profile = tomlfile.read(PROFILES_DIR / "b200.trtllm.toml").data["profile"]
    said = load(ScenarioSpec(model="llama-3.3-70b", hardware="b200", engine="trtllm",
                             calibration="auto")).prediction
    model = profile["errors"]["model"]
    assert said.startswith("calibrated: b200.trtllm, 9 runs; dense model; profile fitted on "
                           "MoE/MLA (deepseek-r1-0528); 70.6B parameters, fitted 671B: "
                           "extrapolated; leave-one-model-out error ttft "
                           f"{100 * model['ttft']:.0f}%, tpot {100 * model['tpot']:.0f}%")
    assert "held-out error" not in said  # never the in-domain error


def test_the_joint_h200_trtllm_profile_holds_a_dense_llama_in_its_domain() -> None:
    """Fitted on DeepSeek-R1 and on NVIDIA's Llama-3.1 8B and 70B runs together (across
    engine builds, which its version says), the H200 TensorRT-LLM profile takes Llama-3.3-70B
    (Llama-3.1-70B's architecture) in its domain."""
    profile = tomlfile.read(PROFILES_DIR / "h200.trtllm.toml").data["profile"]
    assert "0.14.0" in profile["engine_version"] and "another build" in profile["engine_version"]
    assert profile["domain"]["architecture"] == ["dense", "moe", "mla"]
    said = load(ScenarioSpec(model="llama-3.3-70b", hardware="h200", engine="trtllm",
                             calibration="auto")).prediction
    assert said.startswith("calibrated: h200.trtllm, 45 runs, in domain: "
                           f"{_domain('h200', 'trtllm')}; llama-3.3-70b has the architecture "
                           "of llama-3.1-70b, held-out error")


def test_eval_labels_its_output_with_the_profile(capsys) -> None:
    assert main(["eval", "--model", "deepseek-r1-0528", "--hardware", "b200", "--engine",
                 "sglang", "--set", "tp=8", "--calibration", "auto", "--only", "itl"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith(" · calibrated: b200.sglang, 12 runs, in domain: MoE/MLA "
                          "(deepseek-r1-0528), held-out error ttft "
                          + first.split("held-out error ttft ")[1])
    assert "calibrated: b200.sglang, 12 runs" in first


def test_compare_holds_each_row_against_its_own_profile() -> None:
    runs = [r for r in read_runs(IX).runs if r.precision == "fp8"
            and (r.hardware or "").lower() in ("b200", "h200")]
    compared = compare_runs(runs, Baseline.from_spec(ScenarioSpec(calibration="auto")),
                            levers=False)
    assert len(compared) == len(runs) and all(c.error is None for c in compared)
    for c in compared:
        tpot = c.metric("tpot")
        assert tpot.predicted is not None and tpot.predicted > tpot.modelled  # above roofline


#: H200 SGLang FP8 at 1k/1k, TP8, concurrency 4: InferenceX row 45 of the shared file (row 29
#: here), measured TPOT 9.70 ms, 98.8 total tokens/s per GPU (lmsysorg/sglang:v0.5.12-cu130)
H200_ROW = 29


def test_the_b200_profile_predicts_an_h200_row_it_never_saw() -> None:
    run = read_runs(IX).runs[H200_ROW]
    assert (run.hardware or "").lower() == "h200" and run.engine == "sglang"
    assert run.metrics["tpot"].value == pytest.approx(9.70, abs=0.01)
    # as the GPU split models it: the H200 script's launch flags (--mem-fraction-static
    # 0.82, --chunked-prefill-size 32768; KV in BF16, SGLang's default)
    spec = ScenarioSpec(calibration=str(PROFILES_DIR / "b200.sglang.toml"),
                        sets=(("kv_memory_fraction", "0.82"),
                              ("max_num_batched_tokens", "32768 * token")))
    (c,) = compare_runs([run], Baseline.from_spec(spec), levers=False)
    tpot = c.metric("tpot")
    assert tpot.measured == pytest.approx(9.70, abs=0.01)
    # predicted 11.2 ms (+16%; the split's median over the nine H200 rows is 24%), where
    # the roofline says 2.6 ms
    assert abs(tpot.predicted / tpot.measured - 1) <= 0.2
    assert tpot.modelled < 0.3 * tpot.measured
    # the H200 row on its own profile (fitted on it) comes closer still
    own = compare_runs([dataclasses.replace(run)], Baseline.from_spec(
        dataclasses.replace(spec, calibration="auto")), levers=False)[0].metric("tpot")
    assert abs(own.predicted / own.measured - 1) <= 0.1


def test_compare_names_the_profile_that_predicts_each_row(capsys) -> None:
    assert main(["compare", str(IX), "--calibration", "auto"]) == 0
    out = capsys.readouterr().out
    for hardware, engine in PAIRS:
        held = tomlfile.read(PROFILES_DIR / f"{hardware}.{engine}.toml").data["profile"]
        assert f"predicted by calibrated: {hardware}.{engine}, {held['runs']} runs, in " \
            f"domain: {_domain(hardware, engine)}, held-out error ttft " \
            f"{100 * held['held_out']['ttft']:.0f}%" in out
    assert main(["compare", str(IX)]) == 0
    assert "predicted by" not in capsys.readouterr().out  # the roofline alone
