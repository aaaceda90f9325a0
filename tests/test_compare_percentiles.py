"""compare's percentiles: a run with a per-request record held against a simulation of its
own requests (p50/p99 TTFT and TPOT), measured figures worked out here by hand from the
A100 file's arrays, simulated ones re-run here with the same seed; files without a record
print exactly as before."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from perfgraph.cli.main import main
from perfgraph.measured.comparison import compare_runs
from perfgraph.measured.reading import read_measured
from perfgraph.measured.setup import Baseline
from perfgraph.output.compare_report import as_json, as_markdown, as_table
from perfgraph.scenario.loading import ScenarioSpec, load, parse_set
from perfgraph.whatif.simulate import Setup, simulate
from perfgraph.whatif.simulate.lengths import Lengths
from perfgraph.whatif.simulate.summary import summarise
from tests.conftest import DATA

A100 = DATA / "measured" / "a100_vllm_llama33_70b" / "01_tp8_pp1" / \
    "serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_inf.json"
NO_RECORD = DATA / "measured" / "inferencemax_llama70b_fp8" / "1k1k" / "H100.json"
BF16 = ScenarioSpec(precision="bf16")
PROFILE = "perfgraph/scenario/profiles/h100-sxm.vllm.toml"


def _by_hand(path: Path) -> dict[str, np.ndarray]:
    data = json.loads(path.read_text())
    ok = [i for i, e in enumerate(data["errors"]) if not e and data["output_lens"][i] > 0]
    osl = np.array([data["output_lens"][i] for i in ok], dtype=float)
    ttft = np.array([data["ttfts"][i] for i in ok]) * 1e3
    decode = np.array([sum(data["itls"][i]) for i in ok]) * 1e3
    return {"isl": np.array([data["input_lens"][i] for i in ok]), "osl": osl, "ttft": ttft,
            "tpot": decode[osl > 1] / (osl[osl > 1] - 1), "data": data}  # type: ignore[dict-item]


def _compare(*paths: Path, spec: ScenarioSpec = BF16):  # noqa: ANN202
    measured = read_measured([str(p) for p in paths])
    return measured, compare_runs(measured.runs, Baseline.from_spec(spec), percentiles=True)


def test_the_measured_percentiles_are_the_files_arrays() -> None:
    hand = _by_hand(A100)
    _, (c,) = _compare(A100)
    p = c.percentiles
    assert p is not None and p.error is None and p.requests == 200
    for metric in ("ttft", "tpot"):
        for stat, q in (("p50", 50), ("p99", 99)):
            assert p.measured[metric][stat] == pytest.approx(
                float(np.percentile(hand[metric], q)), rel=1e-12)
    data = hand["data"]
    assert p.measured["ttft"]["p50"] == pytest.approx(data["median_ttft_ms"], rel=1e-9)  # type: ignore[index]
    assert p.measured["ttft"]["p99"] == pytest.approx(450.379, abs=1e-3)  # vLLM: 450.379 ms
    assert p.measured["tpot"]["p50"] == pytest.approx(data["median_tpot_ms"], rel=1e-6)  # type: ignore[index]


def _simulated_here(c, seed: int = 0, rate: float = math.inf) -> dict:  # noqa: ANN001
    """The same simulation, set up here from the file and the run's configuration."""
    hand = _by_hand(A100)
    s = c.setup
    sheet = load(ScenarioSpec(model="llama-3.3-70b", hardware="a100-40gb", precision="bf16",
                              sets=tuple(parse_set(f"{k}={getattr(s, k)}")
                                         for k in ("tp", "concurrency", "isl", "osl")))).sheet
    given = Lengths(hand["isl"].astype(np.int64), hand["osl"].astype(np.int64), rate=rate)
    run = simulate(sheet, Setup(seed=seed, warmup=0, token_budget=8192, max_seqs=256,
                                lengths="FILE", given=given))
    return summarise(run, sheet).latency


def test_the_simulated_percentiles_are_the_simulation_of_the_runs_own_requests() -> None:
    _, (c,) = _compare(A100)
    p = c.percentiles
    latency = _simulated_here(c)
    for metric in ("ttft", "tpot"):
        for stat in ("p50", "p99"):
            assert p.simulated[metric][stat] == pytest.approx(latency.of(metric).get(stat),
                                                              rel=1e-12)
    assert p.reference == "roofline"
    assert p.arrivals == "200 requests, all at t = 0 (request rate inf)"
    # every prompt arrives at once: the last prompts wait for the earlier ones' prefill
    assert p.simulated["ttft"]["p99"] > 1.5 * p.simulated["ttft"]["p50"]


def test_a_poisson_run_is_simulated_at_its_rate_with_the_seed(tmp_path: Path) -> None:
    data = json.loads(A100.read_text())
    data["request_rate"] = 4.0
    path = tmp_path / A100.name  # beside its .commands (the GPU and TP)
    path.write_text(json.dumps(data))
    commands = A100.with_suffix(".commands")
    path.with_suffix(".commands").write_text(commands.read_text())
    _, (c,) = _compare(path)
    _, (again,) = _compare(path)
    p = c.percentiles
    assert p.arrivals == "200 requests, Poisson at 4 request/s"
    assert p.simulated == again.percentiles.simulated  # the fixed seed
    latency = _simulated_here(c, seed=0, rate=4.0)
    assert p.simulated["ttft"]["p50"] == pytest.approx(latency.ttft.p50, rel=1e-12)
    other = _simulated_here(c, seed=1, rate=4.0)
    assert other.ttft.p99 != pytest.approx(p.simulated["ttft"]["p99"], rel=1e-9)


def test_a_calibrated_simulation_says_so() -> None:
    spec = ScenarioSpec(precision="bf16", calibration=PROFILE)
    _, (c,) = _compare(A100, spec=spec)
    assert c.percentiles.reference.startswith("calibrated: h100-sxm.vllm")
    roofline = _compare(A100)[1][0].percentiles
    assert c.percentiles.simulated["tpot"]["p50"] > roofline.simulated["tpot"]["p50"]


def test_the_formats_show_the_percentiles(capsys: pytest.CaptureFixture[str]) -> None:
    measured, comparisons = _compare(A100)
    p = comparisons[0].percentiles
    table = as_table(comparisons, measured)
    assert "TTFT p50" in table and "TPOT p99" in table
    assert "the simulation timed by roofline" in table
    assert "349.8 ms / " in table  # the measured p50 TTFT
    assert "| TTFT p50 | TTFT p99 | TPOT p50 | TPOT p99 |" in as_markdown(comparisons, measured)
    doc = json.loads(as_json(comparisons, measured))
    got = doc["runs"][0]["percentiles"]
    assert got["ttft"]["p50"]["measured"] == pytest.approx(p.measured["ttft"]["p50"])
    assert got["tpot"]["p99"]["simulated"] == pytest.approx(p.simulated["tpot"]["p99"])
    assert got["reference"] == "roofline" and got["unit"] == "ms"
    assert main(["compare", str(A100), "--precision", "bf16", "--format", "json"]) == 0
    assert "percentiles" in json.loads(capsys.readouterr().out)["runs"][0]


def test_parquet_rows_carry_the_percentiles(tmp_path: Path) -> None:
    import polars as pl

    out = tmp_path / "runs.parquet"
    assert main(["compare", str(A100), str(NO_RECORD), "--precision", "bf16",
                 "--format", "parquet", "--out", str(out)]) == 0
    frame = pl.read_parquet(out)
    _, (c,) = _compare(A100)
    row = frame.filter(pl.col("source") == str(A100)).row(0, named=True)
    assert row["ttft_p50_measured_ms"] == pytest.approx(c.percentiles.measured["ttft"]["p50"])
    assert row["tpot_p99_simulated_ms"] == pytest.approx(c.percentiles.simulated["tpot"]["p99"])
    other = frame.filter(pl.col("source") == str(NO_RECORD))
    assert other["ttft_p50_measured_ms"].is_null().all()


def test_files_without_a_record_print_as_before() -> None:
    measured = read_measured([str(NO_RECORD)])
    base = Baseline.from_spec(ScenarioSpec())
    plain = compare_runs(measured.runs, base)
    asked = compare_runs(measured.runs, base, percentiles=True)
    assert all(c.percentiles is None for c in asked)
    assert as_table(asked, measured) == as_table(plain, measured)
    assert as_json(asked, measured) == as_json(plain, measured)
    assert as_markdown(asked, measured) == as_markdown(plain, measured)


def test_runs_without_a_record_beside_ones_with_are_named_once() -> None:
    measured, comparisons = _compare(A100, NO_RECORD)
    table = as_table(comparisons, measured)
    assert table.count("no per-request record") == 1
    line = next(x for x in table.splitlines() if "no per-request record" in x)
    assert str(NO_RECORD) in line and str(A100) not in line
    # the file without a record has no percentile columns
    block = table.split(str(NO_RECORD) + "  [format")[1]
    assert "TTFT p50" not in block.split("\n\n")[0]


def test_a_record_with_bad_arrays_is_no_record() -> None:
    from perfgraph.measured.adapters.vllm import per_request

    good = {"input_lens": [10, 20], "output_lens": [5, 0], "ttfts": [0.1, 0.0],
            "itls": [[0.01] * 4, []], "errors": ["", ""]}
    got = per_request(good)
    assert got is not None and got.isl == (10,) and got.osl == (5,)  # no output: left out
    assert got.ttft_ms == (100.0,) and got.decode_ms == pytest.approx((40.0,))
    assert per_request({**good, "ttfts": [-0.1, 0.0]}) is None
    assert per_request({**good, "itls": [[0.01]]}) is None  # lengths differ
    assert per_request({k: v for k, v in good.items() if k != "itls"}) is None


def test_a_run_served_by_another_engine_is_replayed_by_its_scheduler(tmp_path: Path) -> None:
    """A record whose client spoke to another server (backend "openai": no engine named) is
    the --engine's run: SGLang's prefill-first scheduler replays it, not vLLM's, on the sheet
    compare evaluates it at (SGLang's memory rule and limits)."""
    data = json.loads(A100.read_text())
    data["backend"] = "openai"
    path = tmp_path / A100.name
    path.write_text(json.dumps(data))
    path.with_suffix(".commands").write_text(A100.with_suffix(".commands").read_text())
    spec = ScenarioSpec(precision="bf16", engine="sglang")
    _, (c,) = _compare(path, spec=spec)
    hand = _by_hand(A100)
    s = c.setup
    sheet = load(ScenarioSpec(model="llama-3.3-70b", hardware="a100-40gb", precision="bf16",
                              engine="sglang",
                              sets=tuple(parse_set(f"{k}={getattr(s, k)}")
                                         for k in ("tp", "concurrency", "isl", "osl")))).sheet
    given = Lengths(hand["isl"].astype(np.int64), hand["osl"].astype(np.int64), rate=math.inf)

    def ttft_p99(scheduler: str) -> float:
        run = simulate(sheet, Setup(seed=0, warmup=0, scheduler=scheduler,
                                    max_seqs=math.floor(sheet.magnitude("max_num_seqs")),
                                    token_budget=math.floor(sheet.magnitude(
                                        "max_num_batched_tokens", "token")),
                                    lengths="FILE", given=given))
        return float(summarise(run, sheet).latency.ttft.p99)

    assert c.percentiles.simulated["ttft"]["p99"] == pytest.approx(ttft_p99("sglang"),
                                                                   rel=1e-12)
    assert ttft_p99("sglang") != pytest.approx(ttft_p99("vllm"), rel=1e-6)
