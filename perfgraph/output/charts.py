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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from perfgraph._infra.atomic import write_atomic
from perfgraph.errors import InputError
from perfgraph.output.chart_axes import readable

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
DEFINITIONS = ("throughput: output tokens/s per GPU (past the KV limit, of the batch that fits); "
               "ITL: mean time per output token (TPOT); E2E latency: TTFT + OSL × ITL")

RELATIVE = "% of possible: throughput measured ÷ modelled, a latency modelled ÷ measured; "


@dataclass(frozen=True)
class Series:
    """One line (``kind="line"``, or ``"ceiling"`` dashed) or set of points on a chart."""

    label: str
    x: np.ndarray
    y: np.ndarray
    #: line | ceiling | points | marker (one point that stands out) | limit (a vertical
    #: line at ``x[0]``: where a resource runs out)
    kind: str = "line"
    color: str | None = None  # a line and the runs measured against it share one
    #: a line's dash pattern (matplotlib's: "-", "--", "-.", ":") and points' marker; a line
    #: and the runs measured against it share the index into :data:`STYLES`/:data:`MARKERS`
    style: int = 0


#: Dash patterns and markers that tell apart series of one colour (e.g. TPs of one GPU).
STYLES = ("-", "--", "-.", ":")
#: Markers that tell apart series of one colour, or families of a Pareto chart.
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")


def figure(rows: int = 1, cols: int = 1, size: tuple[float, float] = (8, 5),
           ) -> tuple[Figure, list[Axes]]:
    fig = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False)
    return fig, [ax for row in axes for ax in row]


def _draw(ax: Axes, s: Series) -> None:
    x, y = np.asarray(s.x, dtype=float), np.asarray(s.y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    if s.kind == "limit":
        ax.axvline(x[0], label=s.label, color=s.color or "black", linestyle="-.",
                   linewidth=1, alpha=0.8)
    elif s.kind in ("points", "marker"):
        big = s.kind == "marker"
        ax.scatter(x[keep], y[keep], label=s.label, s=160 if big else 28,
                   zorder=4 if big else 3, color=s.color,
                   marker="*" if big else MARKERS[s.style % len(MARKERS)],
                   edgecolors="black" if big else None)
    else:
        ax.plot(x[keep], y[keep], label=s.label, color=s.color,
                linestyle="--" if s.kind == "ceiling" else STYLES[s.style % len(STYLES)])


def same_lines(series: Sequence[Series]) -> list[Series]:
    """``series`` with the lines that coincide (the same x, y within 0.1 %) drawn once: one
    line whose label names them all (``h100 · TP 2 = TP 4 · 1k/1k``), in their colour and
    dash if they share them (else black, solid)."""
    out: list[Series] = []
    merged: dict[int, list[Series]] = {}
    for s in series:
        twin = next((i for i, o in enumerate(out) if s.kind == o.kind == "line"
                     and _coincide(o, s)), None)
        if twin is None:
            out.append(s)
        else:
            merged.setdefault(twin, [out[twin]]).append(s)
    for i, group in merged.items():
        colours, styles = {g.color for g in group}, {g.style for g in group}
        out[i] = replace(out[i], label=joined([g.label for g in group]),
                         color=colours.pop() if len(colours) == 1 else "black",
                         style=styles.pop() if len(styles) == 1 else 0)
    return out


def _coincide(a: Series, b: Series) -> bool:
    ax, ay, bx, by = (np.asarray(v, dtype=float) for v in (a.x, a.y, b.x, b.y))
    return ax.shape == bx.shape and bool(np.allclose(ax, bx, rtol=1e-9, equal_nan=True)) \
        and bool(np.allclose(ay, by, rtol=1e-3, equal_nan=True))


def joined(labels: Sequence[str]) -> str:
    """Labels that differ in one `` · ``-separated part, as one: that part joined by `` = ``
    (``h100 · TP 2 = TP 4 · 1k/1k (model)``); else the whole labels joined."""
    parts = [label.split(" · ") for label in labels]
    if len({len(p) for p in parts}) == 1:
        differ = [i for i in range(len(parts[0])) if len({p[i] for p in parts}) > 1]
        if len(differ) == 1:
            i = differ[0]
            return " · ".join([*parts[0][:i], " = ".join(dict.fromkeys(p[i] for p in parts)),
                               *parts[0][i + 1:]])
    return " = ".join(labels)


def _legend(fig: Figure, axes: Sequence[Axes], note: str, width: int = 140) -> None:
    """One legend for the figure, below the panels, titled with the definitions used; as
    many columns (up to 3) as labels of the widest fit in ``width`` characters."""
    seen: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(label, handle)
    widest = max((len(label) for label in seen), default=0)
    columns = max(1, min(len(seen), width // max(widest + 6, 1), 3))
    fig.legend(list(seen.values()), list(seen), loc="outside lower center", ncols=columns,
               fontsize=7, title=note, title_fontsize=7)


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
        for s in same_lines(panels[name]):
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
        readable(ax)
    for ax in axes[len(names):]:
        ax.set_visible(False)
    fig.suptitle(title)
    _legend(fig, axes, RELATIVE + note if relative else note)
    return fig


def roofline_figure(roof: Series, ridge: tuple[float, float], points: Sequence[Series], *,
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
    readable(ax)
    fig.suptitle(title)
    _legend(fig, [ax], note or "roof: min(achievable FLOP/s, intensity × achievable "
                               "bandwidth) of one GPU")
    return fig


def measured(pairs: Mapping[str, Sequence[Series]], *, title: str, note: str = "") -> Figure:
    """Each measured run against the model at its configuration: measured (y) over
    modelled (x) per metric, log-log, with the line where they are equal; ``pairs`` holds
    per metric one :class:`Series` of points per group of runs (x modelled, y measured)."""
    names = [m for m in METRICS if pairs.get(m)]
    if not names:
        raise InputError("no measured run could be compared with the model")
    fig, axes = figure(2, 2, (10, 9.4))
    for ax, name in zip(axes, names, strict=False):
        what, unit = METRICS[name]
        if name == "throughput":  # compared like for like: the file's own definition
            what, unit = "Throughput", "token/s, the run's own definition"
        both = [np.asarray(v, dtype=float) for s in pairs[name] for v in (s.x, s.y)]
        values = np.concatenate(both)
        values = values[np.isfinite(values) & (values > 0)]
        for s in pairs[name]:
            _draw(ax, s)
        if values.size:
            lo, hi = values.min() / 1.5, values.max() * 1.5
            ax.plot([lo, hi], [lo, hi], color="grey", linestyle="--",
                    label="measured = modelled")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(what)
        ax.set_xlabel(f"modelled ({unit})")
        ax.set_ylabel(f"measured ({unit})")
        ax.grid(True, which="both", alpha=0.3)
        readable(ax)
    for ax in axes[len(names):]:
        ax.set_visible(False)
    fig.suptitle(title)
    _legend(fig, axes, note or DEFINITIONS)
    return fig


def pareto(frontiers: Sequence[Series], scatter: Sequence[Series] = (),
           chosen: Series | None = None, others: Sequence[Series] = (), *,
           title: str = "Pareto frontier",
           x_label: str = "interactivity (output tokens/s per user)",
           y_label: str = "output tokens/s per GPU, at capacity",
           note: str = "") -> Figure:
    """One frontier per family (its own colour and marker), each family's plans as a light
    scatter of the same colour behind it, the chosen plan as a star, annotated, and
    ``others`` (more families than colours) as thin grey frontiers under one legend entry."""
    if not frontiers:
        raise InputError("no Pareto points to plot")
    fig, (ax,) = figure(size=(10, 7.5))
    for i, other in enumerate(others):
        ax.plot(other.x, other.y, color="0.6", linewidth=0.8, alpha=0.7, zorder=1,
                label=f"{len(others)} other families' frontiers" if i == 0 else "_nolegend_")
    colours = _family_colours(len(frontiers))
    for i, (front, dots) in enumerate(zip(frontiers, [*scatter, *[None] * len(frontiers)],
                                          strict=False)):
        marker = MARKERS[i % len(MARKERS)]
        if dots is not None:
            ax.scatter(dots.x, dots.y, s=6, color=colours[i], alpha=0.18, linewidths=0,
                       marker=marker, zorder=1)
        ax.plot(front.x, front.y, color=colours[i], marker=marker, markersize=5,
                markevery=max(1, len(front.x) // 25), label=front.label, zorder=2)
    if chosen is not None:
        _draw(ax, chosen)
        ax.annotate(chosen.label.replace(": ", "\n", 1), (chosen.x[0], chosen.y[0]), fontsize=7,
                    xytext=(8, 8), textcoords="offset points",
                    bbox={"boxstyle": "round", "fc": "white", "alpha": 0.85})
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    readable(ax)
    fig.suptitle(title)
    _legend(fig, [ax], note or "each family's frontier: no plan of it is faster per user "
                               "and serves more per GPU; faint: its other plans (thinned)",
            width=180)
    return fig


def _family_colours(n: int) -> list[Any]:
    """``n`` colours, each distinct: tab10, then tab20 when there are more families."""
    from matplotlib import colormaps

    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def frontier(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Indices of the points no other point beats on both x and y (at one x, only the
    highest y; of equal points, the first), in order of x (one pass over whole columns:
    millions of plans in well under a second)."""
    xs, ys = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    order = np.lexsort((-ys, -xs))
    order = order[np.isfinite(xs[order]) & np.isfinite(ys[order])]
    y = ys[order]
    before = np.maximum.accumulate(np.concatenate([[-np.inf], y[:-1]]))
    keep = order[y > before]
    return keep[np.argsort(xs[keep], kind="stable")].astype(int)


#: The narrowest x range of a CDF, as a share of its median either side: a spread of a few
#: per cent is drawn as the narrow step it is, not stretched across the panel.
MIN_HALF_SPAN = 0.2


def simulation(ttft_s: np.ndarray, itl_s: np.ndarray, *, title: str = "Simulated latencies",
               second: str = "ITL") -> Figure:
    """The CDFs of TTFT and ITL (or ``second``: per-request TPOT) (seconds in, plotted in
    ms), p50 and p99 marked as lines named in the legend; each x axis spans at least
    ±:data:`MIN_HALF_SPAN` of its median."""
    fig, axes = figure(1, 2, (11, 4.6))
    for ax, (name, values) in zip(axes, (("TTFT", ttft_s), (second, itl_s)), strict=True):
        ms = np.sort(np.asarray(values, dtype=float)[np.isfinite(values)]) * 1e3
        if ms.size == 0:
            raise InputError(f"no finite {name} values to plot")
        ax.step(ms, np.arange(1, ms.size + 1) / ms.size, where="post", label=f"{name} CDF")
        for q, style in ((50, ":"), (99, "--")):
            v = float(np.percentile(ms, q))
            ax.axvline(v, linestyle=style, color="grey", label=f"p{q}: {v:.4g} ms")
        mid = float(np.median(ms))
        ax.set_xlim(min(ms[0], mid * (1 - MIN_HALF_SPAN)), max(ms[-1], mid * (1 + MIN_HALF_SPAN)))
        ax.set_ylim(0, 1.02)
        ax.set_xlabel(f"{name} (ms)")
        ax.set_ylabel("fraction of tokens" if name == "ITL" else "fraction of requests")
        ax.set_title(f"{name}: cumulative distribution ({ms.size} samples)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
        readable(ax)
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
