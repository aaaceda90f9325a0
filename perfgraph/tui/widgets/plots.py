"""Plots: the roofline, and throughput and ITL against concurrency (textual-plotext).

Each plot draws a value object from :mod:`perfgraph.tui.plot_data`. Measured runs have their own
view (:mod:`perfgraph.tui.widgets.measured_panel`), drawn at each run's configuration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult
from textual.containers import Vertical

from perfgraph.engine.numbers import number, pretty_unit
from perfgraph.tui import plot_data as curves
from perfgraph.tui.plot_data import ConcurrencyCurves, Roofline
from perfgraph.tui.widgets.chart import Chart

if TYPE_CHECKING:
    from perfgraph.tui.session import Session
    from perfgraph.tui.view_registry import ViewContext


def failed(chart: Chart, what: str) -> None:
    """Say on ``chart`` that ``what`` failed (its data is None)."""
    chart.say(f"{what} failed: see the cells marked #ERR")


class RooflinePlot(Chart):
    """Attainable FLOP/s of one GPU against arithmetic intensity, log-log (view ``2``)."""


    @classmethod
    def create(cls, context: ViewContext) -> RooflinePlot:
        return cls(id="roofline-plot")

    def refresh_from(self, session: Session, cell: str | None) -> None:
        self.draw(curves.dashboard_roofline(session.sheet))

    def draw(self, roof: Roofline | None) -> None:
        if roof is None:
            failed(self, "the roofline's inputs")
        else:
            self.paint(lambda plt: self.figure(plt, roof))

    @staticmethod
    def figure(plt: Any, roof: Roofline) -> None:
        """The key goes in the title: plotext's legend covers the canvas's top-left
        corner, where the decode point sits on the slope of the roof."""
        plt.xscale("log")
        plt.yscale("log")
        plt.plot(roof.roof.x, roof.roof.y, marker="braille", color="cyan")
        plt.vline(roof.ridge, color="gray")
        key = [f"ridge {number(roof.ridge)}"]
        for point, (marker, color) in zip(roof.points, (("●", "red"), ("◆", "green")),
                                          strict=False):
            plt.scatter(point.x, point.y, marker=marker, color=color)
            key.append(f"{marker} {point.label} {number(point.x[0])}")
        plt.title(f"Roofline ({roof.x_unit}): {', '.join(key)}")
        plt.xlabel(f"arithmetic intensity ({roof.x_unit})")
        plt.ylabel(f"attainable, one GPU ({pretty_unit(roof.y_unit)})")


class ConcurrencyPlot(Chart):
    """One of throughput or ITL against concurrency, with the current point marked."""

    def __init__(self, which: str, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.which = which

    def draw(self, curves: ConcurrencyCurves | None) -> None:
        if curves is None:
            failed(self, "concurrency")
        else:
            self.paint(lambda plt: self.figure(plt, curves))

    def figure(self, plt: Any, curves: ConcurrencyCurves) -> None:
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


class ConcurrencyView(Vertical):
    """Throughput over ITL, both against concurrency (view ``3``)."""


    @classmethod
    def create(cls, context: ViewContext) -> ConcurrencyView:
        return cls(id="concurrency-view")

    def compose(self) -> ComposeResult:
        for which in ("throughput", "itl"):
            yield ConcurrencyPlot(which, id=f"{which}-plot")

    def refresh_from(self, session: Session, cell: str | None) -> None:
        data = curves.concurrency_curves(session.sheet)
        for plot in self.query(ConcurrencyPlot):
            plot.draw(data)
