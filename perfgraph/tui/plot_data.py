"""The data behind the dashboard's plots, computed from the sheet in one vectorised call each.

* The roofline: attainable FLOP/s of one GPU against arithmetic intensity (the sheet's own
  ``attainable_flops`` formula evaluated over a column of intensities), the ridge, and the
  scenario's prefill and decode operating points.
* Throughput and ITL against concurrency: the whole sheet evaluated over a column of
  concurrencies (``Sheet.evaluate_columns``), not one ``set`` per point.

A measured run (a later issue) joins a plot as one more :class:`PlotSeries`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from perfgraph.engine.sheet import Sheet

ROOF_POINTS = 96
CONCURRENCY_POINTS = 64


@dataclass(frozen=True)
class PlotSeries:
    """One line or set of points on a plot."""

    label: str
    x: tuple[float, ...]
    y: tuple[float, ...]


@dataclass(frozen=True)
class Roofline:
    roof: PlotSeries
    ridge: float
    points: tuple[PlotSeries, ...]
    x_unit: str
    y_unit: str


@dataclass(frozen=True)
class ConcurrencyCurves:
    throughput: PlotSeries
    itl: PlotSeries
    current: float
    kv_limit: float | None
    throughput_unit: str
    itl_unit: str


def _ok(sheet: Sheet, *names: str) -> bool:
    return all(sheet.error(n) is None for n in names)


def _series(label: str, x: np.ndarray, y: np.ndarray) -> PlotSeries:
    keep = np.isfinite(x) & np.isfinite(y) & (y > 0)
    return PlotSeries(label, tuple(map(float, x[keep])), tuple(map(float, y[keep])))


def dashboard_roofline(sheet: Sheet) -> Roofline | None:
    """The roofline of one GPU and the scenario on it; None if its inputs failed."""
    if not _ok(sheet, "ridge_point", "decode_intensity", "prefill_intensity"):
        return None
    ridge = sheet.magnitude("ridge_point")
    known = [ridge, sheet.magnitude("decode_intensity"), sheet.magnitude("prefill_intensity")]
    positive = [k for k in known if k > 0]
    lo = 10 ** math.floor(math.log10(min(positive) / 2)) if positive else 1.0
    hi = 10 ** math.ceil(math.log10(max(positive) * 2)) if positive else 1e4
    xs = np.geomspace(lo, hi, ROOF_POINTS)
    cols = sheet.evaluate_columns({"decode_intensity": xs}, len(xs))
    points = []
    for label, x, y in (("decode", "decode_intensity", "attainable_flops"),
                        ("prefill", "prefill_intensity", "prefill_attainable_flops")):
        if _ok(sheet, x, y):
            points.append(PlotSeries(label, (sheet.magnitude(x),), (sheet.magnitude(y),)))
    decl = sheet.declaration
    return Roofline(_series("roof", xs, cols["attainable_flops"]), ridge, tuple(points),
                    decl("ridge_point").unit, decl("attainable_flops").unit)


def concurrency_grid(current: float, kv_limit: float | None) -> np.ndarray:
    """Concurrencies from 1 to past the current one and the KV limit, spaced evenly in log."""
    top = max(256.0, 2 * current, 1.25 * (kv_limit or 0))
    top = min(top, max(4096.0, 2 * current))
    grid = np.unique(np.round(np.geomspace(1, top, CONCURRENCY_POINTS)))
    return np.union1d(grid, [round(current)]) if current >= 1 else grid


def concurrency_curves(sheet: Sheet) -> ConcurrencyCurves | None:
    """Throughput and ITL over concurrency; None if concurrency itself failed."""
    if not _ok(sheet, "concurrency"):
        return None
    current = sheet.magnitude("concurrency")
    kv_limit = sheet.magnitude("max_concurrency_paged") \
        if _ok(sheet, "max_concurrency_paged") else None
    xs = concurrency_grid(current, kv_limit)
    cols = sheet.evaluate_columns({"concurrency": xs}, len(xs))
    decl = sheet.declaration
    return ConcurrencyCurves(
        throughput=_series("throughput", xs, cols["throughput"]),
        itl=_series("ITL", xs, cols["itl"]), current=current, kv_limit=kv_limit,
        throughput_unit=decl("throughput").unit, itl_unit=decl("itl").unit)
