"""Measured: benchmark runs against the model, a row per run, and the curves of the run's line.

The runs come from ``perfgraph tui --measured RUN…`` (read and compared once, at start).
Each row is ``perfgraph compare``'s: measured / roofline at the run's own configuration, with
% of possible. The plots show the highlighted run's configuration: the model's throughput
and TPOT against concurrency at that TP, ISL and OSL, with every run made at it as a point.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Static

from perfgraph.engine.numbers import number
from perfgraph.tui.widgets.chart import Chart

if TYPE_CHECKING:  # the comparison is imported where runs are shown: a session without
    # --measured (and the dashboard's start) never loads it
    from perfgraph.measured.comparison import Comparison
    from perfgraph.measured.curves import MeasuredLine
    from perfgraph.measured.reading import Measured
    from perfgraph.tui.session import Session
    from perfgraph.tui.view_registry import ViewContext

#: (label, width): a metric's column is its % of possible (measured / roofline, as
#: ``perfgraph compare``); the line under the table gives the highlighted run's values.
COLUMNS = (("run", 22), ("B", 4), ("TTFT", 6), ("TPOT", 6), ("tok/s", 6), ("MBU", 6))
SHOWN = ("ttft", "tpot", "throughput")
REFUSED = "refused:"  # the key prefix of a refused file's row
HEADS = {"ttft": "TTFT", "tpot": "TPOT", "e2el": "E2EL", "throughput": "throughput"}
#: plot → (the key in a line's model and points, what the axis says)
PLOTS = {"throughput": ("throughput", "output throughput (tok/s)"),
         "tpot": ("itl", "TPOT (ms)")}


def summary(comparisons: Sequence[Comparison], measured: Measured, reference: str) -> Text:
    from perfgraph.measured.comparison import METRICS, median_possible
    from perfgraph.measured.findings import _pct as pct

    compared = [c for c in comparisons if c.error is None]
    medians = "  ".join(f"{HEADS[m]} {pct(median_possible(compared, m))}" for m in METRICS)
    text = Text(f"{len(compared)} runs compared with the {reference} at their own "
                f"configurations, {len(comparisons) - len(compared) + len(measured.problems)} "
                "not", style="bold")
    text.append(f"\nmedian % of possible: {medians}")
    return text


def detail_text(c: Comparison) -> Text:
    """The highlighted run as ``perfgraph compare`` reads it: measured / roofline (% of
    possible) of each metric, or why it was not compared."""
    from perfgraph.output.compare_report import metric_text

    name = f"{c.run.source.rsplit('/', 1)[-1]} #{c.run.index}: "
    if c.error is not None:
        return Text.assemble(name, (f"not compared: {c.error}", "red"))
    return Text(name + " · ".join(f"{HEADS[m]} {metric_text(c, m)}" for m in SHOWN))


class MeasuredPlot(Chart):
    """One metric against concurrency: the model's curve at a run's configuration and the
    runs measured at it."""

    def __init__(self, which: str, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.which = which

    def draw(self, line: MeasuredLine | None) -> None:
        if line is None:
            self.say("no run could be compared")
        elif line.error is not None:
            self.say(line.error)
        else:
            self.paint(lambda plt: self.figure(plt, line))

    def figure(self, plt: Any, line: MeasuredLine) -> None:
        key, axis = PLOTS[self.which]
        plt.xscale("log")
        x, y = line.model["concurrency"], line.model[key]
        keep = np.isfinite(y) & (y > 0)
        plt.plot(list(x[keep]), list(y[keep]), marker="braille", color="cyan",
                 label="roofline")
        px, py = line.points["concurrency"], line.points[key]
        seen = np.isfinite(px) & np.isfinite(py)
        if seen.any():
            plt.scatter(list(px[seen]), list(py[seen]), marker="x", color="yellow",
                        label=f"measured ({int(seen.sum())} runs)")
        plt.title(f"{axis.split(' (')[0]} vs concurrency")  # the run's row says at what
        plt.xlabel("concurrency (requests in flight)")
        plt.ylabel(axis)


class MeasuredPanel(Vertical):
    """The runs table over the two plots of the highlighted run's configuration (view ``5``,
    only with ``--measured``): read once, at start, so the session's edits do not move it."""


    @classmethod
    def create(cls, context: ViewContext) -> MeasuredPanel:
        m = context.measured
        assert m is not None, "the measured view's entry needs measured runs"
        return cls(m.comparisons, m.lines, m.measured, m.reference, id="measured-panel")

    def refresh_from(self, session: Session, cell: str | None) -> None:
        """Nothing to redraw: the runs are compared at their own configurations."""

    def __init__(self, comparisons: Sequence[Comparison], lines: Sequence[MeasuredLine],
                 measured: Measured, reference: str, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.comparisons = tuple(comparisons)
        self.lines = tuple(lines)
        self.measured = measured
        self.reference = reference
        self._line_of = {id(c): line for line in self.lines for c in line.runs}
        self.shown: MeasuredLine | None = None

    def compose(self) -> ComposeResult:
        yield Static(summary(self.comparisons, self.measured, self.reference),
                     id="measured-summary")
        yield DataTable(id="runs", cursor_type="row", zebra_stripes=True)
        yield Static(id="run-detail")
        yield Static("the plots of the highlighted run's configuration need a terminal "
                     "32 rows high", id="measured-room")
        with Horizontal(id="measured-plots"):
            yield MeasuredPlot("throughput", id="measured-throughput")
            yield MeasuredPlot("tpot", id="measured-tpot")

    def on_mount(self) -> None:
        table = self.query_one("#runs", DataTable)
        for label, width in COLUMNS:
            table.add_column(label, width=width)
        for i, c in enumerate(self.comparisons):
            table.add_row(*self._row(c), key=str(i))
        for i, p in enumerate(self.measured.problems):
            table.add_row(Text.assemble((p.source.rsplit("/", 1)[-1], "dim"),
                                        (" refused", "red")), "", "", "", "", "",
                          key=f"{REFUSED}{i}")
        self.show_line(self.lines[0] if self.lines else None)

    def _row(self, c: Comparison) -> list[str | Text]:
        from perfgraph.measured.findings import _pct as pct

        name = f"{c.run.source.rsplit('/', 1)[-1].removesuffix('.json')} #{c.run.index}"
        if c.error is not None:  # why: on the line under the table
            return [Text.assemble((name, "dim"), (" not compared", "red")), "", "—", "—", "—",
                    "—"]
        s = c.setup
        return [f"{name} TP{number(s.tp or 0)} {number(s.isl or 0, 3)}/{number(s.osl or 0, 3)}",
                number(s.concurrency or 0, 3),
                *(pct(m.possible) if (m := c.metric(name)) is not None else "—"
                  for name in SHOWN), pct(c.mbu)]

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        key = event.row_key.value or ""
        detail = self.query_one("#run-detail", Static)
        if key.startswith(REFUSED):  # a refused file's row: the plots stay
            p = self.measured.problems[int(key.removeprefix(REFUSED))]
            detail.update(Text.assemble(p.source.rsplit("/", 1)[-1] + ": ",
                                        (f"refused: {p.reason}", "red")))
            return
        c = self.comparisons[int(key)]
        detail.update(detail_text(c))
        line = self._line_of.get(id(c))
        if line is not None and line is not self.shown:
            self.show_line(line)

    def show_line(self, line: MeasuredLine | None) -> None:
        self.shown = line
        for plot in self.query(MeasuredPlot):
            plot.draw(line)
