"""NVIDIA's TensorRT-LLM perf-overview tables (tests/data/measured/trtllm_perf_overview, see its
PROVENANCE.md): every filled cell a run, blank cells repeating the row above, and a
maximum-load run modelled at the engine's capacity. Values asserted were read by eye from the
files."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from perfgraph.measured.adapters import UnknownFormatError, read_runs
from perfgraph.measured.adapters.trtllm_docs import BENCH_SETTINGS, model_name
from perfgraph.measured.comparison import compare_runs
from perfgraph.measured.derived import derive_runs
from perfgraph.measured.setup import Baseline
from perfgraph.scenario import ScenarioSpec
from perfgraph.scenario.loading import load

DATA = Path(__file__).parent / "data" / "measured" / "trtllm_perf_overview"
ONLINE = DATA / "perf-overview_258c7540_online.md"
THROUGHPUT = DATA / "perf-overview_258c7540_throughput.md"


@pytest.fixture(scope="module")
def online():
    result = read_runs(ONLINE)
    assert result.format == "trtllm-perf-online" and not result.problems
    return result.runs


@pytest.fixture(scope="module")
def throughput():
    result = read_runs(THROUGHPUT)
    assert result.format == "trtllm-perf-throughput" and not result.problems
    return result.runs


@pytest.mark.parametrize(("text", "slug"), [("LLaMA v3.1 8B", "llama-3.1-8b"),
                                            ("LLaMA 3.1 70B", "llama-3.1-70b"),
                                            ("LLaMA v3.1 405B", "llama-3.1-405b"),
                                            ("Mixtral 8x7B", "mixtral-8x7b")])
def test_model_names_in_catalog_spelling(text, slug):
    assert model_name(text) == slug


def test_online_first_row(online):
    assert len(online) == 72  # 2 models × 2 GPUs × 3 length pairs × 6 rates
    run = online[0]  # |LLaMA 3.1 70B|H100 80GB HBM3|4|467|256|2|2|62|21|1406|498|
    assert (run.model, run.hardware, run.tp, run.precision) == \
        ("llama-3.1-70b", "H100 80GB HBM3", 4, "BF16")
    assert (run.isl, run.osl, run.request_rate, run.completed) == (467, 256, 2, 500)
    assert (run.engine, run.engine_build) == ("trtllm", "TensorRT-LLM 0.14.0")
    m = run.metrics
    assert (m["ttft"].value, m["itl"].value) == (62, 21)
    assert (m["output_throughput"].value, m["total_throughput"].value) == (498, 1406)
    # the table leaves the request rate and E2EL to the sheet's cells (measured/derived)
    assert "request_throughput" not in m and "e2el" not in m
    assert dict(run.derive).keys() == {"request_throughput", "e2el", "throughput_per_gpu"}
    (derived,) = derive_runs(None, [run])
    m = derived.metrics
    assert m["request_throughput"].value == pytest.approx(498 / 256)  # not the rounded 2
    assert m["e2el"].value == pytest.approx(62 + 255 * 21)  # TTFT + (OSL − 1) × ITL
    assert m["throughput_per_gpu"].value == pytest.approx(1406 / 4)  # total ÷ TP
    assert derived.notes[0].endswith("output tokens/s ÷ OSL (1.95/s)")


def test_online_blank_cells_repeat_the_row_above(online):
    # |||||| INF|16|9123|85|11593|4103| : H100, TP4, 467/256 from the rows above
    run = online[5]
    assert (run.model, run.hardware, run.tp, run.isl, run.osl) == \
        ("llama-3.1-70b", "H100 80GB HBM3", 4, 467, 256)
    assert math.isinf(run.request_rate) and run.metrics["ttft"].value == 9123
    run = online[18]  # |LLaMA 3.1 8B||1|467|256|2|2|23|8|1423|504|: the GPU carried down
    assert (run.model, run.hardware, run.tp) == ("llama-3.1-8b", "H100 80GB HBM3", 1)


def test_throughput_cells(throughput):
    first = throughput[0]  # LLaMA v3.1 8B, TP1, 128/128, H200 FP8
    assert (first.model, first.hardware, first.precision, first.tp) == \
        ("llama-3.1-8b", "H200 141GB HBM3", "FP8", 1)
    assert (first.isl, first.osl, first.engine_build) == (128, 128, "TensorRT-LLM 0.17")
    assert first.metrics["output_throughput"].value == 29526.04
    assert math.isinf(first.request_rate) and first.concurrency is None
    a100 = throughput[4]  # the same row's A100-SXM4-80GB FP16 column
    assert (a100.hardware, a100.precision, a100.metrics["output_throughput"].value) == \
        ("A100-SXM4-80GB", "FP16", 6627.27)
    tp2 = [r for r in throughput if r.model == "llama-3.1-70b" and r.tp == 2]
    # the TP 2 block: 9 length pairs, H200 and H100 all filled but 20000/2000 on nothing else
    assert tp2[0].metrics["output_throughput"].value == 6823.01
    assert {(r.isl, r.osl) for r in tp2} >= {(128, 128), (20000, 2000)}


def test_a_max_load_run_is_modelled_at_the_engines_capacity(throughput):
    """At what trtllm-bench sized: its KV share 0.95 and its heuristic's max batch size and
    token budget pinned; the batch what the KV holds, under that max batch size."""
    run = next(r for r in throughput if r.model == "llama-3.1-70b" and r.tp == 4
               and r.hardware == "H200 141GB HBM3" and (r.isl, r.osl) == (2048, 2048))
    assert run.engine_settings == BENCH_SETTINGS
    base = Baseline.from_spec(ScenarioSpec(engine="trtllm"))
    (c,) = compare_runs([run], base, levers=False)
    assert c.error is None and c.setup.concurrency_source == "capacity"
    assert c.setup.deployment == BENCH_SETTINGS
    sheet = load(ScenarioSpec(model="llama-3.1-70b", hardware="h200", precision="fp8",
                              engine="trtllm", sets=(("tp", "4"), ("isl", "2048"),
                                                     ("osl", "2048"), *BENCH_SETTINGS))).sheet
    assert sheet.magnitude("kv_memory_fraction") == 0.95
    # the heuristic's estimate, 0.95 × (4 GPUs' HBM − weights) over 4096 tokens of KV, rounded
    # up to 128s, is below what the KV holds after the runtime's reserve at the mean context
    kv_request = 4096 * sheet.magnitude("kv_bytes_per_token", "GB/token")
    estimate = 0.95 * (sheet.magnitude("hbm_total", "GB")
                       - sheet.magnitude("weights_bytes", "GB")) / kv_request
    assert 512 < estimate <= 768 == sheet.magnitude("bench_max_batch_size")
    assert sheet.magnitude("max_num_seqs") == 768 < sheet.magnitude("max_concurrency")
    assert c.setup.concurrency == 768 == sheet.magnitude("capacity_batch")
    assert c.metric("throughput").measured == 7130.44


def test_an_explicit_set_wins_over_the_runs_settings(throughput):
    run = next(r for r in throughput if r.model == "llama-3.1-8b")
    base = Baseline.from_spec(ScenarioSpec(engine="trtllm", sets=(("max_num_seqs", "512"),)))
    (c,) = compare_runs([run], base, levers=False)
    assert ("max_num_seqs", "bench_max_batch_size") not in c.setup.deployment
    assert ("kv_memory_fraction", "0.95") in c.setup.deployment
    assert c.setup.concurrency == 512  # 8B at 128/128 on H200 holds thousands


def test_a_gpu_outside_the_catalog_is_said(throughput):
    gh200 = next(r for r in throughput if r.hardware == "GH200 480GB")
    (c,) = compare_runs([gh200], Baseline.from_spec(ScenarioSpec()), levers=False)
    assert c.error is not None and "GH200 480GB" in c.error


def test_a_markdown_table_of_another_kind_is_unknown(tmp_path):
    path = tmp_path / "other.md"
    path.write_text("| a | b |\n|---|---|\n| 1 | 2 |\n", encoding="utf-8")
    with pytest.raises(UnknownFormatError, match="MARKDOWN"):
        read_runs(path)
