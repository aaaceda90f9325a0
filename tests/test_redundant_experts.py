"""Redundant experts (EPLB): E + R expert slots, so EP need not divide E; each copy holds its
expert's weights once more, and a step reads the slots its tokens touch. Hand-computed on
DeepSeek-R1-0528 (256 routed experts, top 8, 653,908,770,816 routed parameters, FP8)."""

from __future__ import annotations

import pytest

from perfgraph.cli.main import main
from perfgraph.errors import InputError
from perfgraph.scenario.loading import ScenarioSpec, load

ROUTED = 653_908_770_816  # params_routed_experts, models/deepseek-r1-0528.toml


def _sheet(*sets: tuple[str, str]):
    return load(ScenarioSpec(model="deepseek-r1-0528", hardware="h200", precision="fp8",
                             sets=(("tp", "8"), ("concurrency", "64"), *sets))).sheet


def test_ep_that_does_not_divide_the_experts_says_how_many_copies_would():
    with pytest.raises(InputError, match=r"n_redundant_experts = 32 to hold 8 slots a GPU"):
        _sheet(("ep", "36"))


def test_the_cli_refuses_it_in_one_line(capsys):
    assert main(["eval", "--model", "deepseek-r1-0528", "--set", "ep=48"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ep = 48" in err and "Traceback" not in err


def test_copies_are_held_in_memory_and_read_when_touched():
    plain, eplb = _sheet(), _sheet(("ep", "36"), ("n_redundant_experts", "32"))
    assert eplb.magnitude("expert_slots") == 288
    assert plain.magnitude("routed_weights_bytes", "GB") == pytest.approx(ROUTED / 1e9)
    # 288 slots of FP8 experts: 653.909 GB × 288 / 256 = 735.647 GB
    assert eplb.magnitude("routed_weights_bytes", "GB") == pytest.approx(735.6474, rel=1e-6)
    shared = eplb.magnitude("shared_weights_bytes", "GB")
    # a step of 64 tokens touches 1 − (1 − 8/288)^64 = 0.835186 of the 288 slots, against
    # 1 − (1 − 8/256)^64 = 0.868916 of the 256 experts
    assert eplb.magnitude("experts_touched_fraction") == pytest.approx(0.835186, abs=2e-6)
    assert plain.magnitude("experts_touched_fraction") == pytest.approx(0.868916, abs=2e-6)
    assert eplb.magnitude("weights_bytes_per_step", "GB") == pytest.approx(
        shared + 0.835186 * 735.6474, rel=1e-5)
    assert plain.magnitude("weights_bytes_per_step", "GB") == pytest.approx(
        shared + 0.868916 * ROUTED / 1e9, rel=1e-5)


def test_one_token_reads_its_top_k_experts_whatever_the_copies():
    plain = _sheet(("concurrency", "1"))
    eplb = _sheet(("concurrency", "1"), ("ep", "48"), ("n_redundant_experts", "32"))
    for cell in ("weights_bytes_per_step", "single_stream_weights_bytes"):
        # 8 experts of 653.909e9 / (58 × 256) parameters a layer × 58 layers
        assert eplb.magnitude(cell, "GB") == pytest.approx(plain.magnitude(cell, "GB"))
    assert plain.magnitude("single_stream_weights_bytes", "GB") == pytest.approx(
        plain.magnitude("shared_weights_bytes", "GB") + 8 / 256 * ROUTED / 1e9)
