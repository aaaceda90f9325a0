"""The validation script's coverage, recomputed from saved ratios (``--coverage-from``)
without a fit: each split held against the band of the other splits of its kind."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "research" / "validate_calibration.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("validate_calibration", SCRIPT)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = module  # type: ignore[union-attr]  (its dataclasses look it up)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    yield module
    del sys.modules[spec.name]  # type: ignore[union-attr]


def _row(name: str, ttft: list[float], notes: tuple[str, ...] = ()) -> dict:
    return {"split": name, "kind": "model", "runs": len(ttft), "pair": None,
            "builds": {"fit": ["?"], "held": ["?"]}, "ttft": {"ratios": ttft},
            "notes": list(notes)}


def test_each_split_meets_the_band_of_the_others(script) -> None:
    """Splits at 1, 2 and 4 (one run each). 1 against 2 and 4: each end a tenth of the
    weight in from the extremes is still 2 and 4, ×2–4: out. 2 against ×1–4: in. 4 against
    ×1–2: out. One of three; the median ends of the three bands: 1 and 4."""
    table = [_row("a", [1.0]), _row("b", [2.0]), _row("c", [4.0])]
    got = script.coverage(table)
    assert [r["ttft"] for r in got] == [(0, 1), (1, 1), (0, 1)]
    assert got[0]["ttft_band"] == pytest.approx((2.0, 4.0))
    assert "tpot" not in table[0] and got[0]["tpot"] is None
    text = script.coverage_markdown(got)
    assert "| fit on one model, hold another | 1/3 (33%), ×1.00–4.00 | — | — | 1/3 (33%) |" \
        in text


def test_a_bound_shared_with_other_fits_widens_the_held_out_band(script) -> None:
    """a (at 0.5), c (4) and d (1) hit x's bound, b (2) none. Held out, a meets the band of
    b, c and d, ×1–4: out. c against b and d (×1–2, centre √2, log half-width ln 2 / 2)
    lies 1.5 ln 2 out: three half-widths; d against b and c (×2–4) the same; so x widens
    ×1–4 three times about 2: ×1/4–16, and a is in."""
    bound = ("x: on its lower bound (0.3)",)
    table = [_row("a", [0.5], bound), _row("b", [2.0]), _row("c", [4.0], bound),
             _row("d", [1.0], bound)]
    got = script.coverage(table)[0]
    assert got["ttft_unwidened_band"] == pytest.approx((1.0, 4.0))
    assert got["ttft_band"] == pytest.approx((0.25, 16.0))
    assert got["ttft"] == (1, 1) and got["ttft_unwidened"] == (0, 1)


def test_coverage_from_refuses_a_file_that_is_not_its_json(script, tmp_path, monkeypatch,
                                                          capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"rows": []}))
    monkeypatch.setattr(sys, "argv", ["validate_calibration.py", "--coverage-from", str(bad)])
    with pytest.raises(SystemExit) as exc:
        script.main()
    assert str(exc.value).startswith(f"--coverage-from {bad}: not this script's --json")


def test_every_leave_one_model_out_split_holds_one_model_it_does_not_fit(script) -> None:
    """Each split of kind "model" holds the runs of exactly one model and fits none of its
    runs; the split that holds both Llamas of TensorRT-LLM 0.14 out at once is a build split."""
    splits = [s for s in script.every_split() if s.kind == "model"]
    assert len(splits) == 20
    for split in splits:
        script.check_kind(split)
    two = next(s for s in script.every_split() if "hold build 0.14" in s.name)
    assert two.kind == "build" and len(script.models_of(two.held)) == 2
    with pytest.raises(ValueError, match="holds one model out"):
        script.check_kind(script.replace(two, kind="model"))
