"""perfgraph compare: measured runs held against the roofline, like for like.

The oracle is the seed's worked example (how-fast-can-llm-inference-go: Llama-3 70B FP8 on
2 × H100 SXM, ISL = OSL = 1024, 64 users: TTFT 36.22 ms, decode step 12.85 ms, 4980 output
tok/s = 2490 per GPU), which is exactly InferenceMAX's 1k1k H100 TP2 conc-64 row's setup.
The seed counts P = 7.00e10 parameters, so those checks pin n_params to it.
"""

from __future__ import annotations

import dataclasses
import json
import types
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from perfgraph.cli.main import main
from perfgraph.measured.adapters import Metric, read_runs
from perfgraph.measured.comparison import compare_runs, median_possible, model_curve, run_points
from perfgraph.measured.reading import read_measured
from perfgraph.measured.setup import Baseline, model_slug, precision_hint
from perfgraph.scenario.loading import ScenarioSpec, load

DATA = Path(__file__).parent / "data" / "measured"
IMAX = DATA / "inferencemax_llama70b_fp8"
H100 = (IMAX / "1k1k" / "H100.json", IMAX / "8k1k" / "H100.json")
SGLANG = DATA / "sglang_h200_datacrunch" / "llama_3_3_70b_online_output.jsonl"
LAMBDA = DATA / "lambda_vllm054_1xH100-80GB-SXM_prompt_10" / \
    "Meta-Llama-3.1-8B-FP8_tp1_len2048.json"
SEED_P = ("n_params", "7e10"), ("n_active_params", "7e10")
#: The seed's worked example assumes an FP8 KV cache (2 × 80 × 8 × 128 × 1 B a token); the
#: InferenceMAX vLLM rows ran vLLM's default --kv-cache-dtype auto (BF16 KV), which compare
#: models unless told otherwise: the seed's figures need its FP8 KV stated.
SEED_KV = (*SEED_P, ("kv_bytes", "1"))


#: the seed's own lengths: the InferenceMAX rows drew theirs in [0.8, 1] × 1024 and are
#: modelled at the mean (921.6) unless told otherwise
SEED_LENGTHS = {"isl": 1024, "osl": 1024}


def compared(*paths, overrides=None, **spec):
    runs = [run for p in paths for run in read_runs(p, overrides=overrides).runs]
    return compare_runs(runs, Baseline.from_spec(ScenarioSpec(**spec)))


@pytest.fixture(scope="module")
def h100():
    return compared(*H100)


def test_every_inferencemax_h100_row_compares_and_none_beats_the_roofline(h100):
    assert len(h100) == 30
    for c in h100:
        assert c.error is None, c.error
        ttft, tpot, tput = c.metric("ttft"), c.metric("tpot"), c.metric("throughput")
        # like for like: TPUT per GPU (total tokens ÷ TP) vs throughput × (isl+osl)/osl ÷ n_gpus
        assert tput.measured_as == "throughput_per_gpu"
        assert "total (input + output) tokens / s ÷ TP" in tput.definition
        assert "(isl + osl)/osl ÷ n_gpus" in tput.definition
        assert tput.measured <= tput.modelled
        assert ttft.measured >= ttft.modelled and tpot.measured >= tpot.modelled
        assert tpot.measured_as == "tpot" and ttft.statistic == "mean"
        assert not any(f.id == "beats-roofline" for f in c.findings)


def test_median_percent_of_possible_of_the_h100_rows_is_in_the_seeds_20_to_50(h100):
    median = median_possible(h100)
    assert 0.20 <= median <= 0.50
    # BF16 KV (vLLM's --kv-cache-dtype auto) raises each row's decode roofline by
    # (W + B·KV_bf16)/(W + B·KV_fp8): 0.3145 and 0.3435 with FP8 KV; recomputed by the graph
    # (0.3937 and 0.4230 at the nominal lengths; at their 0.9 × nominal means, as run)
    assert median == pytest.approx(0.3743, abs=0.001)
    assert median_possible(h100, "tpot") == pytest.approx(0.4096, abs=0.001)


def test_the_seed_worked_example_row_against_the_seed_numbers():
    """1k1k H100 TP2 conc 64: the seed's configuration, P = 7e10, FP8 KV, at the seed's
    1024/1024."""
    c = compared(H100[0], overrides=SEED_LENGTHS, sets=SEED_KV)[4]
    assert (c.setup.tp, c.setup.concurrency, c.setup.isl, c.setup.osl) == (2, 64, 1024, 1024)
    assert c.metric("ttft").modelled == pytest.approx(36.22, abs=0.01)
    assert c.metric("tpot").modelled == pytest.approx(12.85, abs=0.01)
    # total tokens per GPU: the seed's 2490 output tok/s per GPU × (1024 + 1024)/1024
    assert c.metric("throughput").modelled == pytest.approx(2 * 2490, rel=2e-3)
    assert c.metric("throughput").measured == pytest.approx(2127.2857)
    assert c.possible == pytest.approx(2127.2857 / 4980, rel=2e-3)
    assert c.metric("ttft").possible == pytest.approx(36.22 / 134.7738, rel=1e-3)
    # MFU = 2 × 2127.3 tok/s × 2 × 7e10 FLOP ÷ (2 × 1978.9 TFLOP/s)
    assert c.mfu == pytest.approx(2 * 2127.2857 * 2 * 7e10 / (2 * 1978.9e12), rel=1e-4)
    # MBU = 8.61e10 B per step ÷ 29.0358 ms ÷ (2 × 3.35 TB/s)
    assert c.mbu == pytest.approx(8.61e10 / 29.0358e-3 / 6.70e12, rel=2e-3)
    assert c.headroom == pytest.approx(1 / c.mbu)
    # MBU under 60% is said once: by the levers module's mbu_low advice, not also by ours
    assert [f.id for f in c.findings if not f.id.startswith("lever:")] == []
    assert any(f.symptom == "mbu_low" for f in c.findings)
    assert [f.id for f in compared(H100[0], overrides=SEED_LENGTHS, sets=SEED_KV)[4].findings
            if not f.id.startswith("lever:")] == []


def test_the_vllm_rows_keep_kv_in_bf16_as_vllms_kv_cache_dtype_auto_does():
    """vLLM's --kv-cache-dtype auto: the seed row at BF16 KV, by hand: 2 × 80 × 8 × 128 × 2 B
    = 327,680 B a token × 1536 mean context × 64 = 3.221e10 B, + 7e10 B of FP8 weights, over
    2 × 3.35 TB/s = 15.256 ms a step (the seed's FP8 KV: 8.61e10 B, 12.85 ms)."""
    c = compared(H100[0], overrides=SEED_LENGTHS, sets=SEED_P)[4]
    assert ("kv_bytes", "activation_bytes") in c.setup.deployment
    assert any("vLLM's KV-cache dtype defaults to auto" in n for n in c.setup.notes)
    assert c.metric("tpot").modelled == pytest.approx(
        (7e10 + 64 * 327_680 * 1536) / 6.70e12 * 1e3, rel=1e-3)
    assert c.metric("ttft").modelled == pytest.approx(36.22, abs=0.01)  # prefill: compute


def test_queued_requests_are_named_where_ttft_is_in_the_seconds(h100):
    row = h100[15 + 4]  # 8k1k TP2 conc 64: TTFT 58 s
    queued = [f for f in row.findings if f.id == "queued"]
    # 58.13 s over the roofline prefill of a 7373-token prompt (0.9 × 8192), 262.9 ms
    assert queued and "221×" in queued[0].text and "concurrency 64" in queued[0].text
    assert not any(f.id == "queued" for f in h100[0].findings)


def test_rate_paced_runs_use_littles_law_and_say_so():
    c = compared(DATA / "synthetic" / "vllm_append_result.jsonl", hardware="h100-sxm",
                 sets=(("tp", "4"),))[0]
    assert c.setup.concurrency == pytest.approx(3.9840637 * 11.2004)
    assert any("Little's law" in n for n in c.setup.notes)
    assert any("tp 4 from the scenario options" in n for n in c.setup.notes)
    assert c.metric("throughput").measured_as == "output_throughput"


def test_sglang_runs_need_model_hardware_and_tp_and_compare_medians():
    refused = compared(SGLANG)
    assert all(c.error and "pass --model" in c.error for c in refused)
    runs = compared(SGLANG, model="llama-3.3-70b", hardware="h200", precision="bf16",
                    sets=(("tp", "4"),))
    first = runs[0]
    assert first.error is None and first.setup.precision == "bf16"
    assert first.setup.isl == pytest.approx(508.7067, rel=1e-4)  # measured mean, not 1024
    assert first.metric("ttft").statistic == "median"
    assert first.metric("tpot").measured_as == "itl_median"
    assert "ITL" in first.metric("tpot").definition
    # rate-paced runs the server kept up with: held against the λ × OSL they were offered,
    # which a Poisson draw of R requests can pass by a little (#1: 1 req/s × 534.5 tokens;
    # 537.4 served); one that fell behind (under 90% of its rate) is the closed loop of its
    # requests in flight
    kept_up = [c.run.metrics["request_throughput"].value >= 0.9 * c.run.request_rate
               for c in runs]
    assert any(kept_up) and not all(kept_up)
    assert [c.setup.arrivals for c in runs] == ["paced" if k else "closed" for k in kept_up]
    assert all(c.metric("throughput").possible < 1 + 2 / c.run.completed ** 0.5 for c in runs)
    assert runs[0].metric("throughput").modelled == pytest.approx(1.0 * runs[0].setup.osl)
    assert not any(f.id == "beats-roofline" for c in runs for f in c.findings)


def test_lambda_run_compares_tpot_not_per_chunk_itl():
    refused = compared(LAMBDA)[0]
    assert "pass --hardware" in refused.error
    c = compared(LAMBDA, hardware="h100-sxm", sets=(("tp", "1"),))[0]
    assert (c.setup.model, c.setup.precision) == ("llama-3.1-8b", "fp8")
    assert c.metric("tpot").measured_as == "tpot"
    assert c.metric("tpot").measured == pytest.approx(6.0185, rel=1e-4)


def test_a_model_the_catalog_lacks_is_refused_unless_one_is_given():
    path = DATA / "aiperf_b200_kimik2.5_tp4_conc12_agentic" / "profile_export_aiperf.json"
    error = compared(path)[0].error
    assert "'/lustre/fsw/models/Kimi-K2.5-NVFP4' is not in the model catalog" in error
    c = compared(path, model="deepseek-v3", hardware="b200", sets=(("tp", "4"),))[0]
    assert c.error is None and c.setup.model == "deepseek-v3"
    assert any("not in the catalog; compared as deepseek-v3" in n for n in c.setup.notes)


def test_the_file_wins_over_the_options_where_it_speaks(h100):
    c = compared(H100[0], hardware="h200", sets=(("tp", "8"),))[0]
    assert (c.setup.hardware, c.setup.tp) == ("h100-sxm", 2)
    assert any("--hardware h200 not used" in n for n in c.setup.notes)


@pytest.mark.parametrize("text, slug", [
    ("meta-llama/Llama-3.3-70B-Instruct", "llama-3.3-70b"),
    ("neuralmagic/Meta-Llama-3.1-8B-FP8", "llama-3.1-8b"),
    ("Llama-3.3-70B", "llama-3.3-70b"),
    ("openai/gpt-oss-20b", "gpt-oss-20b"),
    ("/lustre/fsw/models/Kimi-K2.5-NVFP4", None),
    (None, None),
])
def test_model_slug(text, slug):
    assert model_slug(text) == slug


def test_precision_hint():
    assert precision_hint("Kimi-K2.5-NVFP4") == "fp4"
    assert precision_hint("Meta-Llama-3.1-8B-FP8") == "fp8"
    assert precision_hint("Llama-3.3-70B") is None


def test_head_of_line_blocking_and_beating_the_roofline_are_named(h100):
    run = read_runs(H100[0]).runs[4]
    metrics = dict(run.metrics)
    metrics["tpot_median"] = Metric(20.0, "ms", "median", "tpot")
    metrics["tpot_p99"] = Metric(200.0, "ms", "p99", "tpot")
    metrics["throughput_per_gpu"] = Metric(9000.0, "token/s", "mean", "total ÷ TP")
    odd = dataclasses.replace(run, metrics=metrics)
    c = compare_runs([odd], Baseline.from_spec(ScenarioSpec()))[0]
    ids = [f.id for f in c.findings]
    assert "head-of-line" in ids and "beats-roofline" in ids
    hol = next(f for f in c.findings if f.id == "head-of-line")
    assert "10.0× the median" in hol.text and "chunked prefill" in hol.lever


def test_levers_are_added_when_the_levers_module_exists(monkeypatch):
    symptom = types.SimpleNamespace(title="MBU under 60%")
    lever = types.SimpleNamespace(id="cuda-graphs", title="CUDA Graphs", tradeoff="capture")
    effect = types.SimpleNamespace(cell="itl", unit="ms", before=20.0, after=15.0)
    seen = []

    def diagnose(sheet):
        seen.append(sheet.magnitude("mbu"))
        return [types.SimpleNamespace(symptom=symptom, lever=lever, effects=(effect,),
                                      error=None)]
    monkeypatch.setattr("perfgraph.whatif.lever_advice.diagnose", diagnose)
    c = compared(H100[0])[4]
    lever_found = [f for f in c.findings if f.id == "lever:cuda-graphs"]
    assert lever_found and lever_found[0].effect == "itl 20 ms → 15 ms"
    assert len(seen) == 15 and seen[4] == pytest.approx(100 * c.mbu)  # measured MBU, in %


def test_model_curve_and_run_points_for_the_dashboard(h100):
    sheet = load(ScenarioSpec(sets=SEED_P)).sheet
    curve = model_curve(sheet, [1, 16, 64])
    assert curve["throughput"][2] == pytest.approx(4980, rel=2e-3)
    assert curve["itl"][2] == pytest.approx(12.85, abs=0.01)
    assert np.all(np.diff(curve["throughput"]) > 0)
    points = run_points(h100[:5])
    assert list(points["concurrency"]) == [4, 8, 16, 32, 64]
    # output tok/s of the run: TPUT per GPU × TP × OSL/(ISL+OSL)
    assert points["throughput"][4] == pytest.approx(2127.2857 * 2 * 0.5)
    assert points["itl"][4] == pytest.approx(29.0358)


# --------------------------------------------------------------------------- the file wins


def test_the_precision_the_file_states_wins_over_the_option(h100):
    assert all(c.setup.precision == "fp8" for c in h100)
    assert not any("precision" in n for c in h100 for n in c.setup.notes)
    bf16 = compared(H100[0], precision="bf16")
    assert all(c.setup.precision == "fp8" for c in bf16)
    assert any("--precision bf16 not used: the file says FP8" in n for n in bf16[0].setup.notes)
    assert not any(f.id == "beats-roofline" for c in bf16 for f in c.findings)


def test_a_precision_the_chip_cannot_compute_is_refused_or_gives_way(tmp_path):
    rows = json.loads((IMAX / "1k1k" / "H100.json").read_text())[:1]
    folder = tmp_path / "1k1k"
    folder.mkdir()
    (folder / "rows.json").write_text(json.dumps([{**rows[0], "Precision": "FP4"}]))
    refused = compared(folder / "rows.json")[0]
    assert "h100-sxm has no dense fp4 compute" in refused.error
    assert '--precision bf16 (or fp8) with --set weight_bytes="0.5625 B"' in refused.error
    given = compared(folder / "rows.json", precision="bf16")[0]
    assert given.error is None and given.setup.precision == "bf16"
    assert any("modelled at --precision bf16 as given" in n for n in given.setup.notes)


def test_an_option_the_file_overrules_is_named_not_used(h100):
    c = compared(H100[0], sets=(("tp", "4"),))
    assert any("--set tp=4 not used: the file says tp 2" in n for n in c[0].setup.notes)
    assert not any("not used" in n for n in c[5].setup.notes)  # a TP4 row: they agree


def test_an_explicit_concurrency_wins_over_littles_law():
    csv = DATA / "aiperf_b200_kimik2.5_tp4_conc12_agentic" / "profile_export_aiperf.csv"
    c = compared(csv, model="deepseek-v3", hardware="b200", sets=(("tp", "4"),
                                                                   ("concurrency", "12")))[0]
    assert c.setup.concurrency == 12 and c.setup.concurrency_source == "options"
    assert any("Little's-law estimate 10.3" in n and "not used" in n for n in c.setup.notes)
    estimated = compared(csv, model="deepseek-v3", hardware="b200", sets=(("tp", "4"),))[0]
    assert estimated.setup.concurrency == pytest.approx(10.3, abs=0.05)


GPU_CONC = DATA / "gpu_conc_h100_pcie"
#: gpt-oss-20b's MXFP4 experts on Hopper: weight-only FP4, matmuls and KV in BF16
MXFP4_ON_HOPPER = {"precision": "bf16", "sets": (("weight_bytes", "0.53 B"),)}


def test_gpu_conc_runs_are_modelled_at_the_requests_in_flight():
    runs = compared(*sorted(GPU_CONC.glob("benchmark_concurrency_*.json")), **MXFP4_ON_HOPPER)
    by_conc = {c.run.concurrency: c for c in runs}
    assert all(c.error is None and c.setup.model == "gpt-oss-20b" for c in runs)
    top = by_conc[1024]
    assert top.setup.concurrency == pytest.approx(2.5585303351806994 * 15.703726639206876)
    assert top.setup.concurrency_source == "in flight"
    assert any("in flight used, not the configured 1024" in n for n in top.setup.notes)
    assert by_conc[1].setup.concurrency == 1  # 1.01 in flight: the configured 1 stands
    assert not any(f.id == "beats-roofline" for c in runs for f in c.findings)


def test_inferencemax_e2el_is_compared_at_the_implied_osl(h100):
    assert h100[4].setup.osl == pytest.approx(921.6)  # as run: the mean of [0.8, 1] × 1024
    c = compared(H100[0], overrides=SEED_LENGTHS)[4]  # at 1024, the hand ratio below
    implied = (26937.8 - 134.7738) / 29.0358 + 1
    assert c.setup.osl == 1024 and c.setup.e2el_osl == pytest.approx(implied)
    assert "implied mean OSL" in c.metric("e2el").definition
    ttft, itl = c.metric("ttft").modelled, c.metric("tpot").modelled
    # itl at the shorter OSL is a little lower (less KV on average: BF16 KV, vLLM's default,
    # is a third of the step's bytes, so 1.0% lower here): the sheet's itl at the implied OSL
    spec = c.setup.spec(ScenarioSpec())
    at = (("tp", "2"), ("concurrency", "64"), ("isl", "1024"), ("osl", repr(implied)))
    sheet = load(dataclasses.replace(spec, sets=(*spec.sets, *at))).sheet
    itl_implied = sheet.magnitude("itl", "ms")
    assert itl_implied == pytest.approx(itl * 0.9898, rel=1e-3)  # (W + B·k·1486)/(W + B·k·1536)
    assert c.metric("e2el").modelled == pytest.approx(ttft + implied * itl_implied, rel=1e-9)
    assert c.metric("e2el").modelled < ttft + 1024 * itl
    lam = compared(LAMBDA, hardware="h100-sxm", sets=(("tp", "1"),))[0]
    assert "at the measured mean OSL" in lam.metric("e2el").definition


def test_mbu_under_60_is_said_once(monkeypatch):
    symptom = types.SimpleNamespace(id="mbu_low", title="MBU under 60%")
    lever = types.SimpleNamespace(id="profile", title="Profile first", tradeoff="an afternoon")
    monkeypatch.setattr("perfgraph.whatif.lever_advice.diagnose",
                        lambda sheet: [types.SimpleNamespace(symptom=symptom, lever=lever,
                                                             effects=(), error=None)])
    c = compared(H100[0])[4]
    assert [f.id for f in c.findings] == ["lever:profile"]
    monkeypatch.setattr("perfgraph.whatif.lever_advice.diagnose", lambda sheet: [])
    assert [f.id for f in compared(H100[0])[4].findings] == ["low-mbu"]


# --------------------------------------------------------------------------- outputs


def test_table_and_markdown_show_the_caveats_and_where_lengths_came_from(capsys):
    args = [str(LAMBDA), "--hardware", "h100-sxm", "--set", "tp=1"]
    for fmt in ("table", "markdown"):
        assert main(["compare", *args, "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert "3 of 10 completed requests returned zero output tokens" in out
        assert "mean 63.09 ms (the file's mean 44.16 ms" in out
        assert "≈8.5 tokens per chunk" in out
        assert "ISL/OSL in 'model at': measured means" in out
    assert main(["compare", str(SGLANG), "--model", "llama-3.3-70b", "--hardware", "h200",
                 "--set", "tp=4"]) == 0
    assert "ISL: measured mean 509 vs configured 1024" in capsys.readouterr().out
    assert main(["compare", str(H100[0]), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "taken from the directory name '1k1k'" in out
    assert "ISL/OSL in 'model at': expected means of the configured random range" in out


def test_json_and_parquet_carry_configured_and_measured_lengths(tmp_path, capsys):
    assert main(["compare", str(SGLANG), "--model", "llama-3.3-70b", "--hardware", "h200",
                 "--set", "tp=4", "--format", "json"]) == 0
    run = json.loads(capsys.readouterr().out)["runs"][3]
    assert run["isl_configured"] == 1024 and run["isl_measured"] == pytest.approx(509.58, 1e-3)
    assert run["isl_source"] == "measured" and run["isl"] == run["isl_measured"]
    assert any("measured mean 510" in c for c in run["caveats"])
    out = tmp_path / "runs.parquet"
    assert main(["compare", str(H100[0]), "-f", "parquet", "-o", str(out)]) == 0
    frame = pl.read_parquet(out)
    assert frame["osl_source"][0] == "expected" and frame["osl_measured"][0] is None
    assert frame["osl_implied"][4] == pytest.approx(924, abs=1)
    assert frame["precision_in_file"][0] == "FP8"


def test_writing_to_a_file_still_reports_refused_runs_on_stderr(tmp_path, capsys):
    out = tmp_path / "bad.parquet"
    assert main(["compare", str(DATA / "bad"), str(H100[0]), "-f", "parquet",
                 "-o", str(out)]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("perfgraph: refused")]
    assert len(lines) >= 20 and "Traceback" not in err
    assert any("zero_completed.json #0 [format: vllm]: 'completed' is 0" in x for x in lines)
    assert any("unknown_format.json: the JSON content matches no known" in x for x in lines)
    assert "wrote" in err and "15 runs compared" in err


def test_the_format_is_named_for_a_file_whose_every_run_was_refused(capsys):
    assert main(["compare", str(DATA / "bad" / "zero_completed.json")]) == 1
    assert "zero_completed.json #0 [format: vllm]" in capsys.readouterr().out


# --------------------------------------------------------------------------- malformed files


def test_every_bad_file_is_a_reported_problem_never_a_crash():
    measured = read_measured([str(DATA / "bad")])
    assert len({p.source for p in measured.problems}) == len(list((DATA / "bad").iterdir()))
    reasons = {Path(p.source).name: p.reason for p in measured.problems}
    assert "file is empty" in reasons["empty.json"]
    assert "not valid JSON" in reasons["truncated.json"]
    assert "matches no known measured-run format" in reasons["unknown_format.json"]
    assert "'completed' is 0" in reasons["zero_completed.json"]
    assert "NaN" in reasons["aiperf_nan_ttft.json"]
    assert "no such file" in read_measured(["nope.json"]).problems[0].reason


def test_cli_compare_prints_the_table_and_the_summary(capsys):
    assert main(["compare", *map(str, H100)]) == 0
    out = capsys.readouterr().out
    assert "[format: inferencemax]" in out
    # BF16 KV as vLLM keeps it (FP8 KV read 34.4%, 32.7%, 31.4%; TTFT is compute-bound, same)
    # E2EL at each row's implied mean OSL (≈ 0.9 × 1024), not the configured 1024
    assert "median % of possible: TTFT 23.5%, TPOT 41%, E2EL 38.9%, throughput 37.4%" in out
    assert "no run beats the roofline" in out
    assert "per GPU here is total (input + output) tokens / s ÷ TP" in out


def test_cli_compare_with_bad_files_reports_them_and_goes_on(capsys):
    assert main(["compare", str(DATA / "bad"), str(H100[0])]) == 0
    out = capsys.readouterr().out
    assert "refused:" in out and "empty.json: file is empty" in out
    assert "15 runs compared" in out


def test_cli_compare_with_nothing_comparable_fails_cleanly(capsys):
    assert main(["compare", str(DATA / "bad")]) == 1
    err = capsys.readouterr().err
    assert "no run could be compared" in err and "Traceback" not in err


def test_cli_compare_json_markdown_and_parquet(tmp_path, capsys):
    assert main(["compare", str(H100[0]), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["compared"] == 15
    assert doc["runs"][4]["metrics"]["throughput"]["possible"] == pytest.approx(0.494, abs=0.01)
    assert main(["compare", str(H100[0]), "--format", "markdown"]) == 0
    assert "| run | model at | TTFT |" in capsys.readouterr().out
    out = tmp_path / "runs.parquet"
    assert main(["compare", str(H100[0]), "--format", "parquet", "--out", str(out)]) == 0
    frame = pl.read_parquet(out)
    assert frame.height == 15
    assert frame["throughput_possible"][4] == pytest.approx(0.494, abs=0.01)  # 2127 / 4307
    assert main(["compare", str(H100[0]), "--format", "parquet"]) == 2
    assert "--out" in capsys.readouterr().err


def test_cli_compare_bad_scenario_option_is_one_line(capsys):
    assert main(["compare", str(H100[0]), "--hardware", "h100-sxn"]) == 2
    err = capsys.readouterr().err
    assert "unknown hardware 'h100-sxn'" in err and "Traceback" not in err


def test_a_run_of_unsaid_precision_on_a_gpu_without_the_default_one_names_the_ones_it_has():
    """The A100 vLLM JSONs name no precision and the default (FP8) has no dense compute on an
    A100: the run is refused with the precisions the chip has, not failed deep in the model."""
    path = DATA / "a100_vllm_llama33_70b" / "01_tp8_pp1" / \
        "serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_inf.json"
    [c] = compare_runs(read_runs(path).runs, Baseline.from_spec(ScenarioSpec()))
    assert c.error == ("the file does not say its precision, and the default fp8 has no dense "
                       "compute on a100-40gb: pass --precision (bf16 or int8)")
    [ok] = compare_runs(read_runs(path).runs, Baseline.from_spec(ScenarioSpec(precision="bf16")))
    assert ok.error is None and ok.metric("tpot").modelled is not None
