"""One engine step's time, from the step sheet (``scenario/sheets/step.toml``).

The step's inputs (decodes, prefill tokens, prompts, KV tokens, Σ decode context, Σ chunk
pairs) are cells; so are its time and its parts. :class:`StepSheet` fuses the cells from
those inputs to ``sim_step_time`` into one function (:func:`perfgraph.engine.fused.fuse`),
with :data:`BINDS` making the scenario's averaged cells read the step's counts, and calls it
per step (floats) or per run of decode steps (columns). Nothing here computes a byte, a FLOP
or a time: a pin, a calibration overlay or a new term on the sheet reaches every step.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from perfgraph.engine.formula.compile import ARITHMETIC, failure
from perfgraph.engine.fused import Fused, fuse
from perfgraph.engine.numbers import quantity
from perfgraph.engine.sheet import Sheet
from perfgraph.errors import InputError

#: The step's inputs, in the order the fused function takes them.
INPUTS = ("sim_decodes", "sim_prefill_tokens", "sim_prompts", "sim_kv_tokens",
          "sim_decode_context", "sim_chunk_pairs")
#: The cells inside the step that read a step cell in place of the scenario's average.
BINDS = {"concurrency": "sim_decodes", "running_batch": "sim_decodes",
         "avg_context": "sim_decode_mean_context", "step_tokens": "sim_step_tokens",
         "chunk_step_tokens": "sim_chunk_kv_tokens",
         "chunk_microbatches": "sim_chunk_microbatches", "pp_step_stages": "sim_stages",
         "microbatch_tokens": "sim_microbatch_tokens"}
OUTPUT = "sim_step_time"
#: Decode runs this short are stepped one call at a time (cheaper than columns).
SHORT_RUN = 16


@dataclass(frozen=True)
class StepSheet:
    """The fused step: ``time`` per step, ``decode_run`` for a run of decode steps."""

    step: Fused
    run: Fused
    pairs: Callable[[float], tuple[float, ...]] | None  # prefill_attended_pairs at isl = n
    ttft_overhead: float  # s added to each request's first token (not the GPU's time)
    #: whole steps a first token waits beyond its own (realistic.toml ttft_wait_steps)
    ttft_wait_steps: float = 0.0

    @classmethod
    def from_sheet(cls, sheet: Sheet) -> StepSheet:
        m = sheet.magnitude
        attention = m("prefill_attention_flops", "FLOP") > 0
        return cls(fuse(sheet, INPUTS, (OUTPUT,), BINDS),
                   fuse(sheet, INPUTS, (OUTPUT,), BINDS, columns=True),
                   fuse(sheet, ("isl",), ("prefill_attended_pairs",)).call
                   if attention else None,
                   m("ttft_overhead", "s"), m("ttft_wait_steps"))

    def time(self, decodes: float, prefill: float, kv_tokens: float, decode_context: float,
             pairs: float = 0.0, prompts: float = 1) -> float:
        """Seconds of one step (the sheet's ``sim_step_time`` at these inputs): ``decodes``
        sequences, ``prefill`` tokens of ``prompts`` prompts, ``kv_tokens`` of KV read and
        written, ``decode_context`` of them the decodes' (Σ context), ``pairs`` the chunks'
        causal pairs summed over layers (:meth:`chunk_pairs`)."""
        try:
            return self.step.call(float(decodes), float(prefill), float(prompts),
                                  float(kv_tokens), float(decode_context), float(pairs))[0]
        except ARITHMETIC as exc:
            raise _failed(exc, decodes, prefill) from None

    def values(self, decodes: float, prefill: float, kv_tokens: float, decode_context: float,
               pairs: float = 0.0, prompts: float = 1) -> dict[str, float]:
        """Every cell the step computes, by name, in canonical magnitudes (as ``Sheet.raw``)."""
        got = self.step.trace(float(decodes), float(prefill), float(prompts), float(kv_tokens),
                              float(decode_context), float(pairs))
        return dict(zip(self.step.cells, got, strict=True))

    def chunk_pairs(self, start: int, tokens: int) -> float:
        """Causal pairs (summed over layers) of a chunk of ``tokens`` after ``start``: the
        sheet's prefill_attended_pairs at isl = start + tokens less at isl = start (0 when
        attention's FLOPs are off: nothing reads them)."""
        if self.pairs is None:
            return 0.0
        return self.pairs(float(start + tokens))[0] - (self.pairs(float(start))[0]
                                                        if start else 0.0)

    def decode_run(self, decodes: int, kv_tokens: float, steps: int,
                   gained: np.ndarray | None = None) -> np.ndarray:
        """Durations of ``steps`` decode-only steps in a row: the batch is fixed, each step's
        KV read grows by the tokens the step before gave (``gained``; ``decodes`` each when
        None) (one evaluation over the run's columns; a short run, or one whose columns have
        a row without a value, a call a step)."""
        grown = decodes * np.arange(steps, dtype=np.float64) if gained is None else \
            np.concatenate(([0.0], np.cumsum(gained[:steps - 1], dtype=np.float64)))
        kv = kv_tokens + grown
        if steps > SHORT_RUN:
            try:
                with np.errstate(all="ignore"):
                    out = self.run.call(float(decodes), 0.0, 1.0, kv, kv, 0.0)[0]
                values = np.broadcast_to(np.asarray(out, dtype=np.float64), (steps,))
                if np.isfinite(values).all():
                    return values
            except ARITHMETIC:  # a branch no row takes may fail on floats: step by step
                pass
        return np.array([self.time(decodes, 0, k, k) for k in kv.tolist()])


def _failed(exc: Exception, decodes: float, prefill: float) -> StepFailed:
    return StepFailed(f"the step sheet has no value for a step of {decodes:g} decodes and "
                      f"{prefill:g} prefill tokens ({failure(exc, OUTPUT)} or a cell it "
                      f"reads): a pin, or an input the step cells read?", name=OUTPUT)


class StepFailed(InputError):
    """A step the step sheet gives no time for (the engine says which step)."""


@dataclass(frozen=True)
class StepCell:
    """One cell of an explained step: as ``explain`` shows a cell, at that step's values."""

    name: str
    doc: str
    unit: str
    value: float  # in its declared unit
    shown: str  # the value with its unit, as explain prints it
    formula: str | None = None  # None for a step input
    substituted: str | None = None
    bound: str | None = None  # the step cell it reads in place of its own formula


@dataclass(frozen=True)
class ExplainedStep:
    """``--explain-step``: step ``number`` (from 1) of the run's ``steps``, when it ended and
    how long it took (s), and its cells (its inputs first)."""

    number: int
    steps: int
    end_s: float
    duration_s: float
    cells: tuple[StepCell, ...]


def explain_step(sheet: Sheet, inputs: dict[str, float]) -> list[StepCell]:
    """One step as ``explain`` shows a cell: its inputs (canonical magnitudes, by name),
    then each cell the step computes, in order, with its formula, the formula with that
    step's values, and its result."""
    step = fuse(sheet, INPUTS, (OUTPUT,), BINDS)
    args = [inputs[n] for n in INPUTS]
    known = {**dict(zip(INPUTS, args, strict=True)),
             **dict(zip(step.cells, step.trace(*args), strict=True))}

    cells = set(sheet.names)

    def value(name: str) -> float:
        raw = known[name] if name in known else sheet.raw(name)
        if not isinstance(raw, float):  # a cell that failed
            return math.nan
        return raw / sheet.declaration(name).parsed_unit.factor

    def show(name: str) -> str:
        if name not in cells:
            return name  # a unit in the formula
        decl = sheet.declaration(name)
        v = value(name)
        return quantity(v, decl.unit, flag=decl.flag) if math.isfinite(v) else f"#ERR({name})"

    def cell(name: str) -> StepCell:
        decl = sheet.declaration(name)
        formula = step.formulas.get(name)
        return StepCell(name, decl.doc, decl.unit, value(name), show(name),
                        formula.text if formula else None,
                        formula.render(show) if formula else None, BINDS.get(name))

    return [cell(n) for n in (*INPUTS, *step.cells)]
