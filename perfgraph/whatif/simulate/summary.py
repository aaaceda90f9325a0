"""The run in numbers: latency percentiles, throughputs, goodput, overload, time series.

Requests before ``warmup`` are left out. Rates are over the window from the first measured
arrival to the last arrival (the steady part: no ramp, no drain; the whole run when every
request arrives at once), and so are the latencies: of the requests that end in it, and of
its steps (a run too short to end one there takes every measured request). ITL is every
decode token's gap: its step's duration (plus any
change in how far the API server's loop lags, :mod:`.frontend`), weighted by the step's
decodes, plus the longer gaps of preempted requests. Under speculative decoding a step gives
a decode its tokens gained as one chunk; as SGLang's bench_serving counts it, the chunk's
gap is spread over its tokens: a decode that gained a tokens gives a samples of gap ÷ a,
so the mean ITL is the time per token and a step that gave one token weighs as one. TPOT
is a request's (end − first token) ÷ (osl − 1), as vLLM's benchmark reports it, both taken
when the client receives them. Goodput counts the measured requests that end in the
window with TTFT ≤ ``ttft_slo`` and TPOT ≤ ``itl_slo``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from perfgraph.engine.sheet import Sheet
from perfgraph.whatif.simulate import Run
from perfgraph.whatif.simulate.sim_summary import (
    METRIC_KEYS,
    STAT_KEYS,
    FrontendLoad,
    Latencies,
    LatencyStats,
    MeanMax,
    Overload,
    SeriesPoint,
    SimSummary,
    SloLimits,
    SpeculationYield,
    TokenLag,
)

SERIES_POINTS = 60


def weighted_quantiles(values: np.ndarray, weights: np.ndarray, qs: list[float],
                       ) -> list[float]:
    if values.size == 0 or weights.sum() <= 0:
        return [math.nan] * len(qs)
    order = np.argsort(values, kind="stable")
    v, cw = values[order], np.cumsum(weights[order])
    return [float(v[min(np.searchsorted(cw, q * cw[-1]), v.size - 1)]) for q in qs]


def stats(values: np.ndarray, weights: np.ndarray | None, scale: float, n: int,
          unit: str = "") -> LatencyStats:
    """The mean and percentiles of ``values`` (× ``scale``, in ``unit``); p99.9 only over
    ``n`` ≥ 10 000 requests; every one None where nothing was sampled."""
    keys = tuple(k for k in STAT_KEYS if k != "p99.9" or n >= 10_000)
    w = np.ones_like(values) if weights is None else weights
    ok = np.isfinite(values)
    values, w = values[ok], w[ok]
    if values.size == 0 or not w.sum() > 0:  # nothing decoded (every request dropped)
        return LatencyStats(unit, keys=keys)
    qs = [float(k[1:]) / 100 for k in keys[1:]]
    got = {k.replace(".", "_"): q * scale
           for k, q in zip(keys[1:], weighted_quantiles(values, w, qs), strict=True)}
    return LatencyStats(unit, float(np.average(values, weights=w)) * scale, keys=keys, **got)


def summarise(run: Run, sheet: Sheet) -> SimSummary:
    e, t = run.engine, run.engine.reqs.table()
    steps = e.log.arrays()
    w = run.warmup
    ended, in_window, t0, t1 = _ended(t, w, steps)
    span = t1 - t0
    sampled, step_sampled = _steady(ended, in_window, steps, t0, t1, run.warmup > 0)
    slo_ttft, slo_itl = sheet.magnitude("ttft_slo", "s"), sheet.magnitude("itl_slo", "s")
    good = in_window & (t["ttft"] <= slo_ttft) & (t["tpot"] <= slo_itl) | (
        in_window & (t["osl"] <= 1) & (t["ttft"] <= slo_ttft))
    sel = (steps["end"] > t0) & (steps["end"] <= t1)
    out_tokens = float(steps["tokens"][sel].sum())
    ratio = float((t["isl"][ended] + t["osl"][ended]).sum() / max(t["osl"][ended].sum(), 1))
    overload = _overload(run, t, t0, t1, in_window)
    n = int(sampled.sum())
    dur = steps["dur"][sel]

    def per_s(count: float) -> float:
        return count / span if span > 0 else math.nan

    return SimSummary(
        partial=not run.complete, requests=len(t["end"]), measured=n, warmup=w,
        simulated_s=float(e.now), steps=int(steps["end"].size), window_s=span,
        latency=_latencies(run, t, steps, sampled, step_sampled, overload is not None),
        output_throughput=per_s(out_tokens), total_throughput=per_s(out_tokens) * ratio,
        request_throughput=per_s(float(in_window.sum())), goodput=per_s(float(good.sum())),
        goodput_share=float(good.sum() / max(in_window.sum(), 1)),
        slo=SloLimits(slo_ttft * 1e3, slo_itl * 1e3),
        preemptions=int(e.preemptions), dropped=int(sum(e.reqs.dropped)),
        batch=_mean_max(steps["decodes"][sel], dur),
        speculation=_speculation(run, sheet, sel),
        kv_use=_mean_max(steps["kv"][sel], dur),
        series=_series(steps), overload=overload, frontend=_frontend(run, steps),
        replicas=tuple(run.replicas), run_measured=run.lengths.measured,
        measured_source=run.lengths.source)


def _latencies(run: Run, t: dict[str, np.ndarray], steps: dict[str, np.ndarray],
               sampled: np.ndarray, after: np.ndarray, overloaded: bool) -> Latencies:
    """Each latency's statistics over the requests and steps :func:`_steady` samples; an
    overloaded run's TTFT and E2E hidden (they grow with the run's length)."""
    n = int(sampled.sum())
    got = {k: stats(v, weights, SCALES[k], n, UNITS[k])
           for k, (v, weights) in _samples(run, t, steps, sampled, after).items()}
    if overloaded:
        got["ttft"], got["e2e"] = got["ttft"].hidden(), got["e2e"].hidden()
    return Latencies(**got)


#: Each latency's unit in the summary, and the factor from seconds to it.
UNITS = {"ttft": "ms", "tpot": "ms", "itl": "ms", "e2e": "s"}
SCALES = {"ttft": 1e3, "tpot": 1e3, "itl": 1e3, "e2e": 1.0}


class Sampled(NamedTuple):
    """One latency's samples (s) and their weights (None: one per request)."""

    values: np.ndarray
    weights: np.ndarray | None


@dataclass(frozen=True)
class LatencySamples:
    ttft: Sampled
    tpot: Sampled
    itl: Sampled
    e2e: Sampled

    def items(self) -> tuple[tuple[str, Sampled], ...]:
        return tuple((k, getattr(self, k)) for k in METRIC_KEYS)


def latency_samples(run: Run) -> LatencySamples:
    """The samples (in seconds) the summary's latencies are taken over, with their weights
    (None: one per request): TTFT, TPOT and E2E of each request that ended in the window;
    ITL of each step in the window, weighted by its decodes, and each preempted gap (see
    :func:`_steady`)."""
    t, steps = run.engine.reqs.table(), run.engine.log.arrays()
    ended, in_window, t0, t1 = _ended(t, run.warmup, steps)
    return _samples(run, t, steps, *_steady(ended, in_window, steps, t0, t1,
                                            run.warmup > 0))


def _ended(t: dict[str, np.ndarray], w: int, steps: dict[str, np.ndarray],
           ) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The requests past the warm-up that ended, those of them that ended in the window, and
    the window (from the warm-up's last arrival to the last arrival)."""
    ended = np.isfinite(t["end"]) & (np.arange(len(t["end"])) >= w)
    t0, t1 = _window(t, w, steps)
    return ended, ended & (t["end"] > t0) & (t["end"] <= t1), t0, t1


def _steady(ended: np.ndarray, in_window: np.ndarray, steps: dict[str, np.ndarray],
            t0: float, t1: float, steady: bool) -> tuple[np.ndarray, np.ndarray]:
    """Which requests and steps the latencies are taken over. A run measured in its steady
    state (``steady``: one with a warm-up, a closed loop by default): those that ended in the
    window, as the throughput is. Before
    it the warm-up fills the batch; after the last arrival no request replaces one that ends,
    the batch drains, and its steps are quicker than the steady state's (an MoE's fewer
    tokens touch fewer experts: a closed loop's last requests had TPOTs 20% short of the
    others'). A run without a warm-up (an open loop, a burst, a replayed benchmark) takes every
    request that ended and every step after the window opens, as a benchmark client reports
    every request it sent (a burst's p99 TPOT is its drain); so does a steady run too short
    to end any request in its window."""
    after = steps["end"] > t0
    if not steady or not in_window.any():
        return ended, after
    return in_window, after & (steps["end"] <= t1)


def _samples(run: Run, t: dict[str, np.ndarray], steps: dict[str, np.ndarray],
             ended: np.ndarray, after: np.ndarray) -> LatencySamples:
    gaps = np.asarray(run.engine.log.gaps, dtype=float)
    itl, weights = step_gaps(steps)[after], steps["decodes"][after]
    accepted = run.engine.log.accepted()
    if accepted is not None:  # a chunk of a tokens: a samples of gap ÷ a
        a = np.arange(1, accepted.shape[1] + 1, dtype=float)
        itl, weights = (itl[:, None] / a).ravel(), (accepted[after] * a).ravel()
    return LatencySamples(
        ttft=Sampled(t["ttft"][ended], None), tpot=Sampled(t["tpot"][ended], None),
        itl=Sampled(np.concatenate([itl, gaps]), np.concatenate([weights, np.ones(gaps.size)])),
        e2e=Sampled(t["e2e"][ended], None))


def step_gaps(steps: dict[str, np.ndarray]) -> np.ndarray:
    """Each step's gap as its decoders' clients see it: its duration, plus how much later
    than the step before it the API server's loop streamed it (0 when the loop keeps up);
    a pool's steps carry each one's own (``itl``: its replica's step before it)."""
    if "itl" in steps:
        return steps["itl"]
    delay = steps["out"] - steps["end"]
    if not delay.any():
        return steps["dur"]
    return steps["dur"] + np.diff(delay, prepend=0.0)


def _window(t: dict[str, np.ndarray], w: int, steps: dict[str, np.ndarray],
            ) -> tuple[float, float]:
    arrivals = t["arrival"]
    t0 = float(arrivals[w]) if len(arrivals) > w else 0.0
    t1 = float(np.nanmax(arrivals))
    if not t1 > t0 or not math.isfinite(t1):  # all at once: the whole run
        last = float(steps["end"][-1]) if steps["end"].size else 0.0
        return t0 - 1e-12, last
    return t0, t1


def _overload(run: Run, t: dict[str, np.ndarray], t0: float, t1: float,
              in_window: np.ndarray) -> Overload | None:
    """Open loop only: did the queue grow through the window (arrivals outpacing service)?"""
    if run.rate is None or not math.isfinite(run.rate) or not t1 > t0:
        return None
    arrived = (t["arrival"] > t0) & (t["arrival"] <= t1)
    in_system_end = int((t["arrival"] <= t1).sum() - (t["end"] <= t1).sum())
    in_system_start = int((t["arrival"] <= t0).sum() - (t["end"] <= t0).sum())
    growth = in_system_end - in_system_start
    sustained = float(in_window.sum() / (t1 - t0))
    offered = float(arrived.sum() / (t1 - t0))
    if growth > max(0.1 * arrived.sum(), 2 * run.engine.policy.max_seqs) \
            and sustained < 0.95 * offered:
        return Overload(offered, sustained, growth)
    return None


def _frontend(run: Run, steps: dict[str, np.ndarray]) -> FrontendLoad | None:
    """The API server's loop, when it has costs: its times, the share of the run it was
    busy, and how long after their step tokens reached their clients (by tokens)."""
    fe = run.engine.frontend
    if not fe.active:
        return None
    span = max(float(run.engine.now), fe.free + (fe.wait or 0.0))  # until its work is done
    lag = steps["out"] - steps["end"]
    mean, p99, top = (math.nan,) * 3
    if lag.size and steps["tokens"].sum() > 0:
        mean = float(np.average(lag, weights=steps["tokens"]))
        p99 = weighted_quantiles(lag, steps["tokens"], [0.99])[0]
        top = float(lag.max())
    return FrontendLoad(fe.t_req * 1e3, fe.t_tok * 1e3, fe.coalesce,
                        fe.busy / span if span > 0 else math.nan,
                        TokenLag(mean * 1e3, p99 * 1e3, top * 1e3))


def _speculation(run: Run, sheet: Sheet, sel: np.ndarray) -> SpeculationYield | None:
    """Speculative decoding: its k, the tokens a decode gained a step on average in the
    window (accepted drafts and the target's own), and the sheet's expectation of it."""
    accepted = run.engine.log.accepted()
    if accepted is None:
        return None
    counts = accepted[sel].sum(axis=0)
    a = np.arange(1, counts.size + 1)
    return SpeculationYield(
        counts.size - 1,
        float((counts * a).sum() / counts.sum()) if counts.sum() else math.nan,
        sheet.magnitude("spec_tokens_per_pass"))


def _mean_max(values: np.ndarray, dur: np.ndarray) -> MeanMax:
    if values.size == 0 or dur.sum() <= 0:
        return MeanMax(math.nan, math.nan)
    return MeanMax(float(np.average(values, weights=dur)), float(values.max()))


def _series(steps: dict[str, np.ndarray]) -> tuple[SeriesPoint, ...]:
    """Decodes a step and KV in use at SERIES_POINTS evenly spaced times."""
    ends = steps["end"]
    if ends.size == 0:
        return ()
    times = np.linspace(0, ends[-1], SERIES_POINTS + 1)[1:]
    idx = np.minimum(np.searchsorted(ends, times), ends.size - 1)
    return tuple(SeriesPoint(float(a), float(b), float(c))
                 for a, b, c in zip(times, steps["decodes"][idx], steps["kv"][idx], strict=True))
