"""The baseline for ``sweep --only``: a hand-written NumPy + pyarrow script that computes
seven columns of the default sheet over the sweep's points and writes them to Parquet.

It is what a user would write without perfgraph: only the formulas those seven columns read,
the scenario's constants as Python floats in canonical units (B, s, FLOP, token),
the on/off cells' branches taken in Python, each column converted to its declared unit, then
one ``pyarrow.parquet.write_table`` with the sweep's compression. ``bench_sweep.py`` checks it
against the engine on every column before timing it. (``max_concurrency_paged`` was an
eighth until the KV memory came to depend, row by row, on the engine's runtime reserve:
activation and request-table memory that this baseline does not type out.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ONLY = ["ttft", "itl", "e2e_latency", "throughput", "throughput_per_gpu", "decode_step_time",
        "kv_bytes_per_seq"]


def columns(c: Mapping[str, float], isl: np.ndarray, concurrency: np.ndarray, tp: np.ndarray,
            ) -> dict[str, np.ndarray]:
    """The seven columns, canonical units; ``c`` holds every constant cell (canonical)."""
    avg_context = isl + c["osl"] / 2
    weights_per_step = np.minimum(c["n_params"], concurrency * c["n_active_params"]) \
        * c["weight_bytes"]
    collectives = np.where(tp > 1, 2 * c["n_layers"], 0.0)
    allreduce = 2 * (tp - 1) / tp * concurrency * c["d_model"] * c["activation_bytes"]
    achievable_flops = tp * c["peak_flops"] * c["compute_efficiency"]
    achievable_bandwidth = tp * c["hbm_bandwidth"] * c["bandwidth_efficiency"]
    n_gpus = tp * c["pp"]
    attention = bool(c["attention_flops"])
    prefill_attention = 4 * isl ** 2 * c["d_model"] * c["n_layers"] if attention else 0.0
    spare = np.maximum(0, c["compute_bound_threshold"] - concurrency * (c["spec_k"] + 1))
    kv_per_seq = avg_context * c["kv_bytes_per_token"]
    decode_attention = 4 * avg_context * c["d_model"] * c["n_layers"] if attention else 0.0
    prefill_bytes = weights_per_step + isl * c["kv_bytes_per_token"]
    comm = collectives * (c["collective_latency"] + allreduce / c["link_bandwidth"])
    prefill_flops = isl * c["flops_per_token"] + prefill_attention
    kv_total = concurrency * kv_per_seq
    decode_flops = concurrency * (c["spec_k"] + 1) * (c["flops_per_token"] + decode_attention)
    prefill_time = np.maximum(prefill_flops / achievable_flops,
                              prefill_bytes / achievable_bandwidth) + c["step_overhead"]
    if c["chunked_prefill"] and c["continuous_batching"]:
        hidden = c["osl"] / c["spec_tokens_per_pass"] * spare
        non_overlapped = np.maximum(0, concurrency * isl - hidden)
    else:
        non_overlapped = concurrency * isl
    mb, pp = c["pp_microbatches"], c["pp"]
    memory_time = (weights_per_step + kv_total / mb) / (pp * achievable_bandwidth)
    compute_time = decode_flops / (mb * pp * achievable_flops)
    per_token_prefill = c["flops_per_token"] + (prefill_attention / isl if attention else 0.0)
    total_prefill = non_overlapped * per_token_prefill / achievable_flops
    step = (mb + pp - 1) * np.maximum(memory_time, compute_time) + c["step_overhead"]
    itl = (step + (0.0 if c["comm_overlap"] else comm)) / c["spec_tokens_per_pass"]
    e2e = prefill_time + c["osl"] * itl
    total_decode = c["osl"] * itl * (1.0 if c["continuous_batching"] else c["osl_spread"])
    throughput = concurrency * c["osl"] / (total_prefill + total_decode)
    return {"ttft": prefill_time, "itl": itl, "e2e_latency": e2e, "throughput": throughput,
            "throughput_per_gpu": throughput / n_gpus, "decode_step_time": step,
            "kv_bytes_per_seq": kv_per_seq}


def constants(raw: Callable[[str], float], names: list[str]) -> dict[str, float]:
    return {n: float(raw(n)) for n in names}  # type: ignore[arg-type]


def write(path: Path, grid: Mapping[str, np.ndarray], c: Mapping[str, float],
          factors: Mapping[str, float], choices: Mapping[str, str]) -> None:
    """Compute the seven columns over ``grid`` (declared units) and write them."""
    isl = grid["isl"] * factors["isl"]
    got = columns(c, isl, grid["concurrency"], grid["tp"])
    with np.errstate(all="ignore"):
        arrays = {n: pa.array(np.where(np.isinf(v), np.nan, v) / factors[n])
                  for n, v in got.items()}
    n = len(isl)
    indices = pa.array(np.zeros(n, dtype=np.int32))
    fixed = {k: pa.DictionaryArray.from_arrays(indices, pa.array([v])) for k, v in
             choices.items()}
    pq.write_table(pa.table({**fixed, **arrays}), path, compression="lz4")
