"""perfgraph.scenario.model_from_config: parameter counts from config.json, and the model TOML
it writes.

The configs under tests/data/configs/ are the public Hugging Face config.json files of the
catalog's models (see PROVENANCE.md there). The expected counts are the publishers' own
figures, not this code's output, so a wrong formula fails here.
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

from perfgraph.scenario.model_from_config import ImportModelError, count_params, model_toml

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "tests" / "data" / "configs"


def config(slug: str) -> dict:
    return json.loads((CONFIGS / f"{slug}.json").read_text())


# slug, published total, published active, relative tolerance, where the figure comes from
PUBLISHED = [
    ("llama-3.1-8b", 8.03e9, 8.03e9, 0.001, "HF model card / safetensors: 8.03B"),
    ("llama-3.1-70b", 70.55e9, 70.55e9, 0.001, "HF safetensors: 70.6B; brief: 70.55e9"),
    ("llama-3.3-70b", 70.55e9, 70.55e9, 0.001, "same architecture as 3.1 70B"),
    ("llama-3.1-405b", 405.9e9, 405.9e9, 0.001, "HF safetensors: 406B"),
    ("qwen2.5-72b", 72.7e9, 72.7e9, 0.001, "Qwen2.5 report: 72.7B"),
    ("mixtral-8x7b", 46.7e9, 12.9e9, 0.005, "Mistral: 46.7B total, 12.9B active"),
    ("deepseek-v3", 671e9, 37e9, 0.02, "DeepSeek-V3 report: 671B total, 37B activated"),
    ("gpt-oss-120b", 116.83e9, 5.71e9, 0.002, "OpenAI model card: 116.83B (active: see below)"),
]


@pytest.mark.parametrize("slug,total,active,rel,where", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_counts_match_published_figures(slug, total, active, rel, where):
    got_total, got_active = count_params(config(slug))
    assert got_total == pytest.approx(total, rel=rel), where
    assert got_active == pytest.approx(active, rel=rel), where
    assert got_active <= got_total


@pytest.mark.parametrize("slug,active,rel", [
    ("gpt-oss-120b", 5.13e9, 0.002),   # OpenAI model card: 5.13B active, embedding not counted
    ("deepseek-v3", 36.6e9, 0.002),    # DeepSeek weights README: 36.6B incl. 0.9B output head
    ("mixtral-8x7b", 12.75e9, 0.002),  # 12.9B minus the 0.13B embedding table
])
def test_active_without_embedding_matches_vendors_that_exclude_it(slug, active, rel):
    _, got = count_params(config(slug), active_includes_embedding=False)
    assert got == pytest.approx(active, rel=rel)


def test_llama_70b_exact_count_by_hand():
    """70,553,706,496 = embeddings + 80 x (attention + MLP + 2 norms) + final norm + lm_head."""
    d, v, layers, inter, kv_width = 8192, 128256, 80, 28672, 8 * 128
    attention = d * d + 2 * d * kv_width + d * d          # q, k, v, o
    mlp = 3 * d * inter                                   # gate, up, down
    expected = v * d + layers * (attention + mlp + 2 * d) + d + v * d
    assert expected == 70_553_706_496
    assert count_params(config("llama-3.1-70b")) == (expected, expected)


def test_exact_counts_are_stable():
    """Exact integers, so that any change to a counting rule shows up."""
    exact = {
        "llama-3.1-8b": (8_030_261_248, 8_030_261_248),
        "llama-3.1-405b": (405_853_388_800, 405_853_388_800),
        "qwen2.5-72b": (72_706_203_648, 72_706_203_648),
        "mixtral-8x7b": (46_702_792_704, 12_879_925_248),
        "deepseek-v3": (671_026_419_200, 37_552_297_472),
        "gpt-oss-120b": (116_829_156_672, 5_711_982_912),
    }
    for slug, want in exact.items():
        assert count_params(config(slug)) == want, slug


def test_qwen2_counts_qkv_biases():
    cfg = config("qwen2.5-72b")
    as_llama = {**cfg, "model_type": "llama"}
    bias_per_layer = 8192 + 2 * 1024
    assert count_params(cfg)[0] - count_params(as_llama)[0] == 80 * bias_per_layer


def test_tied_embeddings_drop_the_lm_head():
    cfg = config("llama-3.1-8b")
    untied, _ = count_params(cfg)
    tied, tied_active = count_params({**cfg, "tie_word_embeddings": True})
    assert untied - tied == 128256 * 4096
    assert tied_active == tied


# Further MoE layouts, typed in from their public config.json files (fields that matter).
QWEN15_MOE = {  # Qwen/Qwen1.5-MoE-A2.7B: 14.3B total, 2.7B activated
    "model_type": "qwen2_moe", "hidden_size": 2048, "num_hidden_layers": 24,
    "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 5632,
    "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632, "num_experts": 60,
    "num_experts_per_tok": 4, "vocab_size": 151936, "decoder_sparse_step": 1,
    "mlp_only_layers": [], "tie_word_embeddings": False}
QWEN3_MOE = {  # Qwen/Qwen3-30B-A3B: 30.5B total, 3.3B activated
    "model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 48,
    "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
    "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128,
    "num_experts_per_tok": 8, "vocab_size": 151936, "decoder_sparse_step": 1,
    "mlp_only_layers": [], "tie_word_embeddings": False}
DEEPSEEK_V2_LITE = {  # deepseek-ai/DeepSeek-V2-Lite: 15.7B total, 2.4B activated; no q LoRA
    "model_type": "deepseek_v2", "hidden_size": 2048, "num_hidden_layers": 27,
    "num_attention_heads": 16, "num_key_value_heads": 16, "q_lora_rank": None,
    "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128,
    "intermediate_size": 10944, "moe_intermediate_size": 1408, "n_routed_experts": 64,
    "n_shared_experts": 2, "num_experts_per_tok": 6, "first_k_dense_replace": 1,
    "moe_layer_freq": 1, "vocab_size": 102400, "tie_word_embeddings": False}


@pytest.mark.parametrize("cfg,total,active,with_embedding", [
    (QWEN15_MOE, 14.3e9, 2.7e9, True),
    (QWEN3_MOE, 30.5e9, 3.3e9, True),
    (DEEPSEEK_V2_LITE, 15.7e9, 2.4e9, False),
], ids=["qwen1.5-moe-a2.7b", "qwen3-30b-a3b", "deepseek-v2-lite"])
def test_other_moe_layouts(cfg, total, active, with_embedding):
    got_total, got_active = count_params(cfg, active_includes_embedding=with_embedding)
    assert got_total == pytest.approx(total, rel=0.01)
    assert got_active == pytest.approx(active, rel=0.025)


def test_moe_dense_layers_follow_first_k_dense_replace():
    cfg = config("deepseek-v3")
    all_moe, _ = count_params({**cfg, "first_k_dense_replace": 0})
    dense3, _ = count_params(cfg)
    d = 7168
    moe_layer = d * 256 + 256 + 3 * d * 2048 * (256 + 1)   # router, bias, 256 routed + 1 shared
    assert all_moe - dense3 == 3 * (moe_layer - 3 * d * 18432)


@pytest.mark.parametrize("mutation,field", [
    (lambda c: c.pop("hidden_size"), "hidden_size"),
    (lambda c: c.pop("num_hidden_layers"), "num_hidden_layers"),
    (lambda c: c.update(vocab_size="lots"), "vocab_size"),
    (lambda c: c.update(num_attention_heads=0), "num_attention_heads"),
    (lambda c: c.update(intermediate_size=1.5), "intermediate_size"),
])
def test_bad_configs_raise_naming_the_field(mutation, field):
    cfg = config("llama-3.1-8b")
    mutation(cfg)
    with pytest.raises(ImportModelError, match=field) as info:
        count_params(cfg)
    assert isinstance(info.value, ValueError)


def test_moe_errors_name_the_field():
    cfg = config("mixtral-8x7b")
    with pytest.raises(ImportModelError, match="num_experts_per_tok"):
        count_params({k: v for k, v in cfg.items() if k != "num_experts_per_tok"})
    with pytest.raises(ImportModelError, match="num_experts_per_tok"):
        count_params({**cfg, "num_experts_per_tok": 9})
    with pytest.raises(ImportModelError, match="kv_lora_rank|qk_rope_head_dim"):
        count_params({k: v for k, v in config("deepseek-v3").items() if k != "qk_rope_head_dim"})
    with pytest.raises(ImportModelError, match="head_dim"):
        count_params({**config("llama-3.1-8b"), "num_attention_heads": 30})
    with pytest.raises(ImportModelError):
        count_params([1, 2, 3])  # type: ignore[arg-type]


def test_model_toml_parses_and_carries_the_values():
    cfg = config("llama-3.1-70b")
    text = model_toml(cfg, "llama-3.1-70b", "meta-llama/Llama-3.1-70B")
    assert text.startswith("# ") and "meta-llama/Llama-3.1-70B" in text.splitlines()[0]
    doc = tomllib.loads(text)
    assert doc["name"] == "Llama 3.1 70B"
    assert doc["hf_id"] == "meta-llama/Llama-3.1-70B"
    v = doc["values"]
    assert v["n_params"] == v["n_active_params"] == 70_553_706_496
    assert (v["n_layers"], v["n_heads"], v["n_kv_heads"], v["head_dim"], v["d_model"]) == \
        (80, 64, 8, 128, 8192)
    assert doc["architecture"]["vocab_size"] == 128256
    assert doc["architecture"]["intermediate_size"] == 28672
    assert "cells" not in doc
    # seed: KV per token at 1 byte (FP8) = 2 x 80 x 8 x 128 = 163,840 B
    assert 2 * v["n_layers"] * v["n_kv_heads"] * v["head_dim"] == 163_840
    for line in text.splitlines():
        if line.startswith(("n_", "head_dim", "d_model")):
            assert "#" in line, f"uncommented value: {line}"


def test_model_toml_for_mla_gives_the_latent_widths():
    doc = tomllib.loads(model_toml(config("deepseek-v3"), "deepseek-v3", "deepseek-ai/DeepSeek-V3",
                                   name="DeepSeek-V3"))
    v = doc["values"]
    assert v["n_params"] == 671_026_419_200 and v["n_active_params"] == 37_552_297_472
    assert (v["n_heads"], v["n_kv_heads"], v["head_dim"], v["n_layers"]) == (128, 128, 192, 61)
    assert "cells" not in doc  # the sheet's kv_bytes_per_token knows MLA
    assert (v["kv_lora_rank"], v["qk_rope_head_dim"], v["v_head_dim"]) == (512, 64, 128)
    assert (v["n_routed_experts"], v["n_experts_per_tok"]) == (256, 8)
    # 61 x (512 + 64) = 35,136 B/token at 1 byte, vs 2 x 61 x 128 x 192 = 2,998,272 for MHA
    assert v["n_layers"] * (512 + 64) == 35_136


def test_model_toml_notes_sliding_window_and_source_path():
    text = model_toml(config("gpt-oss-120b"), "gpt-oss-120b", "/tmp/gpt-oss/config.json")
    doc = tomllib.loads(text)
    assert "hf_id" not in doc                      # a path is not a repo id
    assert "/tmp/gpt-oss/config.json" in text.splitlines()[0]
    assert "18 of 36 layers" in text and "128-token sliding window" in text
    assert doc["values"]["head_dim"] == 64        # explicit head_dim, not 2880 / 64
    assert doc["architecture"]["num_local_experts"] == 128


CATALOG = [("llama-3.1-8b", "meta-llama/Llama-3.1-8B"),
           ("llama-3.1-70b", "meta-llama/Llama-3.1-70B"),
           ("llama-3.3-70b", "meta-llama/Llama-3.3-70B-Instruct"),
           ("llama-3.1-405b", "meta-llama/Llama-3.1-405B"),
           ("mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1"),
           ("qwen2.5-72b", "Qwen/Qwen2.5-72B-Instruct"),
           ("deepseek-v3", "deepseek-ai/DeepSeek-V3"),
           ("gpt-oss-120b", "openai/gpt-oss-120b"),
           ("gpt-oss-20b", "openai/gpt-oss-20b")]


@pytest.mark.parametrize("slug,hf_id", CATALOG, ids=[c[0] for c in CATALOG])
def test_catalog_model_files_agree_with_their_configs(slug, hf_id):
    path = ROOT / "models" / f"{slug}.toml"
    text = path.read_text()
    doc = tomllib.loads(text)
    generated = tomllib.loads(model_toml(config(slug), slug, hf_id))
    assert text.startswith("# ") and "Source:" in text.splitlines()[0]
    assert doc["hf_id"] == hf_id
    assert doc["values"] == generated["values"]
    assert doc.get("cells") == generated.get("cells")
    assert doc.get("weight_precision") == generated.get("weight_precision")
