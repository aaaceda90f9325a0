"""Measured runs against the model's curves: one line per configuration the runs were made at.

    lines = measured_lines(compare_runs(runs, base), base)
    line = lines[0]
    line.model["throughput"]    # the roofline's output tokens/s over line.model["concurrency"]
    line.points["throughput"]   # the runs' measured output tokens/s at their concurrency

A run is drawn against the model at its own configuration (model, hardware, precision, TP,
ISL, OSL: the ones ``perfgraph compare`` holds it against), never against whatever scenario
is open, so a TP=8 row is not read off a TP=2 curve. Each line's curves are the whole sheet
evaluated once over a column of concurrencies
(:func:`perfgraph.measured.comparison.model_curve`); the points are
:func:`perfgraph.measured.comparison.run_points`. Nothing here imports textual.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from perfgraph.engine.numbers import number
from perfgraph.engine.sheet import Sheet
from perfgraph.errors import PerfgraphError
from perfgraph.measured.comparison import Comparison, compare_runs, model_curve, run_points
from perfgraph.measured.reading import Measured, read_measured
from perfgraph.measured.setup import Baseline, RunSetup
from perfgraph.scenario.loading import ScenarioSpec, load

#: Points on each model curve, spaced evenly in log concurrency.
CURVE_POINTS = 48


@dataclass(frozen=True)
class MeasuredLine:
    """The runs measured at one configuration, and the model's curves at it.

    ``model`` is :func:`~perfgraph.measured.comparison.model_curve` over a concurrency grid
    that spans the runs; ``points`` is :func:`~perfgraph.measured.comparison.run_points` of
    the runs (measured output tokens/s and TPOT, like for like with the model's
    ``throughput`` and ``itl``).
    """

    label: str
    runs: tuple[Comparison, ...]
    model: dict[str, np.ndarray]
    points: dict[str, np.ndarray]
    error: str | None = None  # the model could not be loaded for this configuration


#: Runs whose ISL and OSL are within this fraction of a line's share it (SGLang's random
#: lengths give every run its own measured mean).
LENGTH_TOLERANCE = 0.05


@dataclass
class _Group:
    setup: RunSetup
    runs: list[Comparison]

    def takes(self, setup: RunSetup) -> bool:
        mine = self.setup
        return (mine.model, mine.hardware, mine.precision, mine.tp) == \
            (setup.model, setup.hardware, setup.precision, setup.tp) and all(
                _near(getattr(setup, n), getattr(mine, n)) for n in ("isl", "osl"))

    def lengths(self) -> tuple[float, float, bool]:
        """The median ISL and OSL of the runs, and whether they all had exactly those."""
        isl = float(np.median([c.setup.isl for c in self.runs]))
        osl = float(np.median([c.setup.osl for c in self.runs]))
        exact = all(c.setup.isl == isl and c.setup.osl == osl for c in self.runs)
        return isl, osl, exact


def _near(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a == b
    return abs(a - b) <= LENGTH_TOLERANCE * max(abs(a), abs(b))


def line_label(setup: RunSetup, isl: float, osl: float, exact: bool = True) -> str:
    def slug(text: str | None) -> str:
        return (text or "?").rsplit("/", 1)[-1].removesuffix(".toml")

    tp = "?" if setup.tp is None else number(setup.tp)
    lengths = f"{number(isl, 4)}/{number(osl, 4)}"
    return (f"{slug(setup.model)} · {slug(setup.hardware)} · {setup.precision} · "
            f"TP {tp} · {lengths if exact else '≈ ' + lengths}")


def concurrency_grid(concurrencies: Iterable[float]) -> np.ndarray:
    """From 1 to twice the largest run's concurrency (at least 64), even in log, with the
    runs' own concurrencies in it."""
    finite = [float(c) for c in concurrencies if math.isfinite(c) and c > 0]
    top = max(64.0, 2 * max(finite, default=1.0))
    return np.unique(np.concatenate([np.geomspace(1, top, CURVE_POINTS), finite]))


def measured_lines(comparisons: Sequence[Comparison], base: Baseline,
                   ) -> tuple[MeasuredLine, ...]:
    """One line per configuration of the runs that could be modelled, in the runs' order:
    the same model, hardware, precision and TP, and ISL and OSL within LENGTH_TOLERANCE (the
    curve is drawn at the runs' median ISL and OSL, and the label says ≈ where they differ)."""
    groups: list[_Group] = []
    for c in comparisons:
        if c.error is None:
            group = next((g for g in groups if g.takes(c.setup)), None)
            if group is None:
                groups.append(_Group(c.setup, [c]))
            else:
                group.runs.append(c)
    sheets: dict[tuple, Sheet | PerfgraphError] = {}
    lines = []
    for group in groups:
        setup = group.setup
        isl, osl, exact = group.lengths()
        label = line_label(setup, isl, osl, exact)
        if setup.group not in sheets:
            try:
                sheets[setup.group] = load(setup.spec(base.spec)).sheet
            except PerfgraphError as exc:
                sheets[setup.group] = exc
        sheet, points = sheets[setup.group], run_points(group.runs)
        if isinstance(sheet, PerfgraphError):
            lines.append(MeasuredLine(label, tuple(group.runs), {}, points,
                                      error=f"the model cannot be loaded: {sheet}"))
            continue
        config = {"tp": float(setup.tp or 0), "isl": isl, "osl": osl}
        curve = model_curve(sheet, concurrency_grid(points["concurrency"]), config)
        lines.append(MeasuredLine(label, tuple(group.runs), curve, points))
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
