"""What calibration fits (``TARGETS``, each an input of the formula sheets with physical
bounds), the structure it turns on (``STRUCTURE``), the metrics it fits, and what an engine
file documents instead of leaving it to the fit (its ``[realistic]`` table)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from perfgraph.errors import InputError
from perfgraph.scenario.loading import engine_entry

if TYPE_CHECKING:
    from perfgraph.engine.sheet import Sheet
    from perfgraph.measured.comparison import Comparison
    from perfgraph.measured.setup import Baseline


@dataclass(frozen=True)
class Target:
    cell: str  # an input of the formula sheets
    low: float  # bounds, in the cell's declared unit
    high: float
    doc: str


#: What calibration fits: the achievable-vs-peak inputs of
#: perfgraph/scenario/sheets/achievable.toml.
TARGETS = (
    Target("bandwidth_efficiency", 0.5, 1.0, "achievable fraction of peak HBM bandwidth"),
    Target("attention_bandwidth_efficiency", 0.5, 1.0,
           "achievable fraction of peak HBM bandwidth reading the KV cache"),
    Target("compute_efficiency", 0.3, 1.0, "achievable fraction of peak compute in decode"),
    Target("prefill_compute_efficiency", 0.3, 1.0,
           "achievable fraction of peak compute in prefill"),
    Target("step_host_time", 0.0, 20.0, "host time each forward step loses"),
    Target("kernel_step_time", 0.0, 20.0, "fixed time each kernel of a step adds"),
    Target("seq_step_overhead", 0.0, 200.0, "time each running sequence adds to a step"),
    Target("ttft_overhead", 0.0, 1000.0, "fixed cost before the first token"),
    Target("eager_kernel_step_time", 0.0, 20.0,
           "CPU launch each kernel of an eagerly run step adds (a few µs to ~20 µs; 0 where "
           "the launches hide behind the GPU's work)"),
    # at most one step for each of its mechanisms (realistic.toml ttft_wait_steps): the
    # executor's fetch at an iteration's start and the overlap scheduler's one-step-late
    # tokens; a fit that wants more is absorbing some other first-token cost
    Target("ttft_wait_steps", 0.0, 2.0, "decode steps a first token waits beyond its own"),
    Target("tp_comm_exposed", 0.0, 1.0, "exposed fraction of the TP all-reduces"),
    Target("link_efficiency", 0.3, 1.0, "achievable fraction of the link in an all-reduce"),
    Target("spec_alpha", 0.3, 0.95,
           "probability the target accepts each draft token, fitted on the runs that speculate "
           "(MTP); DeepSeek-V3 technical report § 5.4.3: 85-90% of second tokens accepted"),
)
#: Targets that only runs which speculate (spec_k > 0) move: held where none of the fitted
#: runs does (:func:`unspeculated`).
SPECULATIVE = ("spec_alpha",)
#: Structure the fit turns on (and the overlay keeps): cell → value.
STRUCTURE = {"prefill_in_step": True, "attention_flops": True, "kernel_roofline": True,
             "queueing": True, "replicated_activations": True, "prefill_chunk_steps": True,
             "pp_handoffs": True}
#: The metrics fitted (TTFT, TPOT, throughput); E2EL follows from them.
FIT_METRICS = ("ttft", "tpot", "throughput")


def documented(runs: Sequence[Comparison], base: Baseline) -> tuple[str | None, dict]:
    """The targets the runs' engine file documents (``[realistic]``), held rather than
    fitted; none when the runs mix engines."""
    engines = {c.setup.engine or base.engine for c in runs}
    if len(engines) != 1:
        return None, {}
    engine = engines.pop()
    table = engine_entry(engine).table("realistic")
    unknown = sorted(set(table) - {t.cell for t in TARGETS})
    if unknown:
        raise InputError(f"engines/{engine}.toml [realistic] names {', '.join(unknown)}: "
                         f"expected some of {', '.join(t.cell for t in TARGETS)}", name=unknown[0])
    bounds = {t.cell: t for t in TARGETS}
    for cell, value in table.items():
        t = bounds[cell]
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not t.low <= value <= t.high:
            raise InputError(f"engines/{engine}.toml [realistic] {cell} = {value!r}: expected "
                             f"a number from {t.low:g} to {t.high:g} ({t.doc})", name=cell)
    return engine, {k: float(v) for k, v in table.items()}


#: The step's fixed cost by where it comes from (achievable.toml): what it is proportional to
#: in each model (None: every step alike); a term fits only where the runs' models tell it
#: from the terms before it. The per-kernel term comes first: runs of one model fix only the
#: sum, and that sum is put on the term that carries over to a model with other layers (a
#: DeepSeek layer's ~25 kernels are not a Llama layer's 10), the host's per-step share
#: fitting only where two models' (or TP sizes') kernel counts tell it apart.
SPLIT_OVERHEAD = (("kernel_step_time", "kernels_per_step"), ("step_host_time", None))
#: The first token's fixed cost the same way: the eager launches of the steps that carry its
#: prompt (prefill_eager_kernels: the model's kernel count where the engine runs those steps
#: without a CUDA graph, 0 where it replays one) before the flat per-request cost (tokenise,
#: schedule, detokenise, HTTP). One model's runs fix only their sum; put on the launches it
#: carries over to a model with another kernel count, where a flat constant fitted on a
#: DeepSeek (~1,600 kernels) would charge a Llama-8B (~320) the same tens of ms.
SPLIT_TTFT = (("eager_kernel_step_time", "prefill_eager_kernels"), ("ttft_overhead", None))
SPLITS = (SPLIT_OVERHEAD, SPLIT_TTFT)


def _per_model(sheets: Sequence[Sheet], split: Sequence[tuple[str, str | None]],
               ) -> list[tuple[float, ...]]:
    """Each model's mean of the ``split``'s columns over its runs' sheets (a model is its
    ``n_params``): one model at two TP sizes is still one model, so its two kernel counts
    do not on their own tell the host's share from the kernels'."""
    rows: dict[float, list[tuple[float, ...]]] = {}
    for s in sheets:
        rows.setdefault(s.magnitude("n_params"), []).append(
            tuple(1.0 if c is None else s.magnitude(c) for _, c in split))
    return sorted(tuple(float(x) for x in np.mean(r, axis=0)) for r in rows.values())


def unidentified(sheets: Sequence[Sheet], fixed: Mapping[str, float],
                  ) -> tuple[dict[str, float], tuple[str, ...]]:
    """The fixed-cost terms (``SPLITS``) the runs cannot tell apart from the ones before
    them, held at 0 (and why)."""
    held: dict[str, float] = {}
    notes: tuple[str, ...] = ()
    for split in SPLITS:
        more, said = _unidentified(sheets, fixed, split)
        held, notes = {**held, **more}, notes + said
    return held, notes


def _unidentified(sheets: Sequence[Sheet], fixed: Mapping[str, float],
                  split: Sequence[tuple[str, str | None]],
                  ) -> tuple[dict[str, float], tuple[str, ...]]:
    """One split's terms held at 0: e.g. ``kernels_per_step × kernel_step_time +
    step_host_time`` is fixed by runs of one model as a sum, so a term fits only when its
    column over the models (their kernel counts; a 1 for the flat share) is independent of
    the columns of the terms fitted before it."""
    models = _per_model(sheets, split)
    held: dict[str, float] = {}
    notes: list[str] = []
    columns: list[np.ndarray] = []
    for i, (term, count) in enumerate(split):
        column = np.array([m[i] for m in models], dtype=float)
        if term in fixed:
            continue
        if np.linalg.matrix_rank(np.column_stack([*columns, column])) <= len(columns):
            held[term] = 0.0
            shown = "one model" if count is None else \
                f"{count} {', '.join(f'{m[i]:g}' for m in models)}"
            if not column.any():
                notes.append(f"{term}: held at 0: it moves none of these runs ({shown})")
                continue
            notes.append(f"{term}: held at 0: these runs' models do not tell its cost from the "
                         f"other fixed costs fitted with it ({shown}); fitted as part of them")
        else:
            columns.append(column)
    return held, tuple(notes)


def unspeculated(sheets: Sequence[Sheet], fixed: Mapping[str, float],
                 ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The speculative targets (SPECULATIVE) held out of the fit, and why, when no fitted
    run speculates (every sheet's spec_k is 0): the acceptance then moves nothing, and stays
    as the sheet (or a calibration) has it, its documented default."""
    if any(s.magnitude("spec_k") > 0 for s in sheets):
        return (), ()
    cells = tuple(c for c in SPECULATIVE if c not in fixed)
    return cells, tuple(f"{c}: held at the sheet's {sheets[0].magnitude(c):g}: no fitted run "
                        "speculates (spec_k 0), so the runs cannot tell it" for c in cells)
