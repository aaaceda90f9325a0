"""The step-time model: one engine step's duration, compiled once from the sheet's cells.

A step runs ``d`` decoding sequences (one token each) and ``p`` prefill tokens (chunks of
prompts), and reads ``c`` tokens of KV cache (every decode's context, and each chunk's
context so far plus the chunk it writes). Its time is the sheet's decode-step roofline
(``latency.toml``) with the batch's own token counts in place of the scenario's averages:

======================  ============================================================
sheet cell              role in the step time
======================  ============================================================
weights_bytes_per_step  bytes every step reads (the weights it touches)
kv_bytes_per_token      bytes read per KV token: ``c × kv_bytes_per_token``
flops_per_token         FLOPs per token computed: ``(d + p) × flops_per_token``
attention_flops,        when switched on, ``4 × d_model × n_layers`` FLOPs per token per
d_model, n_layers       context token (decode: its context; a chunk: its context so far)
achievable_flops        compute the step reaches (peak × compute_efficiency, calibrated)
achievable_bandwidth    bandwidth the step reaches (peak × bandwidth_efficiency)
pp, pp_microbatches     ``(m + pp − 1) × max(mem, compute)``; KV bytes split over ``m``
step_overhead           added to every step
tp_comm_latency_time,   when ``comm_overlap`` is off, decode steps add
tp_comm_bytes_time      ``latency + bytes × d ÷ concurrency`` (the sheet's
                        tp_comm_time_per_token, scaled to the step's decodes)
======================  ============================================================

so that ``time(concurrency, 0, concurrency × avg_context)`` is the sheet's ``decode_step_time``
(plus its TP term, i.e. ``itl``) and ``time(0, isl, isl)`` its ``prefill_time``: every what-if
that moves those cells (FP8, TP4, a calibration overlay, a pinned efficiency) moves the
simulation with them. :meth:`StepModel.check` says how far the model is from those two cells
(it is not when someone pins ``decode_step_time`` itself).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfgraph.engine.sheet import Sheet
from perfgraph.errors import InputError


@dataclass(frozen=True)
class StepModel:
    """Per-step coefficients, in B, FLOP, s and tokens."""

    weight_bytes: float
    kv_bytes_per_token: float
    flops_per_token: float
    attention_flops: float  # FLOPs per token per context token (0 when switched off)
    flops: float  # achievable FLOP/s
    bandwidth: float  # achievable B/s
    pp: float
    microbatches: float
    overhead: float
    comm_latency: float  # per decode step when comm is not overlapped
    comm_per_decode: float  # per decode sequence when comm is not overlapped

    @classmethod
    def from_sheet(cls, sheet: Sheet) -> StepModel:
        m = sheet.magnitude
        if m("spec_k") > 0:
            raise InputError(f"simulate does not model speculative decoding yet "
                             f"(spec_k = {m('spec_k'):g}); set spec_k=0", name="spec_k")
        attention = 4 * m("d_model") * m("n_layers") if m("attention_flops") else 0.0
        overlapped = bool(m("comm_overlap"))
        concurrency = max(m("concurrency"), 1.0)
        return cls(
            weight_bytes=m("weights_bytes_per_step", "B"),
            kv_bytes_per_token=m("kv_bytes_per_token", "B/token"),
            flops_per_token=m("flops_per_token", "FLOP/token"),
            attention_flops=attention,
            flops=m("achievable_flops", "FLOP/s"),
            bandwidth=m("achievable_bandwidth", "B/s"),
            pp=m("pp"), microbatches=m("pp_microbatches"),
            overhead=m("step_overhead", "s"),
            comm_latency=0.0 if overlapped else m("tp_comm_latency_time", "s"),
            comm_per_decode=0.0 if overlapped else m("tp_comm_bytes_time", "s") / concurrency)

    def time(self, decodes: float, prefill: float, kv_tokens: float,
             attention_tokens: float = 0.0) -> float:
        """Seconds of one step: ``decodes`` sequences, ``prefill`` tokens, ``kv_tokens`` read;
        ``attention_tokens`` is Σ tokens × context for the attention FLOPs (when on)."""
        mb, pp = self.microbatches, self.pp
        memory = (self.weight_bytes + kv_tokens * self.kv_bytes_per_token / mb) / (
            pp * self.bandwidth)
        compute = ((decodes + prefill) * self.flops_per_token
                   + attention_tokens * self.attention_flops) / (mb * pp * self.flops)
        comm = self.comm_latency + self.comm_per_decode * decodes if decodes else 0.0
        return (mb + pp - 1) * max(memory, compute) + self.overhead + comm

    def decode_run(self, decodes: int, kv_tokens: float, steps: int) -> np.ndarray:
        """Durations of ``steps`` decode-only steps in a row: the batch is fixed, each step's
        KV read grows by ``decodes`` tokens (the closed form of a run between events)."""
        mb, pp = self.microbatches, self.pp
        kv = kv_tokens + decodes * np.arange(steps, dtype=np.float64)
        memory = (self.weight_bytes + kv * (self.kv_bytes_per_token / mb)) / (pp * self.bandwidth)
        compute = (decodes * self.flops_per_token + kv * self.attention_flops) / (
            mb * pp * self.flops)
        comm = self.comm_latency + self.comm_per_decode * decodes
        return (mb + pp - 1) * np.maximum(memory, compute) + (self.overhead + comm)

    def check(self, sheet: Sheet) -> list[str]:
        """Where the model disagrees with the sheet's own itl / prefill_time (by > 0.5%)."""
        m = sheet.magnitude
        b, isl = m("concurrency"), m("isl", "token")
        ctx = b * m("avg_context", "token")
        pairs = [("itl", self.time(b, 0, ctx, ctx), m("itl", "s")),
                 ("prefill_time", self.time(0, isl, isl, isl * isl), m("prefill_time", "s"))]
        return [f"the step model gives {name} = {got * 1e3:.4g} ms, the sheet "
                f"{want * 1e3:.4g} ms (a pinned cell the model does not read?)"
                for name, got, want in pairs if abs(got / want - 1) > 0.005]
