"""Shipped calibration profiles, ``--calibration auto`` and the label on every prediction."""

from __future__ import annotations

import json

import pytest

from perfgraph._infra import tomlfile
from perfgraph.cli.main import main
from perfgraph.measured.calibration import TARGETS
from perfgraph.scenario import ScenarioSpec, load, profiles
from perfgraph.scenario.catalog import catalog_names
from perfgraph.scenario.profiles import PROFILES_DIR, find_profile

SHIPPED = sorted(PROFILES_DIR.glob("*.toml"))


def test_there_are_profiles_for_h100_and_h200_vllm() -> None:
    assert find_profile("h100-sxm", "vllm") == PROFILES_DIR / "h100-sxm.vllm.toml"
    assert find_profile("h200") == PROFILES_DIR / "h200.vllm.toml"  # vLLM by default
    assert find_profile("l40s", "vllm") is None


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_each_profile_states_what_it_was_fitted_on_and_stays_in_bounds(path) -> None:
    data = tomlfile.read(path).data
    profile = data["profile"]
    assert profile["hardware"] in catalog_names("hardware")
    assert path.name == f"{profile['hardware']}.{profile['engine']}.toml"
    # at least twice as many measured values (TTFT, TPOT, throughput a run) as targets: the
    # InferenceX profiles have 6-12 runs a hardware × engine, InferenceMAX's vLLM ones 20-30
    # (a target held at a value the notes name, not fitted, is not counted)
    held = {t.cell for t in TARGETS if f"# Note: {t.cell}: held at" in path.read_text()}
    fitted = {t.cell for t in TARGETS} & set(data["values"]) - held
    assert 3 * profile["runs"] >= 2 * len(fitted)
    assert set(profile["held_out"]) == {"ttft", "tpot", "throughput"}
    sheet = load(ScenarioSpec(hardware=profile["hardware"], calibration=str(path))).sheet
    for t in TARGETS:
        if t.cell in data["values"]:
            assert t.low <= sheet.magnitude(t.cell) <= t.high, t.cell


def test_auto_labels_every_prediction(capsys) -> None:
    auto = load(ScenarioSpec(calibration="auto"))
    profile = tomlfile.read(PROFILES_DIR / "h100-sxm.vllm.toml").data["profile"]
    held, widen = profile["held_out"], profile["widen"]
    # the band as measured, widened for the fitted values the profile left on a bound
    band = {m: profiles.widen(tuple(b), widen["in_domain"][m])
            for m, b in profile["bands"]["in_domain"].items()}
    wider = {m: f for m, f in widen["in_domain"].items() if f > 1}
    said = (f"; band widened up to ×{max(wider.values()):.2f} in log width "
            f"({', '.join(sorted(wider))}): {', '.join(widen['on_bound'])} fitted on a bound"
            if wider else "")
    # the default model, Llama-3.1-70B, has the architecture of the Llama-3.3-70B fitted
    assert auto.prediction == (
        "calibrated: h100-sxm.vllm, 30 runs, in domain: dense (llama-3.3-70b); llama-3.1-70b "
        "has the architecture of llama-3.3-70b, held-out error "
        f"ttft {100 * held['ttft']:.0f}%, tpot {100 * held['tpot']:.0f}%, throughput "
        f"{100 * held['throughput']:.0f}%; 80% band (measured / model) " + ", ".join(
            f"{m} ×{band[m][0]:.2f}–{band[m][1]:.2f}" for m in ("ttft", "tpot", "throughput"))
        + said)
    assert load(ScenarioSpec()).prediction == "roofline"
    assert load(ScenarioSpec(hardware="l40s", calibration="auto")).prediction == "roofline"
    assert main(["eval", "--calibration", "auto", "--only", "itl"]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith(" · " + auto.prediction)
    assert main(["eval", "--only", "itl", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["prediction"] == "roofline"


def test_a_bad_profile_table_names_the_file_and_key(tmp_path, capsys) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[profile]\nhardware = "h100-sxm"\nrunz = 3\n\n[values]\n'
                    'step_overhead = "1 ms"\n', encoding="utf-8")
    assert main(["eval", "--calibration", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:3: runz: unknown key 'runz' in [profile]" in err


def test_compare_holds_each_run_against_the_roofline_and_the_prediction() -> None:
    from pathlib import Path

    from perfgraph.measured.adapters import read_runs
    from perfgraph.measured.comparison import compare_runs
    from perfgraph.measured.setup import Baseline

    runs = read_runs(Path(__file__).parent / "data" / "measured" / "inferencemax_llama70b_fp8"
                     / "1k1k" / "H100.json").runs
    plain = compare_runs(runs, Baseline.from_spec(ScenarioSpec()), levers=False)
    calibrated = compare_runs(runs, Baseline.from_spec(ScenarioSpec(calibration="auto")),
                              levers=False)
    for a, b in zip(plain, calibrated, strict=True):
        for metric in ("ttft", "tpot", "throughput"):
            roof, pred = a.metric(metric), b.metric(metric)
            assert pred.modelled == pytest.approx(roof.modelled)  # the ceiling, both times
            assert roof.predicted is None and pred.predicted is not None
            assert pred.vs_predicted == pytest.approx(pred.measured / pred.predicted - 1)
            if metric == "throughput":
                assert pred.predicted < pred.modelled  # a prediction sits under the ceiling
            else:
                assert pred.predicted > pred.modelled


def test_a_run_well_below_its_prediction_names_the_term_that_grew() -> None:
    import dataclasses
    from pathlib import Path

    from perfgraph.measured.adapters import read_runs
    from perfgraph.measured.comparison import compare_runs
    from perfgraph.measured.findings import PREDICTED_TPOT_FACTOR, STEP_TERMS
    from perfgraph.measured.setup import Baseline

    measured = read_runs(Path(__file__).parent / "data" / "measured"
                         / "inferencemax_llama70b_fp8" / "8k1k" / "H100.json").runs
    # each run made 1.4× slower per token than it measured: well below the profile's
    # prediction (fitted on these runs, median TPOT error ~5%), whatever the fit's details
    runs = [dataclasses.replace(r, metrics={**r.metrics, "tpot": dataclasses.replace(
        r.metrics["tpot"], value=1.4 * r.metrics["tpot"].value)}) for r in measured]
    compared = compare_runs(runs, Baseline.from_spec(ScenarioSpec(calibration="auto")),
                            levers=False)
    slow = [(c, f) for c in compared for f in c.findings if f.id == "slower-than-predicted"]
    assert len(slow) >= len(runs) // 2
    labels = [label for label, _ in STEP_TERMS.values()]
    for c, f in slow:
        assert 1 + c.metric("tpot").vs_predicted >= PREDICTED_TPOT_FACTOR
        assert any(label in f.text for label in labels)
    plain = compare_runs(runs, Baseline.from_spec(ScenarioSpec()), levers=False)
    assert not any(f.id == "slower-than-predicted" for c in plain for f in c.findings)
