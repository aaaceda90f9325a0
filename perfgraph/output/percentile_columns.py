"""``compare``'s percentile columns: p50 and p99 TTFT and TPOT, measured / simulated.

Only a file whose runs keep a per-request record gets the columns (see
``perfgraph.measured.percentiles``); where some runs have one and others not, one line says
which have none. Output without any such run is as it was.
"""

from __future__ import annotations

from collections.abc import Sequence

from perfgraph.engine.numbers import quantity
from perfgraph.measured.comparison import Comparison
from perfgraph.measured.percentiles import METRICS, NO_RECORD, STATS, Percentiles

COLUMNS = tuple(f"{m.upper()} {s}" for m in METRICS for s in STATS)
SAYS = ("percentiles: measured (the run's per-request record) / simulated (perfgraph "
        "simulate of the run's own requests, arrivals as its client sent them, seed {seed}) "
        "(error); the simulation timed by {reference}")


def wanted(runs: Sequence[Comparison]) -> bool:
    return any(c.percentiles is not None for c in runs)


def cell(p: Percentiles | None, metric: str, stat: str) -> str:
    """``measured / simulated (error)`` of one percentile."""
    if p is None:
        return "—"
    meas = p.measured.get(metric, {}).get(stat)
    sim = p.simulated.get(metric, {}).get(stat)
    if meas is None:
        return "—"
    if sim is None:
        return f"{quantity(meas, 'ms')} / —"
    err = p.error_of(metric, stat)
    return f"{quantity(meas, 'ms')} / {quantity(sim, 'ms')}" + (
        f" ({100 * err:+.0f}%)" if err is not None else "")


def cells(c: Comparison) -> list[str]:
    return [cell(c.percentiles, m, s) for m in METRICS for s in STATS]


def header(runs: Sequence[Comparison]) -> list[str]:
    """The line above a file's table that says what the percentile columns hold."""
    found = [c.percentiles for c in runs if c.percentiles is not None]
    refs = list(dict.fromkeys(p.reference for p in found if p.reference))
    seeds = sorted({p.seed for p in found})
    if not found:
        return []
    return [SAYS.format(seed=", ".join(map(str, seeds)),
                        reference="; ".join(refs) or "the model")]


def explained(runs: Sequence[Comparison]) -> list[str]:
    """How each run was simulated, and what kept a figure out."""
    out = []
    for c in runs:
        p = c.percentiles
        if p is None:
            continue
        if p.error:
            out.append(f"#{c.run.index} percentiles: {p.error}")
            continue
        out.append(f"#{c.run.index} simulated: {p.arrivals}")
        if p.note:
            out.append(f"#{c.run.index} {p.note}")
    return out


def missing(comparisons: Sequence[Comparison]) -> list[str]:
    """Once, where some runs have percentiles: the compared runs that have none."""
    if not wanted(comparisons):
        return []
    lacking: dict[str, list[str]] = {}
    for c in comparisons:
        if c.error is None and c.percentiles is None:
            lacking.setdefault(c.run.source, []).append(f"#{c.run.index}")
    if not lacking:
        return []
    which = "; ".join(f"{source} {', '.join(idx)}" for source, idx in lacking.items())
    return [f"{which}: {NO_RECORD}"]


def as_dict(p: Percentiles) -> dict:
    """The JSON form: each metric's p50/p99 measured, simulated and error, in ms."""
    return {"unit": "ms", "reference": p.reference, "arrivals": p.arrivals,
            "requests": p.requests, "seed": p.seed, "note": p.note, "error": p.error,
            **{m: {s: {"measured": p.measured.get(m, {}).get(s),
                       "simulated": p.simulated.get(m, {}).get(s),
                       "error": p.error_of(m, s)} for s in STATS} for m in METRICS}}


def columns(p: Percentiles) -> dict:
    """The Parquet columns: ``ttft_p50_measured_ms`` … ``tpot_p99_simulated_ms``, and what
    timed the simulation."""
    out: dict = {"percentiles_reference": p.reference, "percentiles_arrivals": p.arrivals,
                 "percentiles_error": p.error}
    for m in METRICS:
        for s in STATS:
            out[f"{m}_{s}_measured_ms"] = p.measured.get(m, {}).get(s)
            out[f"{m}_{s}_simulated_ms"] = p.simulated.get(m, {}).get(s)
    return out
