"""The step-time model: one engine step's duration, compiled once from the sheet's cells.

A step runs ``d`` decoding sequences (one token each) and ``p`` prefill tokens (chunks of
prompts), and reads ``c`` tokens of KV cache (every decode's context, and each chunk's
context so far plus the chunk it writes). Its time is the sheet's decode-step roofline
(``latency.toml``) with the batch's own token counts in place of the scenario's averages:

======================  ============================================================
sheet cell              role in the step time
======================  ============================================================
weights_bytes_per_step  bytes a microbatch reads (the weights it touches), evaluated by the
                        sheet's own formula over ``step_tokens`` = the step's decodes + prefill
                        tokens: for an MoE the shared weights plus E × (1 − (1 − k/E)^T) of
                        each layer's experts (``experts_touched_fraction``, T the tokens of
                        one of the step's m microbatches), so 1 token reads the active
                        weights and thousands read every expert
kv_bytes_per_token,     bytes read per KV token: ``c × kv_bytes_per_token × kv_replication``
kv_replication          (TP ranks that hold the same KV head each read and write it)
flops_per_token         FLOPs per token computed: ``(d + p) × flops_per_token``
decode_attention_       when switched on: ÷ avg_context, the FLOPs per decoded token per
flops_per_token         context token (all layers, their kinds and widths as the sheet has them)
prefill_attention_      when switched on: ÷ (isl² / 2), the FLOPs per causal token pair of a
flops                   chunk (a chunk of t tokens after c attends t × c + t² / 2 pairs)
achievable_flops        compute of a step that carries decodes (its chunks included, as the
                        sheet's decode_compute_time has them)
achievable_prefill_     compute of a prefill-only step (the sheet's prefill_time)
flops
achievable_bandwidth    bandwidth the step reaches (peak × bandwidth_efficiency)
kernel_roofline,        when on, a decode step is the sum of its kernels' rooflines: GEMMs
system_bandwidth,       max(weights ÷ bandwidth, tokens' FLOPs ÷ compute), then attention
attention_bandwidth_    max(KV ÷ (system_bandwidth × attention_bandwidth_efficiency), its
efficiency              FLOPs ÷ compute) plus the chunks' attention FLOPs (step_*_time)
pp, pp_microbatches,    ``pp_step_stages × roofline`` (m + pp − 1 draining each step, max(m, pp)
pp_step_stages,         in steady state); KV bytes split over ``m``; a step of prompts alone
pp_steady_state         fills at most one microbatch a prompt (one prompt: the pp stages in
                        turn, the sheet's prefill_time)
pp_handoff_latency,     pp − 1 stage-to-stage sends a step: ``(pp − 1) × (latency + tokens ÷ m ×
pp_handoff_bytes_per_   bytes ÷ pp_handoff_bandwidth)`` (the sheet's pp_handoff_time over the
token, pp_handoff_      step's own tokens; a prefill-only step sends its tokens whole, as
bandwidth               prefill_pp_handoff_time)
step_overhead           added to every step
seq_step_overhead       added per decoding sequence to every step
activation_time_per_    the activation kernels every TP rank runs in full, per token of the
token                   step (step_activation_time; a prompt's prefill_activation_time)
tp_comm_exposed,        decode steps add ``exposed × (latency + bytes × d ÷ concurrency)``
tp_comm_latency_time,   (the sheet's tp_comm_time_per_token, scaled to the step's decodes)
tp_comm_bytes_time
prefill_tp_comm_time    every step adds it per prompt token it carries (÷ isl: the sheet's
                        step_prefill_comm_time; an all-reduce moves the decodes and the chunk
                        together)
ttft_overhead           added to each request's first token (not to the GPU's time)
======================  ============================================================

so that a step of ``concurrency`` decodes at ``avg_context`` carrying ``step_prefill_tokens``
is the sheet's ``itl``, and a prompt alone its ``prefill_time + prefill_tp_comm_time``
(``ttft`` less the in-batch wait the simulation plays out itself): every what-if
that moves those cells (FP8, TP4, a calibration overlay, a pinned efficiency) moves the
simulation with them. :meth:`StepModel.check` says how far the model is from those two cells
(it is not when someone pins ``decode_step_time`` itself).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from perfgraph.engine.sheet import Sheet
from perfgraph.engine.units import unit
from perfgraph.errors import InputError

#: Step token counts the weight-bytes table covers (one sheet evaluation over them all); a
#: larger step reads the last entry: every expert is touched long before (1 − (1 − k/E)^T
#: is within 1e-12 of 1 by T ≈ 1,300 for Kimi-K2's 8 of 384, the sparsest in the catalog;
#: under PP the sheet spreads a step's tokens over its m microbatches, so the last entry is
#: every expert for m up to 12).
WEIGHT_TABLE_TOKENS = 16_384


@dataclass(frozen=True)
class StepModel:
    """Per-step coefficients, in B, FLOP, s and tokens."""

    weight_bytes: float  # at the scenario's own step (its concurrency and chunk)
    kv_bytes_per_token: float  # every copy of a token's KV (× kv_replication)
    flops_per_token: float
    attention_flops: float  # decode: FLOPs per token per context token (0 when off)
    prefill_attention_flops: float  # prefill: FLOPs per causal token pair (0 when off)
    flops: float  # achievable FLOP/s of a step with decodes
    prefill_flops: float  # achievable FLOP/s of a prefill-only step
    bandwidth: float  # achievable B/s
    attention_bandwidth: float  # B/s of attention's KV reads (kernel_roofline)
    kernel: bool
    pp: float
    microbatches: float
    stages: float  # stage times a step takes: pp_step_stages (m + p − 1, or max(m, p))
    overhead: float
    seq_overhead: float  # per decoding sequence per step
    comm_latency: float  # per decode step (exposed share)
    comm_per_decode: float  # per decode sequence (exposed share)
    prefill_comm_per_token: float
    ttft_overhead: float
    activation: float = 0.0  # s per token in the activation kernels TP does not split
    steady: bool = False  # pp_steady_state: max(m, p) stage times a step, else m + p − 1
    handoff_latency: float = 0.0  # (pp − 1) stage-to-stage sends' fixed cost per step
    handoff_per_token: float = 0.0  # (pp − 1) × bytes per token ÷ bandwidth
    #: weight bytes of a step of T tokens, T = 0 … WEIGHT_TABLE_TOKENS (the sheet's formula)
    weight_table: tuple[float, ...] = field(default=(), repr=False, compare=False)

    @classmethod
    def from_sheet(cls, sheet: Sheet) -> StepModel:
        m = sheet.magnitude
        if m("spec_k") > 0:
            raise InputError(f"simulate does not model speculative decoding yet "
                             f"(spec_k = {m('spec_k'):g}); set spec_k=0", name="spec_k")
        exposed = m("tp_comm_exposed")
        return cls(
            weight_bytes=m("weights_bytes_per_step", "B"),
            kv_bytes_per_token=m("kv_bytes_per_token", "B/token") * m("kv_replication"),
            flops_per_token=m("flops_per_token", "FLOP/token"),
            attention_flops=m("decode_attention_flops_per_token", "FLOP/token")
            / m("avg_context", "token") if m("attention_flops") else 0.0,
            prefill_attention_flops=m("prefill_attention_flops", "FLOP")
            / (m("isl", "token") ** 2 / 2) if m("attention_flops") else 0.0,
            flops=m("achievable_flops", "FLOP/s"),
            prefill_flops=m("achievable_prefill_flops", "FLOP/s"),
            bandwidth=m("achievable_bandwidth", "B/s"),
            attention_bandwidth=m("system_bandwidth", "B/s")
            * m("attention_bandwidth_efficiency"),
            kernel=bool(m("kernel_roofline")),
            pp=m("pp"), microbatches=m("pp_microbatches"),
            stages=m("pp_step_stages") if "pp_step_stages" in sheet.names
            else m("pp_microbatches") + m("pp") - 1,
            overhead=m("step_overhead", "s"), seq_overhead=m("seq_step_overhead", "s"),
            comm_latency=exposed * m("tp_comm_latency_time", "s"),
            comm_per_decode=exposed * m("tp_comm_bytes_time", "s") / max(m("concurrency"), 1),
            prefill_comm_per_token=m("prefill_tp_comm_time", "s") / m("isl", "token"),
            ttft_overhead=m("ttft_overhead", "s"),
            activation=m("activation_time_per_token", "s/token")
            if "activation_time_per_token" in sheet.names else 0.0,
            steady="pp_steady_state" in sheet.names and bool(m("pp_steady_state")),
            **_handoff(sheet),
            weight_table=weight_table(sheet))

    def weights(self, tokens: float) -> float:
        """Bytes of weights a step of ``tokens`` tokens reads (linear between whole counts;
        the scenario's figure when there is no table)."""
        table = self.weight_table
        if not table:
            return self.weight_bytes
        t = min(max(tokens, 0.0), len(table) - 1.0)
        lo = int(t)
        w = table[lo]
        return w + (t - lo) * (table[lo + 1] - w) if t > lo else w

    def time(self, decodes: float, prefill: float, kv_tokens: float,
             decode_attention: float = 0.0, prefill_attention: float = 0.0,
             prompts: float = 1) -> float:
        """Seconds of one step: ``decodes`` sequences, ``prefill`` tokens of ``prompts``
        prompts, ``kv_tokens`` read; ``decode_attention`` is Σ context over the decodes and
        ``prefill_attention`` Σ tokens × context over the chunks (for attention's FLOPs,
        when switched on)."""
        if not decodes:
            return self._prefill_step(prefill, kv_tokens, prefill_attention, prompts)
        mb, pp, f = self.microbatches, self.pp, self.flops
        att_flops = decode_attention * self.attention_flops \
            + prefill_attention * self.prefill_attention_flops
        weights = self.weights(decodes + prefill)
        if self.kernel:
            # the heaviest microbatch sets a stage's time: the decodes spread over all m,
            # each prompt's chunk in one (at most min(m, prompts) carry chunks)
            k = max(1.0, min(mb, float(prompts)))
            heavy = decodes / mb + prefill / k
            linear = max(weights / (pp * self.bandwidth), heavy * self.flops_per_token / (pp * f))
            attention = max(kv_tokens * self.kv_bytes_per_token
                            / (mb * pp * self.attention_bandwidth),
                            decode_attention * self.attention_flops / (mb * pp * f)) \
                + prefill_attention * self.prefill_attention_flops / (k * pp * f)
            roofline = linear + attention + heavy * self.activation / pp
        else:
            memory = (weights + kv_tokens * self.kv_bytes_per_token / mb) / (
                pp * self.bandwidth)
            compute = ((decodes + prefill) * self.flops_per_token + att_flops) / (mb * pp * f)
            roofline = max(memory, compute)
        return (self.stages * roofline + self.overhead + decodes * self.seq_overhead
                + self.comm_latency + self.comm_per_decode * decodes
                + prefill * self.prefill_comm_per_token + self._handoff((decodes + prefill) / mb))

    def _prefill_step(self, prefill: float, kv_tokens: float, attention: float,
                      prompts: float = 1) -> float:
        """A step of prompts alone. Under PP its prompts fill at most ``prompts``
        microbatches (a prompt is not split over them): one prompt runs the pp stages one
        after another, the sheet's prefill_time."""
        pp = self.pp
        mb = max(1.0, min(self.microbatches, float(prompts)))
        stages = self.stages if mb == self.microbatches else (
            max(mb, pp) if self.steady else mb + pp - 1)
        # the table reads a step of T tokens as m microbatches of T / m; these fill mb
        memory = (self.weights(prefill * self.microbatches / mb)
                  + kv_tokens * self.kv_bytes_per_token / mb) / (pp * self.bandwidth)
        compute = (prefill * self.flops_per_token + attention * self.prefill_attention_flops) / (
            mb * pp * self.prefill_flops)
        return (stages * max(memory, compute) + self.overhead
                + prefill * (self.prefill_comm_per_token + self.activation)
                + self._handoff(prefill / mb))

    def _handoff(self, tokens: float) -> float:
        """The pp − 1 stage-to-stage sends of a microbatch of ``tokens`` tokens (0 without PP)."""
        return self.handoff_latency + tokens * self.handoff_per_token if self.pp > 1 else 0.0

    def decode_run(self, decodes: int, kv_tokens: float, steps: int) -> np.ndarray:
        """Durations of ``steps`` decode-only steps in a row: the batch is fixed, each step's
        KV read grows by ``decodes`` tokens (the closed form of a run between events)."""
        mb, pp, f = self.microbatches, self.pp, self.flops
        kv = kv_tokens + decodes * np.arange(steps, dtype=np.float64)
        weights = self.weights(decodes)
        if self.kernel:
            linear = max(weights / (pp * self.bandwidth),
                         decodes * self.flops_per_token / (mb * pp * f))
            roofline = linear + decodes * self.activation / (mb * pp) + np.maximum(
                kv * (self.kv_bytes_per_token / (mb * pp * self.attention_bandwidth)),
                kv * (self.attention_flops / (mb * pp * f)))
        else:
            memory = (weights + kv * (self.kv_bytes_per_token / mb)) / (
                pp * self.bandwidth)
            compute = (decodes * self.flops_per_token + kv * self.attention_flops) / (
                mb * pp * f)
            roofline = np.maximum(memory, compute)
        fixed = (self.overhead + decodes * self.seq_overhead + self.comm_latency
                 + self.comm_per_decode * decodes + self._handoff(decodes / mb))
        return self.stages * roofline + fixed

    def check(self, sheet: Sheet) -> list[str]:
        """Where the model disagrees with the sheet's own itl / prefill (by > 0.5%)."""
        m = sheet.magnitude
        b, isl = m("concurrency"), m("isl", "token")
        ctx = b * m("avg_context", "token")
        chunk, share = _chunk_steps(sheet)
        prompts = m("chunk_microbatches") if "chunk_microbatches" in sheet.names else 1
        # causal pairs: a whole prompt isl² / 2; the chunk's tokens isl / 2 each; the sheet's
        # itl is the mean of the steps with a chunk (share) and without
        step = share * self.time(b, chunk, ctx + chunk, ctx, chunk * isl / 2, prompts) \
            + (1 - share) * self.time(b, 0, ctx, ctx)
        pairs = [("itl", step, m("itl", "s")),
                 ("prefill_time + prefill_tp_comm_time",
                  self.time(0, isl, isl, 0, isl * isl / 2),
                  m("prefill_time", "s") + m("prefill_tp_comm_time", "s")
                  + (m("prefill_activation_time", "s") if self.activation else 0.0))]
        return [f"the step model gives {name} = {got * 1e3:.4g} ms, the sheet "
                f"{want * 1e3:.4g} ms (a pinned cell the model does not read?)"
                for name, got, want in pairs if abs(got / want - 1) > 0.005]


def _chunk_steps(sheet: Sheet) -> tuple[float, float]:
    """The sheet's prompt tokens of a chunk-carrying decode step and the share of steps that
    carry one (``chunk_step_tokens``, ``chunk_step_share``; every step carries
    ``step_prefill_tokens`` on a sheet without them)."""
    if "chunk_step_share" not in sheet.names:
        return sheet.magnitude("step_prefill_tokens", "token"), 1.0
    return sheet.magnitude("chunk_step_tokens", "token"), sheet.magnitude("chunk_step_share")


def _handoff(sheet: Sheet) -> dict[str, float]:
    """``handoff_latency`` and ``handoff_per_token`` from the sheet's PP handoff cells (both 0
    without PP, with ``pp_handoffs`` off (the roofline), or on a sheet without them)."""
    m = sheet.magnitude
    if "pp_handoff_time" not in sheet.names or m("pp") <= 1 or not m("pp_handoffs"):
        return {}
    hops = m("pp") - 1
    return {"handoff_latency": hops * m("pp_handoff_latency", "s"),
            "handoff_per_token": hops * m("pp_handoff_bytes_per_token", "B")
            / m("pp_handoff_bandwidth", "B/s")}


def weight_table(sheet: Sheet) -> tuple[float, ...]:
    """``weights_bytes_per_step`` (B) for ``step_tokens`` = 0 … WEIGHT_TABLE_TOKENS, each
    row the sheet's own formula (``evaluate_columns``); () when the sheet pins the cell or
    has no ``step_tokens`` (the scenario's figure then stands for every step)."""
    if "step_tokens" not in sheet.names or sheet.is_pinned("weights_bytes_per_step") \
            or sheet.is_pinned("step_tokens"):
        return ()
    tokens = np.arange(WEIGHT_TABLE_TOKENS + 1, dtype=np.float64)
    with np.errstate(all="ignore"):
        cols = sheet.evaluate_columns({"step_tokens": tokens}, tokens.size,
                                      only=["weights_bytes_per_step"])
    factor = unit(sheet.declaration("weights_bytes_per_step").unit).factor / unit("B").factor
    values = np.asarray(cols["weights_bytes_per_step"], dtype=np.float64) * factor
    if not np.isfinite(values).all():
        return ()
    return tuple(float(v) for v in values)
