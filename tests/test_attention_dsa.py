"""DeepSeek sparse attention (DeepSeek-V3.2): attention bytes and FLOPs from the top-k.

Every expected number is computed here by hand from DeepSeek-V3.2's config.json
(tests/data/configs/deepseek-v3.2.json) and the reference implementation's caches
(DeepSeek-V3.2-Exp inference/model.py: the MLA latent + RoPE key per token and layer, and the
indexer's FP8 key of index_head_dim with one FP32 scale per 128 elements), not read back.
"""

from __future__ import annotations

import pytest

from tests.conftest import scenario

L, HEADS, LATENT, ROPE, V_HEAD, QK_HEAD = 61, 128, 512, 64, 128, 192
TOPK, IDX_HEADS, IDX_DIM = 2048, 64, 128
KV = 1                                          # fp8 KV cache: 1 byte an element
LATENT_ROW = (LATENT + ROPE) * KV               # 576 B a token and layer
INDEX_ROW = IDX_DIM * 1 + 4                     # 132 B: FP8 key + one FP32 scale


def dsa(isl: int, osl: int, **sets: object):
    """One sequence on one GPU (tp 1: MLA's latent is not replicated across TP ranks)."""
    return scenario(("isl", isl), ("osl", osl), ("concurrency", 1), ("tp", 1),
                    ("attention_flops", "true"), *sets.items(), model="deepseek-v3.2",
                    hardware="h200", precision="fp8")


def mag(sc, name: str, unit: str) -> float:
    return sc.sheet.magnitude(name, unit)


def test_the_cache_holds_every_token_and_the_indexer_keys() -> None:
    sc = dsa(1024, 1024)
    assert mag(sc, "index_bytes_per_token_layer", "B/token") == 132
    assert mag(sc, "kv_bytes_per_token", "B/token") == L * (LATENT_ROW + INDEX_ROW) == 43_188
    assert mag(sc, "kv_bytes_per_seq", "B") == pytest.approx(1536 * 43_188, rel=1e-12)


@pytest.mark.parametrize("isl,osl", [(1024, 1024), (32768, 1024)], ids=["below", "above"])
def test_decode_reads_the_top_k_latents_and_every_indexer_key(isl: int, osl: int) -> None:
    """Below top-k (mean context 1536 < 2048) every token is read; above it (33,280) a DSA
    layer reads 2048 latents but still every indexer key."""
    sc = dsa(isl, osl)
    ctx = isl + osl / 2
    read = L * (min(ctx, TOPK) * LATENT_ROW + ctx * INDEX_ROW)
    assert mag(sc, "kv_read_bytes_per_seq", "B") == pytest.approx(read, rel=1e-12)
    assert mag(sc, "kv_bytes_total", "B") == pytest.approx(read, rel=1e-12)   # one sequence
    assert mag(sc, "kv_bytes_per_seq", "B") == pytest.approx(L * ctx * (LATENT_ROW + INDEX_ROW))
    if ctx > TOPK:
        assert read == pytest.approx(61 * (2048 * 576 + 33_280 * 132))       # 0.34 GB, not 1.44


@pytest.mark.parametrize("isl,osl", [(1024, 1024), (32768, 1024)], ids=["below", "above"])
def test_decode_flops_attend_to_the_top_k_and_index_every_token(isl: int, osl: int) -> None:
    """MLA absorbed: QK 128 x (512 + 64), AV 128 x 512 per attended token and layer; the
    indexer 2 x 64 x 128 per cached token and layer."""
    sc = dsa(isl, osl)
    ctx = isl + osl / 2
    attend = 2 * (HEADS * (LATENT + ROPE) + HEADS * LATENT) * L * min(ctx, TOPK)
    index = 2 * IDX_HEADS * IDX_DIM * L * ctx
    assert mag(sc, "decode_indexer_flops_per_token", "FLOP/token") == pytest.approx(index)
    assert mag(sc, "decode_attention_flops_per_token", "FLOP/token") == \
        pytest.approx(attend + index, rel=1e-12)


@pytest.mark.parametrize("isl", [1024, 8192], ids=["below", "above"])
def test_prefill_pairs_stop_growing_at_the_top_k(isl: int) -> None:
    """Query t attends min(t, k) tokens: isl²/2 below k, isl·k − k²/2 above; the indexer
    scores every causal pair."""
    sc = dsa(isl, 256)
    k = min(isl, TOPK)
    pairs = L * (isl * k - k ** 2 / 2)
    assert mag(sc, "prefill_attended_pairs", "token**2") == pytest.approx(pairs)
    index = 2 * IDX_HEADS * IDX_DIM * L * isl ** 2 / 2
    attend = 2 * HEADS * (QK_HEAD + V_HEAD) * pairs
    assert mag(sc, "prefill_attention_flops", "FLOP") == pytest.approx(attend + index, rel=1e-12)


def test_without_dsa_the_same_cells_keep_their_dense_values() -> None:
    """DeepSeek-V3 (no indexer): reads its whole cache, attends over the whole context."""
    sc = scenario(("isl", 32768), ("osl", 1024), ("concurrency", 1), ("tp", 1),
                  ("attention_flops", "true"), model="deepseek-v3", hardware="h200",
                  precision="fp8")
    ctx = 32768 + 512
    assert mag(sc, "kv_read_bytes_per_seq", "B") == pytest.approx(L * ctx * LATENT_ROW)
    assert mag(sc, "decode_attention_flops_per_token", "FLOP/token") == \
        pytest.approx(2 * (HEADS * (LATENT + ROPE) + HEADS * LATENT) * L * ctx)


def test_sparse_attention_shortens_a_long_context_decode_step() -> None:
    """The same model with its indexer switched off (n_dsa_layers 0) reads 4.3x the KV."""
    sparse, dense = dsa(32768, 1024), dsa(32768, 1024, n_dsa_layers=0)
    ratio = mag(dense, "kv_read_bytes_per_seq", "B") / mag(sparse, "kv_read_bytes_per_seq", "B")
    assert ratio == pytest.approx(33_280 * 576 / (2048 * 576 + 33_280 * 132))
    assert mag(sparse, "itl", "ms") < mag(dense, "itl", "ms")


@pytest.mark.parametrize("isl", [1024, 8192], ids=["below", "above"])
def test_the_longest_prompt_and_a_chat_turn_count_dsa_as_prefill_and_decode_do(isl: int) -> None:
    """long_prompt_flops (scheduling) at long_prompt = isl is prefill_flops; a chat turn's
    token at the mean decode context costs what a decoded token does."""
    sc = dsa(isl, 256, chat_turn=1, turn_tokens=isl + 128)
    assert mag(sc, "long_prompt_flops", "FLOP") == \
        pytest.approx(mag(sc, "prefill_flops", "FLOP"), rel=1e-12)
    assert mag(sc, "chat_token_flops", "FLOP/token") == pytest.approx(
        mag(sc, "flops_per_token", "FLOP/token")
        + mag(sc, "decode_attention_flops_per_token", "FLOP/token"), rel=1e-12)
