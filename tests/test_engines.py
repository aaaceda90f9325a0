"""Engines as data: each engine file's memory rule gives the KV budget a hand computation gives;
an unknown engine is one message naming the engines; a scenario file and a measured run can name
the engine, and the run's wins."""

from __future__ import annotations

import pytest

from perfgraph.cli.main import main
from perfgraph.errors import CatalogError
from perfgraph.measured.adapters import read_runs
from perfgraph.measured.setup import Baseline, setup_run
from perfgraph.scenario.loading import ScenarioSpec, engine_names, load

IX = "tests/data/measured/inferencex_dsr1/benchmarks.json"


def _kv(engine: str | None, tp: int = 1, *sets: tuple[str, str]) -> tuple[float, float, float]:
    sheet = load(ScenarioSpec(engine=engine, sets=(("tp", str(tp)), *sets))).sheet
    return (sheet.magnitude("kv_memory", "GB"), sheet.magnitude("weights_bytes", "GB"),
            sheet.magnitude("hbm_total", "GB"))


def test_engines_shipped():
    assert engine_names() == ["sglang", "trtllm", "vllm"]


def test_vllm_is_the_default_and_its_rule():
    kv, weights, hbm = _kv(None)
    assert kv == pytest.approx(0.9 * hbm - weights)  # 0.9 × 85.52 GB − 70.55 GB = 6.42 GB
    assert kv == pytest.approx(_kv("vllm")[0])
    assert _kv("vllm", 1, ("gpu_memory_utilization", "0.95"))[0] == pytest.approx(
        0.95 * hbm - weights)
    assert _kv("vllm", 1, ("runtime_reserve", "1 GB"))[0] == pytest.approx(0.9 * hbm - weights - 1)


@pytest.mark.parametrize(("tp", "fraction"), [(1, 0.88), (2, 0.87), (4, 0.85), (8, 0.81)])
def test_sglang_mem_fraction_static_by_tp(tp, fraction):
    kv, weights, hbm = _kv("sglang", tp)
    assert hbm == pytest.approx(81559 * 2**20 / 1e9 * tp)  # H100 SXM: 81559 MiB as reported
    assert kv == pytest.approx(max(0.0, fraction * hbm - weights))


def test_trtllm_takes_its_share_of_the_free_memory():
    kv, weights, hbm = _kv("trtllm", 1)
    assert kv == pytest.approx(0.9 * (hbm - weights))  # 13.47 GB where vLLM's rule leaves 6.42
    kv, weights, hbm = _kv("trtllm", 2, ("runtime_reserve", "2 GB"))
    assert kv == pytest.approx(0.9 * (hbm - weights - 2 * 2))


def test_scheduling_defaults_follow_the_engine():
    got = {e: load(ScenarioSpec(engine=e)).sheet for e in engine_names()}
    assert [got[e].magnitude("block_size") for e in ("vllm", "sglang", "trtllm")] == [16, 1, 32]
    assert got["trtllm"].magnitude("max_num_seqs") == 2048
    assert got["vllm"].magnitude("max_num_seqs") == 256
    assert got["sglang"].magnitude("max_num_batched_tokens") == 8192


def test_unknown_engine_is_one_message_with_a_near_miss():
    with pytest.raises(CatalogError, match=r"unknown engine 'sglng' \(did you mean 'sglang'\?\); "
                       "known engines: sglang, trtllm, vllm"):
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
    runs = read_runs(IX).runs
    base = Baseline.from_spec(ScenarioSpec(model="deepseek-v3", engine="vllm"))
    trt = setup_run(runs[2], base)  # framework trt
    assert trt.engine == "trtllm" and "--engine vllm not used: the file says trtllm" in trt.notes
    assert trt.spec(base.spec).engine == "trtllm"
    atom = setup_run(runs[16], base)  # AMD's ATOM: no engine file, the scenario's rule
    assert atom.engine is None and any("'atom' has no engine file" in n for n in atom.notes)
    assert atom.isl_source == "expected" and atom.isl == pytest.approx(921.6)
    dpa = setup_run(runs[21], base)
    # EP, DP attention and the pools are cells now: passed on, not noted as unmodelled
    assert ("ep", "8") in dpa.deployment and ("dp_attention", "true") in dpa.deployment
    assert ("disaggregated", "true") in dpa.deployment
    assert not any("not modelled" in n for n in dpa.notes)
