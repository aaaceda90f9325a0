"""Read the architecture of a Hugging Face ``config.json`` and count its parameters.

Pure functions, no I/O. :func:`shape` validates the fields a family needs and returns them
as one flat dict; :func:`breakdown` counts parameters by part of the model from it.

Families: dense Llama / Qwen2 / Qwen3 / Mistral / Gemma 3, Mixtral, Qwen-MoE (shared expert,
``decoder_sparse_step``, ``mlp_only_layers``), DeepSeek-V2/V3 and Kimi K2 (MLA, shared
experts, ``first_k_dense_replace``, ``moe_layer_freq``), gpt-oss (biases everywhere, sinks),
Llama 4 (routed + shared expert, ``interleave_moe_layer_step``, dense layers of
``intermediate_size_mlp``, chunked local attention), Qwen3-Next (Gated DeltaNet linear
layers beside gated full attention) and DeepSeek-V3.2 (MLA with DeepSeek sparse attention's
lightning indexer in every layer).

Conventions. Every weight matrix, bias and norm vector is counted; rotary tables, FP8 scale
tensors and other buffers are not, nor are vision towers (a multimodal config's
``text_config`` is the language model) or multi-token-prediction layers (a
speculative-decoding add-on, left out as DeepSeek's own 671B figure does).
"""

from __future__ import annotations

from typing import Any

from perfgraph.errors import ImportModelError

__all__ = ["breakdown", "shape", "text_config"]

#: What a family's transformers config class assumes when config.json leaves a field out
#: (google/gemma-3-27b-it's text_config names neither vocab_size nor the 5:1 pattern).
FAMILY_DEFAULTS: dict[str, dict[str, Any]] = {
    # transformers Gemma3TextConfig.__init__ defaults
    "gemma3_text": {"vocab_size": 262_208, "tie_word_embeddings": True,
                    "sliding_window_pattern": 6, "max_position_embeddings": 131_072},
    # transformers Llama4TextConfig.__init__ defaults
    "llama4_text": {"interleave_moe_layer_step": 1, "no_rope_layer_interval": 4,
                    "tie_word_embeddings": False},
}


def text_config(config: Any) -> dict:
    """The language model's fields: a multimodal config nests them under ``text_config``."""
    if not isinstance(config, dict):
        raise ImportModelError(f"config must be a JSON object, got {type(config).__name__}")
    c = config
    if "hidden_size" not in config and isinstance(config.get("text_config"), dict):
        c = {**config, **config["text_config"]}
    return {**FAMILY_DEFAULTS.get(str(c.get("model_type", "")).lower(), {}), **c}


#: The largest size or count a field may hold: a thousand times the largest in any real
#: config (vocabularies of ~10^6, context lengths of ~10^7). Past it the parameter count
#: leaves what a float carries, and the number is a typo.
MAX_FIELD = 10**10


def _int(c: dict, key: str, default: int | None = None, *, minimum: int = 1) -> int:
    """A required (or defaulted) integer field, with an error naming it."""
    value = c.get(key)
    value = default if value is None else value  # an explicit null means "use the default"
    if value is None:
        raise ImportModelError(f"config.json has no {key!r}, which the parameter count needs")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            (isinstance(value, float) and not value.is_integer()):
        raise ImportModelError(f"config.json field {key!r} must be an integer, got {value!r}")
    if int(value) < minimum:
        raise ImportModelError(f"config.json field {key!r} must be >= {minimum}, got {value!r}")
    if int(value) > MAX_FIELD:
        raise ImportModelError(f"config.json field {key!r} is {value!r}, more than any model "
                               f"has (at most {MAX_FIELD:.0e})")
    return int(value)


def _first(c: dict, *keys: str) -> str | None:
    return next((k for k in keys if c.get(k) is not None), None)


def _int_list(c: dict, key: str, length: int) -> list[int]:
    """A per-layer list of integers (Llama 4's ``no_rope_layers``), with its length checked."""
    value = c.get(key)
    if not isinstance(value, list) or len(value) != length or \
            not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ImportModelError(f"config.json field {key!r} must list {length} integers "
                               f"(one per layer), got {value!r}")
    return value


def _base(c: dict) -> dict[str, Any]:
    """Width, depth, heads and vocabulary: what every family has."""
    d, heads = _int(c, "hidden_size"), _int(c, "num_attention_heads")
    s: dict[str, Any] = {
        "model_type": str(c.get("model_type", "")).lower(), "d": d,
        "layers": _int(c, "num_hidden_layers"), "vocab": _int(c, "vocab_size"),
        "heads": heads, "kv_heads": _int(c, "num_key_value_heads", heads),
        "tied": bool(c.get("tie_word_embeddings", False)),
    }
    if c.get("head_dim") is not None:
        s["head_dim"] = _int(c, "head_dim")
    elif d % heads:
        raise ImportModelError(f"config.json has no 'head_dim' and hidden_size {d} is not a "
                               f"multiple of num_attention_heads {heads}")
    else:
        s["head_dim"] = d // heads
    return s


def _moe_layers(c: dict, s: dict) -> list[bool]:
    """Which layers carry routed experts, by each family's own rule."""
    n = s["layers"]
    if "n_routed_experts" in c:                       # DeepSeek, Kimi K2
        first, freq = _int(c, "first_k_dense_replace", 0, minimum=0), _int(c, "moe_layer_freq", 1)
        return [i >= first and i % freq == 0 for i in range(n)]
    if s["model_type"].startswith("llama4"):          # Llama 4: moe_layers, else every step-th
        step = _int(c, "interleave_moe_layer_step")
        listed = c.get("moe_layers")
        chosen = set(listed) if isinstance(listed, list) else set(range(step - 1, n, step))
        return [i in chosen for i in range(n)]
    step, only = _int(c, "decoder_sparse_step", 1), set(c.get("mlp_only_layers") or [])
    return [i not in only and (i + 1) % step == 0 for i in range(n)]  # Qwen-MoE; others: all


def _experts(c: dict, s: dict) -> dict[str, Any]:
    """Routed experts, top-k, expert widths and the shared expert, where the model has them."""
    e_key = _first(c, "n_routed_experts", "num_local_experts", "num_experts")
    e = _int(c, e_key, minimum=0) if e_key else 0
    if not e:
        return {"experts": 0, "moe_layers": 0, "shared_ffn": 0}
    k_key = _first(c, "num_experts_per_tok", "experts_per_token", "num_experts_per_token")
    if k_key is None:
        raise ImportModelError("config.json has experts but no 'num_experts_per_tok'")
    top_k = _int(c, k_key)
    if top_k > e:
        raise ImportModelError(f"{k_key!r} ({top_k}) exceeds the expert count {e_key!r} ({e})")
    ffn = _int(c, "moe_intermediate_size" if c.get("moe_intermediate_size") else
               "intermediate_size")
    shared = (_int(c, "n_shared_experts", 0, minimum=0) * ffn
              + _int(c, "shared_expert_intermediate_size", 0, minimum=0))
    if s["model_type"].startswith("llama4"):
        shared = ffn  # Llama4TextMoe: one shared expert as wide as a routed one
    return {"experts": e, "top_k": top_k, "expert_ffn": ffn, "shared_ffn": shared,
            "moe_layers": sum(_moe_layers(c, s))}


def _dense_ffn(c: dict, s: dict) -> int:
    """Width of the dense layers' MLP (Llama 4 keeps it in ``intermediate_size_mlp``)."""
    if s["experts"] and not s["dense_layers"]:
        return 0
    return _int(c, "intermediate_size_mlp" if s["model_type"].startswith("llama4")
                else "intermediate_size")


def _mla(c: dict) -> dict[str, Any]:
    """DeepSeek's multi-head latent attention widths."""
    out: dict[str, Any] = {k: _int(c, k) for k in
                           ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")}
    out["q_lora_rank"] = _int(c, "q_lora_rank", 0, minimum=0)
    return out


def _dsa(c: dict, s: dict) -> dict[str, Any]:
    """DeepSeek sparse attention (DeepSeek-V3.2, GLM-5): a lightning indexer of
    ``index_n_heads`` heads of ``index_head_dim`` scores every cached token; MLA then attends
    to the ``index_topk`` best. Its query projection reads MLA's compressed query, so the
    model must have a ``q_lora_rank``."""
    out = {k: _int(c, k) for k in ("index_topk", "index_n_heads", "index_head_dim")}
    if not s["mla"] or not s["q_lora_rank"]:
        raise ImportModelError("config.json has 'index_topk' (DeepSeek sparse attention) but "
                               "no MLA 'kv_lora_rank' and 'q_lora_rank' for its indexer to read")
    return out


def _linear_attention(c: dict, s: dict) -> dict[str, Any]:
    """Qwen3-Next's Gated DeltaNet layers: 3 of every ``full_attention_interval`` (4)."""
    types = [str(t) for t in c.get("layer_types") or []]
    if types:
        n = sum("linear" in t for t in types)
    else:
        n = s["layers"] - s["layers"] // _int(c, "full_attention_interval")
    out = {"linear_layers": n}
    for key in ("linear_num_key_heads", "linear_key_head_dim", "linear_num_value_heads",
                "linear_value_head_dim", "linear_conv_kernel_dim"):
        out[key] = _int(c, key)
    return out


def _flags(c: dict, s: dict) -> dict[str, Any]:
    """Biases, norms and gates that differ between families."""
    mt = s["model_type"]
    return {
        "gpt_oss": mt == "gpt_oss",
        "qkv_bias": mt in ("qwen2", "qwen2_moe") or bool(c.get("attention_bias")),
        "o_bias": bool(c.get("attention_bias")) and not mt.startswith("qwen"),
        # Llama 4's QK norm is a weightless L2 norm: nothing to count.
        "qk_norm": mt in ("qwen3", "qwen3_moe", "qwen3_next", "gemma3_text")
                   or bool(c.get("qk_layernorm")),
        "norms": 4 if mt == "gemma3_text" else 2,  # Gemma 3: pre/post norms around both blocks
        "mlp_bias": bool(c.get("mlp_bias")) or mt == "gpt_oss",
        "noaux_bias": c.get("topk_method") == "noaux_tc",    # e_score_correction_bias
        "attn_gate": mt == "qwen3_next",   # q_proj also emits a sigmoid gate per head
        "shared_gate": mt in ("qwen2_moe", "qwen3_next"),   # shared_expert_gate, d -> 1
    }


def shape(config: Any) -> dict[str, Any]:
    """The architecture fields the count and the TOML use, validated, as one flat dict."""
    c = text_config(config)
    s = _base(c)
    s.update(_experts(c, s))
    s["dense_layers"] = s["layers"] - s["moe_layers"]
    s["ffn"] = _dense_ffn(c, s)
    s["mla"] = c.get("kv_lora_rank") is not None
    if s["mla"]:
        s.update(_mla(c))
    s["dsa"] = c.get("index_topk") is not None
    if s["dsa"]:
        s.update(_dsa(c, s))
    s["linear_layers"] = 0
    if s["model_type"] == "qwen3_next" or c.get("linear_num_value_heads") is not None:
        s.update(_linear_attention(c, s))
    s.update(_flags(c, s))
    return s


def _attention(s: dict) -> int:
    """One full-attention layer's parameters (MLA, or GQA with its biases, norms and gates)."""
    d, h, kv, hd = s["d"], s["heads"], s["kv_heads"], s["head_dim"]
    if s["mla"]:
        qk = s["qk_nope_head_dim"] + s["qk_rope_head_dim"]
        r = s["q_lora_rank"]
        q = d * r + r + r * h * qk if r else d * h * qk              # q_a, q_a_norm, q_b
        kv_p = (d * (s["kv_lora_rank"] + s["qk_rope_head_dim"])    # kv_a_proj_with_mqa
                + s["kv_lora_rank"]                                 # kv_a_layernorm
                + s["kv_lora_rank"] * h * (s["qk_nope_head_dim"] + s["v_head_dim"]))
        return q + kv_p + h * s["v_head_dim"] * d + _indexer(s)     # + o_proj
    q_out = h * hd * (2 if s["attn_gate"] else 1)
    n = d * (q_out + 2 * kv * hd) + h * hd * d                      # q (+ gate), k, v, o
    n += (h + 2 * kv) * hd if s["qkv_bias"] else 0
    n += d if s["o_bias"] else 0
    n += 2 * hd if s["qk_norm"] else 0
    n += h if s["gpt_oss"] else 0                                   # attention sinks
    return n


def _indexer(s: dict) -> int:
    """A DSA layer's lightning indexer (DeepSeek-V3.2-Exp inference/model.py, Indexer): wq_b
    from the compressed query to every index head, wk from the hidden state to one key,
    k_norm (a LayerNorm: weight and bias), weights_proj giving each head its weight."""
    if not s["dsa"]:
        return 0
    hd, heads, d = s["index_head_dim"], s["index_n_heads"], s["d"]
    return s["q_lora_rank"] * heads * hd + d * hd + 2 * hd + d * heads


def _gated_deltanet(s: dict) -> int:
    """One Gated DeltaNet layer (transformers Qwen3NextGatedDeltaNet): in_proj_qkvz,
    in_proj_ba (beta, alpha), a depthwise conv1d over q, k, v, dt_bias and A_log per value
    head, the gated RMSNorm over a value head, out_proj."""
    d = s["d"]
    key = s["linear_num_key_heads"] * s["linear_key_head_dim"]
    value = s["linear_num_value_heads"] * s["linear_value_head_dim"]
    vh = s["linear_num_value_heads"]
    return (d * (2 * key + 2 * value) + d * 2 * vh
            + (2 * key + value) * s["linear_conv_kernel_dim"]
            + 2 * vh + s["linear_value_head_dim"] + value * d)


def mlp(s: dict, width: int) -> int:
    """One gated (SwiGLU / GeGLU) MLP: gate, up, down, and their biases where the model has them."""
    return 3 * s["d"] * width + ((2 * width + s["d"]) if s["mlp_bias"] else 0)


def shared_expert(s: dict) -> int:
    """One layer's shared expert and its gate."""
    if not s["shared_ffn"]:
        return 0
    return mlp(s, s["shared_ffn"]) + (s["d"] if s["shared_gate"] else 0)


def breakdown(s: dict) -> dict[str, tuple[int, int]]:
    """(total, active) per part of the model; their sums are the parameter counts."""
    d, n_layers, e = s["d"], s["layers"], s["experts"]
    embed = s["vocab"] * d
    mixers = (n_layers - s["linear_layers"]) * _attention(s)
    mixers += s["linear_layers"] * _gated_deltanet(s) if s["linear_layers"] else 0
    parts = {
        "embeddings": (embed, embed),
        "attention+norms": (mixers + n_layers * s["norms"] * d + d,) * 2,  # + final norm
        "lm_head": (0, 0) if s["tied"] else (embed, embed),
    }
    if s["ffn"] and s["dense_layers"]:
        parts["dense MLP"] = (s["dense_layers"] * mlp(s, s["ffn"]),) * 2
    if e:
        router = d * e + (e if (s["gpt_oss"] or s["noaux_bias"]) else 0)
        shared = shared_expert(s)
        parts["router" + ("+shared expert" if shared else "")] = \
            (s["moe_layers"] * (router + shared),) * 2
        one = s["moe_layers"] * mlp(s, s["expert_ffn"])
        parts["routed experts"] = (e * one, s["top_k"] * one)
    return parts


def _chunked_layers(c: dict, s: dict) -> int:
    """Llama 4: the RoPE layers attend within ``attention_chunk_size`` chunks; every
    ``no_rope_layer_interval``-th (NoPE) layer attends globally. ``no_rope_layers[i]`` is 1
    where layer i uses RoPE (transformers Llama4TextConfig: layer_types "chunked_attention")."""
    if not s["model_type"].startswith("llama4") or c.get("attention_chunk_size") is None:
        return 0
    if c.get("no_rope_layers"):
        return sum(_int_list(c, "no_rope_layers", s["layers"]))
    interval = _int(c, "no_rope_layer_interval")
    return sum((i + 1) % interval != 0 for i in range(s["layers"]))


def attention_kinds(config: Any) -> dict[str, int]:
    """Layer counts of each attention kind, with the window, chunk and state sizes they need."""
    c = text_config(config)
    s = shape(config)
    types = [str(t) for t in c.get("layer_types") or []]
    if types:
        sliding = sum("sliding" in t for t in types)
    else:
        pattern = c.get("sliding_window_pattern")
        sliding = s["layers"] - s["layers"] // _int(c, "sliding_window_pattern") if pattern \
            else (s["layers"] if c.get("sliding_window") and c.get("use_sliding_window", True)
                  else 0)
    out = {"n_sliding_layers": sliding, "n_chunked_layers": _chunked_layers(c, s),
           "n_linear_layers": s["linear_layers"],
           # every attention layer of DeepSeek-V3.2 carries an indexer (it has no other kinds)
           "n_dsa_layers": s["layers"] - s["linear_layers"] if s["dsa"] else 0}
    if sliding:
        out["sliding_window"] = _int(c, "sliding_window")
    if out["n_chunked_layers"]:
        out["attention_chunk_size"] = _int(c, "attention_chunk_size")
    if s["dsa"]:
        out.update({k: s[k] for k in ("index_topk", "index_n_heads", "index_head_dim")})
    if s["linear_layers"]:
        kd, vd = s["linear_key_head_dim"], s["linear_value_head_dim"]
        kh, vh = s["linear_num_key_heads"], s["linear_num_value_heads"]
        conv = (s["linear_conv_kernel_dim"] - 1) * (2 * kh * kd + vh * vd)
        out["linear_state_elements"] = vh * kd * vd + conv
    return out
