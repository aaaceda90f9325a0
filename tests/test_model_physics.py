"""Issue 11, the model side: tensor groups, attention kinds, distinct experts, EP.

Every expected number is computed here by hand from the model's config.json fields
(tests/data/configs/), not read back from the sheet.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perfgraph.errors import PerfgraphError
from tests.conftest import scenario

ROOT = Path(__file__).resolve().parent.parent
MXFP4 = 4.25 / 8  # bytes a parameter: 4 bits + one E8M0 scale per 32 values


def mag(sc, name: str, unit: str = "") -> float:
    return sc.sheet.magnitude(name, unit) if unit else sc.sheet.magnitude(name)


def distinct(e: int, k: int, t: float) -> float:
    """Expected share of E experts touched by T tokens each routed to top-k."""
    return 1 - (1 - k / e) ** t


# ---- gpt-oss-20b: 24 layers, 12 of them a 128-token window; MXFP4 experts, BF16 rest.
D, V, L, FFN, E = 2880, 201088, 24, 2880, 32
ATTN = D * 64 * 64 * 2 + D * 8 * 64 * 2 + (64 + 16) * 64 + D + 64   # q,o; k,v; biases; sinks
DENSE_20B = L * (ATTN + 2 * D + D * E + E) + D                        # + norms, router; final norm
EMB_20B = 2 * V * D
ROUTED_20B = L * E * (3 * D * FFN + 2 * FFN + D)


def test_gpt_oss_20b_groups_weights_and_kv_by_hand() -> None:
    sc = scenario(("concurrency", 4), model="gpt-oss-20b")  # fp8 default: KV 1 B
    assert mag(sc, "n_params") == DENSE_20B + EMB_20B + ROUTED_20B == 20_914_757_184
    assert mag(sc, "params_routed_experts") == ROUTED_20B
    weights = (DENSE_20B + EMB_20B) * 2 + ROUTED_20B * MXFP4   # shipped: --precision fp8 ignored
    assert mag(sc, "weights_bytes", "B") == pytest.approx(weights, rel=1e-12)
    assert mag(sc, "weight_bytes_mean", "B") == pytest.approx(weights / 20_914_757_184)
    full_only = 2 * 12 * 8 * 64 * 1
    assert mag(sc, "kv_bytes_per_token", "B/token") == full_only == 2 * L * 8 * 64 / 2
    ctx = 1024 + 1024 / 2
    per_seq = ctx * full_only + 12 * min(ctx, 128) * 2 * 8 * 64
    assert mag(sc, "kv_bytes_per_seq", "B") == pytest.approx(per_seq)
    step = (DENSE_20B + EMB_20B) * 2 + distinct(E, 4, 4) * ROUTED_20B * MXFP4
    assert mag(sc, "weights_bytes_per_step", "B") == pytest.approx(step)
    assert mag(sc, "decode_bytes_per_step", "B") == pytest.approx(step + 4 * per_seq)


def test_gpt_oss_120b_one_stream_does_not_change_with_concurrency() -> None:
    one = scenario(("concurrency", 1), ("tp", 1), model="gpt-oss-120b")
    many = scenario(("concurrency", 256), ("tp", 1), model="gpt-oss-120b")
    assert mag(one, "single_stream_ceiling", "token/s") == \
        mag(many, "single_stream_ceiling", "token/s")
    d, L, e = 2880, 36, 128
    routed = L * e * (3 * d * d + 2 * d + d)
    shared = (mag(one, "n_params") - routed) * 2
    by_hand = mag(one, "hbm_bandwidth", "B/s") / (shared + 4 / e * routed * MXFP4)
    assert mag(one, "single_stream_ceiling", "token/s") == pytest.approx(by_hand)
    assert 450 < by_hand < 600  # H100: 3.35 TB/s over ~6.2 GB a token


def test_deepseek_r1_mla_kv_experts_and_attention_flops_by_hand() -> None:
    sc = scenario(("concurrency", 16), ("attention_flops", "true"), model="deepseek-r1-0528")
    assert mag(sc, "kv_bytes_per_token", "B/token") == 61 * (512 + 64) * 1 == 35_136
    d, moe_layers = 7168, 61 - 3
    routed = moe_layers * 256 * 3 * d * 2048
    shared = moe_layers * 3 * d * 2048
    emb = 2 * 129280 * d
    n = mag(sc, "n_params")
    assert (mag(sc, "params_routed_experts"), mag(sc, "params_shared_experts"),
            mag(sc, "params_embedding")) == (routed, shared, emb)
    assert mag(sc, "weights_bytes", "B") == n * 1  # fp8 everywhere
    step = (n - routed) + distinct(256, 8, 16) * routed
    assert mag(sc, "weights_bytes_per_step", "B") == pytest.approx(step)
    ctx = 1024 + 512
    # absorbed MLA decode: QK over the 576-wide latent+rope, AV over the 512-wide latent
    flops = 2 * 128 * (576 + 512) * 61 * ctx
    assert mag(sc, "decode_attention_flops_per_token", "FLOP/token") == pytest.approx(flops)
    assert flops / (4 * ctx * d * 61) == pytest.approx(9.71, abs=0.01)  # the old count, ~10x low


def test_qwen3_30b_a3b_by_hand() -> None:
    sc = scenario(("concurrency", 8), model="qwen3-30b-a3b", precision="bf16")
    assert mag(sc, "kv_bytes_per_token", "B/token") == 2 * 48 * 4 * 128 * 2 == 98_304
    routed = 48 * 128 * 3 * 2048 * 768
    assert mag(sc, "params_routed_experts") == routed
    n = mag(sc, "n_params")
    assert mag(sc, "weights_bytes", "B") == n * 2
    step = ((n - routed) + distinct(128, 8, 8) * routed) * 2
    assert mag(sc, "weights_bytes_per_step", "B") == pytest.approx(step)


def test_gemma_3_27b_local_layers_cap_at_the_window() -> None:
    sc = scenario(("isl", 4096), ("attention_flops", "true"), model="gemma-3-27b",
                  precision="bf16")
    full, local, w, kv_layer = 62 // 6, 62 - 62 // 6, 1024, 2 * 16 * 128 * 2
    assert (full, local) == (10, 52)
    assert mag(sc, "kv_bytes_per_token", "B/token") == full * kv_layer
    ctx = 4096 + 1024 / 2
    assert mag(sc, "kv_bytes_per_seq", "B") == pytest.approx(
        ctx * full * kv_layer + local * w * kv_layer)
    assert mag(sc, "weights_bytes", "B") == mag(sc, "n_params") * 2
    pairs = full * 4096 ** 2 / 2 + local * (4096 * w - w ** 2 / 2)
    assert mag(sc, "prefill_attention_flops", "FLOP") == pytest.approx(
        2 * 32 * (128 + 128) * pairs)


def test_llama_70b_dense_is_one_group_and_prefill_attention_is_causal() -> None:
    sc = scenario(("attention_flops", "true"), model="llama-3.1-70b")
    assert mag(sc, "kv_bytes_per_token", "B/token") == 2 * 80 * 8 * 128 * 1 == 163_840
    assert mag(sc, "weights_bytes", "B") == 70_553_706_496
    assert mag(sc, "weights_bytes_per_step", "B") == 70_553_706_496
    non_causal = 4 * 1024 ** 2 * 8192 * 80  # the old count, d_model = heads x head_dim here
    assert mag(sc, "prefill_attention_flops", "FLOP") == pytest.approx(non_causal / 2)


@pytest.mark.parametrize("e,k,t", [(32, 4, 4), (128, 8, 16), (256, 8, 64)])
def test_distinct_experts_formula_against_a_monte_carlo_draw(e: int, k: int, t: int) -> None:
    rng = np.random.default_rng(11)
    trials = 400
    picks = rng.random((trials, t, e)).argsort(axis=-1)[..., :k]  # top-k of E, per token
    touched = np.zeros((trials, e), dtype=bool)
    np.put_along_axis(touched, picks.reshape(trials, t * k), True, axis=1)
    drawn = touched.sum(axis=1).mean() / e
    assert drawn == pytest.approx(distinct(e, k, t), abs=0.01)
    sc = scenario(("n_routed_experts", e), ("n_experts_per_tok", k), ("concurrency", t),
                  ("params_routed_experts", "6e10"), model="mixtral-8x7b")
    assert mag(sc, "experts_touched_fraction") == pytest.approx(drawn, abs=0.01)


def test_ep_that_does_not_divide_the_experts_is_refused() -> None:
    with pytest.raises(PerfgraphError, match=r"ep = 3 does not divide the 256 routed") as exc:
        scenario(("ep", 3), model="deepseek-v3")
    assert "expected a divisor of 256" in str(exc.value)
    assert mag(scenario(("ep", 8), model="deepseek-v3"), "ep") == 8


@pytest.mark.parametrize("table,message", [
    ('routed_experts = ""', "tensor group 'routed_experts' has no precision"),
    ('routed = "mxfp4"', "unknown tensor group 'routed'"),
])
def test_a_tensor_group_without_a_known_precision_is_refused(tmp_path, table, message) -> None:
    src = ROOT / "models" / "gpt-oss-20b.toml"
    kept = src.read_text().split("\n[weight_precision]")[0]
    text = f"{kept}\n[weight_precision]\n{table}\n"
    bad = tmp_path / "bad-oss.toml"
    bad.write_text(text)
    with pytest.raises(PerfgraphError, match=message) as exc:
        scenario(model=str(bad))
    assert str(bad) in str(exc.value) and "expected one of" in str(exc.value)


def test_ep_all_to_all_and_dp_attention_by_hand() -> None:
    sc = scenario(("tp", 8), ("ep", 8), ("concurrency", 64), ("dp_attention", "true"),
                  model="deepseek-r1-0528", hardware="h200")
    one_way = 64 * 8 * 7168 * 2 * 7 / 8          # tokens x top-k x d_model x 2 B x (ep-1)/ep
    assert mag(sc, "ep_alltoall_bytes", "B") == pytest.approx(one_way)
    assert mag(sc, "ep_alltoalls_per_step") == 2 * 58
    # over the link one way: half the two-way total NVIDIA quotes (collective_bandwidth)
    per = mag(sc, "collective_latency", "s") + one_way / (mag(sc, "link_bandwidth", "B/s") / 2)
    assert mag(sc, "ep_comm_time_per_step", "s") == pytest.approx(2 * 58 * per)
    assert mag(sc, "kv_replication") == 1
    tp_only = scenario(("tp", 8), model="deepseek-r1-0528", hardware="h200")
    assert mag(tp_only, "kv_replication") == 8     # MLA's one latent on every TP rank
    shared = mag(sc, "shared_weights_bytes", "B")
    assert mag(sc, "weights_bytes_held", "B") == pytest.approx(
        mag(sc, "weights_bytes", "B") + 7 * shared)


def test_a_measured_xpyd_deployment_sets_its_pools() -> None:
    sc = scenario(("tp", 8), ("ep", 8), ("dp_attention", "true"), ("prefill_gpus", 8),
                  ("decode_gpus", 16), ("prefill_tp", 8), model="deepseek-r1-0528",
                  hardware="h200")
    assert mag(sc, "disagg_gpus") == 24
    prefill = 8 * mag(sc, "prefill_pool_rate", "token/s") / 8
    decode = 16 * mag(sc, "max_throughput_per_gpu", "token/s")
    ceiling = min(decode, prefill * mag(sc, "osl", "token") / mag(sc, "isl", "token"))
    assert mag(sc, "disagg_throughput_ceiling", "token/s") == pytest.approx(ceiling)
    assert mag(sc, "disagg_throughput_ceiling_per_gpu", "token/s") == pytest.approx(ceiling / 24)


def test_mistral_sliding_layers_grow_until_the_window_fills() -> None:
    layer = 2 * 8 * 128 * 2  # K and V of 8 heads x 128 at BF16
    short = scenario(model="mistral-7b", precision="bf16")  # mean context 1536 < 4096
    assert mag(short, "kv_bytes_per_token", "B/token") == 32 * layer
    long = scenario(("isl", 8192), ("max_context", 9216), model="mistral-7b", precision="bf16")
    assert mag(long, "kv_bytes_per_token", "B/token") == 0
    assert mag(long, "kv_bytes_per_seq", "B") == 32 * 4096 * layer
    assert mag(long, "kv_bytes_max_context", "B") == 32 * 4096 * layer
    assert mag(long, "kv_crossover_context", "token") == 0  # never: KV stopped growing


# ---- Llama 4 Scout: 48 layers, 36 of them chunked (8192-token chunks), every layer MoE 1-of-16.
SCOUT_D, SCOUT_V, SCOUT_EXPERT = 5120, 202048, 3 * 5120 * 8192
SCOUT_ROUTED = 48 * 16 * SCOUT_EXPERT


def test_llama_4_scout_chunked_kv_and_weights_by_hand() -> None:
    layer = 2 * 8 * 128 * 2                          # K and V of 8 heads x 128 at BF16
    short = scenario(("concurrency", 16), model="llama-4-scout", precision="bf16")
    assert mag(short, "kv_bytes_per_token", "B/token") == 48 * layer   # 1536 < 8192: all grow
    n = mag(short, "n_params")
    assert n == 107_769_861_120
    assert mag(short, "params_routed_experts") == SCOUT_ROUTED
    assert mag(short, "params_shared_experts") == 48 * SCOUT_EXPERT
    assert mag(short, "params_embedding") == 2 * SCOUT_V * SCOUT_D
    assert mag(short, "weights_bytes", "B") == n * 2
    step = ((n - SCOUT_ROUTED) + distinct(16, 1, 16) * SCOUT_ROUTED) * 2
    assert mag(short, "weights_bytes_per_step", "B") == pytest.approx(step)
    long = scenario(("isl", 16384), ("max_context", 32768), model="llama-4-scout",
                    precision="bf16")
    ctx = 16384 + 1024 / 2
    assert mag(long, "kv_bytes_per_token", "B/token") == 12 * layer     # the global layers
    assert mag(long, "kv_bytes_per_seq", "B") == pytest.approx(
        ctx * 12 * layer + 36 * 8192 * layer)
    assert mag(long, "kv_bytes_max_context", "B") == pytest.approx(
        32768 * 12 * layer + 36 * 8192 * layer)


def test_llama_4_scout_prefill_pairs_count_whole_chunks() -> None:
    sc = scenario(("isl", 20000), ("attention_flops", "true"), model="llama-4-scout",
                  precision="bf16")
    chunk, rest = 8192, 20000 - 2 * 8192
    pairs = 12 * 20000 ** 2 / 2 + 36 * (2 * chunk ** 2 / 2 + rest ** 2 / 2)
    assert mag(sc, "prefill_attended_pairs", "token**2") == pytest.approx(pairs)
    assert mag(sc, "prefill_attention_flops", "FLOP") == pytest.approx(
        2 * 40 * (128 + 128) * pairs)


# ---- Qwen3-Next-80B-A3B: 12 gated-attention layers, 36 Gated DeltaNet, 512 experts top-10.
def test_qwen3_next_kv_linear_state_and_weights_by_hand() -> None:
    sc = scenario(("concurrency", 8), model="qwen3-next-80b-a3b", precision="bf16")
    layer = 2 * 2 * 256 * 2                          # K and V of 2 heads x 256 at BF16
    assert mag(sc, "kv_bytes_per_token", "B/token") == 12 * layer == 24_576
    state = 36 * (32 * 128 * 128 + 3 * (2 * 16 * 128 + 32 * 128)) * 2   # constant, BF16
    assert mag(sc, "linear_state_bytes_per_seq", "B") == state == 39_518_208
    ctx = 1024 + 1024 / 2
    assert mag(sc, "kv_bytes_per_seq", "B") == pytest.approx(ctx * 12 * layer + state)
    routed = 48 * 512 * 3 * 2048 * 512
    shared = 48 * (3 * 2048 * 512 + 2048)           # shared expert + its sigmoid gate
    n = mag(sc, "n_params")
    assert (n, mag(sc, "params_routed_experts"), mag(sc, "params_shared_experts")) == \
        (79_674_391_296, routed, shared)
    assert mag(sc, "weights_bytes", "B") == n * 2
    step = ((n - routed) + distinct(512, 10, 8) * routed) * 2
    assert mag(sc, "weights_bytes_per_step", "B") == pytest.approx(step)


def test_a_model_without_experts_reads_every_weight_in_decode_and_prefill() -> None:
    """Fewer active parameters than parameters names no routing without experts: the file
    is refused at load (tests/data/bad/sparse-without-experts.toml), and a sheet that gets
    there by a formula pin still reads every weight in both phases, not n_active/n_params of
    them in decode and all in prefill."""
    with pytest.raises(PerfgraphError, match="declares no routed experts"):
        scenario(("n_active_params", "1e10"), model="llama-3.1-70b")
    sc = scenario(("n_active_params", "n_params / 7"), ("concurrency", 1),
                  model="llama-3.1-70b", precision="bf16")
    every = 70_553_706_496 * 2
    assert mag(sc, "weights_bytes_per_step", "B") == every
    assert mag(sc, "prefill_weights_bytes", "B") == every
    assert mag(sc, "single_stream_weights_bytes", "B") == every
