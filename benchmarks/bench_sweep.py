"""Sweep speed: 1,000,000 points over the full default sheet to Parquet, against NumPy by hand.

Run: python3 benchmarks/bench_sweep.py [--quick | --only | --split | --small [--against DIR]
[--repeat N]]
Targets: the sweep written to Parquet in under 2 s on the 2-core machine, within 3x
of a hand-written NumPy evaluation of the same formulas on the same points; 10,000,000
points in bounded memory (peak RSS printed). Prints figures, asserts nothing.

The hand-written version below is the default sheet's formulas typed out as NumPy in
canonical units (B, s, FLOP, token, request), as the sheet stood when it was written; the
benchmark first checks it against the engine on every cell and says how many cells it lacks
or computes by an older formula (the engine then does more work than its baseline).
``--only`` times ``sweep --only`` of seven columns against hand_only.py; ``--small`` a cold
1,000-point sweep against a cold ``perfgraph eval``; ``--split`` where the time goes.

Where the time goes (``--split``): writing Parquet is ~80% of the million-point sweep's CPU
(encoding and compressing ~2.6 GB of float64), evaluation the rest; so the 2 s target needs
fewer bytes to write, not a faster evaluator. Measured and not taken: zstd (half the file,
the same CPU), no compression (more to write), no statistics (~5%), constants as Polars
literals or pyarrow dictionaries (the same cost). A Parquet writer of the project's own
brought the cold 1,000-point sweep under one ``eval``; it was declined, since keeping a
binary format by hand is what pyarrow is for. Small sweeps write with pyarrow in one piece
(Polars is ~0.2 s of a cold start, pyarrow ~45 ms).
"""

from __future__ import annotations

import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import hand_only
import numpy as np
import polars as pl

from perfgraph.engine.units import unit
from perfgraph.output import parquet as export
from perfgraph.output import sweep_file
from perfgraph.scenario.loading import ScenarioSpec, load
from perfgraph.whatif import sweep_axes as sweep
from perfgraph.whatif.grid import chunks as grid_chunks

AXES = ["concurrency=1..500", "tp=1,2,4,8", "isl=512..256000:+512"]  # 500 x 4 x 500
BIG_AXES = ["concurrency=1..500", "tp=1..20", "isl=256..256000:+256"]  # 10,000,000


class Cells(dict):
    """Cells by attribute: ``v.itl``. An infinite result is a failed row (NaN), as in the
    engine, so a division by zero fails what reads it rather than feeding it infinity."""

    __getattr__ = dict.__getitem__

    def __setattr__(self, name: str, value) -> None:
        if np.ndim(value):
            value = np.where(np.isinf(value), math.nan, value)
        elif math.isinf(value):
            value = math.nan
        self[name] = value


def where(cond, a, b):
    """``a if cond else b``, row by row when ``cond`` is a column."""
    return (a if cond else b) if np.ndim(cond) == 0 else np.where(cond, a, b)


def hand_roofline(v: Cells) -> None:
    v.n_gpus = v.tp * v.pp
    v.system_flops = v.tp * v.peak_flops
    v.system_bandwidth = v.tp * v.hbm_bandwidth
    v.achievable_flops = v.system_flops * v.compute_efficiency
    v.achievable_bandwidth = v.system_bandwidth * v.bandwidth_efficiency
    v.ridge_point = v.peak_flops / v.hbm_bandwidth
    v.flops_per_token = 2 * v.n_active_params
    v.compute_bound_threshold = v.peak_flops * v.weight_bytes / (2 * v.hbm_bandwidth)
    v.hbm_sweep_time = v.hbm_capacity / v.hbm_bandwidth
    v.max_full_sweeps_per_s = 1 / v.hbm_sweep_time
    v.weights_bytes = v.n_params * v.weight_bytes
    v.weights_bytes_per_step = np.minimum(v.n_params, v.concurrency * v.n_active_params) \
        * v.weight_bytes
    v.single_stream_ceiling = v.system_bandwidth / v.weights_bytes_per_step
    v.long_prompt = v.isl
    v.turn_tokens = v.isl


def hand_memory(v: Cells) -> None:
    v.kv_bytes_per_token = 2 * v.n_layers * v.n_kv_heads * v.head_dim * v.kv_bytes
    v.avg_context = v.isl + v.osl / 2
    v.kv_bytes_per_seq = v.avg_context * v.kv_bytes_per_token
    v.kv_bytes_total = v.concurrency * v.kv_bytes_per_seq
    v.kv_bytes_max_context = v.max_context * v.kv_bytes_per_token
    v.kv_crossover_context = v.weights_bytes / v.kv_bytes_per_token
    v.hbm_total = v.n_gpus * v.hbm_capacity
    v.kv_memory = np.maximum(0, v.gpu_memory_utilization * v.hbm_total - v.weights_bytes)
    v.max_concurrency_naive = v.kv_memory / v.kv_bytes_max_context
    blocks = np.ceil(v.avg_context / v.block_size) * v.block_size
    v.max_concurrency_paged = v.kv_memory / (blocks * v.kv_bytes_per_token)
    v.max_concurrency = where(v.paged_kv, v.max_concurrency_paged, v.max_concurrency_naive)
    v.batch_fits = (v.concurrency <= v.max_concurrency) * 1.0
    v.paged_concurrency_gain = v.max_concurrency_paged / v.max_concurrency_naive
    v.weights_bytes_per_gpu = v.weights_bytes / v.n_gpus
    need = v.weights_bytes + v.kv_bytes_max_context
    v.model_fits = (need <= v.gpu_memory_utilization * v.hbm_total) * 1.0
    v.min_tp_to_fit = 2 ** np.ceil(np.log2(np.maximum(
        1, need / (v.pp * v.gpu_memory_utilization * v.hbm_capacity))))
    v.kv_reserved_naive = v.concurrency * v.kv_bytes_max_context
    v.kv_waste_naive_fraction = np.maximum(0, 1 - v.avg_context / v.max_context)
    v.kv_waste_naive = v.kv_reserved_naive * v.kv_waste_naive_fraction
    v.kv_block_bytes = v.block_size * v.kv_bytes_per_token
    v.kv_waste_paged = v.concurrency * (blocks - v.avg_context) * v.kv_bytes_per_token
    v.kv_transfer_bytes = v.isl * v.kv_bytes_per_token
    v.kv_transfer_time = v.kv_transfer_bytes / v.link_bandwidth
    v.kv_transfer_time_network = v.kv_transfer_bytes / v.network_bandwidth


def hand_latency(v: Cells) -> None:
    v.n_moe_layers = where(v.n_routed_experts > 0, v.n_layers, 0)
    v.step_overhead = v.step_host_time + v.n_layers * v.layer_step_time \
        + v.n_moe_layers * v.moe_layer_step_time
    attention = 4 * v.d_model * v.n_layers
    v.prefill_attention_flops = where(v.attention_flops, attention * v.isl ** 2, 0.0)
    v.decode_attention_flops_per_token = where(v.attention_flops, attention * v.avg_context, 0.0)
    v.prefill_flops = v.isl * v.flops_per_token + v.prefill_attention_flops
    v.prefill_bytes = v.weights_bytes_per_step + v.isl * v.kv_bytes_per_token
    v.prefill_time = np.maximum(v.prefill_flops / v.achievable_flops,
                                v.prefill_bytes / v.achievable_bandwidth) + v.step_overhead
    v.ttft = v.prefill_time
    v.decode_flops_per_step = v.concurrency * (v.spec_k + 1) * (
        v.flops_per_token + v.decode_attention_flops_per_token)
    v.decode_bytes_per_step = v.weights_bytes_per_step + v.kv_bytes_total
    v.pp_microbatches = where(v.pp > 1, v.microbatches, 1)
    v.decode_memory_time = (v.weights_bytes_per_step + v.kv_bytes_total / v.pp_microbatches) \
        / (v.pp * v.achievable_bandwidth)
    v.decode_compute_time = v.decode_flops_per_step / (
        v.pp_microbatches * v.pp * v.achievable_flops)
    v.decode_compute_bound = (v.decode_compute_time > v.decode_memory_time) * 1.0
    v.decode_step_time = (v.pp_microbatches + v.pp - 1) * np.maximum(
        v.decode_memory_time, v.decode_compute_time) + v.step_overhead
    v.tp_collectives_per_token = where(v.tp > 1, 2 * v.n_layers, 0)
    v.tp_allreduce_bytes = 2 * (v.tp - 1) / v.tp * v.concurrency * v.d_model \
        * v.activation_bytes
    v.tp_comm_time_per_token = v.tp_collectives_per_token * (
        v.collective_latency + v.tp_allreduce_bytes / v.link_bandwidth)
    v.tp_comm_latency_time = v.tp_collectives_per_token * v.collective_latency
    v.tp_comm_bytes_time = v.tp_collectives_per_token * v.tp_allreduce_bytes / v.link_bandwidth
    v.pp_bubble_fraction = (v.pp - 1) / (v.microbatches + v.pp - 1)
    v.spec_tokens_per_pass = where(v.spec_alpha < 1, (1 - v.spec_alpha ** (v.spec_k + 1))
                                   / (1 - v.spec_alpha), v.spec_k + 1)
    v.itl = (v.decode_step_time + where(v.comm_overlap, 0, v.tp_comm_time_per_token)) \
        / v.spec_tokens_per_pass
    v.e2e_latency = v.ttft + v.osl * v.itl
    v.tokens_per_s_per_user = 1 / v.itl


def hand_intensity(v: Cells) -> None:
    v.decode_intensity = v.decode_flops_per_step / v.decode_bytes_per_step
    v.prefill_intensity = v.prefill_flops / v.prefill_bytes
    v.attainable_flops = np.minimum(v.peak_flops, v.decode_intensity * v.hbm_bandwidth)
    v.attainable_fraction = v.attainable_flops / v.peak_flops
    v.prefill_attainable_flops = np.minimum(v.peak_flops, v.prefill_intensity * v.hbm_bandwidth)
    v.kv_share_of_decode_bytes = v.kv_bytes_total / v.decode_bytes_per_step
    v.decode_kv_ridge_context = (v.spec_k + 1) * v.flops_per_token * v.achievable_bandwidth \
        / (v.achievable_flops * v.kv_bytes_per_token)
    v.decode_seq_compute_time = (v.spec_k + 1) * (
        v.flops_per_token + v.decode_attention_flops_per_token) / v.achievable_flops
    v.decode_seq_kv_time = v.kv_bytes_per_seq / v.achievable_bandwidth
    slack = v.decode_seq_compute_time - v.decode_seq_kv_time
    v.decode_compute_bound_batch = where(slack > 0, v.pp_microbatches * v.weights_bytes_per_step
                                         / v.achievable_bandwidth / slack, 0)
    v.spec_compute_cost = (v.spec_k + 1) / v.spec_tokens_per_pass
    slowest = np.maximum(v.decode_memory_time, v.decode_compute_time)
    v.decode_spare_compute = 1 - v.decode_compute_time / slowest
    v.spec_latency_gain = v.spec_tokens_per_pass * ((v.pp_microbatches + v.pp - 1) * np.maximum(
        v.decode_memory_time, v.decode_compute_time / (v.spec_k + 1)) + v.step_overhead) \
        / v.decode_step_time


def _prefill_time(v: Cells, tokens, flops_per_token):
    return np.maximum(tokens * flops_per_token / v.achievable_flops,
                      v.weights_bytes_per_step / v.achievable_bandwidth) + v.step_overhead


def hand_scheduling(v: Cells) -> None:
    attention = 4 * v.d_model * v.n_layers
    v.chat_context = v.chat_turn * v.turn_tokens
    v.chat_token_flops = v.flops_per_token + where(v.attention_flops,
                                                   attention * v.chat_context, 0.0)
    v.ttft_cold = _prefill_time(v, v.chat_context, v.chat_token_flops)
    v.ttft_warm = _prefill_time(v, v.chat_context * (1 - v.prefix_hit_rate), v.chat_token_flops)
    v.warm_speedup = v.ttft_cold / v.ttft_warm
    v.routed_hit_rate = where(v.kv_aware_routing, v.prefix_hit_rate,
                              v.prefix_hit_rate / v.replicas)
    v.ttft_routed = _prefill_time(v, v.chat_context * (1 - v.routed_hit_rate),
                                  v.chat_token_flops)
    v.padding_waste = where(v.continuous_batching, 0, 1 - 1 / v.osl_spread)
    v.prefill_spare_tokens = np.maximum(0, v.compute_bound_threshold
                                        - v.concurrency * (v.spec_k + 1))
    v.chunk_size = v.prefill_spare_tokens
    v.long_prompt_flops = v.long_prompt * v.flops_per_token + where(
        v.attention_flops, attention * v.long_prompt ** 2, 0.0)
    v.long_prompt_prefill_time = np.maximum(
        v.long_prompt_flops / v.achievable_flops,
        v.weights_bytes_per_step / v.achievable_bandwidth) + v.step_overhead
    v.prefill_chunk = np.minimum(v.long_prompt, np.maximum(v.chunk_size, 1))
    v.long_prompt_chunks = np.ceil(v.long_prompt / v.prefill_chunk)
    v.prefill_chunk_time = v.long_prompt_flops / v.long_prompt_chunks / v.achievable_flops
    v.decode_stall_unchunked = v.decode_step_time + v.long_prompt_prefill_time
    v.decode_stall_chunked = v.decode_step_time + v.prefill_chunk_time
    v.decode_stall = where(v.chunked_prefill, v.decode_stall_chunked, v.decode_stall_unchunked)
    v.ttft_long_unchunked = v.long_prompt_prefill_time
    v.ttft_long_chunked = v.long_prompt_chunks * v.decode_stall_chunked
    v.ttft_long = where(v.chunked_prefill, v.ttft_long_chunked, v.ttft_long_unchunked)
    v.chunked_ttft_cost = v.ttft_long_chunked / v.ttft_long_unchunked - 1


def _ceiling(v: Cells, batch):
    weights = v.pp_microbatches * np.minimum(v.n_params, batch * v.n_active_params) \
        * v.weight_bytes
    memory = ((weights + batch * v.kv_bytes_per_seq) / (v.pp * v.achievable_bandwidth)
              + v.step_overhead) / v.spec_tokens_per_pass
    return batch / np.maximum(batch * v.ceiling_flops_time, memory)


def hand_throughput(v: Cells) -> None:
    hidden = np.maximum(0, v.concurrency * v.isl - v.osl / v.spec_tokens_per_pass * np.minimum(
        v.chunk_size, v.prefill_spare_tokens))
    v.non_overlapped_prefill_tokens = where(v.chunked_prefill and v.continuous_batching,
                                            hidden, v.concurrency * v.isl)
    v.total_prefill_time = v.non_overlapped_prefill_tokens * (v.flops_per_token + where(
        v.attention_flops, v.prefill_attention_flops / v.isl, 0.0)) / v.achievable_flops
    v.total_decode_time = v.osl * v.itl * where(v.continuous_batching, 1, v.osl_spread)
    v.cycle_time = v.total_prefill_time + v.total_decode_time
    v.output_tokens_per_cycle = v.concurrency * v.osl
    v.throughput = v.output_tokens_per_cycle / v.cycle_time
    v.throughput_per_gpu = v.throughput / v.n_gpus
    v.throughput_total_per_gpu = v.throughput_per_gpu * (v.isl + v.osl) / v.osl
    v.decode_throughput = v.concurrency / v.itl
    v.request_flops = v.prefill_flops + v.osl * (v.spec_k + 1) / v.spec_tokens_per_pass * (
        v.flops_per_token + v.decode_attention_flops_per_token)
    v.ceiling_flops_time = v.request_flops / (v.osl * v.pp * v.achievable_flops)
    v.ceiling_batch = np.minimum(v.concurrency, np.floor(v.max_concurrency))
    v.throughput_ceiling = where(v.ceiling_batch >= 1, _ceiling(v, v.ceiling_batch), 0.0)
    v.max_throughput = where(v.max_concurrency >= 1,
                             _ceiling(v, np.floor(v.max_concurrency)), 0.0)
    v.max_throughput_per_gpu = v.max_throughput / v.n_gpus
    v.max_throughput_total_per_gpu = v.max_throughput_per_gpu * (v.isl + v.osl) / v.osl
    v.fleet_gpus = v.n_gpus * v.replicas
    v.fleet_throughput = v.throughput * v.replicas


def hand_serving(v: Cells) -> None:
    v.request_throughput = v.throughput / v.osl
    v.request_rate = v.request_throughput
    v.prefill_pool_rate = v.isl * v.achievable_flops / v.prefill_flops
    v.prefill_replicas = np.ceil(v.request_rate * v.isl / v.prefill_pool_rate)
    v.itl_slo_step_budget = budget = v.itl_slo * v.spec_tokens_per_pass - v.step_overhead \
        - where(v.comm_overlap, 0, v.tp_comm_latency_time)
    v.tp_comm_time_per_seq = per_seq = where(v.comm_overlap, 0, v.tp_collectives_per_token * 2
                                             * (v.tp - 1) / v.tp * v.d_model
                                             * v.activation_bytes / v.link_bandwidth)
    stages = v.pp_microbatches + v.pp - 1
    by_memory = (budget - stages * v.weights_bytes / (v.pp * v.achievable_bandwidth)) / (
        stages * v.kv_bytes_per_seq / (v.pp_microbatches * v.pp * v.achievable_bandwidth)
        + per_seq)
    by_compute = budget / (stages * (v.spec_k + 1) * (
        v.flops_per_token + v.decode_attention_flops_per_token)
        / (v.pp_microbatches * v.pp * v.achievable_flops) + per_seq)
    v.decode_batch_at_itl_slo = np.floor(np.maximum(0, np.minimum(np.minimum(
        v.max_concurrency, by_memory), by_compute)))
    v.decode_concurrency_demand = v.request_rate * v.osl * v.itl_slo
    v.decode_replicas = np.ceil(v.decode_concurrency_demand / v.decode_batch_at_itl_slo)
    v.disagg_gpus = (v.prefill_replicas + v.decode_replicas) * v.n_gpus
    v.colocated_replicas = np.ceil(v.request_rate / v.request_throughput)
    v.kv_hop_time = where(v.disagg_same_node, v.kv_transfer_time, v.kv_transfer_time_network)
    v.kv_hop_exposed = where(v.kv_hop_overlap, np.maximum(
        v.kv_hop_time / v.n_layers, v.kv_hop_time - v.prefill_time + v.prefill_time / v.n_layers),
        v.kv_hop_time)
    v.ttft_served = where(v.disaggregated, v.ttft + v.kv_hop_exposed, v.ttft)
    v.itl_worst = where(v.disaggregated, v.itl, np.maximum(v.itl, v.decode_stall))
    v.slo_met = ((v.ttft_served <= v.ttft_slo) & (v.itl_worst <= v.itl_slo)) * 1.0
    v.goodput = where(v.slo_met, where(v.disaggregated, v.request_rate, np.minimum(
        v.request_rate, v.request_throughput * v.colocated_replicas)), 0.0)
    # the engine fails a row where any read failed, the branch not taken too (0 × NaN)
    v.goodput_per_gpu = v.goodput / where(v.disaggregated, v.disagg_gpus,
                                          v.colocated_replicas * v.n_gpus) \
        + 0 * v.disagg_gpus
    v.mfu = v.throughput * (v.isl + v.osl) / v.osl * v.flops_per_token \
        / (v.n_gpus * v.peak_flops)
    v.mbu = (1 - v.pp_bubble_fraction) * v.decode_memory_time * v.bandwidth_efficiency / (
        np.maximum(v.decode_memory_time, v.decode_compute_time)
        + v.step_overhead / (v.pp_microbatches + v.pp - 1))
    v.decode_headroom = 1 / v.mbu
    v.prefill_mfu = v.prefill_flops / (v.prefill_time * v.system_flops)


HAND = (hand_roofline, hand_memory, hand_latency, hand_intensity, hand_scheduling,
        hand_throughput, hand_serving)


def hand_numpy(inputs: dict, factors: dict, length: int) -> dict:
    """Every cell by hand, from canonical inputs, then each column in its declared unit."""
    v = Cells(inputs)
    with np.errstate(all="ignore"):
        for step in HAND:
            step(v)
    return {n: np.broadcast_to(v[n] / f, (length,)) for n, f in factors.items() if n in v}


# ----------------------------------------------------------------- timing
def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Best (wall, CPU) seconds over ``repeat`` runs."""
    runs = []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        runs.append((time.perf_counter() - wall, time.process_time() - cpu))
    return min(r[0] for r in runs), min(r[1] for r in runs)


def chunk_bounds(points: int, rows: int = sweep.CHUNK_ROWS) -> list[tuple[int, int]]:
    return [(a, min(points, a + rows)) for a in range(0, points, rows)]


class Bench:
    """The default scenario, the sweep's axes, and the two ways of evaluating them."""

    def __init__(self, axes: list[str]) -> None:
        self.scenario = load()
        self.sheet = self.scenario.sheet
        self.plan = sweep.plan(ScenarioSpec(), axes)
        self.units = export.units(self.sheet, self.sheet.names)
        self.factors = {n: unit(u).factor for n, u in self.units.items()}
        self.inputs = {n: self.sheet.raw(n) for n in self.sheet.names
                       if self.sheet.declaration(n).is_input}
        self.chosen = [pl.lit(v).alias(k) for k, v in export.choices(self.scenario).items()]

    def grid(self, start: int, stop: int) -> dict[str, np.ndarray]:
        return sweep.grid_columns(self.plan.cell_axes, start, stop)

    def engine(self, start: int, stop: int) -> dict[str, np.ndarray]:
        return self.sheet.evaluate_columns(self.grid(start, stop), stop - start)

    def hand(self, start: int, stop: int) -> dict[str, np.ndarray]:
        canonical = {n: c * self.factors[n] for n, c in self.grid(start, stop).items()}
        return hand_numpy({**self.inputs, **canonical}, self.factors, stop - start)

    def evaluate_all(self, how: Callable, rows: int = sweep.CHUNK_ROWS) -> None:
        for start, stop in chunk_bounds(self.plan.points, rows):
            how(start, stop)

    def write_hand(self, path: Path) -> None:
        def frames():
            for start, stop in chunk_bounds(self.plan.points):
                yield sweep_file.chunk_frame(self.hand(start, stop), self.units, {}, self.chosen,
                                        stop - start)
        export.write_frames(path, frames, export.schema(list(self.units)), self.units)

    def agreement(self) -> list[str]:
        """Lines saying where the hand-written NumPy and the engine differ (none: agree)."""
        engine, hand = self.engine(0, 50_000), self.hand(0, 50_000)
        missing = [n for n in engine if n not in hand]
        differ = [n for n in hand if not np.allclose(engine[n], hand[n], rtol=1e-9, atol=0,
                                                     equal_nan=True)]
        notes = []
        if missing:
            notes.append(f"not written by hand (the sheet has grown since): {len(missing)} of "
                         f"{len(engine)} cells, so the engine computes more than the baseline "
                         "and its ratios overstate its cost")
        if differ:
            notes.append(f"hand-written, but the sheet's formula has changed since "
                         f"({len(differ)}): {', '.join(differ)}")
        return notes


def peak_rss(axes: list[str], path: Path) -> tuple[float, float]:
    """(peak RSS in MB, wall seconds) of a fresh process that runs the sweep."""
    # VmHWM, not ru_maxrss: a forked child's ru_maxrss starts at its parent's (this process
    # holds the 1,000,000-row hand-written columns), and exec does not reset it.
    code = ("import re, sys; from perfgraph.whatif import sweep_axes as sweep; "
            "from perfgraph.scenario.loading import ScenarioSpec; "
            "from perfgraph.output import sweep_file; "
            "sweep_file.write(sweep.plan(ScenarioSpec(), sys.argv[2:]), sys.argv[1]); "
            "print(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read())[1])")
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, str(path), *axes], check=True,
                         capture_output=True, text=True).stdout
    return int(out.split()[-1]) / 1024, time.perf_counter() - start


def only_figures(bench: Bench, out: Path, repeat: int) -> list[str]:
    """``sweep --only`` (seven columns) against the hand-written NumPy + pyarrow script."""
    sheet, plan = bench.sheet, bench.plan
    consts = hand_only.constants(sheet.raw, sheet.names)
    choices = export.choices(bench.scenario)
    factors = {n: unit(u).factor for n, u in bench.units.items()}

    def hand() -> None:
        grid = sweep.grid_columns(plan.cell_axes, 0, plan.points)
        hand_only.write(out / "hand_only.parquet", grid, consts, factors, choices)

    def engine() -> None:
        sweep_file.write(plan, out / "only.parquet", only=hand_only.ONLY)

    engine_t, hand_t = timed(engine, repeat), timed(hand, repeat)
    a, b = pl.read_parquet(out / "only.parquet"), pl.read_parquet(out / "hand_only.parquet")
    differ = [n for n in hand_only.ONLY if not np.allclose(
        a[n].to_numpy(), b[n].to_numpy(), rtol=1e-9, atol=0, equal_nan=True)]
    computed = len(sheet._varying(bench.grid(0, 2), tuple(hand_only.ONLY)))
    return [
        f"sweep --only {','.join(hand_only.ONLY)} ({computed} cells computed), "
        f"{plan.points:,} points:",
        "  " + (f"hand-written differs from the engine on {differ}" if differ else
                "hand-written NumPy + pyarrow agrees with the engine on every column"),
        f"  perfgraph sweep --only → Parquet          {engine_t[0]:.3f}s wall "
        f"{engine_t[1]:.3f}s CPU",
        f"  hand-written NumPy + pyarrow → Parquet    {hand_t[0]:.3f}s wall {hand_t[1]:.3f}s CPU",
        f"  ratio {engine_t[0] / hand_t[0]:.2f}x (target ≤ 1.5x)",
    ]


#: ``perfgraph`` with the small sweep's Parquet write replaced by nothing (the file is not
#: written; pyarrow is not imported)
NO_WRITE = ("import sys; from perfgraph.output import parquet; "
            "parquet.write_table = lambda *a, **k: True; "
            "from perfgraph.cli.main import main; sys.argv[0] = 'perfgraph'; sys.exit(main())")


def small_sweep_vs_eval(out: Path, repeat: int = 7, bytecode: bool = False,
                        against: Path | None = None) -> list[str]:
    """A cold 1,000-point ``perfgraph sweep`` against a cold ``perfgraph eval`` (and
    ``python -c "import numpy"``), the runs alternating so that all see the same load; with
    ``against``, that checkout's eval and sweep too, in the same rounds.

    ``bytecode``: with compiled modules cached (in a folder of ``out``, one warm-up run of
    each first), as an installed package has them; without it, in the environment as it is
    (where ``PYTHONDONTWRITEBYTECODE`` is set, every run compiles perfgraph's source).
    Wall time is the figure; CPU time (the child's user + system) is printed beside it, as
    it moves less with the machine's load."""
    env = dict(os.environ)
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(out / "pycache")
    checkouts = {"": Path.cwd(), **({" (against)": against} if against else {})}
    commands = {"numpy": ([sys.executable, "-c", "import numpy"], Path.cwd())}
    for label, root in checkouts.items():
        commands[f"eval{label}"] = ([sys.executable, "-m", "perfgraph.cli", "eval"], root)
        commands[f"sweep{label}"] = ([sys.executable, "-m", "perfgraph.cli", "sweep", "--axis",
                                      "concurrency=1..1000", "--out",
                                      str(out / "thousand.parquet")], root)
    # the same sweep with the Parquet write (pyarrow's import and the file) left out: what the
    # sweep costs before any writer, against the same eval
    commands["sweep, no write"] = ([sys.executable, "-c", NO_WRITE, "sweep", "--axis",
                                    "concurrency=1..1000", "--out", str(out / "none.parquet")],
                                   Path.cwd())
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for round_ in range(repeat + bytecode):
        for name, (argv, root) in commands.items():
            timing = _cold_run(argv, root, {**env, "PYTHONPATH": str(root)})
            if round_ or not bytecode:
                times[name].append(timing)
    how = "compiled modules cached" if bytecode else "as the environment is"
    lines = [f"{how}: `import numpy` {min(times['numpy'])[0]:.3f} s"]
    bare, cold = times["sweep, no write"], times["eval"]
    lines.append(f"  this checkout, the sweep without its Parquet write: "
                 f"{min(bare)[0]:.3f} s against eval {min(cold)[0]:.3f} s: "
                 f"{min(bare)[0] / min(cold)[0]:.2f}x (the write is the rest)")
    for label in checkouts:
        sweep_t, eval_t = times[f"sweep{label}"], times[f"eval{label}"]
        best = {what: min(runs)[0] for what, runs in (("sweep", sweep_t), ("eval", eval_t))}
        cpu = {what: min(c for _, c in runs) for what, runs in (("sweep", sweep_t),
                                                               ("eval", eval_t))}
        paired = sorted(s[0] / e[0] for s, e in zip(sweep_t, eval_t, strict=True))
        lines.append(
            f"  {str(checkouts[label]) if label else 'this checkout'}: cold sweep of 1,000 "
            f"points {best['sweep']:.3f} s, cold eval {best['eval']:.3f} s: "
            f"{best['sweep'] / best['eval']:.2f}x, median of the paired ratios "
            f"{paired[len(paired) // 2]:.2f}x (target ≤ 1x); CPU {cpu['sweep']:.3f} s / "
            f"{cpu['eval']:.3f} s = {cpu['sweep'] / cpu['eval']:.2f}x")
    return lines


def _cold_run(argv: list[str], root: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of ``argv`` in a new process started in ``root``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=env, cwd=root)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def write_split(bench: Bench, out: Path) -> list[str]:
    """Where the million-point sweep's time goes: evaluation, the frames, and the Parquet
    write of every column, of the varying columns alone and of the constant ones alone
    (each evaluated and written as ``perfgraph sweep`` does, through its own writer)."""
    plan, units = bench.plan, sweep.selected_units(bench.plan)
    sheet = plan.scenario(next(plan.specs())).sheet
    present = [n for n in units if n in set(sheet.names)]
    varying: set[str] = set()
    for _, _, columns in grid_chunks(sheet, plan.cell_axes, only=present):
        varying |= {n for n, c in columns.items() if c.strides != (0,)}

    def write(names: list[str], path: Path) -> None:
        chosen = {n: units[n] for n in names}
        export.write_frames(path, lambda: sweep_file.frames(plan, chosen),
                            export.schema(list(chosen)), chosen)

    def evaluate() -> None:
        for _ in grid_chunks(sheet, plan.cell_axes, only=present):
            pass

    steps = [
        ("evaluate (evaluate_columns, 64k-row chunks)", evaluate, None),
        ("+ the Polars frames (chunk_frame)",
         lambda: list(map(len, sweep_file.frames(plan, units))), None),
        ("+ written to Parquet, every column", lambda: write(list(units), out / "all.parquet"),
         out / "all.parquet"),
        (f"the {len(varying)} varying columns alone",
         lambda: write([n for n in units if n in varying], out / "varying.parquet"),
         out / "varying.parquet"),
        (f"the {len(units) - len(varying)} constant columns alone",
         lambda: write([n for n in units if n not in varying], out / "constant.parquet"),
         out / "constant.parquet"),
    ]
    lines = [f"{plan.points:,} points, {len(units)} cell columns: wall, CPU (all threads)"]
    for what, fn, path in steps:
        wall, cpu = timed(fn, 1)
        size = f", {path.stat().st_size / 1e6:.0f} MB" if path else ""
        lines.append(f"  {what:<48}{wall:>7.2f} s {cpu:>7.2f} s{size}")
    return lines


def main() -> None:
    quick = "--quick" in sys.argv
    if "--small" in sys.argv:  # the cold 1,000-point sweep against eval alone
        against = (Path(sys.argv[sys.argv.index("--against") + 1]).resolve()
                   if "--against" in sys.argv else None)
        repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 7
        with tempfile.TemporaryDirectory() as folder:
            for bytecode in (False, True):
                print("\n".join(small_sweep_vs_eval(Path(folder), repeat, bytecode, against)))
        return
    if "--split" in sys.argv:  # where the million-point sweep's time goes
        with tempfile.TemporaryDirectory() as folder:
            print("\n".join(write_split(Bench(AXES), Path(folder))))
        return
    if "--only" in sys.argv:  # sweep --only against hand_only.py alone
        bench = Bench(AXES)
        with tempfile.TemporaryDirectory() as folder:
            print("\n".join(only_figures(bench, Path(folder), 3)))
            for bytecode in (False, True):
                print("\n".join(small_sweep_vs_eval(Path(folder), bytecode=bytecode)))
        return
    repeat = 1 if quick else 3
    bench = Bench(AXES)
    points = bench.plan.points
    notes = bench.agreement()
    varying = len(bench.sheet.evaluate_columns(bench.grid(0, 2), 2)) - sum(
        c.strides == (0,) for c in bench.sheet.evaluate_columns(bench.grid(0, 2), 2).values())
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        engine = timed(lambda: bench.evaluate_all(bench.engine), repeat)
        hand = timed(lambda: bench.evaluate_all(bench.hand), repeat)
        hand_whole = timed(lambda: bench.evaluate_all(bench.hand, points), repeat)
        sweep_write = timed(lambda: sweep_file.write(bench.plan, out / "sweep.parquet"), repeat)
        hand_write = timed(lambda: bench.write_hand(out / "hand.parquet"), repeat)
        size = (out / "sweep.parquet").stat().st_size / 1e6
        rows = pl.scan_parquet(out / "sweep.parquet").select(pl.len()).collect().item()
        small = peak_rss(["concurrency=1,2"], out / "small.parquet")
        one = peak_rss(AXES, out / "one.parquet")
        big = None if quick else peak_rss(BIG_AXES, out / "big.parquet")
    best_hand = min(hand[0], hand_whole[0])
    cells = len(bench.units)
    print(f"python {sys.version.split()[0]}, {cells} cells ({varying} vary with the axes), "
          f"{points:,} points: {' '.join(AXES)}")
    for note in notes or ["hand-written NumPy agrees with the engine on every cell"]:
        print("  " + note)
    table = [
        ("engine: evaluate_columns, 64k-row chunks", engine),
        ("hand-written NumPy, same chunks", hand),
        ("hand-written NumPy, all 1,000,000 rows at once", hand_whole),
        ("perfgraph sweep → Parquet (lz4)", sweep_write),
        ("hand-written NumPy → the same Parquet writer", hand_write),
    ]
    print(f"{'what':<50}{'wall':>9}{'CPU':>9}")
    for what, (wall, cpu) in table:
        print(f"{what:<50}{wall:>8.3f}s{cpu:>8.3f}s")
    print(f"evaluation: engine / best hand-written = {engine[0] / best_hand:.2f}x (target < 3x)")
    print(f"end to end: sweep to Parquet / hand-written to Parquet = "
          f"{sweep_write[0] / hand_write[0]:.2f}x; sweep to Parquet {sweep_write[0]:.2f} s "
          f"(target < 2 s); file {size:.0f} MB, {rows:,} rows × {cells + 4} columns")
    print(f"peak RSS (fresh process): 2 points {small[0]:.0f} MB; {points:,} points "
          f"{one[0]:.0f} MB in {one[1]:.1f} s", end="")
    if big is not None:
        dense = 10_000_000 * cells * 8 / 1e9
        print(f"; 10,000,000 points {big[0]:.0f} MB in {big[1]:.1f} s "
              f"(the table itself would be {dense:.1f} GB in memory)")
    else:
        print()


if __name__ == "__main__":
    main()
