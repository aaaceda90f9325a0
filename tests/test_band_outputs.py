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
