"""Measured-run adapters: every real file reads, formats are detected from content, the numbers
come out as the files give them, and malformed files are refused with a reason.

The numbers asserted below were read by eye from the files in tests/data/measured (see its
PROVENANCE.md).
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
import statistics
from pathlib import Path

import pytest

from perfgraph.measured.adapters import (
    FORMATS,
    MeasuredFileError,
    UnknownFormatError,
    detect_format,
    read_runs,
)
from perfgraph.measured.derived import derive_runs
from perfgraph.measured.setup import hardware_slug

DATA = Path(__file__).parent / "data" / "measured"
SHARED = Path("/work/shared/measured")
MEASUREMENT_SUFFIXES = {".json", ".jsonl", ".csv"}
#: Markdown files that are measurements (published tables); other .md files are notes
MEASURED_MARKDOWN = {"perf-overview_258c7540_throughput.md", "perf-overview_258c7540_online.md"}
#: measurement-looking files refused whole, with the reason they are refused for
REFUSED_WHOLE = {"benchmark_results.json": "a summary table of the vLLM result JSONs beside it"}

SGLANG_ONLINE = DATA / "sglang_h200_datacrunch/llama_3_3_70b_online_output.jsonl"
SGLANG_OFFLINE = DATA / "sglang_h200_datacrunch/llama_3_3_70b_offline_output.jsonl"
LAMBDA = DATA / "lambda_vllm054_1xH100-80GB-SXM_prompt_10/Meta-Llama-3.1-8B-FP8_tp1_len2048.json"
GPU_CONC = DATA / "gpu_conc_h100_pcie"
AIPERF = DATA / "aiperf_b200_kimik2.5_tp4_conc12_agentic"
IMAX = DATA / "inferencemax_llama70b_fp8"
IMAX_TRT = DATA / "inferencemax_llama70b_fp8_trt"  # a TensorRT-LLM runner, apart from the vLLM rows
SYN = DATA / "synthetic"
BAD = DATA / "bad"

EXPECTED_FORMAT = {
    SGLANG_ONLINE: "sglang",
    SGLANG_OFFLINE: "sglang",
    LAMBDA: "vllm-legacy",
    GPU_CONC / "benchmark_concurrency_1.json": "gpu-conc",
    GPU_CONC / "benchmark_concurrency_64.json": "gpu-conc",
    GPU_CONC / "benchmark_concurrency_1024.json": "gpu-conc",
    GPU_CONC / "benchmark_summary_20250811_091131.json": "gpu-conc",
    AIPERF / "profile_export_aiperf.json": "aiperf-json",
    AIPERF / "profile_export_aiperf.csv": "aiperf-csv",
    IMAX / "1k1k/H100.json": "inferencemax",
    IMAX / "1k1k/H200.json": "inferencemax",
    IMAX_TRT / "1k1k-70b/H200-TRT.json": "inferencemax",
    IMAX / "8k1k/H100.json": "inferencemax",
    SYN / "vllm_bench_serve_conc64.json": "vllm",
    SYN / "vllm_append_result.jsonl": "vllm",
    SYN / "agg_llama70b_h100_tp2_conc64.json": "inferencemax-agg",
}


def _run(result, index):
    return next(r for r in result.runs if r.index == index)


def _derived(run):
    """The run once the cells worked out what its reader left them (its mean lengths, the
    caveats that need them)."""
    return derive_runs(None, [run])[0]


def _note(run, *words):
    hits = [n for n in run.notes if all(w in n for w in words)]
    assert hits, f"no note with {words} in {run.notes}"
    return hits[0]


def _shared_files():
    if not SHARED.is_dir():
        return []
    return sorted(p for p in SHARED.rglob("*") if p.is_file() and p.name != "PROVENANCE.md")


# --------------------------------------------------------------------------- every file reads


@pytest.mark.skipif(not SHARED.is_dir(), reason="/work/shared/measured is not on this machine")
@pytest.mark.parametrize("path", _shared_files(), ids=lambda p: str(p.relative_to(SHARED)))
def test_every_shared_file_reads_or_is_refused_with_reason(path):
    if path.suffix not in MEASUREMENT_SUFFIXES and path.name not in MEASURED_MARKDOWN:
        # command lines, console logs, configs, notes
        with pytest.raises((UnknownFormatError, MeasuredFileError)) as refused:
            read_runs(path)
        assert str(path) in str(refused.value) and len(str(refused.value)) > len(str(path)) + 20
        return
    if path.name in REFUSED_WHOLE:
        with pytest.raises(MeasuredFileError, match=REFUSED_WHOLE[path.name]):
            read_runs(path)
        return
    result = read_runs(path)
    assert result.format in FORMATS
    assert result.runs, f"{path}: no run read"
    assert all(p.reason for p in result.problems)
    for run in result.runs:
        assert run.metrics and run.label
        assert all(math.isfinite(m.value) and m.value >= 0 for m in run.metrics.values())


@pytest.mark.parametrize("path", list(EXPECTED_FORMAT), ids=lambda p: p.name)
def test_format_detected_from_content(path):
    assert detect_format(path) == EXPECTED_FORMAT[path]
    result = read_runs(path)
    assert result.format == EXPECTED_FORMAT[path]
    assert result.runs and not result.problems


def test_detection_ignores_the_file_name(tmp_path):
    misleading = tmp_path / "profile_export_aiperf.csv"
    shutil.copy(SGLANG_ONLINE, misleading)
    assert detect_format(misleading) == "sglang"
    misleading = tmp_path / "agg_results.jsonl"
    shutil.copy(IMAX / "1k1k/H100.json", misleading)
    assert detect_format(misleading) == "inferencemax"


# --------------------------------------------------------------------------- InferenceMAX


def test_inferencemax_h100_tp2_conc64_row():
    result = read_runs(IMAX / "1k1k/H100.json")
    assert len(result.runs) == 15
    run = _run(result, 4)
    assert (run.tp, run.concurrency, run.hardware) == (2, 64, "H100-SXM")
    assert run.label == "H100-SXM TP2 conc 64"
    assert run.metrics["ttft"].value == pytest.approx(134.7738)
    assert run.metrics["tpot"].value == pytest.approx(29.0358)
    assert run.metrics["e2el"].value == pytest.approx(26937.8)
    assert run.metrics["throughput_per_gpu"].value == pytest.approx(2127.2857)
    # the total is the sheet's measured_total_throughput: TPUT per GPU × TP
    assert "total_throughput" not in run.metrics and "total_throughput" in dict(run.derive)
    (derived,) = derive_runs(None, [run])
    assert derived.metrics["total_throughput"].value == pytest.approx(2 * 2127.2857)
    assert "TPUT per GPU × TP" in derived.metrics["total_throughput"].definition
    assert "÷ TP" in run.metrics["throughput_per_gpu"].definition
    assert run.metrics["ttft"].statistic == "mean" and run.metrics["ttft"].unit == "ms"
    assert run.isl is None and run.osl is None  # the lengths are cells: the range's means
    assert (derived.isl, derived.osl, derived.isl_configured, derived.osl_configured) == (
        921.6, 921.6, 1024, 1024)  # modelled at the mean of [0.8, 1] × 1024
    assert run.model == "Llama-3.3-70B"
    _note(run, "SXM")
    _note(run, "TPUT per GPU is total (input+output) tokens/s ÷ TP")
    _note(derived, "directory name '1k1k'")  # a late caveat: it states the derived means
    implied = (26937.8 - 134.7738) / 29.0358 + 1
    assert f"{implied:.0f}" in _note(derive_runs(None, [run])[0], "implied mean OSL")


def test_inferencemax_8k1k_lengths_and_queueing_note():
    result = read_runs(IMAX / "8k1k/H100.json")
    run = _run(result, 4)  # H100 TP2 conc 64: TTFT 58 s
    assert (run.isl_configured, run.osl_configured) == (8192, 1024)
    assert run.metrics["ttft"].value == pytest.approx(58128.3265)
    _note(run, "requests queued")
    assert not any("queued" in n for n in _run(result, 0).notes)


def test_an_overridden_length_is_the_one_the_range_draws_under():
    # the rows' client draws in [0.8, 1] × the configured ISL whoever configured it: an
    # override of 2048 is modelled at 2048 × 0.9 = 1843.2 (the directory's 1024 for the OSL)
    run = _derived(read_runs(IMAX / "1k1k/H100.json", overrides={"isl": 2048}).runs[0])
    assert (run.isl_configured, run.osl_configured) == (2048, 1024)
    assert (run.isl, run.osl) == (pytest.approx(1843.2), pytest.approx(921.6))
    _note(run, "isl 2048", "from overrides replaces 1024 in the file")


def test_inferencemax_h200_and_overrides():
    result = read_runs(IMAX / "1k1k/H200.json", overrides={"model": "meta-llama/Llama-3.3-70B"})
    run = _run(result, 0)
    assert (run.hardware, run.tp, run.concurrency) == ("H200", 1, 4)  # raw; setup maps it
    assert run.metrics["throughput_per_gpu"].value == pytest.approx(358.3077)
    assert run.model == "meta-llama/Llama-3.3-70B"
    assert not any("SXM" in n for n in run.notes)


def test_inferencemax_runner_suffix_names_the_engine():
    """'H200-TRT' is an H200 that ran TensorRT-LLM: the hardware is h200 and the engine
    trtllm, with no --hardware asked for (the dashboard's TRT rows, first row by eye)."""
    from perfgraph.measured.setup import Baseline, setup_run
    from perfgraph.scenario.loading import ScenarioSpec

    result = read_runs(IMAX_TRT / "1k1k-70b/H200-TRT.json")
    assert len(result.runs) == 24 and not result.problems
    run = _run(result, 0)
    assert (run.hardware, run.engine, run.tp, run.concurrency) == ("H200", "trt", 1, 4)
    assert run.spec_decoding is None
    assert run.metrics["ttft"].value == pytest.approx(544.9439)
    assert run.metrics["tpot"].value == pytest.approx(20.1242)
    assert run.metrics["throughput_per_gpu"].value == pytest.approx(375.8126)
    _note(run, "hardware 'H200-TRT' read as H200 running trt")
    # modelled as compare models it: derived first (its ISL/OSL are cells)
    setup = setup_run(_derived(run), Baseline.from_spec(ScenarioSpec(model="llama-3.3-70b")))
    assert (setup.hardware, setup.engine) == ("h200", "trtllm")


@pytest.mark.parametrize(("name", "parts"), [
    ("H200-TRT", ("H200", "trt", None)),
    ("B200-TRT", ("B200", "trt", None)),
    ("h200-sglang", ("h200", "sglang", None)),
    ("b200-dynamo-trt-mtp", ("b200", "dynamo-trt", "mtp")),
    ("mi355x_mori-sglang_mtp", ("mi355x", "mori-sglang", "mtp")),
    ("H100", ("H100", None, None)),
    ("H100-SXM", ("H100-SXM", None, None)),  # a part's name, not a framework
])
def test_inferencemax_runner_names(name, parts):
    from perfgraph.measured.adapters.inferencemax import split_runner

    assert split_runner(name) == parts


def test_inferencemax_agg_seconds_become_ms():
    run = read_runs(SYN / "agg_llama70b_h100_tp2_conc64.json").runs[0]
    assert (run.hardware, run.tp, run.concurrency) == ("H100-SXM", 2, 64)
    assert run.model == "meta-llama/Llama-3.3-70B-Instruct"
    assert run.metrics["ttft"].value == pytest.approx(134.8)
    assert run.metrics["tpot_p99"].value == pytest.approx(33.8)
    assert run.metrics["e2el_median"].value == pytest.approx(27010.5)
    assert run.metrics["throughput_per_gpu"].value == pytest.approx((589312 + 590080) / 266.5 / 2)
    (derived,) = derive_runs(None, [run])  # tput_per_gpu × 2 GPUs, a cell
    assert derived.metrics["total_throughput"].value == pytest.approx((589312 + 590080) / 266.5)
    assert not any("intvty" in k for k in run.metrics)
    assert (run.isl_configured, run.osl_configured) == (1024, 1024)


# --------------------------------------------------------------------------- SGLang


def test_sglang_rate8_line():
    result = read_runs(SGLANG_ONLINE)
    assert [r.index for r in result.runs] == [1, 2, 3, 4, 5, 6, 7]  # line numbers
    read = _run(result, 4)
    assert read.isl is None and read.osl is None  # the lengths are cells: totals ÷ completed
    run = _derived(read)
    assert (run.request_rate, run.concurrency) == (8.0, None)
    assert run.label == "random 1024/1024 rate 8"
    assert "ttft" not in run.metrics  # the old schema has no mean TTFT
    assert run.metrics["ttft_median"].value == pytest.approx(191.41179136931896)
    assert run.metrics["ttft_median"].statistic == "median"
    assert run.metrics["itl_median"].value == pytest.approx(70.76324708759785)
    assert run.metrics["e2el"].value == pytest.approx(52064.764045071985)
    assert run.metrics["output_throughput"].value == pytest.approx(3515.0190112201713)
    assert run.isl == pytest.approx(1222995 / 2400)  # ≈ 509.6, not the configured 1024
    assert run.osl == pytest.approx(1218922 / 2400)
    assert (run.isl_configured, run.osl_configured) == (1024, 1024)
    assert "configured 1024" in _note(run, "ISL: measured mean 510")
    _note(run, "only the MEDIAN TTFT")
    _note(run, "achieved 6.92 requests/s")
    assert run.completed == 2400 and run.duration_s == pytest.approx(346.7753648299258)
    assert run.model is None and run.tp is None and run.hardware is None


def test_sglang_offline_and_sharegpt():
    result = read_runs(SGLANG_OFFLINE)
    first = _derived(_run(result, 1))
    assert math.isinf(first.request_rate) and first.label == "random 1024/1024 rate inf"
    assert first.isl == pytest.approx(1525074 / 3000)
    sharegpt = _derived(_run(result, 7))
    assert sharegpt.isl_configured is None and sharegpt.label == "sharegpt rate inf"
    assert sharegpt.isl == pytest.approx(448102 / 2000)
    _note(sharegpt, "do not apply")


def test_sidecar_and_overrides(tmp_path):
    target = tmp_path / "online.jsonl"
    shutil.copy(SGLANG_ONLINE, target)
    (tmp_path / "perfgraph.meta.toml").write_text(
        'model = "meta-llama/Llama-3.3-70B-Instruct"\nhardware = "H200"\ntp = 4\n'
    )
    run = _run(read_runs(target), 4)
    assert (run.model, run.hardware, run.tp) == ("meta-llama/Llama-3.3-70B-Instruct", "H200", 4)
    assert run.label == "random 1024/1024 H200 TP4 rate 8"
    # both cells: the total is the token totals ÷ the duration, per GPU that ÷ 4 GPUs
    (derived,) = derive_runs(None, [run])
    total = (run.tokens_in + run.tokens_out) / run.duration_s
    assert derived.metrics["total_throughput"].value == pytest.approx(total)
    assert derived.metrics["throughput_per_gpu"].value == pytest.approx(total / 4)
    _note(run, "perfgraph.meta.toml")
    (tmp_path / "online.jsonl.meta.toml").write_text("tp = 8\n")
    run = _run(read_runs(target, overrides={"model": "mine"}), 4)
    assert (run.model, run.tp) == ("mine", 8)
    _note(run, "taken from overrides")


def test_bad_overrides_are_rejected(tmp_path):
    with pytest.raises(ValueError, match="unknown keys"):
        read_runs(SGLANG_ONLINE, overrides={"gpus": 4})
    with pytest.raises(ValueError, match="whole number"):
        read_runs(SGLANG_ONLINE, overrides={"tp": 2.5})


# --------------------------------------------------------------------------- vLLM


def test_lambda_zero_length_outputs():
    run = _derived(read_runs(LAMBDA).runs[0])
    assert run.model == "neuralmagic/Meta-Llama-3.1-8B-FP8"
    assert run.hardware is None  # only the path says 1xH100-80GB-SXM, the content does not
    assert math.isinf(run.request_rate) and run.concurrency is None
    assert run.completed == 10
    assert (run.isl, run.osl) == (pytest.approx(136.9), pytest.approx(44.2))
    _note(run, "3 of 10 completed requests returned zero output tokens")
    ttfts = [0.06464132100518327, 0.06385372299700975, 0.06347597000421956, 0.0626885300007416]
    ttfts += [0.062372803993639536, 0.06200405799609143, 0.06258117200923152]
    assert run.metrics["ttft"].value == pytest.approx(statistics.fmean(ttfts) * 1000)
    assert run.metrics["ttft_median"].value == pytest.approx(statistics.median(ttfts) * 1000)
    assert "44.16" in _note(run, "recomputed", "output > 0")
    assert run.metrics["tpot"].value == pytest.approx(6.018531635219421)
    assert run.metrics["itl"].value == pytest.approx(50.32475644418607)
    assert run.metrics["e2el"].value == pytest.approx(290.35341650014743)
    assert run.metrics["total_throughput"].value == pytest.approx(
        1281.9486152410154 + 413.89429359863317
    )
    _note(run, "tokens per chunk")
    assert "excluding the first" in run.metrics["tpot"].definition.lower()


def test_vllm_current_with_goodput_colon_key():
    run = _derived(read_runs(SYN / "vllm_bench_serve_conc64.json").runs[0])
    assert (run.concurrency, run.request_rate) == (64, None)
    assert run.metrics["request_goodput"].value == pytest.approx(1.87)
    _note(run, "'request_goodput:'")
    assert run.metrics["e2el_p99"].value == pytest.approx(31900.4)
    assert run.metrics["total_throughput"].value == pytest.approx((589312 + 590080) / 266.5)
    assert run.isl == pytest.approx(589312 / 640)


def test_vllm_append_result_jsonl():
    result = read_runs(SYN / "vllm_append_result.jsonl")
    slow, fast = _derived(_run(result, 1)), _derived(_run(result, 2))
    assert (slow.request_rate, fast.request_rate) == (4.0, 16.0)
    assert "request_goodput" not in slow.metrics  # null: no --goodput given
    _note(fast, "achieved 11.00 requests/s")
    assert not any("achieved" in n for n in slow.notes)


# --------------------------------------------------------------------------- gpu_conc


def test_gpu_conc_single_level_file():
    run = read_runs(GPU_CONC / "benchmark_concurrency_64.json").runs[0]
    assert (run.model, run.hardware, run.tp, run.concurrency) == (
        "openai/gpt-oss-20b",
        "NVIDIA H100 PCIe",  # as the file prints it; run setup maps it to h100-pcie
        1,
        64,
    )
    assert run.metrics["output_throughput"].value == pytest.approx(2068.1596348127746)
    assert run.metrics["ttft"].value == pytest.approx(116.00845248986643)
    assert run.metrics["ttft_median"].value == pytest.approx(105.94344139099121)
    assert run.metrics["e2el_p99"].value == pytest.approx(17580.12586593628)
    assert run.metrics["output_speed_per_user_median"].value == pytest.approx(79.49346675282791)
    assert (run.isl, run.osl, run.completed) == (1000, 1000, 423)
    assert "27.5 requests in flight" in _note(derive_runs(None, [run])[0], "Little's law")


def test_gpu_conc_summary_and_failures():
    result = read_runs(GPU_CONC / "benchmark_summary_20250811_091131.json")
    assert [r.concurrency for r in result.runs] == [1, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    assert _run(result, 7).completed == 455
    _note(_run(result, 7), "103 requests failed")
    last = read_runs(GPU_CONC / "benchmark_concurrency_1024.json").runs[0]
    assert "66 timeouts" in _note(last, "66 requests failed")


# --------------------------------------------------------------------------- AIPerf


def test_aiperf_json():
    overrides = {"tp": 4, "hardware": "B200"}
    run = read_runs(AIPERF / "profile_export_aiperf.json", overrides=overrides).runs[0]
    assert (run.model, run.concurrency, run.completed) == (
        "/lustre/fsw/models/Kimi-K2.5-NVFP4",
        12,
        191,
    )
    assert (run.hardware, run.tp, run.label) == ("B200", 4, "B200 TP4 conc 12")
    assert run.duration_s == pytest.approx(1817.401431296)
    assert run.isl == pytest.approx(100742.03664921466)
    assert run.osl == pytest.approx(972.9738219895288)
    assert run.metrics["ttft"].value == pytest.approx(65788.67416623037)
    assert run.metrics["ttft_p99"].value == pytest.approx(112333.94356379998)
    assert run.metrics["tpot"].value == pytest.approx(40.383163526399265)  # AIPerf "ITL"
    assert run.metrics["itl"].value == pytest.approx(564.0181169778109)  # inter-chunk latency
    assert run.metrics["request_throughput"].value == pytest.approx(0.10509510816429628)
    assert derive_runs(None, [run])[0].metrics["throughput_per_gpu"].value == \
        pytest.approx(10689.750027403732 / 4)
    _note(run, "submission_valid=false", "context_overflow_rate_exceeded")
    _note(run, "prefix-cache hit of 95%")


def test_aiperf_csv_matches_json_to_two_decimals():
    csv_run = read_runs(AIPERF / "profile_export_aiperf.csv").runs[0]
    json_run = read_runs(AIPERF / "profile_export_aiperf.json").runs[0]
    assert csv_run.concurrency is None and csv_run.model is None  # not in the CSV
    assert csv_run.completed == 191 and csv_run.duration_s == pytest.approx(1817.40)
    for key in ("ttft", "ttft_p99", "tpot", "itl", "e2el", "output_throughput", "total_throughput"):
        assert csv_run.metrics[key].value == pytest.approx(json_run.metrics[key].value, abs=0.006)
    assert csv_run.metrics["request_throughput"].value == pytest.approx(0.11)
    _note(csv_run, "rounded to 2 decimals")


# --------------------------------------------------------------------------- bad files


def test_truncated_json_raises_with_line_and_column():
    with pytest.raises(MeasuredFileError) as info:
        read_runs(BAD / "truncated.json")
    assert (info.value.line, info.value.col) == (22, 35)
    assert "truncated.json" in str(info.value) and "line 22, column 35" in str(info.value)


def test_empty_file_raises():
    with pytest.raises(MeasuredFileError, match="empty"):
        read_runs(BAD / "empty.json")


def test_unknown_format_lists_the_formats():
    with pytest.raises(UnknownFormatError) as info:
        read_runs(BAD / "unknown_format.json")
    for name in FORMATS:
        assert name in str(info.value)
    with pytest.raises(UnknownFormatError):
        detect_format(AIPERF / "vllm_command.txt")


@pytest.mark.parametrize(
    ("name", "fmt", "good", "refused"),
    [
        ("truncated_line.jsonl", "sglang", [1, 3], {2: "line 2 is not valid JSON"}),
        ("missing_fields.jsonl", "sglang", [1], {2: "'total_input_tokens' is missing"}),
        ("zero_completed.json", "vllm", [], {0: "'completed' is 0"}),
        ("negative_nan_rows.json", "inferencemax", [0], {1: "negative", 2: "NaN"}),
        ("gpu_conc_no_success.json", "gpu-conc", [], {0: "'successful_requests' is 0"}),
        ("aiperf_nan_ttft.json", "aiperf-json", [], {0: "'time_to_first_token.avg' is NaN"}),
        ("sglang_zero_duration.jsonl", "sglang", [2], {1: "'duration' is 0 s"}),
        ("sglang_fractional_completed.jsonl", "sglang", [2],
         {1: "'completed' is 0.4: a count of requests must be a whole number"}),
        ("vllm_fractional_completed.json", "vllm", [], {0: "'completed' is 0.5"}),
        ("vllm_huge_integer.json", "vllm", [], {0: "'duration' is too large"}),
        ("vllm_zero_duration.json", "vllm", [], {0: "'duration' is 0 s"}),
        ("vllm_zero_output_tokens.json", "vllm", [],
         {0: "'total_output_tokens' is 0: the run produced no output tokens"}),
        ("vllm_zero_concurrency.json", "vllm", [], {0: "'max_concurrency' is 0"}),
        ("vllm_concurrency_1e12.json", "vllm", [], {0: "concurrency must be from 1 to 1,000,000"}),
        ("vllm_tp_zero.json", "vllm", [], {0: "'tensor_parallel_size' is 0: TP must be"}),
        ("vllm_tp_1e30.json", "vllm", [], {0: "whole number from 1 to 1024"}),
        ("aiperf_header_only.csv", "aiperf-csv", [], {0: "no data rows"}),
        ("array_line.jsonl", "sglang", [1, 3], {2: "expected a JSON object, found an array"}),
    ],
)
def test_bad_runs_are_refused_with_reason(name, fmt, good, refused):
    result = read_runs(BAD / name)
    assert result.format == fmt
    assert [r.index for r in result.runs] == good
    assert {p.index for p in result.problems} == set(refused)
    for problem in result.problems:
        assert refused[problem.index] in problem.reason
        assert problem.source.endswith(name)


def test_a_reader_bug_becomes_a_problem_for_that_run_not_a_traceback(monkeypatch):
    from perfgraph.measured.adapters import sglang

    def broken(*args):
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(sglang, "_throughputs", broken)
    result = read_runs(SGLANG_ONLINE)
    assert result.runs == () and len(result.problems) == 7
    assert all("could not be read as sglang: ZeroDivisionError" in p.reason
               for p in result.problems)


def test_a_fifo_or_a_folder_is_refused_without_reading_it(tmp_path):
    fifo = tmp_path / "runs.json"
    os.mkfifo(fifo)
    with pytest.raises(MeasuredFileError, match="pipe"):
        read_runs(fifo)  # would hang if it were opened
    with pytest.raises(MeasuredFileError, match="folder"):
        read_runs(tmp_path)


def test_the_precision_a_file_states_is_kept():
    run = read_runs(IMAX / "1k1k/H100.json").runs[0]
    assert run.precision == "FP8"
    assert read_runs(SYN / "agg_llama70b_h100_tp2_conc64.json").runs[0].precision == "fp8"
    assert read_runs(SGLANG_ONLINE).runs[0].precision is None


def test_a_sidecar_can_give_the_precision(tmp_path):
    target = tmp_path / "online.jsonl"
    shutil.copy(SGLANG_ONLINE, target)
    (tmp_path / "perfgraph.meta.toml").write_text('precision = "BF16"\n')
    run = read_runs(target).runs[0]
    assert run.precision == "bf16"
    _note(run, "precision 'bf16' taken from perfgraph.meta.toml")
    with pytest.raises(ValueError, match="'precision' must be a string"):
        read_runs(SGLANG_ONLINE, overrides={"precision": 8})


@pytest.mark.parametrize(("overrides", "message"), [
    ({"tp": 0}, "TP must be a whole number from 1 to 1024"),
    ({"tp": 4096}, "TP must be a whole number from 1 to 1024"),
    ({"concurrency": 0}, "concurrency must be from 1"),
    ({"osl": 0}, "must be a positive number"),
])
def test_absurd_overrides_are_refused(overrides, message):
    with pytest.raises(ValueError, match=message):
        read_runs(SGLANG_ONLINE, overrides=overrides)


def test_caveats_are_the_notes_that_change_how_the_numbers_read():
    lam = read_runs(LAMBDA).runs[0]
    assert any("zero output tokens" in c for c in lam.caveats)
    assert any("ttft statistics recomputed" in c for c in lam.caveats)
    assert any("tokens per chunk" in c for c in lam.caveats)
    assert set(lam.caveats) <= set(lam.notes)
    assert not any("total_throughput derived" in c for c in lam.caveats)
    sg = _derived(_run(read_runs(SGLANG_ONLINE), 4))
    assert any("ISL: measured mean 510 vs configured 1024" in c for c in sg.caveats)
    imax = _derived(read_runs(IMAX / "1k1k/H100.json").runs[0])
    assert any("directory name '1k1k'" in c and "expected means 921.6/921.6" in c
               for c in imax.caveats)


def test_measured_and_configured_lengths_are_kept_apart():
    sg = _derived(_run(read_runs(SGLANG_ONLINE), 4))
    assert sg.isl_measured == pytest.approx(1222995 / 2400) and sg.isl_configured == 1024
    imax = _run(read_runs(IMAX / "1k1k/H100.json"), 4)
    assert imax.osl_implied is None  # the sheet's measured_implied_osl works it out
    (derived,) = derive_runs(None, [imax])
    assert derived.isl_measured is None and derived.osl_measured is None
    assert derived.osl == 921.6 and derived.osl_expected == 921.6
    assert derived.osl_implied == pytest.approx((26937.8 - 134.7738) / 29.0358 + 1)


def test_gpu_conc_gives_the_requests_in_flight():
    run = read_runs(GPU_CONC / "benchmark_concurrency_1024.json").runs[0]
    assert run.concurrency == 1024 and run.concurrency_measured is None
    (derived,) = derive_runs(None, [run])  # Little's law, the sheet's measured_in_flight
    assert derived.concurrency_measured == pytest.approx(2.5585303351806994 *
                                                         15.703726639206876)
    assert derived.notes[0] == ("Little's law: requests/s × mean e2el = 40.2 requests in "
                                "flight on average (successful ones; configured concurrency "
                                "1024)")
    # its output per request, the sheet's measured_output_per_request: output ÷ request rate
    assert run.osl_implied is None
    assert derived.osl_implied == pytest.approx(926.7649484536083)
    assert derived.notes[1].startswith("implied output per successful request: "
                                       "output_throughput × duration ÷ successful = 927 chunks")


# --------------------------------------------------------------------------- data model


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("1xH100-80GB-SXM", "h100-sxm"),  # a leading count is ignored
        ("H100-SXM", "h100-sxm"),
        ("H200", "h200"),
        ("B200", "b200"),
        ("MI300X", "mi300x"),
        ("4xNVIDIA_L40S", "l40s"),  # '_' reads as a space
        ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
        ("NVIDIA A100-SXM4-40GB", "a100-40gb"),
        ("h200", "h200"),  # a catalog slug is its own alias
    ],
)
def test_gpu_names_map_to_the_catalog_by_its_aliases(text, slug):
    assert hardware_slug(text) == slug


@pytest.mark.parametrize("text", ["H100", "NVIDIA GH200 480GB", "NVIDIA RTX 4090"])
def test_a_gpu_name_no_alias_matches_is_refused_with_the_way_out(text):
    with pytest.raises(Exception, match="matches no hardware alias in the catalog; pass "
                       "--hardware"):
        hardware_slug(text)


def test_runs_are_immutable():
    run = read_runs(IMAX / "1k1k/H100.json").runs[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.tp = 8
    with pytest.raises(TypeError):
        run.metrics["ttft"] = run.metrics["tpot"]
    units = {k: m.unit for k, m in run.metrics.items()}
    assert units == {
        "ttft": "ms",
        "tpot": "ms",
        "e2el": "ms",
        "throughput_per_gpu": "token/s",
    }  # the total is left to the cells (run.derive)
