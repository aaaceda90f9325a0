"""import-model on the wider catalog: Llama 4, Qwen3-Next, and the configs checked in issue 11.

The expected figures are the publishers' (model cards, safetensors totals), each with the
tolerance its rounding allows, or hand counts from the config fields and the Hugging Face
modeling code, never this code's output.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from perfgraph.scenario.hf_config import attention_kinds
from perfgraph.scenario.model_from_config import ImportModelError, count_params, model_toml
from tests.test_import_model import ROOT, config  # noqa: E402  (one home for the fixtures)

# Llama 4, by hand from the config and transformers' modeling_llama4 (Llama4TextMoe: router,
# routed experts and one shared expert, all SwiGLU of intermediate_size; dense layers of
# intermediate_size_mlp; the QK norm is a weightless L2 norm).
D, V, L = 5120, 202048, 48
ATTN = 2 * D * 40 * 128 + 2 * D * 8 * 128                  # q, o; k, v
EXPERT = 3 * D * 8192
EMB = 2 * V * D                                            # embed_tokens + lm_head


def llama4_by_hand(experts: int, moe_layers: int) -> tuple[int, int]:
    dense_layers = L - moe_layers
    shared = L * (ATTN + 2 * D) + D + EMB + dense_layers * 3 * D * 16384 \
        + moe_layers * (D * experts + EXPERT)              # router + shared expert
    return shared + moe_layers * experts * EXPERT, shared + moe_layers * EXPERT


def test_llama_4_scout_and_maverick_by_hand() -> None:
    assert count_params(config("llama-4-scout")) == llama4_by_hand(16, 48) \
        == (107_769_861_120, 17_172_894_720)
    assert count_params(config("llama-4-maverick")) == llama4_by_hand(128, 24) \
        == (400_711_848_960, 17_184_691_200)


@pytest.mark.parametrize("slug,total,active", [
    ("llama-4-scout", 109e9, 17e9),
    ("llama-4-maverick", 400e9, 17e9),
])
def test_llama_4_counts_match_metas_figures(slug: str, total: float, active: float) -> None:
    """Meta publishes whole billions (±0.5B: 0.5% of 109B, 2.9% of 17B) and counts the vision
    encoder (34 ViT layers of width 1408: ~0.9B) that a text-only count leaves out, so the
    total may sit up to (0.9 + 0.5) / 109 = 1.3% below the card; 1.5% is allowed."""
    got_total, got_active = count_params(config(slug))
    assert got_total == pytest.approx(total, rel=0.015)
    assert got_total <= total + 0.5e9 + 0.9e9 and got_total >= total - 0.5e9 - 0.9e9
    assert got_active == pytest.approx(active, rel=0.03)


def test_llama_4_attention_kinds_follow_no_rope_layers() -> None:
    for slug in ("llama-4-scout", "llama-4-maverick"):
        kinds = attention_kinds(config(slug))
        assert kinds["n_chunked_layers"] == 36 and kinds["attention_chunk_size"] == 8192
        assert kinds["n_sliding_layers"] == kinds["n_linear_layers"] == 0
    cfg = config("llama-4-scout")
    cfg["text_config"]["no_rope_layers"] = [1] * 47
    with pytest.raises(ImportModelError, match="'no_rope_layers' must list 48 integers"):
        attention_kinds(cfg)


# Qwen3-Next, by hand from the config and transformers' modeling_qwen3_next.
Dq, Vq, Lq = 2048, 151936, 48
KEY, VALUE = 16 * 128, 32 * 128
GDN = (Dq * (2 * KEY + 2 * VALUE)        # in_proj_qkvz
       + Dq * 2 * 32                     # in_proj_ba: beta and alpha per value head
       + (2 * KEY + VALUE) * 4           # depthwise conv1d over q, k, v (kernel 4, no bias)
       + 2 * 32                          # dt_bias, A_log
       + 128                             # gated RMSNorm over one value head
       + VALUE * Dq)                     # out_proj
# q_proj with its output gate, k, v, o_proj, q_norm and k_norm
GATED_ATTN = Dq * 16 * 256 * 2 + 2 * Dq * 2 * 256 + 16 * 256 * Dq + 2 * 256
MOE = Dq * 512 + 512 * 3 * Dq * 512 + 3 * Dq * 512 + Dq  # router, experts, shared, shared gate


def test_qwen3_next_counts_by_hand_and_against_the_published_total() -> None:
    assert GDN == 33_718_464
    total = 36 * GDN + 12 * GATED_ATTN + Lq * (MOE + 2 * Dq) + Dq + 2 * Vq * Dq
    active = total - Lq * (512 - 10) * 3 * Dq * 512
    assert count_params(config("qwen3-next-80b-a3b")) == (total, active)
    # Qwen3-Coder-Next (same architecture, no MTP tensors) has a safetensors total of
    # 79,674,391,296 and 3,874,929,408 parameters a token touches (quoted in public code).
    assert (total, active) == (79_674_391_296, 3_874_929_408)
    # Qwen's card rounds to whole billions: "80B total, 3B activated" (the 3B without the
    # embedding table and LM head, 3.25e9).
    assert round(total / 1e9) == 80
    assert round((active - 2 * Vq * Dq) / 1e9) == 3


def test_qwen3_next_linear_state_is_heads_by_key_by_value_plus_the_conv_cache() -> None:
    kinds = attention_kinds(config("qwen3-next-80b-a3b"))
    assert kinds["n_linear_layers"] == 36
    assert kinds["linear_state_elements"] == 32 * 128 * 128 + (4 - 1) * (2 * KEY + VALUE) \
        == 548_864


def test_kimi_k2_matches_its_checkpoint_tensor_for_tensor() -> None:
    """The Kimi-K2-Instruct checkpoint holds 1,026,470,731,056 values (its safetensors headers,
    as a public model-info report prints them). That is this count plus the FP8 block scales
    (one per 128 x 128 block of every FP8 matrix) and the rotary inv_freq buffers, which the
    count leaves out on purpose."""
    total, active = count_params(config("kimi-k2"))
    attention_scales = (5 * 56 + 128 * 4 + 56 * 64 + 12 * 56 + 96 * 12 + 56) * 61
    mlp_scales = 3 * 144 * 56 + 60 * 384 * 3 * 16 * 56 + 60 * 3 * 16 * 56
    assert total + attention_scales + mlp_scales == 1_026_470_731_056
    assert active == pytest.approx(32e9, rel=0.03)  # Moonshot: 32B activated (whole billions)


@pytest.mark.parametrize("slug,total,active,rel", [
    ("qwen3-235b-a22b", 235e9, 22e9, 0.01),     # Qwen card: 235B total, 22B activated
    ("qwen3-32b", 32.8e9, 32.8e9, 0.002),       # Qwen card: 32.8B
    ("gemma-3-27b", 27e9, 27e9, 0.005),         # Google: 27B (language model; SigLIP aside)
    ("mistral-7b", 7.24e9, 7.24e9, 0.001),      # HF safetensors: 7.24B
], ids=lambda v: v if isinstance(v, str) else "")
def test_the_checked_configs_match_their_cards(slug: str, total: float, active: float,
                                               rel: float) -> None:
    got_total, got_active = count_params(config(slug))
    assert got_total == pytest.approx(total, rel=rel)
    assert got_active == pytest.approx(active, rel=rel)


def test_gemma_3_reads_transformers_defaults_for_what_its_config_leaves_out() -> None:
    cfg = config("gemma-3-27b")
    assert "vocab_size" not in cfg["text_config"]          # the published file names neither
    total, _ = count_params(cfg)
    assert total == 27_009_346_304                          # vocab 262,208, tied, 4 norms/layer
    assert attention_kinds(cfg)["n_sliding_layers"] == 62 - 62 // 6


@pytest.mark.parametrize("slug,drop,key", [
    ("llama-4-maverick", "intermediate_size_mlp", "intermediate_size_mlp"),
    ("llama-4-scout", "num_local_experts", "num_experts_per_tok|hidden_size|intermediate"),
    ("qwen3-next-80b-a3b", "linear_key_head_dim", "linear_key_head_dim"),
    ("qwen3-next-80b-a3b", "full_attention_interval", "full_attention_interval"),
])
def test_a_config_missing_a_field_its_family_needs_names_the_key(slug: str, drop: str,
                                                                 key: str) -> None:
    cfg = config(slug)
    inner = cfg.get("text_config", cfg)
    inner.pop(drop)
    if drop == "num_local_experts":  # without experts Scout reads as dense: intermediate_size_mlp
        inner.pop("intermediate_size_mlp")
    with pytest.raises(ImportModelError, match=key) as info:
        count_params(cfg)
    assert "config.json" in str(info.value)


def test_the_cli_names_the_file_and_the_key(tmp_path: Path, capsys) -> None:
    from perfgraph.cli.main import main
    cfg = config("qwen3-next-80b-a3b")
    del cfg["linear_num_value_heads"]
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps(cfg))
    assert main(["import-model", str(bad), "--slug", "x"]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "linear_num_value_heads" in err and "Traceback" not in err


CATALOG = [("llama-4-scout", "meta-llama/Llama-4-Scout-17B-16E-Instruct"),
           ("llama-4-maverick", "meta-llama/Llama-4-Maverick-17B-128E-Instruct"),
           ("qwen3-next-80b-a3b", "Qwen/Qwen3-Next-80B-A3B-Instruct"),
           ("qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B"),
           ("qwen3-32b", "Qwen/Qwen3-32B"),
           ("qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B"),
           ("gemma-3-27b", "google/gemma-3-27b-it"),
           ("kimi-k2-instruct", "moonshotai/Kimi-K2-Instruct"),
           ("mistral-7b", "mistralai/Mistral-7B-v0.1"),
           ("deepseek-r1-0528", "deepseek-ai/DeepSeek-R1-0528"),
           ("deepseek-v3.2", "deepseek-ai/DeepSeek-V3.2"),
           ("deepseek-v2.5", "deepseek-ai/DeepSeek-V2.5"),
           ("qwen3-coder-480b-a35b", "Qwen/Qwen3-Coder-480B-A35B-Instruct"),
           ("glm-4.5", "zai-org/GLM-4.5")]
CONFIG_OF = {"kimi-k2-instruct": "kimi-k2"}


@pytest.mark.parametrize("slug,hf_id", CATALOG, ids=[c[0] for c in CATALOG])
def test_catalog_model_files_agree_with_their_configs(slug: str, hf_id: str) -> None:
    text = (ROOT / "models" / f"{slug}.toml").read_text()
    doc = tomllib.loads(text)
    generated = tomllib.loads(model_toml(config(CONFIG_OF.get(slug, slug)), slug, hf_id))
    assert "Source:" in text.splitlines()[0] and doc["hf_id"] == hf_id
    assert doc["values"] == generated["values"]
    assert doc.get("weight_precision") == generated.get("weight_precision")


def test_deepseek_r1_matches_its_checkpoint_tensor_for_tensor() -> None:
    """DeepSeek-R1's checkpoint holds 684,531,386,000 values (its safetensors headers, as a
    public model-info report prints them): this count (671.03e9, no MTP) plus the one
    multi-token-prediction layer and the FP8 block scales, exactly."""
    d, v = 7168, 129280
    mla = (d * 1536 + 1536 + 1536 * 128 * 192            # q_a, q_a_layernorm, q_b
           + d * 576 + 512 + 512 * 128 * 256              # kv_a_proj_with_mqa, norm, kv_b
           + 128 * 128 * d)                               # o_proj
    moe = d * 256 + 256 + 257 * 3 * d * 2048              # router + bias, 256 routed + 1 shared
    mtp = mla + 2 * d + moe + d * 2 * d + 2 * v * d + 3 * d  # eh_proj, embed, head, 3 norms
    scales = ((5 * 56 + 256 * 4 + 56 * 128 + 12 * 56 + 192 * 12) * 62   # attention, 61 + MTP
              + 3 * 3 * 144 * 56 + 59 * 257 * 3 * 16 * 56)              # dense and MoE MLPs
    total, _ = count_params(config("deepseek-r1-0528"))
    assert total + mtp + scales == 684_531_386_000


# The entries added with their config.json (tests/data/configs/PROVENANCE.md): each field read
# straight from the file, and the publisher's own total and active figures.
NEW = [("deepseek-v3.2", "num_key_value_heads", "n_routed_experts", 671e9, 37e9, 0.02),
       ("deepseek-v2.5", "num_key_value_heads", "n_routed_experts", 236e9, 21e9, 0.002),
       ("qwen3-coder-480b-a35b", "num_key_value_heads", "num_experts", 480e9, 35e9, 0.02)]


@pytest.mark.parametrize("slug,kv_key,experts_key,total,active,rel", NEW,
                         ids=[n[0] for n in NEW])
def test_new_catalog_entries_match_their_config_json(slug: str, kv_key: str, experts_key: str,
                                                     total: float, active: float,
                                                     rel: float) -> None:
    cfg = config(slug)
    values = tomllib.loads((ROOT / "models" / f"{slug}.toml").read_text())["values"]
    assert (values["n_layers"], values["d_model"], values["n_heads"], values["n_kv_heads"],
            values["n_routed_experts"], values["n_experts_per_tok"]) == \
        (cfg["num_hidden_layers"], cfg["hidden_size"], cfg["num_attention_heads"], cfg[kv_key],
         cfg[experts_key], cfg["num_experts_per_tok"])
    assert (values["n_params"], values["n_active_params"]) == count_params(cfg)
    assert values["n_params"] == pytest.approx(total, rel=rel)
    assert values["n_active_params"] == pytest.approx(active, rel=0.04)


def test_glm_4_5_matches_its_documented_architecture_and_quoted_size() -> None:
    """GLM-4.5's config.json is assembled from its documented architecture (PROVENANCE.md):
    92 layers, the first 3 dense; 5120 hidden, 96 heads, 8 KV heads of 128; 160 routed experts
    of 1536, top-8, one shared. Zhipu's 355B counts the one MTP layer the catalog leaves out
    (eh_proj 2d x d, two norms, one more attention + MoE layer); its 32B active leaves out the
    embedding lookup."""
    cfg = config("glm-4.5")
    values = tomllib.loads((ROOT / "models" / "glm-4.5.toml").read_text())["values"]
    d, e = 5120, 1536
    assert (values["n_layers"], values["n_moe_layers"], values["d_model"], values["n_heads"],
            values["n_kv_heads"], values["head_dim"], values["n_routed_experts"],
            values["n_experts_per_tok"]) == (92, 89, 5120, 96, 8, 128, 160, 8)
    assert values["params_routed_experts"] == 89 * 160 * 3 * d * e
    assert values["params_shared_experts"] == 89 * 3 * d * e
    assert (values["n_params"], values["n_active_params"]) == count_params(cfg)
    attention = (d * 96 * 128 + 96 * 128 + 2 * (d * 8 * 128 + 8 * 128)   # q, k, v with bias
                 + 96 * 128 * d + 2 * 128 + 2 * d)                          # o, QK norms, 2 norms
    moe = d * 160 + 160 + 161 * 3 * d * e                                   # router + bias, experts
    mtp = 2 * d * d + 2 * d + attention + moe + d  # eh_proj, 2 norms, head norm
    assert values["n_params"] + mtp == pytest.approx(355e9, rel=0.01)
    assert values["n_active_params"] - values["params_embedding"] / 2 == \
        pytest.approx(32e9, rel=0.03)


def test_deepseek_v3_2_carries_its_indexer_fields() -> None:
    cfg = config("deepseek-v3.2")
    values = tomllib.loads((ROOT / "models" / "deepseek-v3.2.toml").read_text())["values"]
    assert (values["index_topk"], values["index_n_heads"], values["index_head_dim"]) == \
        (cfg["index_topk"], cfg["index_n_heads"], cfg["index_head_dim"]) == (2048, 64, 128)
    assert values["n_dsa_layers"] == cfg["num_hidden_layers"] == 61


def test_deepseek_v3_2_matches_its_checkpoint_tensor_for_tensor() -> None:
    """DeepSeek-V3.2's checkpoint holds 685,396,921,376 values (its safetensors headers, as a
    public model-info report prints them, tests/data/configs/PROVENANCE.md). That is V3's
    tensors plus one lightning indexer a layer (wq_b 8192 x 1536, wk 128 x 7168, k_norm weight
    and bias 2 x 128, weights_proj 64 x 7168, in all 62 layers with the MTP one) and their
    FP8 block scales (wk 1 x 56, wq_b 64 x 12): this count plus the MTP layer and every
    scale, exactly."""
    d, v = 7168, 129280
    indexer = 1536 * 64 * 128 + d * 128 + 2 * 128 + d * 64
    assert indexer == 13_959_424
    mla = (d * 1536 + 1536 + 1536 * 128 * 192 + d * 576 + 512 + 512 * 128 * 256
           + 128 * 128 * d + indexer)
    moe = d * 256 + 256 + 257 * 3 * d * 2048
    mtp = mla + 2 * d + moe + d * 2 * d + 2 * v * d + 3 * d
    scales = ((5 * 56 + 256 * 4 + 56 * 128 + 12 * 56 + 192 * 12 + 56 + 64 * 12) * 62
              + 3 * 3 * 144 * 56 + 59 * 257 * 3 * 16 * 56)
    total, _ = count_params(config("deepseek-v3.2"))
    assert total == count_params(config("deepseek-v3"))[0] + 61 * indexer
    assert total + mtp + scales == 685_396_921_376


def test_an_indexer_without_mla_is_refused() -> None:
    cfg = config("qwen3-coder-480b-a35b") | {"index_topk": 2048, "index_n_heads": 64,
                                             "index_head_dim": 128}
    with pytest.raises(ImportModelError, match="index_topk"):
        count_params(cfg)


def test_deepseek_v2_5_is_the_235_74b_the_hub_lists() -> None:
    """DeepSeek-V2 paper: 236B total, 21B activated; the Hub's safetensors total for the
    BF16 checkpoint (no MTP, no scales) is 235.74B, this count to the last digit shown."""
    total, active = count_params(config("deepseek-v2.5"))
    assert round(total / 1e9, 2) == 235.74
    assert active == pytest.approx(21e9, rel=0.02)
