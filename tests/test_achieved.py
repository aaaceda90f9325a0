"""What a measured run achieved, as sheet cells (``sheets/achieved.toml``): a run's throughput
pins the cell of its own definition, its TPOT ``measured_tpot``, and the graph derives its
MFU, MBU and place on the roofline.

Oracle: the seed's worked example (Llama-3 70B FP8, P = 7e10, on 2 × H100 SXM: 1978.9 TFLOP/s
and 3.35 TB/s a GPU, ISL = OSL = 1024, 64 users, decode step 86.106 GB) against InferenceMAX's
1k1k H100 TP2 conc-64 row: 2127.2857 total tokens/s per GPU, TPOT 29.0358 ms.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from perfgraph.cli.main import main
from perfgraph.measured.adapters import read_runs
from perfgraph.measured.comparison import compare_runs
from perfgraph.measured.setup import Baseline
from perfgraph.scenario.loading import ScenarioSpec, load

H100_1K = Path(__file__).parent / "data" / "measured" / "inferencemax_llama70b_fp8" / "1k1k" / \
    "H100.json"
SEED = (("n_params", "7e10"), ("n_active_params", "7e10"), ("kv_bytes", "1"))
PER_GPU, TPOT = 2127.2857, 29.0358  # the row: total tokens/s per GPU, ms
STEP_BYTES, PEAK, BW = 86.10612736e9, 1978.9e12, 3.35e12


@pytest.fixture()
def sheet():
    sheet = load(ScenarioSpec(sets=SEED)).sheet
    sheet.set("measured_throughput_total_per_gpu", f"{PER_GPU} token/s")
    sheet.set("measured_tpot", f"{TPOT} ms")
    return sheet


def test_a_per_gpu_total_turns_into_output_tokens_of_the_whole_run(sheet) -> None:
    # × 2 GPUs × the output share 1024 / (1024 + 1024)
    assert sheet.magnitude("output_share") == pytest.approx(0.5)
    assert sheet.magnitude("measured_total_throughput", "token/s") == pytest.approx(2 * PER_GPU)
    assert sheet.magnitude("measured_output_throughput", "token/s") == pytest.approx(PER_GPU)
    assert sheet.magnitude("measured_output_throughput_per_gpu", "token/s") == \
        pytest.approx(PER_GPU / 2)


def test_achieved_mfu_and_its_flops_by_hand(sheet) -> None:
    # 2127.29 output tok/s × 2 (input + output) × 2 × 7e10 FLOP ÷ (2 × 1978.9 TFLOP/s)
    mfu = PER_GPU * 2 * 2 * 7e10 / (2 * PEAK)
    assert sheet.magnitude("achieved_mfu", "") == pytest.approx(mfu, rel=1e-9)
    assert sheet.magnitude("achieved_flops", "FLOP/s") == pytest.approx(mfu * PEAK, rel=1e-9)


def test_achieved_mbu_headroom_and_decode_flops_by_hand(sheet) -> None:
    # 86.106 GB a step ÷ 29.0358 ms ÷ (2 × 3.35 TB/s) = 44.26%
    mbu = STEP_BYTES / (TPOT * 1e-3) / (2 * BW)
    assert sheet.magnitude("achieved_mbu", "") == pytest.approx(mbu, rel=1e-9)
    assert sheet.magnitude("achieved_mbu", "%") == pytest.approx(44.2614, abs=1e-4)
    assert sheet.magnitude("achieved_decode_headroom") == pytest.approx(1 / mbu, rel=1e-9)
    # on the roofline: MBU × 3.35 TB/s × the decode intensity (FLOP/B) of one GPU
    intensity = sheet.magnitude("decode_intensity", "FLOP/B")
    assert sheet.magnitude("achieved_decode_flops", "FLOP/s") == pytest.approx(
        mbu * BW * intensity, rel=1e-9)


def test_unpinned_the_measured_cells_are_the_models_own() -> None:
    sheet = load(ScenarioSpec(sets=SEED)).sheet
    assert sheet.magnitude("measured_output_throughput", "token/s") == pytest.approx(
        sheet.magnitude("throughput", "token/s"), rel=1e-12)
    assert sheet.magnitude("measured_tpot", "ms") == sheet.magnitude("itl", "ms")
    assert sheet.magnitude("throughput_total", "token/s") == pytest.approx(
        2 * sheet.magnitude("throughput", "token/s"), rel=1e-12)


def test_compare_takes_mfu_mbu_and_roofline_points_from_the_cells() -> None:
    runs = read_runs(H100_1K, overrides={"isl": 1024, "osl": 1024}).runs
    c = compare_runs(runs, Baseline.from_spec(ScenarioSpec(sets=SEED)))[4]
    assert (c.setup.tp, c.setup.concurrency) == (2, 64)
    mfu = PER_GPU * 2 * 2 * 7e10 / (2 * PEAK)
    mbu = STEP_BYTES / (TPOT * 1e-3) / (2 * BW)
    assert c.mfu == pytest.approx(mfu, rel=1e-6)
    assert c.mbu == pytest.approx(mbu, rel=1e-6)
    assert c.measured_output == pytest.approx(PER_GPU, rel=1e-6)
    assert c.measured_output_per_gpu == pytest.approx(PER_GPU / 2, rel=1e-6)
    assert c.achieved_flops == pytest.approx(mfu * PEAK, rel=1e-6)
    assert c.achieved_decode_flops == pytest.approx(mbu * BW * 104.0576353, rel=1e-6)


def test_explain_shows_achieved_mfu_from_the_measured_throughput(capsys) -> None:
    code = main(["explain", "achieved_mfu", "--set", "n_params=7e10",
                 "--set", "n_active_params=7e10",
                 "--set", f"measured_throughput_total_per_gpu={PER_GPU}"])
    out = capsys.readouterr().out
    assert code == 0
    assert "measured_output_throughput * (isl + osl) / osl * flops_per_token" in out
    assert "measured_output_throughput = 2127 tok/s" in out
    assert "15.05 %" in out  # 2127.29 × 2 × 1.4e11 ÷ 3.9578e15


def test_the_compare_table_names_the_cells_its_mfu_and_mbu_come_from(capsys) -> None:
    assert main(["compare", str(H100_1K)]) == 0
    out = capsys.readouterr().out
    assert "achieved_mfu and achieved_mbu" in out
    assert "perfgraph explain achieved_mfu" in out


# What a run's readings imply (sheets/achieved.toml, pinned by perfgraph.measured.derived).
# Oracles by hand: gpu-conc's conc-1024 run (2.5585 request/s, mean E2EL 15.7037 s), the
# InferenceMAX H100 TP2 conc-64 row (TTFT 134.7738 ms, TPOT 29.0358 ms, E2EL 26.9378 s) and
# TensorRT-LLM's first online row (498 output tokens/s, OSL 256, TTFT 62 ms, ITL 21 ms).


def test_measured_in_flight_is_littles_law() -> None:
    sheet = load(ScenarioSpec()).sheet
    sheet.set("measured_request_throughput", "2.5585303351806994 request/s")
    sheet.set("measured_e2el", "15703.726639206876 ms")
    assert sheet.magnitude("measured_in_flight") == pytest.approx(40.178, abs=1e-3)


def test_measured_implied_osl_counts_the_decode_steps_after_the_first_token() -> None:
    sheet = load(ScenarioSpec()).sheet
    sheet.set("measured_ttft", "134.7738 ms")
    sheet.set("measured_tpot", "29.0358 ms")
    sheet.set("measured_e2el", "26.9378 s")
    # (26937.8 − 134.7738) ÷ 29.0358 + 1 = 924.10
    assert sheet.magnitude("measured_implied_osl", "token") == pytest.approx(924.10, abs=0.01)


def test_measured_request_throughput_and_e2el_from_a_table_that_gives_neither() -> None:
    sheet = load(ScenarioSpec(sets=(("osl", "256"),))).sheet
    sheet.set("measured_output_throughput", "498 token/s")
    sheet.set("measured_ttft", "62 ms")
    sheet.set("measured_tpot", "21 ms")
    assert sheet.magnitude("measured_request_throughput", "request/s") == pytest.approx(
        498 / 256)  # 1.945 request/s
    assert sheet.magnitude("measured_e2el", "ms") == pytest.approx(62 + 255 * 21)  # 5417 ms
    # Little's law on both: 1.9453 × 5.417 s = 10.538 requests in flight
    assert sheet.magnitude("measured_in_flight") == pytest.approx(10.5378, abs=1e-4)


def test_unpinned_the_measured_ttft_is_the_models_own() -> None:
    sheet = load(ScenarioSpec()).sheet
    assert sheet.magnitude("measured_ttft", "ms") == sheet.magnitude("ttft", "ms")


def test_explain_shows_littles_law(capsys) -> None:
    assert main(["explain", "measured_in_flight"]) == 0
    out = capsys.readouterr().out
    assert "measured_request_throughput * measured_e2el / request" in out
    assert "Little's law" in out


def test_measured_output_per_request_is_output_over_request_rate() -> None:
    # gpu-conc's conc-1 run: 149.7606 output tokens/s at 0.16657 request/s = 899.09 tokens each
    sheet = load(ScenarioSpec()).sheet
    sheet.set("measured_output_throughput", "149.76061832610986 token/s")
    sheet.set("measured_request_throughput", "0.1665694338410722 request/s")
    assert sheet.magnitude("measured_output_per_request", "token") == pytest.approx(
        899.0882, abs=1e-4)


def test_expected_mean_lengths_are_the_middle_of_the_random_range() -> None:
    # InferenceX's 8k1k rows: --random-range-ratio 0.8 draws in [0.8, 1] × 8192/1024, so the
    # means are 8192 × 1.8 ÷ 2 = 7372.8 and 1024 × 1.8 ÷ 2 = 921.6
    sheet = load(ScenarioSpec()).sheet
    sheet.set("measured_range_ratio", "0.8")
    sheet.set("measured_configured_isl", "8192 token")
    sheet.set("measured_configured_osl", "1024 token")
    assert sheet.magnitude("measured_expected_isl", "token") == pytest.approx(7372.8)
    assert sheet.magnitude("measured_expected_osl", "token") == pytest.approx(921.6)
    sheet.set("measured_range_ratio", "0")  # vLLM's [0, 1] × nominal: half the nominal
    assert sheet.magnitude("measured_expected_isl", "token") == pytest.approx(4096.0)


def test_unpinned_the_expected_lengths_are_the_models_own() -> None:
    # range ratio 1: every request at its configured length, which is the model's ISL/OSL
    sheet = load(ScenarioSpec(sets=(("isl", "2000"), ("osl", "300")))).sheet
    assert sheet.magnitude("measured_range_ratio") == 1
    assert sheet.magnitude("measured_configured_isl", "token") == 2000
    assert sheet.magnitude("measured_configured_osl", "token") == 300
    assert sheet.magnitude("measured_expected_isl", "token") == 2000
    assert sheet.magnitude("measured_expected_osl", "token") == 300


def test_explain_shows_the_expected_mean_isl(capsys) -> None:
    assert main(["explain", "measured_expected_isl", "--set", "measured_range_ratio=0.8",
                 "--set", "measured_configured_isl=1024 token"]) == 0
    out = capsys.readouterr().out
    assert "measured_configured_isl * (1 + measured_range_ratio) / 2" in out
    assert "921.6" in out
