"""The 80% band in every machine-readable output of a calibrated prediction: eval's CSV and
Parquet, and a sweep's CSV and Parquet (``itl_p10``, ``itl_p90`` beside ``itl``).

The fixture profile (tests/test_profile_domain.py) is fitted on Llama-3.3-70B; its in-domain
TPOT band is measured / model ×0.9–1.2 and TTFT ×0.8–1.5, and a model it never saw takes the
leave-one-model-out band, TPOT ×0.6–1.7. So each band's ends are the value times those.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import polars as pl
import pytest

from perfgraph.cli.main import main
from perfgraph.measured import bands
from perfgraph.scenario import profiles
from tests.test_profile_domain import PROFILE, scenario


@pytest.fixture
def fixture(tmp_path: Path) -> str:
    path = tmp_path / "fixture.toml"
    path.write_text(PROFILE)
    return str(path)


def _eval(fixture: str, *more: str) -> list[str]:
    return ["eval", "--model", "llama-3.3-70b", "--hardware", "h200", "--calibration",
            fixture, "--set", "tp=2", *more]


def test_band_columns_are_named_after_the_cell() -> None:
    assert profiles.band_columns("itl") == ("itl_p10", "itl_p90")
    assert profiles.banded(["n_layers", "ttft", "itl", "throughput_per_gpu"]) == \
        ["ttft", "itl", "throughput_per_gpu"]


def test_eval_csv_has_p10_and_p90_beside_the_calibrated_value(fixture: str, capsys) -> None:
    assert main(_eval(fixture, "--only", "itl,ttft,n_layers", "--format", "csv")) == 0
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    itl, ttft = (scenario(fixture).sheet.magnitude(c) for c in ("itl", "ttft"))
    assert float(rows["itl"]["value"]) == pytest.approx(itl)
    assert (float(rows["itl"]["p10"]), float(rows["itl"]["p90"])) == \
        pytest.approx((0.9 * itl, 1.2 * itl))
    assert (float(rows["ttft"]["p10"]), float(rows["ttft"]["p90"])) == \
        pytest.approx((0.8 * ttft, 1.5 * ttft))
    assert rows["n_layers"]["p10"] == rows["n_layers"]["p90"] == ""


def test_roofline_csv_keeps_the_columns_empty(capsys) -> None:
    assert main(["eval", "--only", "itl", "--format", "csv"]) == 0
    (row,) = csv.DictReader(io.StringIO(capsys.readouterr().out))
    assert row["p10"] == row["p90"] == ""


def test_eval_parquet_has_band_columns_in_the_cells_unit(fixture: str, tmp_path: Path) -> None:
    out = tmp_path / "one.parquet"
    assert main(_eval(fixture, "--only", "itl,n_layers", "--out", str(out))) == 0
    frame = pl.read_parquet(out)
    itl = scenario(fixture).sheet.magnitude("itl")
    assert frame["itl_p10"][0] == pytest.approx(0.9 * itl)
    assert frame["itl_p90"][0] == pytest.approx(1.2 * itl)
    assert "n_layers_p10" not in frame.columns
    units = pl.read_parquet_metadata(out)
    assert '"itl_p90": "ms"' in units["perfgraph.units"]


def test_roofline_parquet_has_no_band_columns(tmp_path: Path) -> None:
    out = tmp_path / "one.parquet"
    assert main(["eval", "--only", "itl", "--out", str(out)]) == 0
    assert pl.read_parquet(out).columns[-1] == "itl"


def _sweep(fixture: str, *more: str) -> list[str]:
    return ["sweep", "--hardware", "h200", "--calibration", fixture, "--set", "tp=2",
            "--axis", "model=llama-3.3-70b,llama-3.1-8b", "--only", "itl", *more]


def test_sweep_rows_each_take_the_band_of_their_own_point(fixture: str, capsys) -> None:
    """Llama-3.3-70B is in the fixture's domain (×0.9–1.2); Llama-3.1-8B is a model it never
    saw (×0.6–1.7), both on the same sweep."""
    assert main(_sweep(fixture)) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["model"] for r in rows] == ["llama-3.3-70b", "llama-3.1-8b"]
    for row, (lo, hi) in zip(rows, ((0.9, 1.2), (0.6, 1.7)), strict=True):
        itl = float(row["itl"])
        assert (float(row["itl_p10"]), float(row["itl_p90"])) == pytest.approx((lo * itl, hi * itl))


def test_sweep_parquet_bands_follow_a_cell_axis_out_of_the_domain(fixture: str,
                                                                  tmp_path: Path) -> None:
    """PP 2 is a parallelism the fixture never fitted and has no band for: NaN there."""
    out = tmp_path / "sweep.parquet"
    assert main(["sweep", "--model", "llama-3.3-70b", "--hardware", "h200", "--calibration",
                 fixture, "--set", "tp=2", "--axis", "pp=1,2", "--only", "itl",
                 "--out", str(out)]) == 0
    frame = pl.read_parquet(out)
    assert frame["itl_p10"][0] == pytest.approx(0.9 * frame["itl"][0])
    assert frame["itl_p90"][0] == pytest.approx(1.2 * frame["itl"][0])
    assert math.isnan(frame["itl_p10"][1]) and math.isnan(frame["itl_p90"][1])


def test_an_uncalibrated_sweep_has_no_band_columns(capsys) -> None:
    assert main(["sweep", "--axis", "tp=1,2", "--only", "itl"]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith(",itl")


# --------------------------------------------------------------------------- the band itself


def test_split_band_weighs_each_split_as_one_unit() -> None:
    """Ten runs of one split at 1.0, then splits of one run at 3, 2 and 1. Pooled, the runs
    put the conformal rank ⌈0.8 × 14⌉ = 12 of 13 scores (11 zeros, ln 2, ln 3) about the
    median 1 at ln 2: ×0.5–2. As four splits of weight 1 each (the ten runs 0.1 each), the
    high end is the split at 3 (2 and under hold 0.75 of the weight, under 0.9); the low end
    1 (the split of ten and the run at 1 hold half the weight there)."""
    groups = [[1.0] * 10, [3.0], [2.0], [1.0]]
    assert bands.pooled_runs(bands.band)(groups) == pytest.approx((0.5, 2.0))
    assert bands.split_band(groups) == pytest.approx((1.0, 3.0))
    # ten splits at 1 … 10, one run each: a tenth of the weight outside each end, 1 below,
    # 10 above: ×2–9
    assert bands.split_band([[float(x)] for x in range(1, 11)]) == pytest.approx((2.0, 9.0))
    assert bands.split_band([[1.0, 2.0]]) is None  # one split: nothing to exchange


def test_bounds_are_read_from_a_fits_notes() -> None:
    notes = ["compute_efficiency: on its lower bound (0.3)",
             "bandwidth_efficiency: on its upper bound (1)",
             "prefill_compute_efficiency: these runs do not determine it"]
    assert bands.on_bound(notes) == ("compute_efficiency (lower)", "bandwidth_efficiency (upper)")


def test_a_bound_widens_as_far_as_the_splits_that_hit_it_need() -> None:
    """Four splits, one run each: 2 and 0.5 hit x's lower bound, the two at 1 none. Held
    against the other three, the split at 2 meets the band ×0.5–1 (three splits of one run:
    the 10% and 90% points are the extremes), centre √0.5, log half-width ln 2 / 2; 2 lies
    ln(2 / √0.5) = 1.5 ln 2 from the centre: three half-widths. The split at 0.5, against
    ×1–2, the same. So the factor is 3. A bound no two splits share, or none: 1."""
    groups = [(("x (lower)",), [2.0]), (("x (lower)",), [0.5]), ((), [1.0]), ((), [1.0])]
    assert bands.split_band([[0.5], [1.0], [1.0]]) == pytest.approx((0.5, 1.0))
    assert bands.widening(("x (lower)",), groups) == pytest.approx(3.0)
    assert bands.widening(("y (upper)",), groups) == 1.0
    assert bands.widening((), groups) == 1.0
    # splits already inside the band of the others need no widening
    calm = [(("x (lower)",), [1.0]), (("x (lower)",), [1.0]), ((), [0.5]), ((), [2.0])]
    assert bands.widening(("x (lower)",), calm) == 1.0


WIDENED = PROFILE.replace("[values]", """[profile.widen]
on_bound = ["compute_efficiency (lower)"]
in_domain = { ttft = 1.0, tpot = 2.0, throughput = 1.0 }

[values]""")


def test_a_profile_with_a_value_on_its_bound_carries_the_wider_band(tmp_path: Path,
                                                                     capsys) -> None:
    """TPOT ×0.9–1.2 widened ×2 in log width about √(0.9 × 1.2): ×0.81/√1.08–1.44/√1.08,
    in the label, in the band and in every output."""
    path = tmp_path / "widened.toml"
    path.write_text(WIDENED)
    s = scenario(str(path))
    itl = s.sheet.magnitude("itl")
    lo, hi = 0.81 / 1.08 ** 0.5, 1.44 / 1.08 ** 0.5
    assert s.assessment.band("itl", itl) == pytest.approx((lo * itl, hi * itl))
    assert s.assessment.band("ttft", 10.0) == pytest.approx((8.0, 15.0))  # factor 1
    assert f"tpot ×{lo:.2f}–{hi:.2f}" in s.prediction
    assert s.prediction.endswith("; band widened up to ×2.00 in log width (tpot): "
                                 "compute_efficiency (lower) fitted on a bound")
    assert main(_eval(str(path), "--only", "itl", "--format", "csv")) == 0
    (row,) = csv.DictReader(io.StringIO(capsys.readouterr().out))
    assert (float(row["p10"]), float(row["p90"])) == pytest.approx((lo * itl, hi * itl))


def test_a_widening_below_one_is_refused(tmp_path: Path, capsys) -> None:
    path = tmp_path / "narrowed.toml"
    path.write_text(WIDENED.replace("tpot = 2.0", "tpot = 0.5"))
    assert main(_eval(str(path), "--only", "itl")) == 2
    err = capsys.readouterr().err
    assert "[profile.widen] in_domain.tpot: expected a factor ≥ 1" in err
    assert "Traceback" not in err


def test_an_extrapolation_takes_the_widened_band_of_its_kind(tmp_path: Path) -> None:
    """DeepSeek-R1 on the Llama fixture is a model extrapolation: TPOT ×0.6–1.7, widened
    ×1.5 in log width about √1.02."""
    path = tmp_path / "widened.toml"
    path.write_text(WIDENED.replace('in_domain = { ttft = 1.0, tpot = 2.0, throughput = 1.0 }',
                                    'model = { tpot = 1.5 }'))
    s = scenario(str(path), "deepseek-r1-0528", "tp=8")
    c = 1.02 ** 0.5
    lo, hi = c * (0.6 / c) ** 1.5, c * (1.7 / c) ** 1.5
    assert s.assessment.band("itl", 1.0) == pytest.approx((lo, hi))
    assert s.assessment.band("ttft", 1.0) == pytest.approx((0.5, 2.0))  # no factor: as measured
    assert "band widened up to ×1.50 in log width (tpot)" in s.prediction
