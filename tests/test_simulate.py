"""perfgraph simulate: faithful to the sheet where the sheet's assumptions hold, a scheduler
that conserves tokens and KV blocks, and one clear message for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from perfgraph.cli.main import main
from perfgraph.scenario.loading import ScenarioSpec, load, parse_set
from perfgraph.whatif.simulate import Setup, simulate
from perfgraph.whatif.simulate.step_sheet import StepSheet
from perfgraph.whatif.simulate.summary import stats, summarise, weighted_quantiles
from tests.conftest import DATA
from tests.test_step_sheet import assert_the_step_is_the_sheets

VLLM_LENGTHS = DATA / "simulate" / "a100_tp8_qps_04_lengths.json"
OTHER = ScenarioSpec(model="llama-3.1-8b", precision="bf16", sets=(parse_set("tp=1"),))


def sheet_of(spec: ScenarioSpec | None = None):  # noqa: ANN201
    return load(spec or ScenarioSpec()).sheet


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_step_sheet_is_the_sheets_decode_step_and_prefill() -> None:
    sheet = sheet_of()
    model = StepSheet.from_sheet(sheet)
    ctx = 64 * 1536  # the seed's worked example: 64 sequences at avg_context 1536
    assert model.time(64, 0, ctx, ctx) == pytest.approx(12.93e-3, rel=1e-3)  # 8.66E10 B / 6.7 TB/s
    assert model.time(0, 1024, 1024, 0, 1024 * 1024) == pytest.approx(36.51e-3, rel=1e-3)
    assert_the_step_is_the_sheets(sheet)
    run_ = model.decode_run(64, ctx, 3)
    assert run_[0] == pytest.approx(model.time(64, 0, ctx, ctx))
    assert run_[2] == pytest.approx(model.time(64, 0, ctx + 128, ctx + 128))


@pytest.mark.parametrize("spec", [ScenarioSpec(), OTHER], ids=["default", "8b-bf16-tp1"])
def test_closed_loop_fixed_lengths_agrees_with_the_sheet(spec: ScenarioSpec) -> None:
    sheet = sheet_of(spec)
    result = simulate(sheet, Setup(users=64, requests=640))
    s = summarise(result, sheet)
    assert result.complete and s.preemptions == 0
    assert s.output_throughput == pytest.approx(sheet.magnitude("throughput"), rel=0.03)
    assert s.latency.tpot.mean == pytest.approx(sheet.magnitude("itl"), rel=0.03)


@pytest.mark.parametrize("spec", [ScenarioSpec(), OTHER], ids=["default", "8b-bf16-tp1"])
def test_far_below_capacity_ttft_is_the_sheets_ttft(spec: ScenarioSpec) -> None:
    sheet = sheet_of(spec)
    gap = 10 * sheet.magnitude("e2e_latency", "s")  # each request alone in the engine
    result = simulate(sheet, Setup(rate=1 / gap, cv=0.0, requests=20))
    ttft = summarise(result, sheet).latency.ttft
    assert ttft.mean == pytest.approx(sheet.magnitude("ttft"), rel=1e-3)
    assert ttft.p99 == pytest.approx(sheet.magnitude("ttft"), rel=1e-3)


def test_a_what_if_reaches_the_simulation() -> None:
    fp8 = summarise(simulate(sheet_of(), Setup(users=64, requests=300)), sheet_of())
    tp4 = sheet_of(ScenarioSpec(sets=(parse_set("tp=4"),)))  # twice the bandwidth
    other = summarise(simulate(tp4, Setup(users=64, requests=300)), tp4)
    assert other.latency.tpot.mean == pytest.approx(tp4.magnitude("itl"),
                                                                rel=0.03)
    assert other.latency.tpot.mean < 0.6 * fp8.latency.tpot.mean


def test_kv_pressure_preempts_and_every_token_still_comes_out() -> None:
    # KV for ~40 sequences of 2048 tokens: 64 users cannot all stay resident
    spec = ScenarioSpec(sets=(parse_set("gpu_memory_utilization=0.5"),))
    sheet = sheet_of(spec)
    result = simulate(sheet, Setup(users=64, requests=300))
    e = result.engine
    assert result.complete and e.preemptions > 0
    assert e.reqs.gen == e.reqs.osl  # every request got all its tokens
    # and the steps' log counts each once, a resumed request's re-prefill token too
    assert e.log.arrays()["tokens"].sum() == sum(e.reqs.osl)
    assert e.pool.prefill == 0 and not e.order and not e.waiting
    assert summarise(result, sheet).kv_use.max <= 1.0


def test_overload_is_said_not_averaged() -> None:
    sheet = sheet_of()
    over = summarise(simulate(sheet, Setup(rate=20.0, requests=1500)), sheet)
    assert over.overload is not None
    assert over.overload.sustained < 0.5 * over.overload.offered
    assert over.latency.ttft.mean is None
    under = summarise(simulate(sheet, Setup(rate=2.0, requests=600)), sheet)
    assert under.overload is None and under.latency.ttft.mean > 0


@pytest.mark.parametrize("scheduler", ["sglang", "trtllm", "static"])
def test_every_scheduler_conserves_tokens(scheduler: str) -> None:
    sheet = sheet_of()
    result = simulate(sheet, Setup(rate=3.0, requests=200, lengths="workload",
                                   scheduler=scheduler))
    assert result.complete and result.engine.reqs.gen == result.engine.reqs.osl


def test_static_batches_wait_for_their_longest_request() -> None:
    sheet = sheet_of(ScenarioSpec(sets=(parse_set("osl_spread=1.5"),)))
    vllm = summarise(simulate(sheet, Setup(users=64, requests=640, lengths="workload")), sheet)
    static = summarise(simulate(sheet, Setup(users=64, requests=640, lengths="workload",
                                             scheduler="static")), sheet)
    assert static.output_throughput < 0.9 * vllm.output_throughput
    assert static.batch.max == 64  # a batch fills up to max_num_seqs


def test_p999_only_with_ten_thousand_requests() -> None:
    values = np.arange(10_000, dtype=float)
    assert "p99.9" in stats(values, None, 1.0, 10_000).keys
    assert stats(values, None, 1.0, 10_000).p99_9 == 9990.0
    assert "p99.9" not in stats(values[:9_999], None, 1.0, 9_999).keys


def test_weighted_quantiles_by_hand() -> None:
    v, w = np.array([3.0, 1.0, 2.0]), np.array([1.0, 1.0, 2.0])
    assert weighted_quantiles(v, w, [0.25, 0.5, 0.75, 1.0]) == [1.0, 2.0, 2.0, 3.0]


def test_replays_a_vllm_runs_lengths(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "simulate", "--lengths", str(VLLM_LENGTHS), "--model",
                       "llama-3.3-70b", "--hardware", "a100-80gb", "--precision", "bf16",
                       "--set", "tp=8", "--set", "concurrency=256", "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["requests"] == 200
    assert doc["latency"]["ttft"]["p50"]["unit"] == "ms"
    assert doc["output_throughput"]["unit"] == "token/s"
    # the run's own percentiles beside the simulated ones (the file's vLLM summary)
    assert doc["run_measured"]["ttft"]["p50"] == {"value": pytest.approx(49.50, abs=0.01),
                                              "unit": "ms"}
    assert set(doc["run_measured"]) == {"ttft", "tpot"}


def test_out_and_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, trace = tmp_path / "r.parquet", tmp_path / "t.json"
    code, text, _ = run(capsys, "simulate", "--users", "8", "--requests", "40",
                        "--out", str(out), "--trace", str(trace))
    assert code == 0 and "TTFT (ms)" in text
    rows = pl.read_parquet(out)
    assert rows.height == 40 and (rows["osl"] == 1024).all()
    units = json.loads(pl.read_parquet_metadata(out)["perfgraph.units"])
    assert units["ttft"] == "ms" and units["arrival"] == "s"
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e["ph"] == "X" and e["args"]["decodes"] == 8 for e in events)


def test_interrupt_gives_a_partial_summary() -> None:
    sheet = sheet_of()

    def stop(done: int) -> None:
        if done > 10:
            raise KeyboardInterrupt

    result = simulate(sheet, Setup(users=64, requests=2000), progress=stop)
    s = summarise(result, sheet)
    assert not result.complete and s.partial and s.measured < 2000


@pytest.mark.parametrize("argv, says", [
    (["--rate", "8"], "--rate: '8' has no unit"),
    (["--rate", "-2 request/s"], "must be a positive rate"),
    (["--rate", "8 GB/s"], "not a rate of requests"),
    (["--users", "0"], "--users: 0: must be at least 1"),
    (["--users", "4", "--arrivals", "gamma:x"], "--arrivals"),
    (["--users", "4", "--lengths", "nope.csv"], "nope.csv"),
])
def test_bad_options(argv: list[str], says: str, tmp_path: Path,
                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.parquet"
    code, _, err = run(capsys, "simulate", *argv, "--out", str(out))
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("text, says", [
    ("arrival_s,isl\n0,10\n", "missing column 'osl'"),
    ("arrival_s,isl,osl\n0,10,5\n1,-3,5\n", "lengths.csv:3: isl: column 'isl': '-3' is negative"),
    ("arrival_s,isl,osl\n0,ten,5\n", "'ten' is not a number"),
])
def test_bad_lengths_csv(text: str, says: str, tmp_path: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    path, out = tmp_path / "lengths.csv", tmp_path / "r.parquet"
    path.write_text(text)
    code, _, err = run(capsys, "simulate", "--lengths", str(path), "--out", str(out))
    assert code == 2 and "lengths.csv" in err and says in err, err
    assert not out.exists()


def test_a_file_without_per_request_data(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "summary.json"
    path.write_text(json.dumps({"request_rate": 4, "mean_ttft_ms": 50}))
    code, _, err = run(capsys, "simulate", "--lengths", str(path))
    assert code == 2 and "summary.json" in err and "no per-request data" in err


def test_a_csv_replays_its_own_arrivals(tmp_path: Path) -> None:
    path = tmp_path / "lengths.csv"
    path.write_text("arrival_s,isl,osl\n0,1024,8\n100,512,4\n")
    sheet = sheet_of()
    result = simulate(sheet, Setup(lengths=str(path)))
    t = result.engine.reqs.table()
    assert list(t["arrival"]) == [0.0, 100.0] and list(t["osl"]) == [8, 4]
    assert t["ttft"][0] == pytest.approx(sheet.magnitude("ttft", "s"), rel=1e-3)


def test_the_readme_example_is_what_simulate_prints(capsys: pytest.CaptureFixture[str],
                                                    ) -> None:
    import re
    import shlex

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text("utf-8")
    shown = next(b for b in re.findall(r"```text\n(.*?)```", readme, re.S)
                 if b.startswith("$ perfgraph simulate "))
    command, expected = shown.split("\n", 1)
    code, out, _ = run(capsys, *shlex.split(command.removeprefix("$ perfgraph ")))
    assert code == 0 and out == expected


def test_a_calibration_profile_reaches_the_step_sheet() -> None:
    """The shipped H100 vLLM profile turns on the realistic terms (kernel rooflines, prefill
    in the step, per-sequence and TTFT fixed costs): the step sheet reads every one."""
    sheet = sheet_of(ScenarioSpec(calibration="auto"))
    assert sheet.magnitude("kernel_roofline") and sheet.magnitude("seq_step_overhead") > 0
    assert_the_step_is_the_sheets(sheet)
    gap = 10 * sheet.magnitude("e2e_latency", "s")
    alone = summarise(simulate(sheet, Setup(rate=1 / gap, cv=0.0, requests=10)), sheet)
    want = sum(sheet.magnitude(c) for c in ("prefill_time", "prefill_activation_time",
                                            "prefill_tp_comm_time", "ttft_overhead"))
    assert alone.latency.ttft.mean == pytest.approx(want, rel=1e-3)
    # the sheet (prefill_chunk_steps, as the profile is fitted) times the steps that carry a
    # prompt's chunk apart from the plain ones; the simulation carries them as vLLM does, in
    # chunks of the token budget less the decodes (8192 − 64 = 8128 tokens, about 8 prompts
    # a chunk step), and those steps are compute-bound: by hand, B × ISL ÷ 8128 = 8.06 chunk
    # steps per OSL decode steps, each T(64 decodes + 8128) − T(64) longer than a plain step
    loop = summarise(simulate(sheet, Setup(users=64, requests=640)), sheet)
    tpot = loop.latency.tpot.mean
    b, isl, osl = 64, 1024, 1024
    ctx, chunk = b * (isl + osl / 2), 8192 - b
    model = StepSheet.from_sheet(sheet)
    plain = model.time(b, 0, ctx, ctx)
    # ~8 whole prompts: each its own causal pairs, summed over layers
    carrying = model.time(b, chunk, ctx + chunk, ctx, chunk / isl * model.chunk_pairs(0, isl))
    by_hand = plain + b * isl / chunk / osl * (carrying - plain)
    assert tpot == pytest.approx(sheet.magnitude("itl"), rel=0.03)  # issue 14's 3%
    assert tpot == pytest.approx(1e3 * by_hand, rel=0.04)  # ms


def test_a_prompt_done_beside_decodes_runs_all_its_decode_steps(tmp_path: Path) -> None:
    # the second prompt arrives while the first decodes, so its prefill ends in a step
    # that also decodes: its 5 tokens are that step's first and 4 decode steps after it
    path = tmp_path / "lengths.csv"
    path.write_text("arrival_s,isl,osl\n0,1024,400\n0.5,512,5\n")
    result = simulate(sheet_of(), Setup(lengths=str(path)))
    t, steps = result.engine.reqs.table(), result.engine.log.arrays()
    assert t["first_token"][1] < t["end"][0]  # it joined while the first decoded
    after = (steps["end"] > t["first_token"][1]) & (steps["end"] <= t["end"][1])
    assert int(after.sum()) == 4
    assert steps["tokens"].sum() == 405
