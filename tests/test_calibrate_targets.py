"""calibrate(..., targets=, fixed=): fit some targets with the others held (a per-engine
refit of one term on top of a shared fit), and refuse targets it does not know."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from perfgraph.errors import InputError
from perfgraph.measured.adapters import read_runs
from perfgraph.measured.calibration import TARGETS, calibrate
from perfgraph.measured.setup import Baseline
from perfgraph.scenario.loading import ScenarioSpec

H100_1K = Path(__file__).parent / "data" / "measured" / "inferencemax_llama70b_fp8" / \
    "1k1k" / "H100.json"
#: the shipped H100 vLLM profile's values (perfgraph/scenario/profiles/h100-sxm.vllm.toml;
#: its step_overhead as the host's share, the per-kernel term 0)
HELD = {"bandwidth_efficiency": 1.0, "attention_bandwidth_efficiency": 0.5,
        "compute_efficiency": 0.4468, "prefill_compute_efficiency": 0.6458,
        "step_host_time": 5.672, "kernel_step_time": 0.0,
        "ttft_overhead": 11.01, "tp_comm_exposed": 1.0,
        "link_efficiency": 0.4582}


def test_one_target_refitted_the_others_held() -> None:
    runs = read_runs(H100_1K).runs
    fit = calibrate(runs, Baseline.from_spec(ScenarioSpec()), targets=("seq_step_overhead",),
                    fixed=HELD)
    assert {k: fit.values[k] for k in HELD} == HELD  # held exactly
    seq = fit.values["seq_step_overhead"]
    assert 0 <= seq <= 200  # within its bounds (µs)
    # a second free term can only fit as well or better
    held = {k: v for k, v in HELD.items() if k != "ttft_overhead"}
    two = calibrate(runs, Baseline.from_spec(ScenarioSpec()),
                    targets=("seq_step_overhead", "ttft_overhead"), fixed=held)
    assert {k: two.values[k] for k in held} == held
    assert two.residual <= fit.residual + 1e-9


def test_an_unknown_target_is_refused() -> None:
    with pytest.raises(InputError, match="expected some of"):
        calibrate(read_runs(H100_1K).runs, Baseline.from_spec(ScenarioSpec()),
                  targets=("seq_overhead",))
    assert len(TARGETS) == 13  # one per-kernel term where two per-layer ones were; spec_alpha;
    # the eager launches of prompt-carrying steps


@pytest.mark.parametrize(("table", "said"), [
    ({"tp_comm_exposed": "yes"}, "tp_comm_exposed = 'yes': expected a number from 0 to 1"),
    ({"tp_comm_exposed": 2}, "tp_comm_exposed = 2: expected a number from 0 to 1"),
    ({"comm_overlap": 1}, "names comm_overlap: expected some of"),
])
def test_an_engine_files_realistic_table_is_checked(monkeypatch, table, said) -> None:
    """A value an engine file holds for the fit must be a target, a number, in its bounds:
    one message naming the file and the cell, not a traceback from float()."""
    import types

    import perfgraph.measured.targets as targets

    monkeypatch.setattr(targets, "engine_entry",
                        lambda name: types.SimpleNamespace(table=lambda key: table))
    with pytest.raises(InputError, match=re.escape(said)) as exc:
        calibrate(read_runs(H100_1K).runs, Baseline.from_spec(ScenarioSpec()))
    assert "engines/vllm.toml [realistic]" in str(exc.value)


def test_the_overhead_split_fits_only_what_the_models_tell_apart() -> None:
    from perfgraph.measured.targets import unidentified as _unidentified

    # the first token's split held by the caller: this test is the step's
    ttft = {"eager_kernel_step_time": 0.0, "ttft_overhead": 0.0}
    # Llama-70B alone, at TP 1 (800 kernels) and TP 8 (960): one model, so only the sum is
    # fixed, and it goes on the per-kernel term, which carries over to another model
    one = [_Run(70e9, 800), _Run(70e9, 960)]
    held, notes = _unidentified(one, ttft)
    assert held == {"step_host_time": 0.0} and len(notes) == 1 and "one model" in notes[0]
    # DeepSeek-V3 at TP 8 (1623 kernels) beside it: the host's per-step share fits too
    assert _unidentified([*one, _Run(671e9, 1623)], ttft) == ({}, ())
    # two models whose kernel counts agree do not tell the host from the kernels
    assert _unidentified([_Run(70e9, 960), _Run(72e9, 960)], ttft)[0] == \
        {"step_host_time": 0.0}
    # a term held by the caller (an engine file, a per-engine refit) is not second-guessed
    assert _unidentified(one, {**ttft, "kernel_step_time": 5.0}) == ({}, ())
    assert _unidentified(one, {**ttft, "step_host_time": 1.0}) == ({}, ())


def _Run(params: float, kernels: float, eager: bool = True):  # noqa: N802 - a sheet's reads
    """What unidentified reads of a run's sheet: its model, its kernels, and the kernels a
    prompt-carrying step launches one by one (all of them where the engine runs it eagerly)."""
    cells = {"n_params": params, "kernels_per_step": kernels,
             "prefill_eager_kernels": kernels if eager else 0.0}
    return type("S", (), {"magnitude": lambda _, c: cells[c]})()


def test_the_first_tokens_fixed_cost_goes_on_the_eager_launches_first() -> None:
    from perfgraph.measured.targets import unidentified as _unidentified

    step = {"kernel_step_time": 0.0, "step_host_time": 0.0}
    # DeepSeek-R1 alone on an engine that runs prefill eagerly (TensorRT-LLM): one model
    # fixes only launches + flat, and it goes on the launches, which scale with the model
    held, notes = _unidentified([_Run(671e9, 1623)], step)
    assert held == {"ttft_overhead": 0.0} and "one model" in notes[0]
    # beside Llama-3.1-8B (320 kernels): the flat per-request cost fits too
    assert _unidentified([_Run(671e9, 1623), _Run(8e9, 320)], step) == ({}, ())
    # an engine that replays prefill from a graph (vLLM): no eager launch to fit (its column
    # is 0 for every model), the flat term takes the first token's fixed cost
    held, notes = _unidentified([_Run(70e9, 960, False), _Run(8e9, 320, False)], step)
    assert held == {"eager_kernel_step_time": 0.0} and notes == (
        "eager_kernel_step_time: held at 0: it moves none of these runs "
        "(prefill_eager_kernels 0, 0)",)

