"""Ticks a reader can read a value from, on every axis of every chart.

A log axis that spans a few decades labels its decades; one that spans under about two labels
1-2-5 (or 1-2-3-5-7, or every digit) within each decade; one that spans under a factor of three
or so labels evenly spaced round numbers, as a linear axis would. Every tick is labelled in
plain numbers (``0.05``, ``2000``), never ``10^3``, and at least three ticks fall inside the
axis wherever the data allow it. Call :func:`readable` once the data are drawn: it reads
each axis's final limits.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullFormatter, NullLocator

#: The mantissas a log axis labels in each decade, fewest first.
LOG_STEPS = ((1.0,), (1.0, 2.0, 5.0), (1.0, 2.0, 3.0, 5.0, 7.0),
             tuple(float(d) for d in range(1, 10)))
#: Ticks wanted on an axis: at least the first, at most the second (sparser steps first).
FEWEST, MOST = 3, 12


def label(value: float, _pos: object = None) -> str:
    """A tick's text: plain digits, at most four significant (``0.05``, ``20000``), powers
    of ten only far from 1 (``1e-05``, ``1e+09``)."""
    if value == 0 or 1e-4 <= abs(value) < 1e9:
        return np.format_float_positional(value, precision=4, fractional=False, trim="-")
    return f"{value:.3g}"


def log_ticks(lo: float, hi: float, base: float = 10.0) -> np.ndarray:
    """Ticks for a log axis from ``lo`` to ``hi`` (both > 0): on a base-2 axis its powers of
    two; else the sparsest mantissa steps that give :data:`FEWEST` ticks inside, every other
    decade when decades alone are too many, evenly spaced round numbers when even every digit
    gives fewer than :data:`FEWEST`."""
    lo, hi = min(lo, hi), max(lo, hi)
    if base == 2:
        twos = 2.0 ** np.arange(math.ceil(math.log2(lo) - 1e-9),
                                math.floor(math.log2(hi) + 1e-9) + 1)
        if len(twos) >= FEWEST:
            return twos[:: math.ceil(len(twos) / MOST)]
    decades = range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
    for steps in LOG_STEPS:
        ticks = np.array([m * 10.0 ** d for d in decades for m in steps])
        ticks = ticks[(ticks >= lo * (1 - 1e-9)) & (ticks <= hi * (1 + 1e-9))]
        if len(ticks) > MOST and steps == LOG_STEPS[0]:
            return ticks[:: math.ceil(len(ticks) / MOST)]
        if len(ticks) >= FEWEST:
            return ticks
    return linear_ticks(lo, hi)


def linear_ticks(lo: float, hi: float) -> np.ndarray:
    """Evenly spaced round numbers inside ``lo``..``hi``, :data:`FEWEST` or more if any."""
    ticks = np.zeros(0)
    for bins in range(4, MOST + 1):
        found = np.asarray(MaxNLocator(nbins=bins, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi))
        ticks = found[(found >= lo) & (found <= hi)]
        if len(ticks) >= FEWEST:
            break
    return ticks


def _axis_limits(ax: Axes, axis: Axis) -> tuple[float, float]:
    return ax.get_xlim() if axis is ax.xaxis else ax.get_ylim()


def readable(ax: Axes) -> None:
    """Give both of ``ax``'s axes labelled ticks: plain numbers, :data:`FEWEST` or more."""
    for axis in (ax.xaxis, ax.yaxis):
        lo, hi = _axis_limits(ax, axis)
        if axis.get_scale() == "log" and lo > 0 and hi > 0:
            base = float(getattr(axis.get_transform(), "base", 10.0))
            axis.set_major_locator(FixedLocator(log_ticks(lo, hi, base).tolist()))
            axis.set_minor_locator(NullLocator())
        elif axis.get_scale() == "linear":
            axis.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10],
                                               min_n_ticks=FEWEST))
        axis.set_major_formatter(FuncFormatter(label))
        axis.set_minor_formatter(NullFormatter())
