"""What a run's readings imply, worked out by the sheet's cells (perfgraph.measured.derived):
Little's law for the requests in flight, and what a file leaves out (a rate, an E2EL, an
implied OSL, a total from a per-GPU figure or the reverse); a reading the file lacks never
falls back to the model's figure."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

import pytest

from perfgraph.measured.adapters import MeasuredRun, Metric
from perfgraph.measured.adapters.records import LateCaveat
from perfgraph.measured.derived import derive_runs


def _run(metrics: dict[str, float], **fields) -> MeasuredRun:
    units = {"request_throughput": "request/s", "output_throughput": "token/s",
             "throughput_per_gpu": "token/s", "total_throughput": "token/s",
             "input_throughput": "token/s"}
    kept = MappingProxyType({k: Metric(v, units.get(k, "ms"), "mean", k)
                             for k, v in metrics.items()})
    return MeasuredRun("x.json", "test", 0, "run", None, None, 1, 8.0, None, 1000.0, 200.0,
                       None, None, 10, 60.0, kept, ("the reader's note",), **fields)


def test_littles_law_by_hand_and_its_note_first() -> None:
    run = _run({"request_throughput": 2.0, "e2el": 3500.0},
               derive_notes=((0, "{in_flight:.1f} in flight"),))
    (got,) = derive_runs(None, [run])
    assert got.concurrency_measured == pytest.approx(7.0)  # 2 /s × 3.5 s
    assert got.notes == ("7.0 in flight", "the reader's note")
    assert derive_runs(None, [got])[0].notes == got.notes  # derived once, noted once


def test_a_note_goes_where_the_reader_said_it() -> None:
    run = _run({"request_throughput": 2.0, "e2el": 3500.0},
               derive_notes=((1, "{in_flight:.1f} in flight"), (0, "first")))
    (got,) = derive_runs(None, [run])
    assert got.notes == ("first", "the reader's note", "7.0 in flight")


def test_a_missing_reading_gives_nothing_rather_than_the_models_figure() -> None:
    (got,) = derive_runs(None, [_run({"request_throughput": 2.0},
                                     derive_notes=((0, "{in_flight:.1f} in flight"),))])
    assert got.concurrency_measured is None and got.notes == ("the reader's note",)
    (got,) = derive_runs(None, [_run({"ttft": 100.0, "tpot": 10.0},
                                     derive=(("osl_implied", "from latencies"),))])
    assert got.osl_implied is None


def test_a_file_that_leaves_out_its_rate_and_e2el() -> None:
    run = _run({"output_throughput": 400.0, "ttft": 50.0, "itl": 10.0},
               derive=(("request_throughput", "out ÷ OSL"), ("e2el", "TTFT + (OSL − 1) × ITL")))
    (got,) = derive_runs(None, [run])
    assert got.metrics["request_throughput"].value == pytest.approx(2.0)  # 400 ÷ 200
    assert got.metrics["request_throughput"].definition == "completed requests / s (out ÷ OSL)"
    assert got.metrics["e2el"].value == pytest.approx(50 + 199 * 10)  # 2040 ms
    assert got.concurrency_measured == pytest.approx(2.0 * 2.040)


def test_implied_osl_only_where_the_file_leaves_it_out() -> None:
    metrics = {"ttft": 100.0, "tpot": 10.0, "e2el": 2090.0}
    plain, implied = derive_runs(None, [
        _run(metrics), _run(metrics, derive=(("osl_implied", "from latencies"),))])
    assert plain.osl_implied is None
    assert implied.osl_implied == pytest.approx((2090 - 100) / 10 + 1)  # 200 tokens


def test_total_is_per_gpu_times_the_runs_gpus() -> None:
    how = "input + output tokens / s, whole system (derived: TPUT per GPU × TP)"
    run = dataclasses.replace(_run({"throughput_per_gpu": 2127.5}, derive=(
        ("total_throughput", how),)), tp=2)
    (got,) = derive_runs(None, [run])
    assert got.metrics["total_throughput"].value == pytest.approx(4255.0)  # 2127.5 × 2
    assert got.metrics["total_throughput"].definition == how
    assert got.metrics["total_throughput"].unit == "token/s"
    # a disaggregated run's per-GPU figure divides by all its GPUs (its gpus), not its TP
    (got,) = derive_runs(None, [dataclasses.replace(run, tp=8, gpus=24)])
    assert got.metrics["total_throughput"].value == pytest.approx(51060.0)  # 2127.5 × 24


def test_per_gpu_is_the_total_over_the_runs_gpus() -> None:
    run = dataclasses.replace(_run({"total_throughput": 1406.0}, derive=(
        ("throughput_per_gpu", "total ÷ 4 GPUs"),)), tp=4)
    (got,) = derive_runs(None, [run])
    assert got.metrics["throughput_per_gpu"].value == pytest.approx(351.5)  # 1406 ÷ 4
    # without a GPU count nothing is derived (never the model's replica)
    (got,) = derive_runs(None, [dataclasses.replace(run, tp=None)])
    assert "throughput_per_gpu" not in got.metrics


def test_rates_from_a_lines_token_totals_and_duration() -> None:
    run = dataclasses.replace(_run({}, derive=(
        ("total_over_duration", "totals ÷ duration"), ("input_over_duration", "in ÷ duration"),
        ("per_gpu_over_duration", "÷ 4 GPUs"))), tp=4, duration_s=300.0, tokens_in=150_000.0,
        tokens_out=165_000.0)
    (got,) = derive_runs(None, [run])
    assert got.metrics["total_throughput"].value == pytest.approx(1050.0)  # 315,000 ÷ 300 s
    assert got.metrics["input_throughput"].value == pytest.approx(500.0)  # 150,000 ÷ 300 s
    assert got.metrics["throughput_per_gpu"].value == pytest.approx(262.5)  # 1050 ÷ 4
    assert got.metrics["input_throughput"].definition == "in ÷ duration"
    # a line without its totals gives no rate (never the model's)
    (got,) = derive_runs(None, [dataclasses.replace(run, tokens_in=None)])
    assert "total_throughput" not in got.metrics and "input_throughput" not in got.metrics


def test_a_lines_request_rate_is_completed_over_duration() -> None:
    how = "completed requests / s (derived: completed / duration)"
    run = _run({"e2el": 3000.0}, derive=(("requests_over_duration", how),))
    (got,) = derive_runs(None, [run])  # 10 requests in 60 s
    assert got.metrics["request_throughput"].value == pytest.approx(10 / 60)
    assert got.metrics["request_throughput"].definition == how
    assert got.concurrency_measured == pytest.approx(0.5)  # Little's law reads it: 1/6 × 3 s
    (got,) = derive_runs(None, [dataclasses.replace(run, completed=None)])
    assert "request_throughput" not in got.metrics and got.concurrency_measured is None


def test_mean_lengths_are_token_totals_over_completed() -> None:
    lengths = (("isl_measured", "in ÷ completed"), ("osl_measured", "out ÷ completed"))
    run = dataclasses.replace(_run({"ttft": 100.0, "tpot": 10.0}, derive=(
        *lengths, ("e2el", "TTFT + (OSL − 1) × TPOT"))), isl=None, osl=None,
        tokens_in=12_000.0, tokens_out=3_000.0)
    (got,) = derive_runs(None, [run])  # 10 requests
    assert (got.isl, got.osl) == (pytest.approx(1200.0), pytest.approx(300.0))
    assert (got.isl_measured, got.osl_measured) == (got.isl, got.osl)
    assert got.metrics["e2el"].value == pytest.approx(100 + 299 * 10)  # reads the mean OSL
    # without the totals no length is made up (never the model's)
    (got,) = derive_runs(None, [dataclasses.replace(run, tokens_in=None)])
    assert got.isl is None and got.osl == pytest.approx(300.0)


def test_an_old_vllm_total_is_input_plus_output_rates() -> None:
    how = "input + output tokens / s, whole system (derived: input + output throughput)"
    run = dataclasses.replace(_run(
        {"input_throughput": 500.0, "output_throughput": 250.0},
        derive=(("total_of_rates", how), ("throughput_per_gpu", "total ÷ 2 GPUs"))), tp=2)
    (got,) = derive_runs(None, [run])
    assert got.metrics["total_throughput"].value == pytest.approx(750.0)  # 500 + 250
    assert got.metrics["total_throughput"].definition == how
    assert got.metrics["throughput_per_gpu"].value == pytest.approx(375.0)  # 750 ÷ 2
    (got,) = derive_runs(None, [_run({"output_throughput": 250.0},
                                     derive=(("total_of_rates", how),))])
    assert "total_throughput" not in got.metrics  # no input rate: no total


def test_late_caveats_read_the_derived_values_in_the_readers_order() -> None:
    late = (LateCaveat("lengths", (1024.0, None, " (why)"), note_at=1, caveat_at=0),
            LateCaveat("pacing", (1.0,), note_at=1, caveat_at=0))
    run = dataclasses.replace(_run({}, derive=(
        ("isl_measured", "in ÷ completed"), ("requests_over_duration", "completed ÷ s"))),
        isl=None, tokens_in=12_000.0, late_caveats=late)
    (got,) = derive_runs(None, [run])
    lengths = "ISL: measured mean 1200 vs configured 1024 (why)"
    pacing = ("achieved 0.17 requests/s < 90% of the configured rate 1: the server did not "
              "keep up and requests queued")
    assert got.caveats == (lengths, pacing) and got.late_caveats == ()
    assert got.notes == ("the reader's note", lengths, pacing)
    assert derive_runs(None, [got])[0].notes == got.notes  # checked once
    # a check that finds nothing leaves the next one where the reader put it
    (got,) = derive_runs(None, [dataclasses.replace(run, tokens_in=10_500.0)])  # 1050: < 5%
    assert got.caveats == (pacing,) and got.notes == ("the reader's note", pacing)


EXPECTED = (("isl_expected", "configured × (1 + ratio) ÷ 2"),
            ("osl_expected", "configured × (1 + ratio) ÷ 2"))


def test_expected_lengths_are_the_middle_of_the_configured_range() -> None:
    run = dataclasses.replace(_run({"ttft": 100.0, "tpot": 10.0}, derive=(
        *EXPECTED, ("e2el", "TTFT + (OSL − 1) × TPOT"))), isl=None, osl=None,
        isl_configured=2000.0, osl_configured=500.0, range_ratio=0.5)
    (got,) = derive_runs(None, [run])
    # [0.5, 1] × 2000/500: means 2000 × 1.5 ÷ 2 = 1500 and 500 × 1.5 ÷ 2 = 375
    assert (got.isl, got.osl) == (pytest.approx(1500.0), pytest.approx(375.0))
    assert (got.isl_expected, got.osl_expected) == (got.isl, got.osl)
    assert got.isl_measured is None and got.osl_measured is None
    assert got.metrics["e2el"].value == pytest.approx(100 + 374 * 10)  # reads the mean OSL
    # without a range no length is made up (never the model's)
    (got,) = derive_runs(None, [dataclasses.replace(run, range_ratio=None)])
    assert got.isl is None and got.osl is None and got.isl_expected is None


def test_a_range_caveat_states_the_derived_means() -> None:
    late = (LateCaveat("random_range", (8192.0, 1024.0), note_at=1, caveat_at=0),)
    run = dataclasses.replace(_run({}, derive=EXPECTED), isl=None, osl=None,
                              isl_configured=8192.0, osl_configured=1024.0, range_ratio=0.8,
                              late_caveats=late)
    (got,) = derive_runs(None, [run])
    said = ("ISL/OSL: random in [0.8, 1] × 8192/1024 (--random-range-ratio 0.8); the rows "
            "record no measured lengths, so the run is modelled at the expected means "
            "7372.8/921.6")  # 8192 × 0.9, 1024 × 0.9
    assert got.caveats == (said,) and got.notes == ("the reader's note", said)
    late = (LateCaveat("lengths_from_directory", (1024, 1024, "1k1k"), note_at=1),)
    (got,) = derive_runs(None, [dataclasses.replace(
        run, isl_configured=1024.0, osl_configured=1024.0, late_caveats=late)])
    assert got.caveats == (
        "ISL/OSL 1024/1024 taken from the directory name '1k1k' (the rows carry no "
        "lengths); InferenceMAX draws each in [0.8, 1] × nominal (--random-range-ratio 0.8), "
        "so the run is modelled at the expected means 921.6/921.6",)
