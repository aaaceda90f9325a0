"""Percentiles of a measured run held against a simulation of its own requests.

``compare`` gives each run that keeps a per-request record (vLLM ``--save-result``:
``input_lens``, ``output_lens``, ``ttfts``, ``itls``) its p50 and p99 TTFT and TPOT twice:

* measured, from the record: numpy's linear percentile, as vLLM's benchmark computes its own
  (TTFT per request; TPOT = (last token − first token) ÷ (output tokens − 1) over the requests
  of two tokens or more);
* simulated: ``perfgraph simulate`` of the same requests, in the file's order, at the run's
  configuration (the sheet ``compare`` evaluates the run at, calibrated when the options give
  a calibration), arriving as the run's client sent them — Poisson at its ``request_rate``
  (gamma gaps with its ``burstiness``), all at t = 0 for ``inf``, or a closed loop of its
  ``max_concurrency`` users when it has one and no rate — with seed ``SEED``, every request
  measured (no warm-up), and the engine's ``max_num_seqs`` and ``max_num_batched_tokens``,
  scheduled by the run's engine's own scheduler (its engine file's ``[scheduler]``: the
  file's engine, else the scenario's ``--engine``), as ``perfgraph simulate`` does.
  The figures are the simulation's summary, as ``perfgraph simulate`` prints them; the
  arrivals are redrawn (the files keep no send times), so a 200-request run carries sampling
  noise of its own in p99.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from perfgraph.engine.sheet import Sheet
from perfgraph.errors import PerfgraphError
from perfgraph.measured.adapters import MeasuredRun
from perfgraph.measured.adapters.records import PerRequest
from perfgraph.measured.setup import CONFIG_CELLS, Baseline, RunSetup
from perfgraph.scenario.loading import load
from perfgraph.whatif.simulate import Run as SimRun
from perfgraph.whatif.simulate import Setup, simulate
from perfgraph.whatif.simulate.lengths import Lengths
from perfgraph.whatif.simulate.sim_summary import SimSummary
from perfgraph.whatif.simulate.summary import summarise

METRICS = ("ttft", "tpot")
STATS = ("p50", "p99")
SEED = 0
NO_RECORD = ("no per-request record (a vLLM --save-result JSON keeps input_lens, "
             "output_lens, ttfts and itls): no percentiles")


@dataclass(frozen=True)
class Percentiles:
    """p50 and p99 TTFT and TPOT (ms) of a run, measured and simulated."""

    measured: Mapping[str, Mapping[str, float]]  # metric → stat → ms
    simulated: Mapping[str, Mapping[str, float | None]]  # None: not shown (overloaded)
    reference: str  # what timed the simulation: "roofline", or "calibrated: …"
    arrivals: str  # how the simulated requests arrived, in words
    requests: int
    seed: int = SEED
    note: str | None = None  # why a simulated figure is not shown
    error: str | None = None  # the simulation could not run

    def error_of(self, metric: str, stat: str) -> float | None:
        """simulated ÷ measured − 1, or None where either is missing."""
        sim = self.simulated.get(metric, {}).get(stat)
        meas = self.measured.get(metric, {}).get(stat)
        if sim is None or not meas:
            return None
        return sim / meas - 1


def measured_percentiles(record: PerRequest) -> dict[str, dict[str, float]]:
    """p50 and p99 of TTFT and TPOT (ms) from a per-request record."""
    ttft = np.asarray(record.ttft_ms, dtype=float)
    osl = np.asarray(record.osl, dtype=float)
    decode = np.asarray(record.decode_ms, dtype=float)
    tpot = decode[osl > 1] / (osl[osl > 1] - 1)
    out: dict[str, dict[str, float]] = {}
    for metric, values in (("ttft", ttft), ("tpot", tpot)):
        if values.size:
            out[metric] = {s: float(np.percentile(values, float(s[1:]))) for s in STATS}
    return out


def lengths_of(run: MeasuredRun) -> Lengths:
    """The run's own requests as the simulation's lengths, with its rate and burstiness."""
    record = run.per_request
    assert record is not None
    rate = run.request_rate if run.request_rate is not None else math.inf
    return Lengths(np.asarray(record.isl, dtype=np.int64), np.asarray(record.osl, dtype=np.int64),
                   rate=rate, cv=1 / math.sqrt(record.burstiness),
                   source=Path(run.source).name)


def sim_setup(run: MeasuredRun, sheet: Sheet, scheduler: str, seed: int = SEED) -> Setup:
    """How ``simulate`` replays the run: its lengths and arrival pattern, the engine's
    limits from the sheet, ``scheduler`` the engine that served it."""
    names = set(sheet.names)
    seqs = math.floor(sheet.magnitude("max_num_seqs")) if "max_num_seqs" in names else None
    budget = math.floor(sheet.magnitude("max_num_batched_tokens", "token")) \
        if "max_num_batched_tokens" in names else None
    users = None
    if run.concurrency is not None and (run.request_rate is None
                                        or math.isinf(run.request_rate)):
        users = max(1, math.floor(run.concurrency))
    return Setup(users=users, lengths="FILE", seed=seed, warmup=0, scheduler=scheduler,
                 token_budget=budget, max_seqs=seqs, given=lengths_of(run))


def arrivals_said(run: MeasuredRun, setup: Setup) -> str:
    n = len(run.per_request.isl) if run.per_request else 0
    if setup.users:
        return f"{n} requests, closed loop of {setup.users} users"
    rate = run.request_rate
    if rate is None or math.isinf(rate):
        return f"{n} requests, all at t = 0 (request rate inf)"
    burst = run.per_request.burstiness if run.per_request else 1.0
    kind = "Poisson" if burst == 1.0 else f"gamma (burstiness {burst:g})"
    return f"{n} requests, {kind} at {rate:g} request/s"


def simulated(run: MeasuredRun, sheet: Sheet, scheduler: str, seed: int = SEED,
              ) -> tuple[SimRun, SimSummary, Setup]:
    """The simulation of the run's own requests on ``sheet`` by ``scheduler``'s rules, and
    its summary."""
    setup = sim_setup(run, sheet, scheduler, seed)
    result = simulate(sheet, setup)
    return result, summarise(result, sheet), setup


def run_percentiles(run: MeasuredRun, sheet: Sheet, reference: str, scheduler: str,
                    seed: int = SEED) -> Percentiles:
    """The run's measured and simulated percentiles, the simulation by ``scheduler`` (an
    engine's name); the simulation's failure as ``error``."""
    record = run.per_request
    assert record is not None
    measured = measured_percentiles(record)
    try:
        _, summary, setup = simulated(run, sheet, scheduler, seed)
    except PerfgraphError as exc:
        return Percentiles(measured, {}, reference, "", len(record.isl), seed,
                           error=f"the simulation cannot run: {exc}")
    latency = dict(summary.latency.items())
    sims = {m: {s: latency[m].get(s) for s in STATS} for m in METRICS}
    note = None
    if summary.overload:
        o = summary.overload
        note = (f"simulated overloaded: requests arrive at {o.offered:.4g} request/s, "
                f"the model sustains {o.sustained:.4g}; its TTFT grows with the run and "
                f"is not shown")
    return Percentiles(measured, sims, reference, arrivals_said(run, setup), len(record.isl),
                       seed, note)


class Sheets:
    """The sheet each run's simulation runs on: its group's scenario (loaded once), forked
    and set to the run's own configuration, as ``compare`` evaluates it."""

    def __init__(self, base: Baseline) -> None:
        self.base = base
        self._loaded: dict[tuple, tuple[Sheet, str]] = {}

    def __call__(self, setup: RunSetup) -> tuple[Sheet, str]:
        got = self._loaded.get(setup.group)
        if got is None:
            scenario = load(setup.spec(self.base.spec))
            got = self._loaded[setup.group] = (scenario.sheet, scenario.prediction)
        sheet = got[0].fork()
        for name in CONFIG_CELLS:
            sheet.set(name, getattr(setup, name))
        return sheet, got[1]

    def engine_of(self, setup: RunSetup) -> str:
        """The engine that served the run: the file's, else the scenario's."""
        return setup.engine or self.base.engine


def percentiles_for(run: MeasuredRun, setup: RunSetup, sheets: Sheets,
                    seed: int = SEED) -> Percentiles | None:
    """The run's percentiles (None without a per-request record)."""
    if run.per_request is None:
        return None
    try:
        sheet, reference = sheets(setup)
    except PerfgraphError as exc:
        record = run.per_request
        return Percentiles(measured_percentiles(record), {}, "", "", len(record.isl), seed,
                           error=f"the model cannot be loaded: {exc}")
    return run_percentiles(run, sheet, reference, sheets.engine_of(setup), seed)
