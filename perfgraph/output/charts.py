"""Charts: plain data in, a matplotlib Figure out (``perfgraph plot``'s pictures).

Every chart kind is one function of plain data (arrays, :class:`Series`, dicts), so the
planner's and simulator's results chart without this module knowing them:

    fig = across({"throughput": [Series("model", xs, ys)]}, x="concurrency", title="…")
    save(fig, "out.svg")

Figures are built with the object API on the Agg canvas (``matplotlib.figure.Figure``),
never pyplot's global state, so no display is needed and charts built in one process do not
leak into each other. Every chart says what it shows: a title naming the scenario, axis
labels with units, a legend, and a footnote with the definitions used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

from perfgraph._infra.atomic import write_atomic
from perfgraph.errors import InputError

#: The suffixes ``save`` writes, and the format matplotlib writes for each.
FORMATS = {".svg": "svg", ".png": "png"}
#: What each metric of the "across configurations" charts is, with its unit.
METRICS = {
    "throughput": ("Throughput per GPU", "output tokens/s per GPU"),
    "e2e_latency": ("End-to-end latency", "s"),
    "ttft": ("Time to first token", "ms"),
    "itl": ("Inter-token latency (mean TPOT)", "ms"),
}
X_LABELS = {"concurrency": "concurrent users", "tp": "tensor parallelism (TP)"}
DEFINITIONS = ("throughput: output tokens/s per GPU; ITL: mean time per output token (TPOT); "
               "E2E latency: TTFT + OSL × ITL")

RELATIVE = "% of possible: throughput measured ÷ modelled, a latency modelled ÷ measured; "


@dataclass(frozen=True)
class Series:
    """One line (``kind="line"``, or ``"ceiling"`` dashed) or set of points on a chart."""

    label: str
    x: np.ndarray
    y: np.ndarray
    kind: str = "line"  # line | ceiling | points | marker (one point that stands out)
    color: str | None = None  # a line and the runs measured against it share one


def figure(rows: int = 1, cols: int = 1, size: tuple[float, float] = (8, 5),
           ) -> tuple[Figure, list[Axes]]:
    fig = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False)
    return fig, [ax for row in axes for ax in row]


def _draw(ax: Axes, s: Series) -> None:
    x, y = np.asarray(s.x, dtype=float), np.asarray(s.y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    if s.kind in ("points", "marker"):
        big = s.kind == "marker"
        ax.scatter(x[keep], y[keep], label=s.label, s=120 if big else 28, zorder=4 if big else 3,
                   color=s.color, marker="*" if big else "o", edgecolors="black" if big else None)
    else:
        ax.plot(x[keep], y[keep], label=s.label, color=s.color,
                linestyle="--" if s.kind == "ceiling" else "-")


def _legend(fig: Figure, axes: Sequence[Axes], note: str) -> None:
    """One legend for the figure, below the panels, titled with the definitions used."""
    seen: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(label, handle)
    widest = max((len(label) for label in seen), default=0)
    columns = max(1, min(len(seen), 140 // max(widest + 6, 1), 3))
    fig.legend(list(seen.values()), list(seen), loc="outside lower center", ncols=columns,
               fontsize=7, title=note, title_fontsize=7)


def _plain_ticks(ax: Axes) -> None:
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(NullFormatter())


def across(panels: Mapping[str, Sequence[Series]], *, x: str, title: str,
           relative: bool = False, note: str = DEFINITIONS) -> Figure:
    """Throughput per GPU and latencies against ``x`` (concurrency or TP): one panel per
    metric of :data:`METRICS` that ``panels`` has. ``relative``: the y values are % of the
    model at the same configuration (100 % is the model itself)."""
    names = [m for m in METRICS if m in panels]
    if not names:
        raise InputError("nothing to plot: no metric has data")
    cols = 2 if len(names) > 1 else 1
    fig, axes = figure((len(names) + 1) // 2, cols, (11, 4 * ((len(names) + 1) // 2) + 0.6))
    for ax, name in zip(axes, names, strict=False):
        what, unit = METRICS[name]
        for s in panels[name]:
            _draw(ax, s)
        if relative:
            ax.axhline(100, color="grey", linewidth=0.8, label="the model (100 %)")
        ax.set_title(what)
        ax.set_xlabel(X_LABELS.get(x, x))
        ax.set_ylabel("% of possible" if relative else f"{what} ({unit})")
        ax.set_xscale("log", base=2)
        if not relative:
            ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        _plain_ticks(ax)
    for ax in axes[len(names):]:
        ax.set_visible(False)
    fig.suptitle(title)
    _legend(fig, axes, RELATIVE + note if relative else note)
    return fig


def roofline(roof: Series, ridge: tuple[float, float], points: Sequence[Series], *,
             title: str, x_unit: str, y_unit: str, note: str = "") -> Figure:
    """Attainable FLOP/s against arithmetic intensity, log-log, with the ridge marked and
    the scenario's (and measured runs') points on it."""
    fig, (ax,) = figure()
    _draw(ax, roof)
    ax.axvline(ridge[0], color="grey", linestyle=":", linewidth=1)
    ax.scatter([ridge[0]], [ridge[1]], marker="D", color="grey", zorder=3,
               label=f"ridge ({ridge[0]:.4g} {x_unit})")
    for s in points:
        _draw(ax, s)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"arithmetic intensity ({x_unit})")
    ax.set_ylabel(f"attainable compute per GPU ({y_unit})")
    ax.grid(True, which="both", alpha=0.3)
    fig.suptitle(title)
    _legend(fig, [ax], note or "roof: min(achievable FLOP/s, intensity × achievable "
                               "bandwidth) of one GPU")
    return fig


def measured(pairs: Mapping[str, tuple[np.ndarray, np.ndarray]], *, title: str,
             note: str = "") -> Figure:
    """Each measured run against the model at its configuration: measured (y) over
    modelled (x) per metric, log-log, with the line where they are equal."""
    names = [m for m in METRICS if m in pairs]
    if not names:
        raise InputError("no measured run could be compared with the model")
    fig, axes = figure(2, 2, (10, 8.6))
    for ax, name in zip(axes, names, strict=False):
        what, unit = METRICS[name]
        if name == "throughput":  # compared like for like: the file's own definition
            what, unit = "Throughput", "token/s, the run's own definition"
        model, got = (np.asarray(a, dtype=float) for a in pairs[name])
        keep = np.isfinite(model) & np.isfinite(got) & (model > 0) & (got > 0)
        ax.scatter(model[keep], got[keep], s=24, label="measured runs", zorder=3)
        if keep.any():
            lo = min(model[keep].min(), got[keep].min()) / 1.5
            hi = max(model[keep].max(), got[keep].max()) * 1.5
            ax.plot([lo, hi], [lo, hi], color="grey", linestyle="--",
                    label="measured = modelled")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(what)
        ax.set_xlabel(f"modelled ({unit})")
        ax.set_ylabel(f"measured ({unit})")
        ax.grid(True, which="both", alpha=0.3)
    for ax in axes[len(names):]:
        ax.set_visible(False)
    fig.suptitle(title)
    _legend(fig, axes, note or DEFINITIONS)
    return fig


def pareto(points: Sequence[Mapping[str, Any]], *, x: str = "interactivity",
           y: str = "throughput_per_gpu", title: str = "Pareto frontier",
           x_label: str = "interactivity (output tokens/s per user)",
           y_label: str = "throughput per GPU (output tokens/s per GPU)") -> Figure:
    """Candidate configurations (dicts with ``x``, ``y`` and optionally ``label``) as
    points, the frontier (no other point higher on both axes) as a line."""
    missing = next((k for p in points for k in (x, y) if k not in p), None)
    if missing is not None or not points:
        raise InputError(f"no Pareto points to plot: each needs {x!r} and {y!r}")
    xs = np.array([float(p[x]) for p in points], dtype=float)
    ys = np.array([float(p[y]) for p in points], dtype=float)
    fig, (ax,) = figure()
    _draw(ax, Series("configurations", xs, ys, "points"))
    front = frontier(xs, ys)
    _draw(ax, Series("Pareto frontier", xs[front], ys[front]))
    for i in front:
        if "label" in points[i]:
            ax.annotate(str(points[i]["label"]), (xs[i], ys[i]), fontsize=7,
                        xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.suptitle(title)
    return fig


def frontier(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Indices of the points no other point beats on both x and y, in order of x."""
    order = np.argsort(-xs, kind="stable")
    keep, best = [], -np.inf
    for i in order:
        if np.isfinite(xs[i]) and np.isfinite(ys[i]) and ys[i] > best:
            keep.append(i)
            best = ys[i]
    return np.array(sorted(keep, key=lambda i: xs[i]), dtype=int)


def simulation(ttft_s: np.ndarray, itl_s: np.ndarray, *, title: str = "Simulated latencies",
               second: str = "ITL") -> Figure:
    """The CDFs of TTFT and ITL (or ``second``: per-request TPOT) (seconds in, plotted in
    ms), p50 and p99 marked."""
    fig, axes = figure(1, 2, (11, 4.4))
    for ax, (name, values) in zip(axes, (("TTFT", ttft_s), (second, itl_s)), strict=True):
        ms = np.sort(np.asarray(values, dtype=float)[np.isfinite(values)]) * 1e3
        if ms.size == 0:
            raise InputError(f"no finite {name} values to plot")
        ax.step(ms, np.arange(1, ms.size + 1) / ms.size, where="post", label=f"{name} CDF")
        for q in (50, 99):
            v = float(np.percentile(ms, q))
            ax.axvline(v, linestyle=":", color="grey")
            ax.annotate(f"p{q} {v:.4g} ms", (v, q / 100), fontsize=7, xytext=(3, -10),
                        textcoords="offset points")
        ax.set_xlabel(f"{name} (ms)")
        ax.set_ylabel("fraction of tokens" if name == "ITL" else "fraction of requests")
        ax.set_title(f"{name}: cumulative distribution ({ms.size} samples)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    return fig


def suffix_format(out: str | Path) -> str:
    """The format ``out``'s suffix names; InputError for any other suffix."""
    fmt = FORMATS.get(Path(out).suffix.lower())
    if fmt is None:
        raise InputError(f"--out must end in {' or '.join(FORMATS)}, got {str(out)!r}")
    return fmt


def save(fig: Figure, out: str | Path) -> None:
    """Write ``fig`` to ``out`` (SVG or PNG by its suffix), atomically."""
    fmt = suffix_format(out)
    # SVG keeps its text as text (searchable, selectable, smaller); no hash salt from the
    # clock, so the same chart writes the same bytes
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": "perfgraph"}):
        write_atomic(out, lambda tmp: fig.savefig(tmp, format=fmt, metadata=_metadata(fmt)))


def _metadata(fmt: str) -> dict[str, str | None]:
    # no creation date in the file: the same chart writes the same bytes
    return {"Date": None} if fmt == "svg" else {"Software": "perfgraph"}
