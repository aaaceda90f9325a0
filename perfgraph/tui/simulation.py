"""The simulation view's data, without a widget: ``perfgraph simulate`` run on the sheet.

A closed loop of ``concurrency`` users (the sheet's own assumption), or an open loop at the
sheet's ``request_rate``, with :data:`REQUESTS` requests of the scenario's fixed lengths:
enough for p99 (ten requests above it), small enough to answer in a fraction of a second.
The summary is :func:`perfgraph.whatif.simulate.summary.summarise`'s (a
:class:`~perfgraph.whatif.simulate.sim_summary.SimSummary`); the CDFs are quantiles
of the same requests' TTFT and of every decode token's gap (ITL, each step weighted by its
decodes), past the warm-up.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perfgraph.engine.sheet import Sheet
from perfgraph.output.simulate_report import summary_doc, summary_from_doc
from perfgraph.whatif.simulate import Run, Setup, simulate
from perfgraph.whatif.simulate.sim_summary import SimSummary
from perfgraph.whatif.simulate.summary import latency_samples, summarise, weighted_quantiles

REQUESTS = 1000
SEED = 0
#: Quantiles a CDF is drawn at.
QUANTILES = tuple(float(q) for q in np.linspace(0.0, 1.0, 41))


@dataclass(frozen=True)
class Cdf:
    """Values (ms) at :data:`QUANTILES`."""

    x: tuple[float, ...]
    q: tuple[float, ...] = QUANTILES


@dataclass(frozen=True)
class SimAnswer:
    """What the view shows: the run's label and loop, the summary, the CDFs, the series."""

    label: str  # roofline, or the calibration profile (as simulate prints it)
    loop: str  # "closed loop, 64 users" or "open loop, 4.8 request/s"
    summary: SimSummary
    ttft: Cdf
    itl: Cdf
    seconds: float = 0.0
    notes: Sequence[str] = field(default_factory=tuple)

    def stat(self, metric: str, key: str) -> float | None:
        """``stat("ttft", "p99")``: from the summary, in its unit (ms for TTFT, ITL)."""
        stats = self.summary.latency.of(metric)
        value = None if stats is None else stats.get(key)
        return None if value is None else float(value)

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "loop": self.loop, "summary": summary_doc(self.summary),
                "ttft": list(self.ttft.x), "itl": list(self.itl.x), "seconds": self.seconds,
                "notes": list(self.notes)}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> SimAnswer:
        return cls(doc["label"], doc["loop"], summary_from_doc(doc["summary"]),
                   Cdf(tuple(doc["ttft"])),
                   Cdf(tuple(doc["itl"])), float(doc["seconds"]), tuple(doc["notes"]))


def setup_for(sheet: Sheet, open_loop: bool = False, requests: int = REQUESTS,
              seed: int = SEED, scheduler: str = "vllm") -> Setup:
    """The sheet's loop: ``concurrency`` users, or arrivals at ``request_rate`` (Poisson),
    scheduled by ``scheduler`` (the scenario's engine's, as ``perfgraph simulate`` does)."""
    if open_loop:
        return Setup(rate=sheet.magnitude("request_rate", "request/s"), requests=requests,
                     seed=seed, scheduler=scheduler)
    users = max(1, round(sheet.magnitude("concurrency")))
    return Setup(users=users, requests=requests, seed=seed, scheduler=scheduler)


def run(sheet: Sheet, label: str, open_loop: bool = False, requests: int = REQUESTS,
        seed: int = SEED, scheduler: str = "vllm") -> SimAnswer:
    """Simulate on ``sheet`` (a fork: this may run off the UI thread) with ``scheduler``."""
    start = time.perf_counter()
    setup = setup_for(sheet, open_loop, requests, seed, scheduler)
    result = simulate(sheet, setup)
    summary = summarise(result, sheet)
    loop = (f"closed loop, {setup.users} users" if setup.users else
            f"open loop, {setup.rate:.4g} request/s")
    ttft, itl = _cdfs(result)
    return SimAnswer(label, loop, summary, ttft, itl, time.perf_counter() - start,
                     tuple(result.notes))


def _cdfs(result: Run) -> tuple[Cdf, Cdf]:
    """The CDFs of the samples the summary's TTFT and ITL are taken over."""
    samples = latency_samples(result)
    ttft, (itl, weights) = samples.ttft.values, samples.itl
    itl_w = np.ones(itl.size) if weights is None else weights.astype(float)
    return Cdf(_quantiles(ttft * 1e3, np.ones(ttft.size))), Cdf(_quantiles(itl * 1e3, itl_w))


def _quantiles(values: np.ndarray, weights: np.ndarray) -> tuple[float, ...]:
    ok = np.isfinite(values) & (weights > 0)
    if not ok.any():
        return tuple(math.nan for _ in QUANTILES)
    return tuple(weighted_quantiles(values[ok], weights[ok], list(QUANTILES)))
