"""What each engine allocates at start-up, held to hand computations and to the engines' own
logs: the activation peak of its profiling pass, its CUDA graphs, the KV it leaves, and whether
it starts at all; ``perfgraph plan`` never proposes a candidate the engine would refuse."""

from __future__ import annotations

import pytest

from perfgraph.scenario.loading import ScenarioSpec, load
from perfgraph.whatif import plan_report
from perfgraph.whatif import plan_search as plan

GIB = 2**30 / 1e9  # GB per GiB


def _sheet(engine: str, *sets: tuple[str, str], **choices: str):
    return load(ScenarioSpec(engine=engine, sets=tuple(sets), **choices)).sheet


# ---------------------------------------------------------------- vLLM, Llama 3 8B, one H100
# vLLM PR #10511 (v0.6.5), `vllm serve meta-llama/Meta-Llama-3-8B` on one H100 80 GB, defaults
# (max_model_len 8192, so 8192 batched tokens in the profile; 256 sequences):
#   total_gpu_memory 79.22GiB; gpu_memory_utilization 0.90; can use 71.29GiB;
#   model weights take 14.96GiB; non_torch_memory 1.79GiB;
#   PyTorch activation peak memory 1.26GiB; available_kv_cache_memory 53.29GiB
# That version captured its CUDA graphs after sizing the KV (cuda_graph_in_budget = false).
LOG_8B = {"total": 79.22, "weights": 14.96, "non_torch": 1.79, "activation": 1.26, "kv": 53.29}
VLLM_8B = (("tp", "1"), ("max_context", "8192"), ("cuda_graph_in_budget", "false"))


def test_vllm_8b_activation_peak_is_the_profiled_one() -> None:
    sheet = _sheet("vllm", *VLLM_8B, model="llama-3.1-8b", precision="bf16")
    # 8192 tokens × 2 B × (4 × 4096 + 3 × 14,336) = 0.9731 GB of hidden and MLP buffers,
    # FP32 logits and two sampler temporaries of 256 × 128,256: 3 × 256 × 128,256 × 4 B =
    # 0.3940 GB; 1.3671 GB = 1.273 GiB where vLLM logs 1.26 GiB
    by_hand = (8192 * 2 * (4 * 4096 + 3 * 14336) + 3 * 256 * 128256 * 4) / 1e9
    assert sheet.magnitude("ffn_width") == pytest.approx(14336, abs=5)
    assert sheet.magnitude("activation_memory", "GB") == pytest.approx(by_hand, rel=2e-4)
    assert sheet.magnitude("activation_memory", "GB") / GIB == pytest.approx(
        LOG_8B["activation"], rel=0.015)
    assert sheet.magnitude("weights_bytes", "GB") / GIB == pytest.approx(LOG_8B["weights"],
                                                                       rel=1e-3)


def test_vllm_8b_kv_is_what_it_logs() -> None:
    sheet = _sheet("vllm", *VLLM_8B, model="llama-3.1-8b", precision="bf16")
    # 0.9 × 85.52 GB − 16.06 GB − 0.2 GB − 1.367 GB = 59.34 GB = 55.27 GiB: 3.7% above the
    # 53.29 GiB logged, of which torch's 79.22 GiB (not nvidia-smi's 81,559 MiB) is 0.38 GiB
    # and that version's 1.79 GiB of non-torch memory (0.2 GB here) 1.60 GiB
    kv = sheet.magnitude("kv_memory", "GB")
    assert kv == pytest.approx(0.9 * 85.521 - 16.0605 - 0.2 - 1.3671, abs=0.01)
    assert kv / GIB == pytest.approx(LOG_8B["kv"], rel=0.04)
    # with the log's own device size and non-torch memory the rule gives the log's KV
    mine = _sheet("vllm", *VLLM_8B, ("hbm_capacity", f"{LOG_8B['total']} GiB"),
                  ("non_torch_memory", f"{LOG_8B['non_torch']} GiB"),
                  model="llama-3.1-8b", precision="bf16")
    assert mine.magnitude("kv_memory", "GB") / GIB == pytest.approx(LOG_8B["kv"], rel=0.003)
    assert mine.magnitude("engine_starts") == 1


def test_vllm_since_0_21_takes_its_graphs_out_of_the_budget() -> None:
    before = _sheet("vllm", *VLLM_8B, model="llama-3.1-8b", precision="bf16")
    now = _sheet("vllm", *VLLM_8B[:2], model="llama-3.1-8b", precision="bf16")
    assert before.magnitude("kv_memory", "GB") - now.magnitude("kv_memory", "GB") == \
        pytest.approx(0.5)  # cuda_graph_memory
    # before, the graphs had to fit in what 1 − 0.9 of HBM left: 85.52 − 16.06 − 59.34 − 1.57
    assert before.magnitude("startup_outside_budget", "GB") == pytest.approx(0.5)
    assert before.magnitude("memory_headroom", "GB") == pytest.approx(8.552, abs=0.01)


# ------------------------------------------------ TensorRT-LLM, Llama 3.1 8B FP8, one H100
# NVIDIA/TensorRT-LLM issue #6294 (trtllm-bench, PyTorch backend, one H100):
#   Both free_gpu_memory_fraction and max_tokens are set (to 0.8 and 860308) …
#   Allocated 52.51 GiB for max tokens in paged KV cache (860320).
#   max_seq_len=157, max_num_requests=4096, max_num_tokens=23552
def test_trtllm_8b_fp8_kv_is_what_it_logs() -> None:
    sheet = _sheet("trtllm", ("tp", "1"), ("kv_memory_fraction", "0.8"),
                   ("max_num_batched_tokens", "23552 token"), ("max_num_seqs", "4096"),
                   model="llama-3.1-8b", precision="fp8")
    # dry run of 23,552 tokens: 23552 × 2 B × 59,392 = 2.7976 GB; greedy FP32 logits of 4096
    # sequences 4096 × 128,256 × 4 B = 2.1014 GB; non-torch 0.2, graphs 0.5: 5.599 GB;
    # KV = 0.8 × (85.521 − 8.030 − 5.599) = 57.51 GB
    reserve = (23552 * 2 * 59392 + 4096 * 128256 * 4) / 1e9 + 0.7
    kv = sheet.magnitude("kv_memory", "GB")
    assert kv == pytest.approx(0.8 * (85.5208 - 8.0303 - reserve), abs=0.01)
    # 860,308 tokens × 65,536 B (FP8 KV) = 56.38 GB logged: 2.0% less (the checkpoint keeps
    # its embeddings and LM head in BF16, 1.05 GB more weights than 1 B a parameter)
    assert sheet.magnitude("kv_bytes_per_token", "B/token") == 65536
    assert kv == pytest.approx(860308 * 65536 / 1e9, rel=0.025)


# ------------------------------------------------------- SGLang, Llama 3.1 70B FP8, TP 2
def test_sglang_70b_fp8_tp2_pool_and_its_slack() -> None:
    sheet = _sheet("sglang", ("tp", "2"), model="llama-3.1-70b", precision="fp8",
                   hardware="h100-sxm")
    # mem_fraction_static 0.87 at TP2 (server_args.py): per GPU 0.87 × 85.521 GB − 70.55 GB / 2
    # − 0.2 GB non-torch = 38.93 GB of pool, 77.86 GB for the pair
    per_gpu = 0.87 * 85.521 - 70.554 / 2 - 0.2
    assert sheet.magnitude("kv_memory", "GB") == pytest.approx(2 * per_gpu, abs=0.02)
    tokens = sheet.magnitude("kv_memory", "B") / sheet.magnitude("kv_bytes_per_token", "B/token")
    assert tokens == pytest.approx(2 * per_gpu * 1e9 / 163840, rel=1e-3)  # 475,000 tokens
    # what it leaves each GPU: 85.521 − 35.277 − 38.93 − 0.2 = 11.12 GB, where the chunked
    # prefill's activations (8192 × 2 B × (4 × 8192 + 3 × 28,672.67 / 2) = 1.24 GB, plus the
    # logits) and the 0.5 GB of CUDA graphs must fit; SGLang logs the same figure as "Memory
    # pool end. avail mem=…" before "Capture cuda graph begin"
    assert sheet.magnitude("memory_headroom", "GB") == pytest.approx(
        85.521 - 70.554 / 2 - per_gpu - 0.2, abs=0.02)
    # its req_to_token pool: min(max(232 contexts of 2048 in the pool × 512, 2048), 4096) =
    # 4096 requests × 2048 tokens × 4 B = 33.6 MB
    assert sheet.magnitude("request_table_slots") == 4096
    assert sheet.magnitude("request_table_memory", "GB") == pytest.approx(4096 * 2048 * 4 / 1e9)
    assert sheet.magnitude("startup_outside_budget", "GB") == pytest.approx(
        sheet.magnitude("activation_memory", "GB") + 0.5 + 4096 * 2048 * 4 / 1e9)
    assert sheet.magnitude("engine_starts") == 1


def test_sglang_with_no_room_for_its_graphs_does_not_start() -> None:
    # mem_fraction_static 0.99 leaves 0.86 GB a GPU: "Capture cuda graph failed … set
    # --mem-fraction-static to a smaller value"
    sheet = _sheet("sglang", ("tp", "2"), ("kv_memory_fraction", "0.99"),
                   model="llama-3.1-70b", precision="fp8", hardware="h100-sxm")
    assert sheet.magnitude("kv_memory", "GB") > 0
    assert sheet.magnitude("memory_headroom", "GB") < sheet.magnitude(
        "startup_outside_budget", "GB")
    assert sheet.magnitude("engine_starts") == 0


# ------------------------------------------ a case that does not start: 128k on one GPU
def test_70b_bf16_on_one_80_gb_gpu_at_128k_starts_on_no_engine() -> None:
    for engine in ("vllm", "sglang", "trtllm"):
        sheet = _sheet(engine, ("tp", "1"), ("max_context", "131072"),
                       model="llama-3.1-70b", precision="bf16", hardware="h100-sxm")
        # 141.1 GB of weights on 85.5 GB: no KV at all ("No available memory for the cache
        # blocks", SGLang "Not enough memory")
        assert sheet.magnitude("kv_memory", "GB") == 0
        assert sheet.magnitude("engine_starts") == 0


def test_70b_fp8_on_one_h100_holds_an_8k_sequence_not_a_32k_one() -> None:
    def at(context: int, engine: str = "vllm"):
        return _sheet(engine, ("tp", "1"), ("max_context", str(context)),
                      model="llama-3.1-70b", precision="fp8", hardware="h100-sxm")
    # KV left: 3.37 GB (test_engines); one sequence is 163,840 B/token × max_context
    assert at(8192).magnitude("kv_bytes_max_context", "GB") == pytest.approx(1.342, abs=1e-3)
    assert at(8192).magnitude("engine_starts") == 1
    long = at(32768)  # 5.37 GB > 3.37 GB: "The model's max seq len (32768) is larger than …"
    assert long.magnitude("kv_bytes_max_context", "GB") == pytest.approx(5.369, abs=1e-3)
    assert long.magnitude("model_fits") == 1  # the weights and one sequence fit 0.9 × HBM …
    assert long.magnitude("engine_starts") == 0  # … but not once vLLM's reserve is out
    # SGLang starts anyway and caps each request at its pool (max_req_len)
    assert at(32768, "sglang").magnitude("engine_starts") == 1


# ---------------------------------------------------------------- plan refuses it
@pytest.fixture(scope="module")
def refused() -> plan.Result:
    spec = ScenarioSpec(model="llama-3.1-70b", hardware="h100-sxm", precision="fp8",
                        workload="chat-1k1k", sets=(("max_context", "32768"),))
    q = plan.question(spec, ["itl=200ms"], "0.5 request/s", "gpus")
    return plan.run(spec, q, ("tp=1,2", "pp=1", "disaggregated=0", "concurrency=1,2,4"),
                    jobs=1)


def test_plan_never_proposes_a_candidate_the_engine_refuses(refused: plan.Result) -> None:
    tps = {refused.choices(int(r))["tp"] for r in refused.rows}
    assert tps == {2.0}  # TP1 holds the weights and meets the SLO, but vLLM would not start


def test_plan_says_why_the_cheaper_candidate_is_out(refused: plan.Result) -> None:
    reasons = plan_report.reasons(refused, int(refused.order()[0]))
    last = reasons[-1]
    assert last.startswith("nearest candidate with fewer GPUs (engine=vllm, hardware=h100-sxm")
    # 3.3727 GB (3.3748 GB less 2.1 MB of block tables for 256 × 32768 ÷ 16 blocks) ÷ 163,840
    # B a token = 20,585 tokens: what vLLM calls the estimated maximum model length when it
    # refuses max_model_len 32768
    assert last.endswith("would not start: its KV budget, 3.37 GB, is less than the 5.37 GB "
                         "the engine needs at start-up (one 32768-token sequence where it "
                         "checks max_context; the budget holds 20585 tokens)")


def test_kv_start_memory_is_the_minimum_for_each_copy_of_the_kv() -> None:
    """One 2048-token sequence of Llama-3 70B's FP8 KV, 2 × 80 layers × 8 KV heads × 128 × 1 B
    a token = 0.3355 GB; at TP 16 each of the 8 KV heads is held twice (kv_replication 2)."""
    sheet = load(ScenarioSpec(sets=(("tp", "16"),))).sheet
    one = 2048 * 2 * 80 * 8 * 128 / 1e9
    assert sheet.magnitude("kv_start_minimum", "GB") == pytest.approx(one, rel=1e-12)
    assert sheet.magnitude("kv_start_memory", "GB") == pytest.approx(2 * one, rel=1e-12)
