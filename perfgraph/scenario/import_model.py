"""Turn a Hugging Face ``config.json`` into a perfgraph model TOML.

Two pure functions, no I/O (the CLI reads the file and writes the result):

* :func:`count_params` counts total and per-token active parameters from the architecture
  fields alone: dense Llama / Qwen2 / Qwen3 / Mistral, Mixtral, Qwen-MoE (shared expert,
  ``decoder_sparse_step``, ``mlp_only_layers``), DeepSeek-V2/V3 (MLA, shared experts,
  ``first_k_dense_replace``, ``moe_layer_freq``) and gpt-oss (biases everywhere, sinks).
* :func:`model_toml` writes the model TOML, with the derivation in comments.

Conventions. Every weight matrix, bias and norm vector is counted; rotary tables and other
buffers are not. DeepSeek's multi-token-prediction layers (``num_nextn_predict_layers``) are
a speculative-decoding add-on and are left out, as DeepSeek's own 671B figure does.
*Active* = total minus the routed experts a token does not visit, so a dense model's active
count equals its total and the embedding table counts in both (the convention of
Mistral's 12.9B for Mixtral; OpenAI's 5.13B for gpt-oss-120b leaves the embedding out; pass
``active_includes_embedding=False`` for that one).
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

from perfgraph.errors import ImportModelError

__all__ = ["ImportModelError", "count_params", "model_toml"]




def _text_config(config: dict) -> dict:
    """Multimodal configs nest the language model under ``text_config``."""
    if not isinstance(config, dict):
        raise ImportModelError(f"config must be a JSON object, got {type(config).__name__}")
    if "hidden_size" not in config and isinstance(config.get("text_config"), dict):
        return {**config, **config["text_config"]}
    return config


def _int(config: dict, key: str, default: int | None = None, *, minimum: int = 1) -> int:
    """A required (or defaulted) non-negative integer field, with an error naming it."""
    value = config.get(key)
    value = default if value is None else value  # an explicit null means "use the default"
    if value is None:
        raise ImportModelError(f"config.json has no {key!r}, which the parameter count needs")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            (isinstance(value, float) and not value.is_integer()):
        raise ImportModelError(f"config.json field {key!r} must be an integer, got {value!r}")
    if int(value) < minimum:
        raise ImportModelError(f"config.json field {key!r} must be >= {minimum}, got {value!r}")
    return int(value)


def _first(config: dict, *keys: str) -> str | None:
    return next((k for k in keys if config.get(k) is not None), None)


def _shape(config: dict) -> dict[str, Any]:
    """The architecture fields the count and the TOML use, validated."""
    c = _text_config(config)
    mt = str(c.get("model_type", "")).lower()
    d = _int(c, "hidden_size")
    heads = _int(c, "num_attention_heads")
    s: dict[str, Any] = {
        "model_type": mt,
        "d": d,
        "layers": _int(c, "num_hidden_layers"),
        "vocab": _int(c, "vocab_size"),
        "heads": heads,
        "kv_heads": _int(c, "num_key_value_heads", heads),
        "tied": bool(c.get("tie_word_embeddings", False)),
        "mla": c.get("kv_lora_rank") is not None,
    }
    if c.get("head_dim") is not None:
        s["head_dim"] = _int(c, "head_dim")
    elif d % heads:
        raise ImportModelError(f"config.json has no 'head_dim' and hidden_size {d} is not a "
                               f"multiple of num_attention_heads {heads}")
    else:
        s["head_dim"] = d // heads
    n_exp_key = _first(c, "n_routed_experts", "num_local_experts", "num_experts")
    s["experts"] = _int(c, n_exp_key, minimum=0) if n_exp_key else 0
    if s["experts"]:
        k_key = _first(c, "num_experts_per_tok", "experts_per_token", "num_experts_per_token")
        if k_key is None:
            raise ImportModelError("config.json has experts but no 'num_experts_per_tok'")
        s["top_k"] = _int(c, k_key)
        if s["top_k"] > s["experts"]:
            raise ImportModelError(f"{k_key!r} ({s['top_k']}) exceeds the expert count "
                                   f"{n_exp_key!r} ({s['experts']})")
        ffn_key = "moe_intermediate_size" if c.get("moe_intermediate_size") else "intermediate_size"
        s["expert_ffn"] = _int(c, ffn_key)
        s["shared_ffn"] = (_int(c, "n_shared_experts", 0, minimum=0) * s["expert_ffn"]
                           + _int(c, "shared_expert_intermediate_size", 0, minimum=0))
        # Which layers are MoE: DeepSeek (first_k_dense_replace, moe_layer_freq) or
        # Qwen-MoE (decoder_sparse_step, mlp_only_layers); the others use a dense MLP.
        if "n_routed_experts" in c:
            first = _int(c, "first_k_dense_replace", 0, minimum=0)
            freq = _int(c, "moe_layer_freq", 1)
            moe = [i >= first and i % freq == 0 for i in range(s["layers"])]
        else:
            step, only = _int(c, "decoder_sparse_step", 1), set(c.get("mlp_only_layers") or [])
            moe = [i not in only and (i + 1) % step == 0 for i in range(s["layers"])]
        s["moe_layers"] = sum(moe)
    else:
        s["moe_layers"] = 0
    s["dense_layers"] = s["layers"] - s["moe_layers"]
    s["ffn"] = _int(c, "intermediate_size") if s["dense_layers"] or not s["experts"] else 0
    if s["mla"]:
        for key in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            s[key] = _int(c, key)
        s["q_lora_rank"] = _int(c, "q_lora_rank", 0, minimum=0)
    s["gpt_oss"] = mt == "gpt_oss"
    s["qkv_bias"] = mt in ("qwen2", "qwen2_moe") or bool(c.get("attention_bias"))
    s["o_bias"] = bool(c.get("attention_bias")) and not mt.startswith("qwen")
    s["qk_norm"] = mt in ("qwen3", "qwen3_moe") or bool(c.get("qk_layernorm"))
    s["mlp_bias"] = bool(c.get("mlp_bias")) or s["gpt_oss"]
    s["noaux_bias"] = c.get("topk_method") == "noaux_tc"  # e_score_correction_bias
    return s


def _attention(s: dict) -> int:
    d, h, kv, hd = s["d"], s["heads"], s["kv_heads"], s["head_dim"]
    if s["mla"]:
        qk = s["qk_nope_head_dim"] + s["qk_rope_head_dim"]
        r = s["q_lora_rank"]
        q = d * r + r + r * h * qk if r else d * h * qk              # q_a, q_a_norm, q_b
        kv_p = (d * (s["kv_lora_rank"] + s["qk_rope_head_dim"])    # kv_a_proj_with_mqa
                + s["kv_lora_rank"]                                 # kv_a_layernorm
                + s["kv_lora_rank"] * h * (s["qk_nope_head_dim"] + s["v_head_dim"]))
        return q + kv_p + h * s["v_head_dim"] * d                   # + o_proj
    n = d * (h + 2 * kv) * hd + h * hd * d                          # q, k, v, o
    n += (h + 2 * kv) * hd if s["qkv_bias"] else 0
    n += d if s["o_bias"] else 0
    n += 2 * hd if s["qk_norm"] else 0
    n += h if s["gpt_oss"] else 0                                   # attention sinks
    return n


def _mlp(s: dict, width: int) -> int:
    """One gated (SwiGLU) MLP: gate, up, down, and their biases where the model has them."""
    return 3 * s["d"] * width + ((2 * width + s["d"]) if s["mlp_bias"] else 0)


def _breakdown(s: dict) -> dict[str, tuple[int, int]]:
    """(total, active) per part of the model; their sums are :func:`count_params`."""
    d, n_layers, e = s["d"], s["layers"], s["experts"]
    embed = s["vocab"] * d
    parts = {
        "embeddings": (embed, embed),
        "attention+norms": (n_layers * (_attention(s) + 2 * d) + d,) * 2,  # + final norm
        "lm_head": (0, 0) if s["tied"] else (embed, embed),
    }
    if s["ffn"] and s["dense_layers"]:
        parts["dense MLP"] = (s["dense_layers"] * _mlp(s, s["ffn"]),) * 2
    if e:
        router = d * e + (e if (s["gpt_oss"] or s["noaux_bias"]) else 0)
        shared = _mlp(s, s["shared_ffn"]) if s["shared_ffn"] else 0
        shared += d if s["model_type"] == "qwen2_moe" and shared else 0  # shared_expert_gate
        parts["router" + ("+shared expert" if shared else "")] = \
            (s["moe_layers"] * (router + shared),) * 2
        one = s["moe_layers"] * _mlp(s, s["expert_ffn"])
        parts["routed experts"] = (e * one, s["top_k"] * one)
    return parts


def count_params(config: dict, *, active_includes_embedding: bool = True) -> tuple[float, float]:
    """Total and per-token active parameter counts of a Hugging Face ``config.json``.

    Raises :class:`ImportModelError` naming the first missing or invalid field.
    """
    s = _shape(config)
    parts = _breakdown(s)
    total = sum(t for t, _ in parts.values())
    active = sum(a for _, a in parts.values())
    if not active_includes_embedding and not s["tied"]:
        active -= parts["embeddings"][1]
    return float(total), float(active)


def _slug_name(slug: str) -> str:
    words = []
    for w in slug.split("-"):
        words.append(w.upper() if re.fullmatch(r"\d+(\.\d+)?[bmk]|a\d+b|\d+x\d+b", w)
                     else w if w[:1].isdigit() else w.capitalize())
    return " ".join(words)


def _num(n: float) -> str:
    return f"{int(n):_}"


def model_toml(config: dict, slug: str, source: str, *, name: str | None = None) -> str:
    """The text of ``models/<slug>.toml`` for ``config``, read from ``source``."""
    s = _shape(config)
    c = _text_config(config)
    total, active = count_params(config)
    parts = _breakdown(s)
    name = name or _slug_name(slug)
    hf_id = source if re.fullmatch(r"[\w.-]+/[\w.-]+", source) else c.get("_name_or_path")
    where = f"config.json of {source} (Hugging Face)" if hf_id == source else source
    d, L = s["d"], s["layers"]
    mlp = "SwiGLU MLP"
    if s["experts"]:
        mlp = f"router + {'shared expert + ' if s['shared_ffn'] else ''}{s['experts']} experts"
        if s["dense_layers"]:
            mlp += f"; the first {s['dense_layers']} layers have a dense MLP"
    head = "lm_head" if not s["tied"] else "(lm_head tied to the embeddings)"
    lines = [
        f"# {name}. Source: {where}.",
        "# n_params counted from the architecture fields (see `perfgraph import-model`):",
    ]
    lines += textwrap.wrap(f"embeddings + {L} x (attention + norms + {mlp}) + {head} = "
                           + " + ".join(f"{k} {t / 1e9:.3f}e9" for k, (t, _) in parts.items() if t),
                           width=96, initial_indent="#   ", subsequent_indent="#     ")
    if s["experts"]:
        lines += [f"# Active per token: {s['top_k']} of {s['experts']} routed experts, everything "
                  f"else in full = {active / 1e9:.3f}e9",
                  f"#   ({(active - parts['embeddings'][1]) / 1e9:.3f}e9 without the embedding "
                  "table, which is a row lookup, not a matmul)."]
    if c.get("num_nextn_predict_layers"):
        lines.append(f"# The {c['num_nextn_predict_layers']} multi-token-prediction layer(s) "
                     "(a speculative-decoding add-on) are not counted.")
    if s["mla"]:
        lines += ["# Attention is MLA: the KV cache holds one compressed latent plus the RoPE key",
                  "# per layer, so kv_bytes_per_token is overridden below."]
    if c.get("sliding_window") and c.get("layer_types"):
        n_sw = sum(1 for t in c["layer_types"] if "sliding" in str(t))
        lines += [f"# {n_sw} of {L} layers attend over a {c['sliding_window']}-token sliding "
                  "window (alternating with full",
                  "# attention); the plain GQA KV formula, all layers full, is kept as an upper "
                  "bound."]
    kind = "MoE" if s["experts"] else "dense"
    lines += [f'name = "{name}"']
    if hf_id:
        lines.append(f'hf_id = "{hf_id}"')
    gqa = " (GQA)" if s["kv_heads"] < s["heads"] else ""
    kv_doc = ("num_key_value_heads (MLA: superseded by the kv_bytes_per_token override)"
              if s["mla"] else "num_key_value_heads" + gqa)
    hd_doc = ("qk_nope_head_dim + qk_rope_head_dim (MLA: superseded by the override)" if s["mla"]
              else "head_dim" if c.get("head_dim") is not None else
              "hidden_size / num_attention_heads")
    head_dim = s["qk_nope_head_dim"] + s["qk_rope_head_dim"] if s["mla"] else s["head_dim"]
    active_doc = ("dense: every parameter is used for every token" if not s["experts"] else
                  f"attention + {s['top_k']} of {s['experts']} routed experts"
                  f"{' + shared expert' if s['shared_ffn'] else ''} + the rest")
    rows = [
        ("n_params", _num(total), f"{total / 1e9:.2f}e9 total ({kind})"),
        ("n_active_params", _num(active), active_doc),
        ("n_layers", str(L), "num_hidden_layers"),
        ("n_heads", str(s["heads"]), "num_attention_heads"),
        ("n_kv_heads", str(s["kv_heads"]), kv_doc),
        ("head_dim", str(head_dim), hd_doc),
        ("d_model", str(d), "hidden_size"),
    ]
    width = max(len(k) + 3 + len(v) for k, v, _ in rows) + 2
    lines += ["", "[values]"] + [f"{f'{k} = {v}':<{width}}# {doc}" for k, v, doc in rows]
    arch: list[tuple[str, Any]] = [("model_type", s["model_type"]), ("vocab_size", s["vocab"])]
    for key in ("intermediate_size", "moe_intermediate_size", "max_position_embeddings",
                "tie_word_embeddings", "n_routed_experts", "num_local_experts", "num_experts",
                "num_experts_per_tok", "n_shared_experts", "shared_expert_intermediate_size",
                "first_k_dense_replace", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                "qk_rope_head_dim", "v_head_dim", "sliding_window", "num_nextn_predict_layers"):
        if isinstance(c.get(key), (int, bool)) and key not in dict(arch):
            arch.append((key, c[key]))
    fmt = {True: "true", False: "false"}
    lines += ["", "[architecture]              # informational, from config.json, not cells"]
    lines += [f"{k} = " + (fmt[v] if isinstance(v, bool) else f'"{v}"' if isinstance(v, str)
                           else str(v)) for k, v in arch]
    if s["mla"]:
        lines += ["", "[cells.kv_lora_rank]", 'unit = ""', f"value = {s['kv_lora_rank']}",
                  'doc = "MLA compressed KV latent width per layer (kv_lora_rank)"',
                  'group = "model"', "", "[cells.qk_rope_head_dim]", 'unit = ""',
                  f"value = {s['qk_rope_head_dim']}",
                  'doc = "Decoupled RoPE key width cached per layer"', 'group = "model"', "",
                  "[cells.kv_bytes_per_token]", 'unit = "B/token"',
                  'formula = "n_layers * (kv_lora_rank + qk_rope_head_dim) * kv_bytes / token"',
                  'doc = "MLA caches one compressed latent plus the RoPE key per layer, shared '
                  'by all heads"', 'source = "DeepSeek-V3 technical report §2.1.1"']
    return "\n".join(lines) + "\n"
