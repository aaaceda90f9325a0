"""Fit the sheet's efficiency inputs to measured runs, and write them as a TOML overlay.

    fit = calibrate(fit_runs, base, holdout=held_runs)
    write_overlay("h100-sxm.vllm.toml", fit, description)   # then --calibration that file

The targets (``TARGETS``) are inputs of the formula sheets, each a mechanism with physical
bounds: achievable fractions of peak bandwidth (0.5–1) and of peak compute in decode and in
prefill (0.3–1), fixed costs per step, per running sequence and per request (≥ 0, capped
where no engine is slower), and the exposed fraction of TP all-reduces (0–1).  The fit turns
on the structure of ``perfgraph/scenario/sheets/realistic.toml`` (``STRUCTURE``: each step
carries its prefill chunk), sets the targets as columns of ``Sheet.evaluate_columns`` and
compares the model's TTFT, TPOT and throughput with each run's, like for like
(``perfgraph.measured.comparison.like_for_like``), by bounded least squares in log space
(``scipy.optimize.least_squares``, trust-region reflective, from several starts): the sum over
runs and metrics of (log model − log measured)².  The structure includes closed-loop
queueing (prefills behind each other, users whose KV does not fit waiting); TTFTs of runs
whose requests queued for seconds (the ``queued`` finding) are left out of the fit (the
steady-state queue terms do not model a benchmark's ramp) and held out like any other.  What
the runs' engine file documents (``[realistic]``: vLLM's all-reduces are never overlapped) is
held, not fitted; a target the runs cannot move (TP communication when every run is TP = 1)
is left at the sheet's value; each is named, as is one that ends on a bound.

The error reported per metric is the median and the 90th percentile of
|model − measured| / measured over the runs that have the metric, before (the sheet as
loaded) and after the fit, on the fitted runs and on held-out runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from perfgraph.engine.sheet import Sheet
from perfgraph.errors import InputError, UnknownNameError
from perfgraph.measured.adapters import MeasuredRun
from perfgraph.measured.comparison import Comparison, compare_runs, config_columns
from perfgraph.measured.open_loop import evaluate_runs, like_for_like
from perfgraph.measured.setup import Baseline
from perfgraph.measured.span import domain_of
from perfgraph.measured.targets import (
    FIT_METRICS,
    STRUCTURE,
    TARGETS,
    Target,
    unidentified,
    unspeculated,
)
from perfgraph.measured.targets import documented as documented_targets
from perfgraph.scenario.domain import Domain
from perfgraph.scenario.loading import load


@dataclass(frozen=True)
class MetricError:
    metric: str
    runs: int  # runs with this metric
    roofline: float | None  # median |model/measured − 1| before the fit (fraction)
    calibrated: float | None  # the same after it
    calibrated_p90: float | None = None  # the 90th percentile after it
    #: each run's |model/measured − 1| after the fit, so that errors of several fits can be
    #: pooled (benchmarks/research/validate_calibration.py: the median over every held-out run)
    errors: tuple[float, ...] = ()
    #: each run's measured / model after the fit (signed: the bands' quantiles pool these)
    ratios: tuple[float, ...] = ()


@dataclass(frozen=True)
class Fit:
    values: Mapping[str, float]  # target cell → fitted value, in its declared unit
    units: Mapping[str, str]
    fitted: tuple[MetricError, ...]
    held_out: tuple[MetricError, ...]
    fitted_runs: tuple[Comparison, ...]
    held_out_runs: tuple[Comparison, ...]
    excluded: tuple[str, ...]  # what was left out of the fit, and why
    residual: float  # root mean square of the log errors fitted
    notes: tuple[str, ...] = ()  # targets on a bound, or that the runs do not determine
    workloads: tuple[str, ...] = ()  # the ISL/OSL shapes fitted on
    #: targets not fitted but held where the runs' engine file documents them ([realistic])
    held: Mapping[str, float] = field(default_factory=dict)
    engine: str | None = None  # the runs' engine, when they share one
    domain: Domain | None = None  # the span of the fitted runs (perfgraph.measured.span)


@dataclass(frozen=True)
class _Group:
    """Runs that share one sheet, as columns."""

    sheet: Sheet
    columns: Mapping[str, np.ndarray]
    keys: tuple[str | None, ...]  # each run's throughput definition
    arrivals: tuple[str, ...]  # each run's arrivals: closed loop, paced or burst
    measured: Mapping[str, np.ndarray]  # metric → measured (NaN where absent or left out)


def calibrate(runs: Sequence[MeasuredRun], base: Baseline,
              holdout: Sequence[MeasuredRun] = (), targets: Sequence[str] | None = None,
              fixed: Mapping[str, float] | None = None, held_base: Baseline | None = None,
              also: Sequence[tuple[Sequence[MeasuredRun], Baseline]] = (),
              ) -> Fit:
    """Fit ``targets`` (cells of TARGETS; default all) to ``runs``, the others held at
    ``fixed`` (declared units), at the engine file's [realistic] or as the sheet has them;
    hold it against ``holdout``, modelled from ``held_base`` (their own launch flags) or
    ``base``. ``also``: more runs fitted jointly, each set with its own baseline (another
    model's file, served with other launch flags)."""
    chosen = _chosen(targets)
    held_at, held_base = dict(fixed or {}), held_base or base
    parts = [(b, compare_runs(r, b, levers=False)) for r, b in ((runs, base), *also)]
    compared = [c for _, cs in parts for c in cs]
    fitted = [c for c in compared if c.error is None]
    held = [c for c in compare_runs(holdout, held_base, levers=False) if c.error is None]
    _check_some_fitted(fitted, compared)
    excluded = tuple(f"TTFT of {c.run.source} #{c.run.index}: requests queued"
                     for c in fitted if _queued(c))

    def grouped(leave_out_queued: bool) -> list[_Group]:
        return [g for b, cs in parts
                for g in _groups(b, [c for c in cs if c.error is None], leave_out_queued)]

    groups = grouped(leave_out_queued=True)
    engine, documented = documented_targets(fitted, base)
    by_engine = {c: v for c, v in documented.items() if c not in held_at}
    unfixed, said = unidentified([g.sheet for g in groups], {**documented, **held_at})
    fixed = {**unfixed, **documented, **held_at}
    idle, idle_said = unspeculated([g.sheet for g in groups], fixed)
    free = tuple(t for t in chosen if t.cell not in fixed and t.cell not in idle)
    observations = sum(int(np.isfinite(g.measured[m]).sum()) for g in groups
                       for m in FIT_METRICS)
    if observations < len(free):
        raise InputError(f"{observations} measured values cannot fix {len(free)} "
                         "efficiency inputs: give more runs")
    units = {t.cell: groups[0].sheet.declaration(t.cell).unit for t in TARGETS}
    best, cost = _minimise(lambda x: _residuals(groups, x, free, fixed), len(free))
    values, notes = _settled(groups, best, free, fixed)
    notes = said + idle_said + notes
    notes += tuple(f"{c}: held at {v:g}, as engines/{engine}.toml documents (not fitted)"
                   for c, v in by_engine.items())
    held_groups = _groups(held_base, held, leave_out_queued=False) if held else []
    return Fit(values, units, _errors(grouped(leave_out_queued=False), values),
               _errors(held_groups, values) if held else (),
               tuple(fitted), tuple(held), excluded,
               math.sqrt(cost / observations), notes, _workloads(fitted),
               by_engine, engine, domain_of(fitted, base))


def _check_some_fitted(fitted: Sequence[Comparison], compared: Sequence[Comparison]) -> None:
    if not fitted:
        why = "; ".join(f"{c.run.source} #{c.run.index}: {c.error}" for c in compared[:3])
        raise InputError("no run to fit: none of the given runs could be compared with the "
                         f"model ({why or 'no runs given'}{'; …' if len(compared) > 3 else ''})")


def _chosen(targets: Sequence[str] | None) -> tuple[Target, ...]:
    chosen = tuple(t for t in TARGETS if targets is None or t.cell in targets)
    unknown = set(targets or ()) - {t.cell for t in TARGETS}
    if unknown or not chosen:
        raise InputError(f"targets {sorted(unknown) or list(targets or ())}: expected some "
                         f"of {', '.join(t.cell for t in TARGETS)}", name="targets")
    return chosen


def _workloads(runs: Sequence[Comparison]) -> tuple[str, ...]:
    """Each run's workload as its benchmark named it (configured ISL/OSL, not modelled)."""
    shapes = sorted({(round(i), round(o)) for c in runs
                     for i, o in [(c.run.isl_configured or c.setup.isl,
                                   c.run.osl_configured or c.setup.osl)]
                     if i is not None and o is not None})
    return tuple(f"{i}/{o}" for i, o in shapes)


def _settled(groups: Sequence[_Group], x: np.ndarray, targets: Sequence[Target],
             fixed: Mapping[str, float]) -> tuple[dict[str, float], tuple[str, ...]]:
    """The fitted values (and the held ones); drop the targets the runs cannot move (left at
    the sheet's value); name those that ended on a bound."""
    notes: list[str] = []
    kept = {**fixed, **{t.cell: _scaled(t, u) for t, u in zip(targets, x, strict=True)}}

    def cost(y: np.ndarray) -> float:
        return float(np.sum(_residuals(groups, y, targets, fixed) ** 2))

    base_cost = cost(x)
    for i, t in enumerate(targets):
        moved = [cost(np.where(np.arange(len(x)) == i, u, x)) for u in (0.0, 1.0)]
        if max(abs(m - base_cost) for m in moved) < 1e-9:
            del kept[t.cell]
            notes.append(f"{t.cell}: these runs do not determine it (left as the sheet has it)")
        elif x[i] <= 1e-3 or x[i] >= 1 - 1e-3:
            bound = t.low if x[i] <= 1e-3 else t.high
            notes.append(f"{t.cell}: on its {'lower' if x[i] <= 1e-3 else 'upper'} bound "
                         f"({bound:g})")
    return kept, tuple(notes)


def _queued(c: Comparison) -> bool:
    return any(f.id == "queued" for f in c.findings)


def _groups(base: Baseline, comparisons: Sequence[Comparison],
            leave_out_queued: bool) -> list[_Group]:
    members: dict[tuple, list[Comparison]] = {}
    for c in comparisons:
        members.setdefault(c.setup.group, []).append(c)
    groups = []
    for chosen in members.values():
        sheet = load(chosen[0].setup.spec(base.spec)).sheet
        for t in TARGETS:
            if t.cell not in sheet.names:
                raise UnknownNameError(f"the formula sheets have no input {t.cell!r} to "
                                       "calibrate", name=t.cell)
        measured = {m: np.array([_measured(c, m, leave_out_queued) for c in chosen])
                    for m in FIT_METRICS}
        groups.append(_Group(sheet, config_columns([c.setup for c in chosen]),
                             tuple(_key(c) for c in chosen),
                             tuple(c.setup.arrivals for c in chosen), measured))
    return groups


def per_run(base: Baseline, runs: Sequence[Comparison], values: Mapping[str, float],
            ) -> list[tuple[Comparison, dict[str, tuple[float, float]]]]:
    """Each run with, per metric it has, (model, measured) under ``values`` (a fit's): what a
    fit's median error hides, run by run."""
    members: dict[tuple, list[Comparison]] = {}
    for c in runs:
        members.setdefault(c.setup.group, []).append(c)
    out = []
    for chosen, group in zip(members.values(), _groups(base, runs, leave_out_queued=False),
                             strict=True):
        predicted = _predict(group, values)
        for i, c in enumerate(chosen):
            out.append((c, {m: (float(predicted[m][i]), float(group.measured[m][i]))
                            for m in FIT_METRICS if math.isfinite(group.measured[m][i])}))
    return out


def _key(c: Comparison) -> str | None:
    m = c.metric("throughput")
    return m.measured_as if m is not None else None


def _measured(c: Comparison, metric: str, leave_out_queued: bool) -> float:
    m = c.metric(metric)
    if m is None or m.measured is None or m.measured <= 0:
        return math.nan
    if leave_out_queued and metric == "ttft" and _queued(c):
        return math.nan
    return m.measured


def _predict(group: _Group, values: Mapping[str, float]) -> dict[str, np.ndarray]:
    n = len(group.keys)
    fixed = {cell: np.full(n, float(v)) for cell, v in STRUCTURE.items()
             if values and cell in group.sheet.names}
    columns = {**group.columns, **fixed,
               **{cell: np.full(n, v) for cell, v in values.items()}}
    return like_for_like(group.sheet, evaluate_runs(group.sheet, columns, n), group.keys,
                         group.arrivals)


def _log_errors(groups: Sequence[_Group], values: Mapping[str, float]) -> np.ndarray:
    errors = []
    for g in groups:
        predicted = _predict(g, values)
        for m in FIT_METRICS:
            have = np.isfinite(g.measured[m])
            with np.errstate(all="ignore"):
                e = np.log(predicted[m][have]) - np.log(g.measured[m][have])
            errors.append(np.where(np.isfinite(e), e, 10.0))  # a failed row costs a lot
    return np.concatenate(errors) if errors else np.zeros(0)


def _residuals(groups: Sequence[_Group], x: np.ndarray, targets: Sequence[Target],
               fixed: Mapping[str, float]) -> np.ndarray:
    values = {**fixed, **{t.cell: _scaled(t, u) for t, u in zip(targets, x, strict=True)}}
    return _log_errors(groups, values)


def _scaled(target: Target, u: float) -> float:
    """A point of the unit interval → the target's value within its bounds."""
    return target.low + (target.high - target.low) * min(1.0, max(0.0, float(u)))


def _errors(groups: Sequence[_Group], values: Mapping[str, float]) -> tuple[MetricError, ...]:
    out = []
    for m in FIT_METRICS:
        before = [abs(1 / r - 1) for r in _ratios(groups, {}, m)]
        ratios = _ratios(groups, values, m)
        after = [abs(1 / r - 1) for r in ratios]
        out.append(MetricError(m, len(after), _median(before), _median(after),
                               _quantile(after, 0.9), tuple(float(e) for e in after),
                               tuple(float(r) for r in ratios)))
    return tuple(out)


def _ratios(groups: Sequence[_Group], values: Mapping[str, float], metric: str) -> list:
    """measured / model per run with the metric (a failed model: NaN, its error infinite)."""
    out: list[float] = []
    for g in groups:
        predicted = _predict(g, values)[metric]
        have = np.isfinite(g.measured[metric])
        with np.errstate(all="ignore"):
            got = g.measured[metric][have] / predicted[have]
        out += [float(r) if math.isfinite(r) and r > 0 else math.nan for r in got]
    return out


def _median(values: Sequence[float]) -> float | None:
    return _quantile(values, 0.5)


def _quantile(values: Sequence[float], q: float) -> float | None:
    finite = [v for v in values if math.isfinite(v)]
    return float(np.quantile(finite, q)) if finite else None


# --------------------------------------------------------------------------- the minimiser


def _minimise(residuals: Callable[[np.ndarray], np.ndarray], n: int,
              ) -> tuple[np.ndarray, float]:
    """Bounded least squares on [0, 1]^n (the targets scaled into their bounds), from the
    box's centre and from points near each corner of the efficiencies; the best end wins."""
    from scipy.optimize import least_squares

    starts = [np.full(n, 0.5), np.full(n, 0.2), np.full(n, 0.8)]
    best, value = starts[0], math.inf
    for start in starts:
        found = least_squares(residuals, start, bounds=(0.0, 1.0), method="trf",
                              x_scale=1.0, diff_step=1e-3, max_nfev=400)
        cost = float(np.sum(found.fun ** 2))
        if cost < value:
            best, value = np.clip(found.x, 0.0, 1.0), cost
    return best, value
