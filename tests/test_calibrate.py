"""perfgraph calibrate: efficiency inputs fitted to measured runs, and the --calibration layer.

The fit is checked two ways: on runs the model itself generated with known efficiencies (it
must recover them), and on the real InferenceMAX H100 rows (fit on 1k1k, hold out 8k1k): the
fit must beat the bare roofline on the runs it saw, and its held-out error is reported.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import tomlkit

from perfgraph.cli.main import main
from perfgraph.errors import InputError
from perfgraph.measured.adapters import Metric, read_runs
from perfgraph.measured.calibration import (
    FIT_METRICS,
    STRUCTURE,
    TARGETS,
    calibrate,
)
from perfgraph.measured.comparison import config_columns, like_for_like
from perfgraph.measured.derived import derive_runs
from perfgraph.measured.setup import Baseline, setup_run
from perfgraph.output.profile_overlay import overlay_text
from perfgraph.scenario.loading import ScenarioSpec, load

DATA = Path(__file__).parent / "data" / "measured"
IMAX = DATA / "inferencemax_llama70b_fp8"
H100_1K, H100_8K = IMAX / "1k1k" / "H100.json", IMAX / "8k1k" / "H100.json"


@pytest.fixture(scope="module")
def fit():
    base = Baseline.from_spec(ScenarioSpec())
    return calibrate(read_runs(H100_1K).runs, base, holdout=read_runs(H100_8K).runs)


def test_the_targets_are_inputs_of_the_sheets():
    """Inputs, or defaults that follow an input until fitted (prefill_compute_efficiency is
    compute_efficiency, tp_comm_exposed follows comm_overlap)."""
    sheet = load().sheet
    for t in TARGETS:
        decl = sheet.declaration(t.cell)
        assert decl.is_input or all(sheet.declaration(p).is_input
                                    for p in sheet.precedents(t.cell)), t.cell
        assert t.low <= sheet.magnitude(t.cell) <= t.high  # the roofline defaults lie inside


def test_fit_on_1k1k_beats_the_roofline_and_reports_the_held_out_8k1k_error(fit):
    assert len(fit.fitted_runs) == 15 and len(fit.held_out_runs) == 15
    for t in TARGETS:
        if t.cell in fit.values:
            assert t.low <= fit.values[t.cell] <= t.high
    # every run is TP >= 2 on vLLM, whose all-reduces are never overlapped: the exposure is
    # held at 1 (engines/vllm.toml [realistic]), not fitted; and vLLM returns a step's tokens
    # as it ends, so no first token waits whole steps beyond its own
    assert fit.values["tp_comm_exposed"] == 1
    assert fit.held == {"tp_comm_exposed": 1.0, "ttft_wait_steps": 0.0}
    assert fit.engine == "vllm"
    assert "tp_comm_exposed: held at 1, as engines/vllm.toml documents (not fitted)" in fit.notes
    # a 1k prompt rides the decode steps (ttft_prefill: the chunk steps, one weight read for
    # the decodes and the chunk), and vLLM runs a step as one batch, the chunk's GEMM rows at
    # the step's compute (engines/vllm.toml chunk_gemm_at_prefill = false), so decode compute
    # and the fixed TTFT cost settle inside their bounds; only the link sits on one (the
    # all-reduces take the one-way link's time), and no prompt-only step fixes prefill compute
    assert 0.35 < fit.values["compute_efficiency"] < 0.95
    assert 1 < fit.values["ttft_overhead"] < 50  # ms
    assert [n for n in fit.notes if "bound" in n] == ["link_efficiency: on its upper bound (1)"]
    assert "prefill_compute_efficiency: these runs do not determine it (left as the sheet has " \
           "it)" in fit.notes
    assert fit.workloads == ("1024/1024",)
    assert [e.metric for e in fit.fitted] == list(FIT_METRICS)
    for e in fit.fitted:
        assert e.runs == 15 and e.calibrated < e.roofline
        assert e.calibrated <= e.calibrated_p90
    fitted = {e.metric: e.calibrated for e in fit.fitted}
    assert fitted["tpot"] < 0.05 and fitted["throughput"] < 0.05 and fitted["ttft"] < 0.1
    held = {e.metric: e for e in fit.held_out}
    assert set(held) == set(FIT_METRICS) and all(e.runs == 15 for e in held.values())
    assert all(e.calibrated < e.roofline for e in held.values())
    # the old model (one efficiency pair and a step overhead) held out at 23.7% TPOT; the
    # prompt counted apart from its chunk steps (the weights read twice) at 22% TTFT, 6% TPOT
    assert held["tpot"].calibrated < 0.05 and held["throughput"].calibrated < 0.1
    assert held["ttft"].calibrated < 0.2
    # each run's error is kept, so several fits' errors can be pooled: its median and p90
    # are the ones stated
    for e in (*fit.fitted, *fit.held_out):
        assert len(e.errors) == e.runs
        assert np.median(e.errors) == pytest.approx(e.calibrated)
        assert np.quantile(e.errors, 0.9) == pytest.approx(e.calibrated_p90)


def _synthetic_runs(truth: dict[str, float]):
    """The 1k1k H100 rows with TTFT, TPOT and TPUT per GPU replaced by what the model says
    at the given efficiencies."""
    base = Baseline.from_spec(ScenarioSpec())
    runs = derive_runs(None, read_runs(H100_1K).runs)  # as compare models them
    setups = [setup_run(r, base) for r in runs]
    sheet = load(setups[0].spec(base.spec)).sheet
    n = len(runs)
    columns = {**config_columns(setups), **{k: np.full(n, v) for k, v in truth.items()}}
    model = like_for_like(sheet, sheet.evaluate_columns(columns, n),
                          ["throughput_per_gpu"] * n)
    out = []
    for i, run in enumerate(runs):
        metrics = dict(run.metrics)
        for key, metric in (("ttft", "ttft"), ("tpot", "tpot"),
                            ("throughput_per_gpu", "throughput")):
            old = metrics[key]
            metrics[key] = Metric(float(model[metric][i]), old.unit, old.statistic, "model")
        out.append(dataclasses.replace(run, metrics=metrics))
    return base, out


def test_the_fit_recovers_efficiencies_the_model_generated():
    truth = {"bandwidth_efficiency": 0.8, "attention_bandwidth_efficiency": 0.65,
             "compute_efficiency": 0.5, "prefill_compute_efficiency": 0.6,
             "step_host_time": 3.0, "seq_step_overhead": 50.0, "ttft_overhead": 40.0,
             "tp_comm_exposed": 1.0, "link_efficiency": 0.7}  # exposure: vLLM's, held
    base, runs = _synthetic_runs({**{k: float(v) for k, v in STRUCTURE.items()}, **truth})
    fit = calibrate(runs, base)
    for cell in ("bandwidth_efficiency", "ttft_overhead"):
        assert fit.values[cell] == pytest.approx(truth[cell], rel=0.05), cell
    # one model (Llama 70B at TP 2: 80 layers × 12 kernels) fixes the step's fixed cost, not
    # how it splits between the host and the kernels: step_host_time + 960 × kernel_step_time
    step = fit.values["step_host_time"] + 960 * fit.values["kernel_step_time"] / 1000
    assert step == pytest.approx(3.0, rel=0.05)
    assert all(e.calibrated < 0.01 for e in fit.fitted)
    assert fit.residual < 0.01


def test_queued_ttfts_are_left_out_of_the_fit():
    fit = calibrate(read_runs(H100_8K).runs, Baseline.from_spec(ScenarioSpec()))
    assert [e.rsplit("#", 1)[1] for e in fit.excluded] == ["3: requests queued",
                                                          "4: requests queued"]


def test_nothing_to_fit_is_a_clear_error():
    sglang = read_runs(DATA / "sglang_h200_datacrunch" / "llama_3_3_70b_online_output.jsonl")
    with pytest.raises(InputError, match="no run to fit"):
        calibrate(sglang.runs, Baseline.from_spec(ScenarioSpec()))


def test_the_overlay_reads_back_through_calibration(fit, tmp_path):
    text = overlay_text(fit, "perfgraph eval --calibration x.toml")
    assert "1k1k/H100.json" in text and "8k1k/H100.json" in text
    assert "held-out runs: ttft" in text
    values = tomlkit.parse(text)["values"]
    assert set(values) == set(fit.values) | set(STRUCTURE)
    assert all(values[cell] is True for cell in STRUCTURE)
    path = tmp_path / "h100-sxm.vllm.toml"
    path.write_text(text, encoding="utf-8")
    sheet = load(ScenarioSpec(hardware="h100-sxm", calibration=str(path))).sheet
    for cell, value in fit.values.items():
        assert sheet.magnitude(cell) == pytest.approx(value, rel=1e-3)
    # the calibration is a layer under --set
    pinned = load(ScenarioSpec(calibration=str(path), sets=(("step_overhead", "1 ms"),)))
    assert pinned.sheet.magnitude("step_overhead") == 1.0


def test_the_overlay_records_the_domain_of_its_fitted_runs(fit):
    # the 1k/1k H100 file: Llama-3.3-70B FP8 (dense, 70.55e9 parameters), vLLM, TP 2/4/8,
    # ISL = OSL = 1024 as configured
    profile = tomlkit.parse(overlay_text(fit))["profile"]["domain"]
    assert profile["models"] == ["llama-3.3-70b"] and profile["architecture"] == ["dense"]
    assert profile["params"] == [70_553_706_496, 70_553_706_496]
    assert profile["precisions"] == ["fp8"] and profile["engine"] == "vllm"
    assert profile["isl"] == [1024, 1024] and profile["osl"] == [1024, 1024]
    assert profile["parallelism"] == ["tp"] and profile["engine_builds"] == ["?"]
    assert profile["hardware"] == ["h100-sxm"]
    # measured / model per held-out run, beside |error|
    tpot = next(e for e in fit.held_out if e.metric == "tpot")
    assert [abs(1 / r - 1) for r in tpot.ratios] == pytest.approx(list(tpot.errors))


def test_cli_calibrate_writes_the_overlay_and_prints_the_errors(tmp_path, capsys):
    out = tmp_path / "h100-sxm.vllm.toml"
    assert main(["calibrate", str(H100_1K), "--holdout", str(H100_8K), "--hardware",
                 "h100-sxm", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "fitted on 15 runs, held out 15" in printed
    assert "held out  throughput" in printed and f"wrote {out}" in printed
    assert "--calibration" in out.read_text(encoding="utf-8")
    assert main(["eval", "--calibration", str(out), "--only", "step_overhead"]) == 0
    assert "step_overhead" in capsys.readouterr().out


def test_cli_calibrate_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "none.toml"
    assert main(["calibrate", str(DATA / "bad"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no run to fit" in err and "Traceback" not in err and not out.exists()
    missing = tmp_path / "no" / "such" / "dir.toml"
    assert main(["calibrate", str(H100_1K), "--out", str(missing)]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_cli_calibrate_reports_bad_runs_one_line_each_and_fits_the_rest(tmp_path, capsys):
    out = tmp_path / "fit.toml"
    assert main(["calibrate", str(DATA / "bad"), str(H100_1K), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "fitted on 15 runs" in captured.out and out.exists()
    err = captured.err.splitlines()
    assert "Traceback" not in captured.err
    assert all(line.startswith("perfgraph: ") for line in err)
    assert any("vllm_fractional_completed.json #0 [format: vllm]: 'completed' is 0.5" in line
               for line in err)
    assert any("sglang_zero_duration.jsonl #1" in line and "'duration' is 0 s" in line
               for line in err)
    assert any("vllm_huge_integer.json #0" in line and "too large" in line for line in err)
    assert any("not used" in line and "pass --set isl=N" in line for line in err)


@pytest.mark.parametrize("body, message", [
    ("[values]\nno_such_cell = 1\n", "no cell named 'no_such_cell'"),
    ("[valuez]\nstep_overhead = 1\n", "unknown key 'valuez'"),
    ("[values]\nstep_overhead = \"fast\"\n", "step_overhead"),
])
def test_bad_calibration_files_name_file_and_line(tmp_path, capsys, body, message):
    path = tmp_path / "bad.toml"
    path.write_text(body, encoding="utf-8")
    assert main(["eval", "--calibration", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and str(path) in err and "Traceback" not in err
    assert main(["eval", "--calibration", str(tmp_path / "nope.toml")]) == 2
    assert "no such calibration file" in capsys.readouterr().err


def test_per_run_gives_each_held_out_runs_model_and_measured(fit):
    """per_run: each held-out run's model / measured under the fit's values, the same ratios
    the held-out error is the median of."""
    from perfgraph.measured.calibration import per_run

    got = per_run(Baseline.from_spec(ScenarioSpec()), fit.held_out_runs, fit.values)
    assert len(got) == 15
    tpot = next(e for e in fit.held_out if e.metric == "tpot")
    ratios = sorted(measured / model for _, m in got for k, (model, measured) in m.items()
                    if k == "tpot")
    assert ratios == pytest.approx(sorted(tpot.ratios))
    c, m = got[0]
    assert m["tpot"][1] == c.metric("tpot").measured


def test_a_joint_fit_takes_each_part_with_its_own_baseline():
    """calibrate(also=…): runs served with other options are fitted together with the main
    ones, each part modelled on its own baseline (here the 8k/1k runs with a KV fraction
    that holds far fewer sequences: their queueing, and so the fit, changes)."""
    base = Baseline.from_spec(ScenarioSpec())
    other = Baseline.from_spec(ScenarioSpec(sets=(("kv_memory_fraction", "0.2"),)))
    runs_1k, runs_8k = read_runs(H100_1K).runs, read_runs(H100_8K).runs
    same = calibrate(runs_1k, base, also=[(runs_8k, base)], targets=["bandwidth_efficiency"])
    joint = calibrate(runs_1k, base, also=[(runs_8k, other)], targets=["bandwidth_efficiency"])
    assert len(joint.fitted_runs) == 30 and joint.workloads == ("1024/1024", "8192/1024")
    assert [e.runs for e in joint.fitted] == [30, 30, 30]
    assert joint.residual != pytest.approx(same.residual, rel=1e-3)
