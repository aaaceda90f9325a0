"""Turn a Hugging Face ``config.json`` into a perfgraph model TOML.

Pure functions, no I/O (the CLI reads the file and writes the result):

* :func:`count_params` counts total and per-token active parameters from the architecture
  fields alone (the families and conventions are in :mod:`perfgraph.scenario.hf_config`).
* :func:`model_toml` writes the model TOML, with the derivation in comments (built by
  tomlkit, so the text always parses and every value row carries its comment).

*Active* = total minus the routed experts a token does not visit, so a dense model's active
count equals its total and the embedding table counts in both (the convention of
Mistral's 12.9B for Mixtral; OpenAI's 5.13B for gpt-oss-120b leaves the embedding out; pass
``active_includes_embedding=False`` for that one).
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

import tomlkit
from tomlkit.items import Item

from perfgraph.errors import ImportModelError
from perfgraph.scenario.hf_config import (
    attention_kinds,
    breakdown,
    shape,
    shared_expert,
    text_config,
)

__all__ = ["ImportModelError", "count_params", "extra_values", "model_toml", "weight_precision"]


def count_params(config: dict, *, active_includes_embedding: bool = True) -> tuple[float, float]:
    """Total and per-token active parameter counts of a Hugging Face ``config.json``.

    Raises :class:`ImportModelError` naming the first missing or invalid field.
    """
    s = shape(config)
    parts = breakdown(s)
    total = sum(t for t, _ in parts.values())
    active = sum(a for _, a in parts.values())
    if not active_includes_embedding and not s["tied"]:
        active -= parts["embeddings"][1]
    return float(total), float(active)


def _groups(s: dict, parts: dict[str, tuple[int, int]]) -> dict[str, int]:
    """Parameters by tensor group; params_dense is n_params less these (a sheet formula)."""
    return {"params_embedding": parts["embeddings"][0] + parts["lm_head"][0],
            "params_shared_experts": s["moe_layers"] * shared_expert(s),
            "params_routed_experts": parts.get("routed experts", (0, 0))[0]}


_KIND_DOCS = {
    "n_sliding_layers": "layers with a sliding window",
    "n_chunked_layers": "layers attending within attention_chunk_size chunks (RoPE layers)",
    "n_linear_layers": "linear-attention (Gated DeltaNet) layers",
    "sliding_window": "sliding_window (tokens)",
    "attention_chunk_size": "attention_chunk_size (tokens of KV a chunked layer keeps)",
    "linear_state_elements": "value heads x key dim x value dim + conv cache",
    "n_dsa_layers": "layers with DeepSeek sparse attention (an indexer picks index_topk tokens)",
    "index_topk": "index_topk (tokens each query attends to in a DSA layer)",
    "index_n_heads": "index_n_heads (lightning-indexer heads)",
    "index_head_dim": "index_head_dim (width of an indexer head and of its cached key)",
}


def extra_values(config: dict) -> list[tuple[str, int, str]]:
    """The tensor-group, MoE and attention-kind rows of a model's [values] (issue 11)."""
    s = shape(config)
    docs = ("vocab_size x hidden_size" + (" (tied)" if s["tied"] else
                                          " x 2 (embeddings + lm_head)"),
            "shared experts of every MoE layer", "every routed expert of every MoE layer")
    rows = [(k, v, doc) for (k, v), doc in zip(_groups(s, breakdown(s)).items(), docs,
                                               strict=True) if v or k == "params_embedding"]
    if s["experts"]:
        rows += [("n_routed_experts", s["experts"], "routed experts per MoE layer"),
                 ("n_experts_per_tok", s["top_k"], "top-k")]
        if s["dense_layers"]:
            rows.append(("n_moe_layers", s["moe_layers"], "layers with routed experts"))
    rows += [(k, v, _KIND_DOCS[k]) for k, v in attention_kinds(config).items() if v]
    if s["mla"]:
        rows += [(k, s[k], k) for k in ("kv_lora_rank", "qk_rope_head_dim", "v_head_dim")]
    return rows


def weight_precision(config: dict) -> dict[str, str]:
    """Group precisions a checkpoint ships: gpt-oss's MXFP4 experts beside BF16 (its
    quantization_config leaves attention, router, embeddings and lm_head unconverted)."""
    q = text_config(config).get("quantization_config") or {}
    if q.get("quant_method") == "mxfp4":
        return {"dense": "bf16", "routed_experts": "mxfp4", "embedding": "bf16"}
    return {}


def _slug_name(slug: str) -> str:
    words = []
    for w in slug.split("-"):
        words.append(w.upper() if re.fullmatch(r"\d+(\.\d+)?[bmk]|a\d+b|\d+x\d+b", w)
                     else w if w[:1].isdigit() else w.capitalize())
    return " ".join(words)


def _mlp_words(s: dict) -> str:
    if not s["experts"]:
        return "SwiGLU MLP"
    words = f"router + {'shared expert + ' if s['shared_ffn'] else ''}{s['experts']} experts"
    if s["dense_layers"]:
        n = s["dense_layers"]
        words += f"; {n} layer{' has' if n == 1 else 's have'} a dense MLP instead"
    return words


def _mixer_words(s: dict) -> str:
    if s["linear_layers"]:
        return (f"token mixer: {s['linear_layers']} Gated DeltaNet, "
                f"{s['layers'] - s['linear_layers']} gated attention")
    return "attention"


def _header(config: dict, s: dict, name: str, where: str) -> list[str]:
    """The comment lines above the values: source, derivation, active count, kinds."""
    c = text_config(config)
    _, active = count_params(config)
    parts = breakdown(s)
    head = "lm_head" if not s["tied"] else "(lm_head tied to the embeddings)"
    lines = [f"{name}. Source: {where}.",
             "n_params counted from the architecture fields (see `perfgraph import-model`):"]
    lines += textwrap.wrap(f"embeddings + {s['layers']} x ({_mixer_words(s)} + norms + "
                           f"{_mlp_words(s)}) + {head} = "
                           + " + ".join(f"{k} {t / 1e9:.3f}e9" for k, (t, _) in parts.items() if t),
                           width=94, initial_indent="  ", subsequent_indent="    ")
    if s["experts"]:
        lines += [f"Active per token: {s['top_k']} of {s['experts']} routed experts, everything "
                  f"else in full = {active / 1e9:.3f}e9",
                  f"  ({(active - parts['embeddings'][1]) / 1e9:.3f}e9 without the embedding "
                  "table, which is a row lookup, not a matmul)."]
    if c.get("num_nextn_predict_layers") or c.get("mtp_num_hidden_layers"):
        lines.append("Multi-token-prediction layers (a speculative-decoding add-on) are "
                     "not counted.")
    if s["mla"]:
        lines += ["Attention is MLA: the KV cache holds one compressed latent plus the RoPE key",
                  "per layer (kv_lora_rank + qk_rope_head_dim, below)."]
    lines += _kind_lines(config, s["layers"])
    return lines


def _kind_lines(config: dict, layers: int) -> list[str]:
    kinds = attention_kinds(config)
    lines = []
    if kinds.get("n_sliding_layers"):
        lines += [f"{kinds['n_sliding_layers']} of {layers} layers attend over a "
                  f"{kinds['sliding_window']}-token sliding window;",
                  "their KV stops growing at the window (n_sliding_layers, sliding_window)."]
    if kinds.get("n_chunked_layers"):
        lines += [f"{kinds['n_chunked_layers']} of {layers} layers attend within "
                  f"{kinds['attention_chunk_size']}-token chunks (the rest are global NoPE "
                  "layers);", "a chunked layer keeps at most one chunk of KV "
                  "(n_chunked_layers, attention_chunk_size)."]
    if kinds.get("n_dsa_layers"):
        lines += [f"{kinds['n_dsa_layers']} of {layers} layers use DeepSeek sparse attention: an "
                  f"indexer ({kinds['index_n_heads']} heads x {kinds['index_head_dim']})",
                  f"scores every cached token and MLA attends to the {kinds['index_topk']} best; "
                  "the indexer caches", "one FP8 key of index_head_dim per token and layer",
                  "(n_dsa_layers, index_topk, index_n_heads, index_head_dim)."]
    if kinds.get("n_linear_layers"):
        lines += [f"{kinds['n_linear_layers']} of {layers} layers are Gated DeltaNet: a "
                  f"constant state of {kinds['linear_state_elements']:_} elements a sequence",
                  "(value heads x key dim x value dim + the conv cache), no KV that grows."]
    return lines


def _value(v: int, doc: str) -> Item:
    item = tomlkit.value(f"{v:_}") if v >= 10_000 else tomlkit.item(v)
    item.comment(doc)
    return item


def _values_table(config: dict, s: dict) -> Any:
    total, active = count_params(config)
    c = text_config(config)
    kind = "MoE" if s["experts"] else "dense"
    gqa = " (GQA)" if s["kv_heads"] < s["heads"] else ""
    rows = [
        ("n_params", int(total), f"{total / 1e9:.2f}e9 total ({kind})"),
        ("n_active_params", int(active), "dense: every parameter is used for every token"
         if not s["experts"] else f"attention + {s['top_k']} of {s['experts']} routed experts"
         f"{' + shared expert' if s['shared_ffn'] else ''} + the rest"),
        ("n_layers", s["layers"], "num_hidden_layers"),
        ("n_heads", s["heads"], "num_attention_heads"),
        ("n_kv_heads", s["kv_heads"], "num_key_value_heads (MLA: the cache holds the latent "
         "instead)" if s["mla"] else "num_key_value_heads" + gqa),
        ("head_dim", s["qk_nope_head_dim"] + s["qk_rope_head_dim"] if s["mla"] else
         s["head_dim"], "qk_nope_head_dim + qk_rope_head_dim (MLA, decompressed)" if s["mla"]
         else "head_dim" if c.get("head_dim") is not None else "hidden_size / num_attention_heads"),
        ("d_model", s["d"], "hidden_size"),
        *extra_values(config),
    ]
    width = max(len(k) + 3 + len(f"{v:_}" if v >= 10_000 else str(v)) for k, v, _ in rows) + 2
    table = tomlkit.table()
    for key, v, doc in rows:
        item = _value(v, doc)
        item.trivia.comment_ws = " " * (width - len(key) - 3 - len(item.as_string()))
        table.add(key, item)
    return table


_ARCH_KEYS = ("intermediate_size", "intermediate_size_mlp", "moe_intermediate_size",
              "max_position_embeddings", "tie_word_embeddings", "n_routed_experts",
              "num_local_experts", "num_experts", "num_experts_per_tok", "n_shared_experts",
              "shared_expert_intermediate_size", "first_k_dense_replace",
              "interleave_moe_layer_step", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
              "qk_rope_head_dim", "v_head_dim", "sliding_window", "attention_chunk_size",
              "full_attention_interval", "linear_num_key_heads", "linear_num_value_heads",
              "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim",
              "num_nextn_predict_layers", "index_topk", "index_n_heads", "index_head_dim")


def _architecture_table(config: dict, s: dict) -> Any:
    c = text_config(config)
    table = tomlkit.table()
    table.comment("informational, from config.json, not cells")
    table.add("model_type", s["model_type"])
    table.add("vocab_size", s["vocab"])
    for key in _ARCH_KEYS:
        if isinstance(c.get(key), (int, bool)):
            table.add(key, c[key])
    return table


def model_toml(config: dict, slug: str, source: str, *, name: str | None = None) -> str:
    """The text of ``models/<slug>.toml`` for ``config``, read from ``source`` (a path, or a
    repository ``ORG/NAME``, optionally ``ORG/NAME@commit``)."""
    s = shape(config)
    name = name or _slug_name(slug)
    repo, _, revision = source.partition("@")
    hub = re.fullmatch(r"[\w.-]+/[\w.-]+", repo) is not None
    hf_id = repo if hub else text_config(config).get("_name_or_path")
    where = (f"config.json of {repo} (Hugging Face{', revision ' + revision if revision else ''})"
             if hub else source)
    doc = tomlkit.document()
    for line in _header(config, s, name, where):
        doc.add(tomlkit.comment(line))
    doc.add("name", name)
    if hf_id:
        doc.add("hf_id", hf_id)
    doc.add(tomlkit.nl())
    doc.add("values", _values_table(config, s))
    doc.add(tomlkit.nl())
    doc.add("architecture", _architecture_table(config, s))
    shipped = weight_precision(config)
    if shipped:
        precision = tomlkit.table()
        precision.comment("as the checkpoint ships (quantization_config)")
        for key, value in shipped.items():
            precision.add(key, value)
        doc.add(tomlkit.nl())
        doc.add("weight_precision", precision)
    return tomlkit.dumps(doc)
