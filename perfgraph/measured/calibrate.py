"""Fit the sheet's efficiency inputs to measured runs, and write them as a TOML overlay.

    fit = calibrate(fit_runs, base, holdout=held_runs)
    write_overlay("h100-sxm.vllm.toml", fit, description)   # then --calibration that file

The targets (``TARGETS``: achievable fraction of peak bandwidth and of peak compute, a fixed
per-step overhead) are inputs of the formula sheets; the fit sets them as columns of
``Sheet.evaluate_columns`` and compares the model's TTFT, TPOT and throughput with each run's,
like for like (``perfgraph.measured.compare.like_for_like``), by least squares in log space: the sum
over runs and metrics of (log model − log measured)².  The minimiser is a small Nelder–Mead
over the targets scaled into their bounds (fractions in (0, 1], overhead ≥ 0), restarted from
its best point until it stops improving.  TTFTs of runs whose requests queued (the
``queued`` finding) are left out of the fit: no roofline term models a queue.

The error reported per metric is the median of |model − measured| / measured over the runs
that have the metric, before (the sheet as loaded) and after the fit, on the fitted runs and
on held-out runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from perfgraph.engine.sheet import Sheet
from perfgraph.errors import InputError, UnknownNameError
from perfgraph.measured.adapters import MeasuredRun
from perfgraph.measured.compare import Comparison, compare_runs, config_columns, like_for_like
from perfgraph.measured.setup import Baseline
from perfgraph.scenario.loading import load


@dataclass(frozen=True)
class Target:
    cell: str  # an input of the formula sheets
    low: float  # bounds, in the cell's declared unit
    high: float
    doc: str


#: What calibration fits: the achievable-vs-peak inputs of
#: perfgraph/scenario/sheets/achievable.toml.
TARGETS = (
    Target("bandwidth_efficiency", 0.01, 1.0, "achievable fraction of peak HBM bandwidth"),
    Target("compute_efficiency", 0.01, 1.0, "achievable fraction of peak compute"),
    Target("step_overhead", 0.0, 100.0, "fixed time each forward step loses"),
)
#: The metrics fitted (TTFT, TPOT, throughput); E2EL follows from them.
FIT_METRICS = ("ttft", "tpot", "throughput")


@dataclass(frozen=True)
class MetricError:
    metric: str
    runs: int  # runs with this metric
    roofline: float | None  # median |model/measured − 1| before the fit (fraction)
    calibrated: float | None  # the same after it


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


@dataclass(frozen=True)
class _Group:
    """Runs that share one sheet, as columns."""

    sheet: Sheet
    columns: Mapping[str, np.ndarray]
    keys: tuple[str | None, ...]  # each run's throughput definition
    measured: Mapping[str, np.ndarray]  # metric → measured (NaN where absent or left out)


def calibrate(runs: Sequence[MeasuredRun], base: Baseline,
              holdout: Sequence[MeasuredRun] = ()) -> Fit:
    fitted = [c for c in compare_runs(runs, base, levers=False) if c.error is None]
    held = [c for c in compare_runs(holdout, base, levers=False) if c.error is None]
    if not fitted:
        raise InputError("no run to fit: none of the given runs could be compared with the "
                         "model (run 'perfgraph compare' on them to see why)")
    excluded = tuple(f"TTFT of {c.run.source} #{c.run.index}: requests queued"
                     for c in fitted if _queued(c))
    groups = _groups(base, fitted, leave_out_queued=True)
    observations = sum(int(np.isfinite(g.measured[m]).sum()) for g in groups
                       for m in FIT_METRICS)
    if observations < len(TARGETS):
        raise InputError(f"{observations} measured values cannot fix {len(TARGETS)} "
                         "efficiency inputs: give more runs")
    units = {t.cell: groups[0].sheet.declaration(t.cell).unit for t in TARGETS}
    best, cost = _minimise(lambda x: _cost(groups, x), len(TARGETS))
    values = {t.cell: _scaled(t, u) for t, u in zip(TARGETS, best, strict=True)}
    held_groups = _groups(base, held, leave_out_queued=False) if held else []
    return Fit(values, units,
               _errors(_groups(base, fitted, leave_out_queued=False), values),
               _errors(held_groups, values) if held else (),
               tuple(fitted), tuple(held), excluded,
               math.sqrt(cost / observations))


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
                             tuple(_key(c) for c in chosen), measured))
    return groups


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
    columns = {**group.columns, **{cell: np.full(n, v) for cell, v in values.items()}}
    return like_for_like(group.sheet, group.sheet.evaluate_columns(columns, n), group.keys)


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


def _cost(groups: Sequence[_Group], x: np.ndarray) -> float:
    values = {t.cell: _scaled(t, u) for t, u in zip(TARGETS, x, strict=True)}
    return float(np.sum(_log_errors(groups, values) ** 2))


def _scaled(target: Target, u: float) -> float:
    """A point of the unit interval → the target's value within its bounds."""
    return target.low + (target.high - target.low) * min(1.0, max(0.0, float(u)))


def _errors(groups: Sequence[_Group], values: Mapping[str, float]) -> tuple[MetricError, ...]:
    loaded = {t.cell: groups[0].sheet.magnitude(t.cell) for t in TARGETS} if groups else {}
    out = []
    for m in FIT_METRICS:
        before = _abs_errors(groups, loaded, m)
        after = _abs_errors(groups, values, m)
        out.append(MetricError(m, len(after), _median(before), _median(after)))
    return tuple(out)


def _abs_errors(groups: Sequence[_Group], values: Mapping[str, float], metric: str) -> list:
    out: list[float] = []
    for g in groups:
        predicted = _predict(g, values)[metric]
        have = np.isfinite(g.measured[metric])
        out += list(np.abs(predicted[have] / g.measured[metric][have] - 1.0))
    return out


def _median(values: Sequence[float]) -> float | None:
    finite = [v for v in values if math.isfinite(v)]
    return float(np.median(finite)) if finite else None


# --------------------------------------------------------------------------- the minimiser


def _minimise(f: Callable[[np.ndarray], float], n: int, restarts: int = 4,
              ) -> tuple[np.ndarray, float]:
    """Nelder–Mead on [0, 1]^n (points clipped into the box), restarted from its best point
    with a fresh simplex while that still helps."""
    best = np.full(n, 0.5)
    value = f(best)
    for _ in range(restarts):
        point, found = _nelder_mead(f, best, step=0.25)
        if found >= value - 1e-12:
            break
        best, value = point, found
    return best, value


def _nelder_mead(f: Callable[[np.ndarray], float], start: np.ndarray, step: float,
                 iterations: int = 400, tolerance: float = 1e-10) -> tuple[np.ndarray, float]:
    def cost(x: np.ndarray) -> float:
        return f(np.clip(x, 0.0, 1.0))

    simplex = [np.clip(start, 0.0, 1.0)]
    for i in range(len(start)):
        vertex = simplex[0].copy()
        vertex[i] = vertex[i] + step if vertex[i] + step <= 1.0 else vertex[i] - step
        simplex.append(vertex)
    costs = [cost(x) for x in simplex]
    for _ in range(iterations):
        order = np.argsort(costs)
        simplex, costs = [simplex[i] for i in order], [costs[i] for i in order]
        if costs[-1] - costs[0] <= tolerance:
            break
        centre = np.mean(simplex[:-1], axis=0)
        reflected = centre + (centre - simplex[-1])
        r = cost(reflected)
        if r < costs[0]:
            expanded = centre + 2.0 * (centre - simplex[-1])
            e = cost(expanded)
            simplex[-1], costs[-1] = (expanded, e) if e < r else (reflected, r)
        elif r < costs[-2]:
            simplex[-1], costs[-1] = reflected, r
        else:
            contracted = centre + 0.5 * (simplex[-1] - centre)
            c = cost(contracted)
            if c < costs[-1]:
                simplex[-1], costs[-1] = contracted, c
            else:  # shrink towards the best vertex
                simplex = [simplex[0] + 0.5 * (x - simplex[0]) for x in simplex]
                costs = [cost(x) for x in simplex]
    i = int(np.argmin(costs))
    return np.clip(simplex[i], 0.0, 1.0), costs[i]


# --------------------------------------------------------------------------- the overlay


def overlay_text(fit: Fit, use: str = "") -> str:
    """The TOML overlay: the fitted inputs in ``[values]``, with comments saying what they were
    fitted on and how well they fit. ``use`` is an example command line."""
    lines = ["# Calibration overlay written by `perfgraph calibrate`: the efficiency inputs",
             "# fitted by least squares (log TTFT, TPOT and throughput) to measured runs.",
             *_described("Fitted on", fit.fitted_runs)]
    lines += ["# Error, median |model − measured| / measured (roofline → calibrated):",
              *_error_comments("fitted runs", fit.fitted)]
    if fit.held_out_runs:
        lines += _described("Held out", fit.held_out_runs)
        lines += _error_comments("held-out runs", fit.held_out)
    lines += [f"# Left out of the fit: {e}" for e in fit.excluded]
    if use:
        lines.append(f"# Use: {use}")
    groups = sorted({" · ".join(str(p) for p in c.setup.group) for c in fit.fitted_runs})
    lines += ["", f'name = "Calibrated efficiencies ({"; ".join(groups)}, '
                  f'{len(fit.fitted_runs)} runs)"', "", "[values]"]
    for t in TARGETS:
        value, unit_text = fit.values[t.cell], fit.units[t.cell]
        shown = f'"{value:.4g} {unit_text}"' if unit_text else f"{value:.4g}"
        lines.append(f"{f'{t.cell} = {shown}':<34}  # {t.doc}")
    return "\n".join(lines) + "\n"


def _described(what: str, runs: Sequence[Comparison]) -> list[str]:
    sources = list(dict.fromkeys(c.run.source for c in runs))
    return [f"# {what} {len(runs)} runs from:", *(f"#   {s}" for s in sources)]


def _error_comments(what: str, errors: Sequence[MetricError]) -> list[str]:
    return [f"#   {what}: " + ", ".join(
        f"{e.metric} {_pct(e.roofline)} → {_pct(e.calibrated)}" for e in errors)]


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"
