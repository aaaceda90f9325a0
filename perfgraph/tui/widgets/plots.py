"""Plots: the roofline, and throughput and ITL against concurrency (textual-plotext).

Each plot draws a value object from :mod:`perfgraph.tui.curves`. Measured runs have their own
view (:mod:`perfgraph.tui.widgets.measured_panel`), drawn at each run's configuration.
"""

from __future__ import annotations

from textual_plotext import PlotextPlot

from perfgraph.engine.numbers import number, pretty_unit
from perfgraph.tui.curves import ConcurrencyCurves, Roofline


def _blank(plot: PlotextPlot, data: object, what: str) -> bool:
    """Clear ``plot``; when ``data`` is None say that ``what`` failed. True if blank."""
    plot.plt.clear_figure()
    if data is None:
        plot.plt.title(f"{what} failed: see the cells marked #ERR")
        plot.refresh()
    return data is None


class RooflinePlot(PlotextPlot):
    """Attainable FLOP/s of one GPU against arithmetic intensity, log-log."""

    def draw(self, roof: Roofline | None) -> None:
        if _blank(self, roof, "the roofline's inputs"):
            return
        assert roof is not None
        plt = self.plt
        plt.xscale("log")
        plt.yscale("log")
        plt.plot(roof.roof.x, roof.roof.y, label="roof", marker="braille", color="cyan")
        plt.vline(roof.ridge, color="gray")
        for point, (marker, color) in zip(roof.points, (("●", "red"), ("◆", "green")),
                                          strict=False):
            plt.scatter(point.x, point.y, marker=marker, color=color,
                        label=f"{point.label} {number(point.x[0])} {roof.x_unit}")
        plt.title(f"Roofline, one GPU: ridge at {number(roof.ridge)} {roof.x_unit}")
        plt.xlabel(f"arithmetic intensity ({roof.x_unit})")
        plt.ylabel(f"attainable ({pretty_unit(roof.y_unit)})")
        self.refresh()


class ConcurrencyPlot(PlotextPlot):
    """One of throughput or ITL against concurrency, with the current point marked."""

    def __init__(self, which: str, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.which = which

    def draw(self, curves: ConcurrencyCurves | None) -> None:
        if _blank(self, curves, "concurrency"):
            return
        assert curves is not None
        plt = self.plt
        series = curves.throughput if self.which == "throughput" else curves.itl
        unit = pretty_unit(curves.throughput_unit if self.which == "throughput"
                           else curves.itl_unit)
        plt.xscale("log")
        plt.plot(series.x, series.y, marker="braille", color="cyan", label=series.label)
        at = [y for x, y in zip(series.x, series.y, strict=True) if x == round(curves.current)]
        if at:
            plt.scatter([curves.current], at[:1], marker="●", color="red",
                        label=f"now: {number(at[0])} {unit} at {number(curves.current)}")
        if curves.kv_limit is not None and curves.kv_limit <= max(series.x, default=0):
            plt.vline(curves.kv_limit, color="gray")
        limit = "" if curves.kv_limit is None else \
            f" (KV cache holds {number(curves.kv_limit)}: grey line)"
        plt.title(f"{series.label} vs concurrency{limit}")
        plt.xlabel("concurrency (requests in flight)")
        plt.ylabel(f"{series.label} ({unit})")
        self.refresh()
