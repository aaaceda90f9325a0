"""Measured runs against the model's curves: one line per configuration the runs were made at.

    lines = measured_lines(compare_runs(runs, base), base)
    line = lines[0]
    line.model["throughput"]    # the roofline's output tokens/s over line.model["concurrency"]
    line.points["throughput"]   # the runs' measured output tokens/s at their concurrency

A run is drawn against the model at its own configuration (model, hardware, precision, TP,
ISL, OSL: the ones ``perfgraph compare`` holds it against), never against whatever scenario
is open, so a TP=8 row is not read off a TP=2 curve. Each line's curves are the whole sheet
evaluated once over a column of concurrencies (:func:`perfgraph.compare.model_curve`); the
points are :func:`perfgraph.compare.run_points`. Nothing here imports textual.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from perfgraph.compare import Comparison, compare_runs, model_curve, run_points
from perfgraph.compare_report import Measured, read_measured
from perfgraph.display import number
from perfgraph.errors import PerfgraphError
from perfgraph.graph import Sheet
from perfgraph.run_setup import Baseline, Setup
from perfgraph.scenario import ScenarioSpec, load

#: Points on each model curve, spaced evenly in log concurrency.
CURVE_POINTS = 48


@dataclass(frozen=True)
class MeasuredLine:
    """The runs measured at one configuration, and the model's curves at it.

    ``model`` is :func:`~perfgraph.compare.model_curve` over a concurrency grid that spans
    the runs; ``points`` is :func:`~perfgraph.compare.run_points` of the runs (measured
    output tokens/s and TPOT, like for like with the model's ``throughput`` and ``itl``).
    """

    label: str
    runs: tuple[Comparison, ...]
    model: dict[str, np.ndarray]
    points: dict[str, np.ndarray]
    error: str | None = None  # the model could not be loaded for this configuration


def configuration(setup: Setup) -> tuple:
    """Runs with equal configurations share one line."""
    return (setup.model, setup.hardware, setup.precision, setup.tp, setup.isl, setup.osl)


def line_label(setup: Setup) -> str:
    def slug(text: str | None) -> str:
        return (text or "?").rsplit("/", 1)[-1].removesuffix(".toml")

    def num(x: float | None) -> str:
        return "?" if x is None else number(x)

    return (f"{slug(setup.model)} · {slug(setup.hardware)} · {setup.precision} · "
            f"TP {num(setup.tp)} · {num(setup.isl)}/{num(setup.osl)}")


def concurrency_grid(concurrencies: Iterable[float]) -> np.ndarray:
    """From 1 to twice the largest run's concurrency (at least 64), even in log, with the
    runs' own concurrencies in it."""
    finite = [float(c) for c in concurrencies if math.isfinite(c) and c > 0]
    top = max(64.0, 2 * max(finite, default=1.0))
    return np.unique(np.concatenate([np.geomspace(1, top, CURVE_POINTS), finite]))


def measured_lines(comparisons: Sequence[Comparison], base: Baseline,
                   ) -> tuple[MeasuredLine, ...]:
    """One line per configuration of the runs that could be modelled, in the runs' order."""
    groups: dict[tuple, list[Comparison]] = {}
    for c in comparisons:
        if c.error is None:
            groups.setdefault(configuration(c.setup), []).append(c)
    sheets: dict[tuple, Sheet | PerfgraphError] = {}
    lines = []
    for runs in groups.values():
        setup = runs[0].setup
        if setup.group not in sheets:
            try:
                sheets[setup.group] = load(setup.spec(base.spec)).sheet
            except PerfgraphError as exc:
                sheets[setup.group] = exc
        sheet, points = sheets[setup.group], run_points(runs)
        if isinstance(sheet, PerfgraphError):
            lines.append(MeasuredLine(line_label(setup), tuple(runs), {}, points,
                                      error=f"the model cannot be loaded: {sheet}"))
            continue
        config = {name: float(getattr(setup, name)) for name in ("tp", "isl", "osl")}
        curve = model_curve(sheet, concurrency_grid(points["concurrency"]), config)
        lines.append(MeasuredLine(line_label(setup), tuple(runs), curve, points))
    return tuple(lines)


@dataclass(frozen=True)
class MeasuredView:
    """What the dashboard's measured view shows: the files read, every run compared, and
    the lines to plot them on."""

    measured: Measured
    comparisons: tuple[Comparison, ...]
    lines: tuple[MeasuredLine, ...]
    reference: str  # roofline | calibrated model


def measured_view(paths: Sequence[str], spec: ScenarioSpec) -> MeasuredView:
    """Read the files (a bad one becomes a refused entry, never an exception) and compare
    each run with the model at its configuration; bad scenario options raise
    PerfgraphError, as for ``perfgraph compare``."""
    base = Baseline.from_spec(spec)
    measured = read_measured(paths)
    comparisons = compare_runs(measured.runs, base)
    return MeasuredView(measured, comparisons, measured_lines(comparisons, base),
                        base.reference)
