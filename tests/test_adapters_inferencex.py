"""The InferenceX API rows and the vLLM 0.8.3 A100 results read with every field PROVENANCE.md
documents; the values asserted were read by eye from tests/data/measured (see its PROVENANCE.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfgraph.measured.adapters import MeasuredFileError, detect_format, read_runs
from perfgraph.measured.derived import derive_runs

DATA = Path(__file__).parent / "data" / "measured"
IX = DATA / "inferencex_dsr1/benchmarks.json"
A100 = DATA / "a100_vllm_llama33_70b"
TP8 = A100 / "01_tp8_pp1/serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_inf.json"
PP2 = A100 / "03_tp4_pp2_IB/serving_meta-llama-Llama-3.3-70B-Instruct_tp4_pp2_sharegpt_qps_inf.json"


@pytest.fixture(scope="module")
def rows():
    result = read_runs(IX)
    assert result.format == "inferencex" and not result.problems
    assert len(result.runs) == 35
    return {r.index: r for r in result.runs}


def test_single_node_sglang_fp4_mi355x(rows):
    run = rows[0]  # mi355x sglang fp4 TP4 conc 4, 1024/1024
    assert (run.hardware, run.engine, run.precision, run.tp, run.gpus) == \
        ("mi355x", "sglang", "fp4", 4, 4)  # the row's own spelling; the catalog alias matches
    assert run.model == "DeepSeek-R1-0528" and run.concurrency == 4
    assert run.label == "sglang fp4 MI355X TP4 conc 4"
    assert run.metrics["tpot"].value == pytest.approx(9.618676175431115)  # 0.0096186… s
    assert run.metrics["ttft"].value == pytest.approx(172.62843293137847)
    assert run.metrics["ttft_median"].value == pytest.approx(102.17383736744523)
    assert run.metrics["ttft_p99.9"].value == pytest.approx(823.3558841543273)
    assert run.metrics["e2el"].value == pytest.approx(8991.529557155445)
    assert run.metrics["throughput_per_gpu"].value == pytest.approx(198.9447984579421)
    assert derive_runs(None, [run])[0].metrics["total_throughput"].value == \
        pytest.approx(4 * 198.9447984579421)  # tput_per_gpu × 4 GPUs, a cell
    assert run.metrics["output_throughput_per_gpu"].value == pytest.approx(98.9883650269406)
    assert run.engine_build == "lmsysorg/sglang:v0.5.12-rocm700-mi35x"  # the row's image
    assert run.metrics["power"].value == pytest.approx(628.907)
    assert run.metrics["power"].unit == "W"
    assert (run.ep, run.dp_attention, run.disaggregated, run.spec_decoding) == \
        (1, False, False, "none")


def test_lengths_are_the_expected_mean_of_the_random_range(rows):
    read = rows[18]  # atom fp4 8192/1024
    assert read.isl is None and read.isl_expected is None  # cells: derived from the range
    assert read.range_ratio == 0.8  # --random-range-ratio 0.8
    run = derive_runs(None, [read])[0]
    assert (run.isl_configured, run.osl_configured) == (8192, 1024)
    assert (run.isl_expected, run.osl_expected) == (pytest.approx(0.9 * 8192),
                                                    pytest.approx(0.9 * 1024))
    assert (run.isl, run.osl) == (pytest.approx(7372.8), pytest.approx(921.6))
    assert run.isl_measured is None and run.osl_measured is None
    assert any("random in [0.8, 1] × 8192/1024" in c and "7372.8/921.6" in c
               for c in run.caveats)


def test_trt_mtp_ep8_and_the_api_side_gpu_count(rows):
    run = rows[3]  # b200 trt fp8 mtp, TP8 EP8, num_decode_gpu 64 on a single-node row
    assert (run.engine, run.tp, run.gpus, run.ep, run.spec_decoding) == ("trtllm", 8, 8, 8, "mtp")
    assert run.decode_gpus is None
    assert any("num_decode_gpu 64" in n for n in run.notes)
    assert any("speculative decoding (mtp)" in c for c in run.caveats)
    assert run.metrics["tpot"].value == pytest.approx(9.642045348094014)
    assert run.metrics["throughput_per_gpu"].value == pytest.approx(193.44744504181523)


def test_dp_attention_and_disaggregated_pools(rows):
    run = rows[21]  # h200 dynamo-trt fp8 mtp: 16 prefill + 8 decode GPUs, decode TP8 EP8 DPA
    assert (run.engine, run.disaggregated, run.prefill_gpus, run.decode_gpus, run.gpus) == \
        ("trtllm", True, 16, 8, 24)
    assert (run.decode_tp, run.decode_ep, run.dp_attention, run.tp) == (8, 8, True, 8)
    # every GPU of the disaggregated run: 16 prefill + 8 decode
    assert derive_runs(None, [run])[0].metrics["total_throughput"].value == pytest.approx(
        24 * run.metrics["throughput_per_gpu"].value)
    assert "÷ 8 decode GPUs" in run.metrics["output_throughput_per_gpu"].definition
    assert any(c.startswith("disaggregated: 16 prefill GPUs") for c in run.caveats)
    assert rows[28].hardware == "H100-SXM" and rows[28].tp == 16  # H100 decode TP16


def test_a_row_with_bad_deployment_is_refused_with_reason(tmp_path):
    text = IX.read_text().replace('"decode_tp": 4', '"decode_tp": 0', 1)
    bad = tmp_path / "rows.json"
    bad.write_text(text)
    result = read_runs(bad)
    assert len(result.runs) == 34
    assert result.problems[0].index == 0 and "'decode_tp' is 0" in result.problems[0].reason


def test_vllm_083_tp8_with_commands_sidecar():
    result = read_runs(TP8)
    assert result.format == "vllm" and not result.problems
    run = result.runs[0]
    assert (run.hardware, run.tp, run.pp, run.gpus, run.engine) == (
        "NVIDIA A100-SXM4-40GB", 8, 1, 8, "vllm")
    assert run.model == "meta-llama/Llama-3.3-70B-Instruct" and run.completed == 200
    # measured lengths (cells): totals ÷ completed = the per-request arrays' means
    run = derive_runs(None, [run])[0]
    assert run.isl_measured == pytest.approx(42659 / 200)
    assert run.osl_measured == pytest.approx(42398 / 200)
    assert any("over the 200 per-request input_lens/output_lens" in n for n in run.notes)
    assert derive_runs(None, [run])[0].metrics["throughput_per_gpu"].value == pytest.approx(
        run.metrics["total_throughput"].value / 8)


def test_vllm_083_tp4_pp2_over_infiniband():
    run = derive_runs(None, read_runs(PP2).runs)[0]
    assert (run.hardware, run.tp, run.pp, run.gpus) == ("NVIDIA A100-SXM4-40GB", 4, 2, 8)
    assert run.metrics["ttft"].value == pytest.approx(870.4108890200678)
    assert run.metrics["tpot"].value == pytest.approx(79.58026313185233)
    assert run.metrics["output_throughput"].value == pytest.approx(930.4126857850796)
    assert run.isl == pytest.approx(42659 / 200) and run.osl == pytest.approx(42444 / 200)
    assert any("InfiniBand" in n and "2 node(s)" in n for n in run.notes)


def test_summary_table_is_refused_with_reason():
    path = A100 / "01_tp8_pp1/benchmark_results.json"
    assert detect_format(path) == "vllm-summary"
    with pytest.raises(MeasuredFileError, match="summary table of the vLLM result JSONs"):
        read_runs(path)


def test_compare_says_which_lengths_it_used(capsys, tmp_path):
    from perfgraph.cli.main import main

    assert main(["compare", str(IX), "--model", "deepseek-v3"]) in (0, 1)
    out = capsys.readouterr().out
    assert "ISL/OSL in 'model at': expected means of the configured random range" in out
    assert "921.6/921.6" in out and "7373/921.6" in out
    assert main(["compare", str(PP2), "--model", "llama-3.3-70b", "--hardware", "a100-80gb",
                 "--precision", "bf16", "--set", "concurrency=66", "--format", "json"]) in (0, 1)
    import json
    run = json.loads(capsys.readouterr().out)["runs"][0]
    assert (run["isl_source"], run["pp"], run["gpus"], run["engine"]) == ("measured", 2, 8, "vllm")
    assert run["isl"] == pytest.approx(42659 / 200)
