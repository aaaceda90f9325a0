"""A calibration profile's domain, the label every prediction carries, and its band.

The fixture profile is fitted (by its own say) on Llama-3.3-70B, dense, FP8, vLLM, ISL
1024-8192, OSL 1024, TP only; its in-domain band is measured / model ×0.9-1.2 on TPOT, and a
model outside the fit gets the leave-one-model-out error and band instead.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from perfgraph._infra import tomlfile
from perfgraph.cli.main import main
from perfgraph.errors import DeclarationError
from perfgraph.measured import bands
from perfgraph.scenario import ScenarioSpec, domain, load

PROFILE = """\
name = "fixture"

[profile]
hardware = "h200"
engine = "vllm"
runs = 20
held_out = { ttft = 0.14, tpot = 0.025, throughput = 0.01 }

[profile.domain]
models = ["llama-3.3-70b"]
architecture = ["dense"]
params = [7.05537e10, 7.05537e10]
precisions = ["fp8"]
engine = "vllm"
engine_builds = ["?"]
isl = [1024, 8192]
osl = [1024, 1024]
parallelism = ["tp"]
hardware = ["h200"]

[profile.bands]
in_domain = { ttft = [0.8, 1.5], tpot = [0.9, 1.2], throughput = [0.85, 1.1] }
model = { ttft = [0.5, 2.0], tpot = [0.6, 1.7], throughput = [0.7, 1.4] }
gpu = { ttft = [0.6, 1.6], tpot = [0.8, 1.3], throughput = [0.8, 1.3] }
precision = { ttft = [0.7, 1.3], tpot = [0.5, 1.1], throughput = [0.9, 1.8] }

[profile.errors]
model = { ttft = 0.5, tpot = 0.4, throughput = 0.3 }
gpu = { ttft = 0.3, tpot = 0.2, throughput = 0.2 }
precision = { ttft = 0.2, tpot = 0.25, throughput = 0.15 }

[profile.evidence]
model = { splits = 3, runs = 17, own = 0 }
gpu = { splits = 6, runs = 74, own = 1 }

[values]
bandwidth_efficiency = 0.9
"""

IN_DOMAIN = ("calibrated: fixture, 20 runs, in domain: dense (llama-3.3-70b), held-out error "
             "ttft 14%, tpot 2%, throughput 1%; 80% band (measured / model) "
             "ttft ×0.80–1.50, tpot ×0.90–1.20, throughput ×0.85–1.10")


@pytest.fixture
def fixture(tmp_path: Path) -> str:
    path = tmp_path / "fixture.toml"
    path.write_text(PROFILE)
    return str(path)


def scenario(fixture: str, model: str = "llama-3.3-70b", *sets: str, precision: str = "fp8"):
    return load(ScenarioSpec(model=model, hardware="h200", precision=precision,
                             calibration=fixture,
                             sets=(("tp", "2"), *(tuple(s.split("=")) for s in sets))))


# --------------------------------------------------------------------------- the class


@pytest.mark.parametrize(("model", "classes"), [
    ("llama-3.3-70b", ("dense",)), ("deepseek-r1-0528", ("moe", "mla")),
    ("gemma-3-27b", ("dense", "sliding")), ("qwen3-next-80b-a3b", ("moe", "linear")),
    ("gpt-oss-20b", ("moe", "sliding"))])
def test_the_class_comes_from_the_model_cells(model: str, classes: tuple[str, ...]) -> None:
    s = load(ScenarioSpec(model=model, hardware="h200"))
    assert domain.point_of(s.sheet, model, "fp8", "vllm").architecture == classes


def test_a_set_cell_changes_the_class_not_the_name() -> None:
    s = load(ScenarioSpec(model="llama-3.3-70b", hardware="h200",
                          sets=(("n_sliding_layers", "40"), ("sliding_window", "4096"))))
    assert domain.point_of(s.sheet, "llama-3.3-70b", "fp8", "vllm").architecture == \
        ("dense", "sliding")


def test_parallelism_kinds_count_only_what_is_used() -> None:
    s = load(ScenarioSpec(model="llama-3.3-70b", hardware="h200",
                          sets=(("tp", "1"), ("pp", "2"))))
    assert domain.point_of(s.sheet, "m", "fp8", "vllm").parallelism == ("pp",)


# --------------------------------------------------------------------------- the label


def test_in_domain_label_quotes_the_held_out_error_and_the_band(fixture: str) -> None:
    s = scenario(fixture)
    assert s.prediction == IN_DOMAIN
    itl = s.sheet.magnitude("itl")
    lo, hi = s.assessment.band("itl", itl)  # type: ignore[misc]
    assert (lo, hi) == pytest.approx((0.9 * itl, 1.2 * itl))
    assert s.assessment.band("n_layers", 80.0) is None  # not a fitted metric's cell


def test_a_moe_model_on_a_dense_profile_is_extrapolated_with_the_model_error(
        fixture: str) -> None:
    s = scenario(fixture, "deepseek-r1-0528", "tp=8")
    text = s.prediction
    assert text.startswith("calibrated: fixture, 20 runs; MoE model; profile fitted on dense "
                           "(llama-3.3-70b); 671B parameters, fitted 70.6B: extrapolated; ")
    # with what it rests on: 3 splits, none of this profile's hardware × engine
    assert ("leave-one-model-out error ttft 50%, tpot 40%, throughput 30% (3 splits, 17 "
            "held-out runs, none on fixture)") in text
    assert "held-out error ttft 14%" not in text  # never the in-domain error
    assert not s.assessment.in_domain
    assert s.assessment.bands == {"ttft": (0.5, 2.0), "tpot": (0.6, 1.7),
                                  "throughput": (0.7, 1.4)}


def test_a_model_of_the_same_architecture_under_another_name_is_in_domain(
        fixture: str) -> None:
    # models/llama-3.1-70b.toml sets the same cells to the same values as llama-3.3-70b
    s = scenario(fixture, "llama-3.1-70b")
    assert s.assessment.in_domain
    assert "in domain: dense (llama-3.3-70b); llama-3.1-70b has the architecture of " \
        "llama-3.3-70b, held-out error" in s.prediction
    # a --set that changes the architecture breaks the match
    changed = scenario(fixture, "llama-3.1-70b", "n_layers=40")
    assert [e.kind for e in changed.assessment.extrapolations] == ["model"]
    assert "model llama-3.1-70b (dense) not fitted" in changed.prediction


def test_a_profile_used_on_another_gpu_quotes_the_leave_one_gpu_out_error(
        fixture: str) -> None:
    s = load(ScenarioSpec(model="llama-3.3-70b", hardware="h100-sxm", calibration=fixture,
                          sets=(("tp", "2"),)))
    assert ("; hardware h100-sxm; fitted on h200: extrapolated; leave-one-GPU-out error "
            "ttft 30%, tpot 20%, throughput 20% (6 splits, 74 held-out runs, 1 on fixture); "
            "80% band") in s.prediction
    assert s.assessment.bands == {"ttft": (0.6, 1.6), "tpot": (0.8, 1.3),
                                  "throughput": (0.8, 1.3)}


def test_two_extrapolations_take_the_wider_band(fixture: str) -> None:
    s = scenario(fixture, "llama-3.1-8b", precision="bf16")
    kinds = [e.kind for e in s.assessment.extrapolations]
    assert kinds == ["model", "precision"]
    assert "fit-FP8-hold-FP4 error ttft 20%, tpot 25%, throughput 15%" in s.prediction
    assert s.assessment.bands == {"ttft": (0.5, 2.0), "tpot": (0.5, 1.7),
                                  "throughput": (0.7, 1.8)}


def test_an_unmeasured_extrapolation_says_so_and_has_no_band(fixture: str) -> None:
    s = scenario(fixture, "llama-3.3-70b", "pp=2")
    assert ("PP never fitted (fitted: TP): extrapolated; error not measured for this "
            "extrapolation (parallelism); no band") in s.prediction
    assert s.assessment.band("itl", 10.0) is None


def test_a_workload_outside_the_lengths_uses_the_workload_splits(fixture: str) -> None:
    s = scenario(fixture, "llama-3.3-70b", "osl=8192")
    assert "OSL 8192; fitted on 1024: extrapolated; held-out error ttft 14%" in s.prediction
    assert s.assessment.bands == {"ttft": (0.8, 1.5), "tpot": (0.9, 1.2),
                                  "throughput": (0.85, 1.1)}


def test_a_profile_without_a_domain_says_so(tmp_path: Path) -> None:
    path = tmp_path / "old.toml"
    path.write_text('[profile]\nruns = 3\nheld_out = { tpot = 0.1 }\n\n[values]\n'
                    'bandwidth_efficiency = 0.9\n')
    assert load(ScenarioSpec(calibration=str(path))).prediction == \
        "calibrated: old, 3 runs, held-out error tpot 10%; domain not recorded"


def test_domain_tables_round_trip(tmp_path: Path) -> None:
    fitted = domain.Domain(("deepseek-r1-0528",), ("moe", "mla"), (6.71e11, 6.71e11),
                           ("fp8",), "trtllm", ("1.3.0rc14", "?"), (1024, 8192),
                           (1024, 8192), ("tp", "ep"), ("h200",))
    path = tmp_path / "d.toml"
    path.write_text("[profile]\nruns = 9\n\n" + "\n".join(domain.toml_lines(fitted)) + "\n")
    table = tomlfile.read(path).data["profile"]["domain"]
    assert domain.from_table(table) == fitted


@pytest.mark.parametrize(("bad", "said"), [
    ("isl = [8192, 1024]", r"isl must be \[low, high\]"),
    ("colour = 1", "has unknown colour")])
def test_a_malformed_domain_is_one_message_naming_the_file(tmp_path: Path, bad: str,
                                                           said: str) -> None:
    text = PROFILE.replace("isl = [1024, 8192]", bad if bad.startswith("isl") else
                           "isl = [1024, 8192]\n" + bad)
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(DeclarationError, match=said) as caught:
        load(ScenarioSpec(calibration=str(path)))
    assert "bad.toml" in str(caught.value)


def test_a_band_below_zero_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(PROFILE.replace("tpot = [0.9, 1.2]", "tpot = [1.2, 0.9]"))
    with pytest.raises(DeclarationError, match=r"in_domain.tpot: expected \[low, high\]"):
        load(ScenarioSpec(calibration=str(path)))


# --------------------------------------------------------------------------- bands


def test_band_is_split_conformal_in_log_space() -> None:
    # logs of 1..5: median log 3; |log r − log 3| sorted: 0, log 4/3, log 3/2, log 5/3, log 3;
    # rank ⌈0.8 × 6⌉ = 5 → half-width log 3 → [3 / 3, 3 × 3]
    assert bands.band([1, 2, 3, 4, 5, float("nan")]) == pytest.approx((1.0, 9.0))
    # nine ratios: rank ⌈0.8 × 10⌉ = 8, the 8th smallest distance from the median (1.0):
    # distances of 2^k, k = −4…4, are |k| log 2 → 0,1,1,2,2,3,3,4,4 → the 8th: 4 log 2
    nine = [2.0 ** k for k in range(-4, 5)]
    assert bands.band(nine) == pytest.approx((1 / 16, 16))
    assert bands.band([1.0]) is None
    # the plain p10–p90 (for comparison): 1 + 0.1 × 4 = 1.4 and 1 + 0.9 × 4 = 4.6
    assert bands.quantile_band([1, 2, 3, 4, 5]) == pytest.approx((1.4, 4.6))
    assert bands.widest((0.9, 1.1), None, (1.0, 1.3)) == (0.9, 1.3)
    assert bands.widest(None) is None
    # |1/r − 1| of 0.5, 1.0, 2.0: 1, 0, 0.5 → median 0.5
    assert bands.median_error([0.5, 1.0, 2.0]) == 0.5


def test_coverage_holds_each_group_against_the_others() -> None:
    # group 0 against the p10–p90 of 1 and 2 pooled: (1.0, 1.1, 1.2, 1.3) → 1.03, 1.27
    groups = [[1.1, 1.5], [1.0, 1.1], [1.2, 1.3]]
    lo, hi = np.quantile([1.0, 1.1, 1.2, 1.3], (0.1, 0.9))
    assert (lo, hi) == pytest.approx((1.03, 1.27))
    # group 0: 1.1 in, 1.5 out; group 1 against (1.1, 1.5, 1.2, 1.3) → (1.13, 1.44): 0 in;
    # group 2 against (1.1, 1.5, 1.0, 1.1) → (1.03, 1.38): both in
    assert bands.coverage(groups, bands.pooled_runs(bands.quantile_band)) == (3, 6)
    # the conformal band of 4 ratios reaches their farthest from the median (rank
    # ⌈0.8 × 5⌉ = 4). Group 0 against 1.0…1.3: median √(1.1 × 1.2), 1.0 the farthest →
    # [1.0, 1.32]: 1.1 in, 1.5 out. Group 1 against 1.1, 1.5, 1.2, 1.3: median √(1.2 × 1.3),
    # 1.5 the farthest → [1.56 / 1.5, 1.5] = [1.04, 1.5]: 1.1 in, 1.0 out. Group 2 against
    # 1.1, 1.5, 1.0, 1.1: median 1.1, 1.5 the farthest → [1.21 / 1.5, 1.5]: both in.
    assert bands.band([1.0, 1.1, 1.2, 1.3]) == pytest.approx((1.0, 1.32))
    assert bands.band([1.1, 1.5, 1.2, 1.3]) == pytest.approx((1.56 / 1.5, 1.5))
    assert bands.coverage(groups, bands.pooled_runs(bands.band)) == (4, 6)


def test_splice_replaces_the_profile_tables_and_keeps_the_values() -> None:
    old = PROFILE
    new = bands.splice(old, ["[profile.domain]", 'models = ["x"]'])
    assert "[profile.bands]" not in new and 'models = ["x"]' in new
    assert new.split("[values]")[1] == old.split("[values]")[1]
    assert new.split("[profile.domain]")[0] == old.split("[profile.domain]")[0]


# --------------------------------------------------------------------------- every output


def test_eval_table_and_json_carry_the_label_and_the_band(fixture: str, capsys) -> None:
    args = ["eval", "--model", "llama-3.3-70b", "--hardware", "h200", "--calibration", fixture,
            "--set", "tp=2", "--only", "itl,n_layers"]
    assert main(args) == 0
    table = capsys.readouterr().out
    itl = scenario(fixture).sheet.magnitude("itl")
    assert table.splitlines()[0].endswith(IN_DOMAIN)
    assert f"(80% band {0.9 * itl:.4g}–{1.2 * itl:.4g})" in table
    assert main([*args, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["quantities"]["itl"]["band"] == pytest.approx([0.9 * itl, 1.2 * itl])
    assert "band" not in doc["quantities"]["n_layers"]
    assert doc["prediction"] == IN_DOMAIN
    assert doc["calibration"]["in_domain"] is True and doc["calibration"]["extrapolated"] == []


def test_eval_json_of_an_extrapolation_names_its_kind(fixture: str, capsys) -> None:
    assert main(["eval", "--model", "deepseek-r1-0528", "--hardware", "h200", "--calibration",
                 fixture, "--set", "tp=8", "--only", "itl", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["calibration"]["in_domain"] is False
    assert [e["kind"] for e in doc["calibration"]["extrapolated"]] == ["model"]
    itl = doc["quantities"]["itl"]["value"]
    assert doc["quantities"]["itl"]["band"] == pytest.approx([0.6 * itl, 1.7 * itl])


def test_explain_labels_the_cell_and_gives_its_band(fixture: str, capsys) -> None:
    args = ["explain", "ttft", "--model", "llama-3.3-70b", "--hardware", "h200",
            "--calibration", fixture, "--set", "tp=2"]
    assert main(args) == 0
    text = capsys.readouterr().out
    ttft = scenario(fixture).sheet.magnitude("ttft")
    assert f"  prediction   {IN_DOMAIN}" in text
    assert f"  80% band     {0.8 * ttft:.4g}–{1.5 * ttft:.4g} ms" in text
    assert main([*args, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["prediction"] == IN_DOMAIN
    assert doc["band"] == pytest.approx([0.8 * ttft, 1.5 * ttft])


def test_explain_without_calibration_says_roofline(capsys) -> None:
    assert main(["explain", "ttft"]) == 0
    assert "  prediction   roofline" in capsys.readouterr().out


def test_compare_notes_each_run_with_its_own_verdict(fixture: str) -> None:
    from perfgraph.measured.comparison import compare_runs
    from perfgraph.measured.reading import read_measured
    from perfgraph.measured.setup import Baseline

    data = Path(__file__).parent / "data" / "measured" / "inferencemax_llama70b_fp8"
    runs = read_measured([str(data / "1k1k" / "H200.json")]).runs[:2]
    base = Baseline.from_spec(ScenarioSpec(hardware="h200", calibration=fixture))
    assert base.reference == ("calibrated: fixture, 20 runs, fitted on dense (llama-3.3-70b), "
                              "in-domain held-out error ttft 14%, tpot 2%, throughput 1%")
    for c in compare_runs(runs, base, levers=False):
        said = [n for n in c.setup.notes if n.startswith("predicted by ")]
        assert len(said) == 1 and "in domain: dense (llama-3.3-70b)" in said[0]


def test_plan_names_what_its_best_plan_is(fixture: str, capsys) -> None:
    args = ["plan", "--model", "llama-3.3-70b", "--hardware", "h200", "--calibration",
            fixture, "--slo", "itl=100ms", "--rate", "1 request/s", "--search",
            "hardware=h200", "--search", "precision=fp8", "--search", "tp=2",
            "--search", "pp=1", "--search", "disaggregated=0", "--search", "concurrency=8"]
    assert main([*args, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["prediction"] == IN_DOMAIN
    assert main(args) == 0
    assert f"the best plan's numbers: {IN_DOMAIN}" in capsys.readouterr().out


def test_simulate_titles_and_json_carry_the_label(fixture: str, capsys) -> None:
    args = ["simulate", "--model", "deepseek-r1-0528", "--hardware", "h200", "--calibration",
            fixture, "--set", "tp=8", "--users", "2", "--requests", "4", "--set", "isl=128",
            "--set", "osl=16"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "MoE model; profile fitted on dense (llama-3.3-70b)" in out.splitlines()[0]
    assert main([*args, "--format", "json"]) == 0
    said = json.loads(capsys.readouterr().out)["prediction"]
    assert "extrapolated; leave-one-model-out error" in said


def test_the_dashboard_headline_shows_the_label(fixture: str) -> None:
    from perfgraph.tui.session import Session
    from perfgraph.tui.text import headline

    assert "PP never fitted" in headline(Session(scenario(fixture, "llama-3.3-70b",
                                                          "pp=2"))).plain
    assert "calibrated" not in headline(Session(load(ScenarioSpec()))).plain


def test_plot_titles_carry_the_label(fixture: str, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from tests.test_plot import svg_text

    out = tmp_path / "roofline.svg"
    assert main(["plot", "roofline", "--model", "deepseek-r1-0528", "--hardware", "h200",
                 "--calibration", fixture, "--set", "tp=8", "--out", str(out)]) == 0
    assert "MoE model; profile fitted on dense" in svg_text(out).replace("\n", " ")
