"""Runs that speculated with DeepSeek's MTP module: the reader marks them, setup models them with
spec_k drafts a step (the launch flag, else the engine file's default) and one MTP layer a
draft, the TPOT is a step ÷ the tokens a step emits, and calibration fits the acceptance
spec_alpha only where a fitted run speculates. The rows are tests/data/measured/
inferencex_dsr1/aggregated_mtp (PROVENANCE.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfgraph.measured.adapters import read_runs
from perfgraph.measured.calibration import calibrate
from perfgraph.measured.derived import derive_runs
from perfgraph.measured.setup import CONFIG_CELLS, Baseline, setup_run
from perfgraph.output.profile_overlay import overlay_text
from perfgraph.scenario.loading import ScenarioSpec, load

DATA = Path(__file__).parent / "data" / "measured"
MTP = DATA / "inferencex_dsr1" / "aggregated_mtp" / "benchmarks.json"
PLAIN = DATA / "inferencex_dsr1" / "aggregated" / "benchmarks.json"
#: TensorRT-LLM's launch rule (benchmarks/dsr1_fp8_h200_trt_mtp.sh): 1 draft with DP attention
TRT_FLAG = (("mtp_draft_tokens", "1 if dp_attention else 3"),)


@pytest.fixture(scope="module")
def runs():
    result = read_runs(MTP)
    assert result.format == "inferencex" and not result.problems
    assert len(result.runs) == 56
    return derive_runs(None, result.runs)  # as compare models them: their ISL/OSL are cells


def _sheet(run, sets=()):
    """The run's setup and its sheet at the run's configuration (TP, users, lengths)."""
    base = Baseline.from_spec(ScenarioSpec(sets=sets))
    setup = setup_run(run, base)
    assert setup.error is None
    sheet = load(setup.spec(base.spec)).sheet
    for name in CONFIG_CELLS:
        sheet.set(name, str(getattr(setup, name)))
    return setup, sheet


def test_the_file_holds_only_aggregated_mtp_rows(runs) -> None:
    assert {(r.spec_decoding, r.disaggregated) for r in runs} == {("mtp", False)}
    assert {r.engine for r in runs} == {"sglang", "trtllm", "atom"}


def test_an_mtp_row_is_modelled_with_the_engines_default_draft_count(runs) -> None:
    run = runs[4]  # b200 trt fp8 TP8 EP8, 8 users, no DP attention
    assert (run.hardware, run.engine, run.dp_attention, run.concurrency) == \
        ("b200", "trtllm", False, 8)
    setup, sheet = _sheet(run)
    assert ("spec_k", "mtp_draft_tokens") in setup.deployment
    assert ("spec_draft_layers", "1") in setup.deployment
    # TensorRT-LLM's num_nextn_predict_layers defaults to 1 (engines/trtllm.toml)
    assert (sheet.magnitude("spec_k"), sheet.magnitude("spec_draft_layers")) == (1, 1)
    assert any("MTP speculative decoding modelled" in n and "mtp_draft_tokens" in n
               for n in setup.notes)
    sglang = next(r for r in runs if r.engine == "sglang")
    assert _sheet(sglang)[1].magnitude("spec_k") == 3  # SGLang's DeepSeek default: 3 steps
    atom = next(r for r in runs if r.engine == "atom")
    assert _sheet(atom)[1].magnitude("spec_k") == 1  # ATOM's --num-speculative-tokens


def test_the_launch_flag_sets_the_draft_count_per_run(runs) -> None:
    plain, dp = runs[4], runs[5]  # b200 trt fp8: no DP attention (8 users), DP attention (256)
    assert (plain.dp_attention, dp.dp_attention) == (False, True)
    assert _sheet(plain, TRT_FLAG)[1].magnitude("spec_k") == 3
    assert _sheet(dp, TRT_FLAG)[1].magnitude("spec_k") == 1
    # an explicit spec_k wins over both
    setup, sheet = _sheet(plain, (("spec_k", "4"),))
    assert all(cell != "spec_k" for cell, _ in setup.deployment)
    assert sheet.magnitude("spec_k") == 4


def test_a_row_without_speculation_gets_no_speculative_cells() -> None:
    run = derive_runs(None, read_runs(PLAIN).runs[:1])[0]
    assert run.spec_decoding == "none"
    setup, sheet = _sheet(run, TRT_FLAG)
    assert all(not cell.startswith("spec_") for cell, _ in setup.deployment)
    assert sheet.magnitude("spec_k") == 0  # mtp_draft_tokens alone moves nothing


def test_tpot_is_a_step_over_the_tokens_a_step_emits(runs) -> None:
    """At k = 2 drafts and acceptance 0.8 a step emits 1 + 0.8 + 0.8² = 2.44 tokens on
    average, so the modelled TPOT (the ITL: time per output token) is the step ÷ 2.44, the
    decode of a request OSL TPOTs, and the MBU a run achieved is a step's bytes over its
    TPOT × 2.44."""
    _, sheet = _sheet(runs[16], (("mtp_draft_tokens", "2"), ("spec_alpha", "0.8")))
    assert (sheet.magnitude("spec_k"), sheet.magnitude("spec_alpha")) == (2, 0.8)
    tokens = 1 + 0.8 + 0.8 ** 2
    assert sheet.magnitude("spec_tokens_per_pass") == pytest.approx(tokens, rel=1e-12)
    step = sheet.magnitude("decode_step_time", "ms") + sheet.magnitude("tp_comm_exposed") * (
        sheet.magnitude("tp_comm_time_per_token", "ms")
        + sheet.magnitude("ep_comm_time_per_step", "ms"))
    assert sheet.magnitude("itl", "ms") == pytest.approx(step / tokens, rel=1e-12)
    osl = sheet.magnitude("osl", "token")
    assert sheet.magnitude("total_decode_time", "ms") == pytest.approx(osl * step / tokens,
                                                                       rel=1e-12)
    sheet.set("measured_tpot", "15.93 ms")  # the run's own
    mbu = sheet.magnitude("decode_bytes_per_step", "B") / (15.93e-3 * tokens) / (
        sheet.magnitude("n_gpus") * sheet.magnitude("hbm_bandwidth", "B/s"))
    assert sheet.magnitude("n_gpus") == 8
    assert sheet.magnitude("achieved_mbu", "") == pytest.approx(mbu, rel=1e-9)


def test_the_acceptance_is_held_when_no_fitted_run_speculates() -> None:
    runs = [r for r in derive_runs(None, read_runs(PLAIN).runs)
            if (r.hardware, r.engine, r.precision) == ("h200", "trtllm", "fp8")][:3]
    base = Baseline.from_spec(ScenarioSpec(sets=TRT_FLAG))
    fit = calibrate(runs, base, targets=("ttft_overhead", "spec_alpha"))
    assert "spec_alpha" not in fit.values and "ttft_overhead" in fit.values
    assert "spec_alpha: held at the sheet's 0.7: no fitted run speculates (spec_k 0), so the " \
        "runs cannot tell it" in fit.notes


def test_the_acceptance_is_fitted_on_runs_that_speculate(runs) -> None:
    mtp = [r for r in runs if (r.hardware, r.engine) == ("h200", "trtllm")][:3]
    fit = calibrate(mtp, Baseline.from_spec(ScenarioSpec(sets=TRT_FLAG)),
                    targets=("ttft_overhead", "spec_alpha"))
    assert 0.3 <= fit.values["spec_alpha"] <= 0.95
    assert not any(n.startswith("spec_alpha: held") for n in fit.notes)
    # the overlay a profile is written from shows it with its source
    line = next(x for x in overlay_text(fit).splitlines() if x.startswith("spec_alpha = "))
    assert f"{fit.values['spec_alpha']:.4g}" in line
    assert "DeepSeek-V3 technical report § 5.4.3" in line
