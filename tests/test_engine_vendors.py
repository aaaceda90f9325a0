"""The accelerators an engine runs on (its file's ``vendors``, against a hardware file's
``vendor``): plan never proposes an engine on hardware it does not run on, and eval or
simulate of such a pair says so in one warning line."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfgraph.cli.main import main
from perfgraph.scenario import engine_files
from perfgraph.scenario.catalog import catalog_names, load_entry
from perfgraph.scenario.loading import ScenarioSpec, load
from perfgraph.whatif import plan_search as plan

SPEC = ScenarioSpec(model="llama-3.3-70b", workload="chat-1k1k")


def _vendor(hardware: str) -> str:
    return str(load_entry("hardware", hardware).doc.data["vendor"])


def test_each_engine_file_names_its_vendors() -> None:
    vendors = {e.name: e.vendors for e in engine_files.engines()}
    assert vendors["trtllm"] == ("nvidia",) and vendors["atom"] == ("amd",)
    assert {"nvidia", "amd"} <= set(vendors["vllm"]) and {"nvidia", "amd"} <= set(
        vendors["sglang"])


def test_plan_searches_an_engine_only_on_hardware_it_runs_on() -> None:
    """Without --hardware, ATOM's block holds the AMD accelerators only (b200 was its pick)."""
    sheet = load(SPEC).sheet
    axes = plan.space(SPEC, sheet, ["precision=fp8"], {}, "atom")
    searched = {str(label).split("@")[0] for label in axes[1].values}
    amd = {h for h in catalog_names("hardware") if _vendor(h) == "amd"}
    assert searched == amd and amd  # the catalog's AMD parts that run fp8


def test_engines_by_accelerators_mask_the_pairs_that_do_not_run() -> None:
    """vLLM, ATOM and TensorRT-LLM × H200 and MI300X: the space is 3 × 2 accelerators, but
    ATOM on H200 and TensorRT-LLM on MI300X are no candidates: none is feasible, none
    counted as searched, no family reported, none "nearer" in the reasons."""
    q = plan.question(SPEC, ["ttft=2s", "itl=50ms"], "1 request/s", "gpus")
    search = ("engine=vllm,atom,trtllm", "hardware=h200,mi300x", "precision=fp8", "tp=2,4",
              "pp=1", "disaggregated=0", "concurrency=8,32")
    result = plan.run(SPEC, q, search)
    assert result.apart == {("atom", "h200"), ("trtllm", "mi300x")}
    assert result.searched == 4 * 2 * 2  # 4 runnable pairs × 2 TP × 2 batches
    pairs = {(str(c["engine"]), str(c["hardware"]))
             for c in (result.choices(int(r)) for r in result.rows)}
    assert pairs and not pairs & result.apart
    assert ("vllm", "h200") in pairs and ("atom", "mi300x") in pairs
    from perfgraph.whatif import plan_report

    reported = {(f.engine, f.hardware) for f in plan_report.families(result)}
    assert reported == {("vllm", "h200"), ("vllm", "mi300x"), ("atom", "mi300x"),
                        ("trtllm", "h200")}


def test_plan_of_an_engine_on_hardware_it_does_not_run_on_exits_2(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--engine", "atom", "--hardware", "b200", "--slo", "itl=50ms",
                 "--rate", "1 request/s", "--search", "tp=2", "--search", "concurrency=8"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "ATOM does not run on b200 (nvidia): it runs on amd accelerators only" in err


@pytest.mark.parametrize("command", [
    ["eval", "--only", "itl"],
    ["simulate", "--rate", "1 request/s", "--requests", "5"],
])
def test_eval_and_simulate_of_a_mismatched_pair_warn_once(
        command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*command, "--engine", "trtllm", "--hardware", "mi300x"]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(err) == 1
    assert err[0].startswith("perfgraph: warning: TensorRT-LLM does not run on mi300x (amd): "
                             "it runs on nvidia accelerators only")
    assert main([*command, "--engine", "vllm", "--hardware", "mi300x"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_vendors_of_the_wrong_shape_is_one_message(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(engine_files.FOLDERS_VARIABLE, str(tmp_path))
    text = Path(engine_files.ENGINES_DIR / "atom.toml").read_text(encoding="utf-8")
    (tmp_path / "odd.toml").write_text(text.replace('vendors = ["amd"]', 'vendors = "amd"'),
                                       encoding="utf-8")
    assert main(["eval", "--engine", "odd"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "vendors is 'amd': expected a list of strings" in err
    assert str(tmp_path / "odd.toml") in err
