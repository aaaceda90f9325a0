"""Simulation: ``perfgraph simulate`` on the sheet, as CDFs of TTFT and ITL and the batch.

The run (:mod:`perfgraph.tui.simulation`: 1000 requests, seed 0) happens in a worker thread
on a fork of the sheet, and only while the view is on screen: the app calls
``refresh_from`` for the shown view once per change of the sheet. ``o`` switches between the
closed loop of ``concurrency`` users and an open loop at ``request_rate``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Static
from textual.worker import get_current_worker

from perfgraph.engine.numbers import number
from perfgraph.engine.sheet import Sheet
from perfgraph.errors import PerfgraphError
from perfgraph.tui.widgets.chart import Chart

if TYPE_CHECKING:  # the simulator is imported when a simulation first runs, not at start
    from perfgraph.tui.session import Session
    from perfgraph.tui.simulation import Cdf, SimAnswer
    from perfgraph.tui.view_registry import ViewContext
    from perfgraph.whatif.simulate.sim_summary import SeriesPoint

LABELS = {"ttft": "TTFT", "itl": "ITL", "tpot": "TPOT", "e2e": "E2E"}
SHOWN = ("p50", "p90", "p99")


def _num(x: float | None) -> str:
    return "—" if x is None or not math.isfinite(x) else number(x)


def summary_text(answer: SimAnswer) -> Text:
    """The header line and p50/p90/p99 of TTFT, ITL and TPOT, as ``simulate`` prints them."""
    s = answer.summary
    text = Text(f"simulated · {answer.label} · {answer.loop} · {s.requests} requests "
                f"({s.measured} measured)", style="bold")
    text.append(f" · {number(answer.seconds, 2)} s", style="dim")
    if s.overload:
        o = s.overload
        text.append(f"\nOVERLOADED: {number(o.offered)} request/s offered, "
                    f"{number(o.sustained)} sustained", style="red")
    for metric, latency in (("ttft", s.latency.ttft), ("itl", s.latency.itl),
                            ("tpot", s.latency.tpot)):
        stats = "  ".join(f"{k} {_num(answer.stat(metric, k))}" for k in SHOWN)
        text.append(f"\n{LABELS[metric] + ' (' + latency.unit + ')':10}{stats}")
    text.append(f"\nthroughput {_num(s.output_throughput)} tok/s · goodput "
                f"{_num(s.goodput)} request/s · batch mean {_num(s.batch.mean)}, "
                f"max {_num(s.batch.max)} · preemptions {s.preemptions}")
    return text


class CdfPlot(Chart):
    """One metric's CDF, with its p50 and p99 marked."""

    def __init__(self, metric: str, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.metric = metric

    def draw(self, answer: SimAnswer | None) -> None:
        self.paint(lambda plt: None if answer is None else self.figure(plt, answer))

    def figure(self, plt: Any, answer: SimAnswer) -> None:
        cdf: Cdf = getattr(answer, self.metric)
        pts = [(x, q) for x, q in zip(cdf.x, cdf.q, strict=True) if math.isfinite(x)]
        if pts:
            plt.plot([p[0] for p in pts], [p[1] for p in pts], marker="braille", color="cyan")
        for key, color in (("p50", "green"), ("p99", "red")):
            value = answer.stat(self.metric, key)
            if value is not None and math.isfinite(value):
                plt.vline(value, color=color)
        p50, p99 = answer.stat(self.metric, "p50"), answer.stat(self.metric, "p99")
        plt.title(f"{LABELS[self.metric]} CDF: p50 {_num(p50)}, p99 {_num(p99)} ms")
        plt.xlabel(f"{LABELS[self.metric]} (ms)")
        plt.ylim(0, 1)


class BatchPlot(Chart):
    """Decodes per step over the simulated time."""

    def draw(self, answer: SimAnswer | None) -> None:
        series = [] if answer is None else list(answer.summary.series)
        self.paint(lambda plt: self.figure(plt, series))

    @staticmethod
    def figure(plt: Any, series: list[SeriesPoint]) -> None:
        if series:
            plt.plot([p.t for p in series], [p.batch for p in series],
                     marker="braille", color="cyan")
            plt.title("batch (decodes a step) over time")
            plt.xlabel("simulated time (s)")


class SimulatePanel(Vertical):
    """The summary, the CDFs of TTFT and ITL, and the batch over time (view ``7``)."""

    can_focus = True

    BINDINGS = [Binding("o", "loop", "Open/closed loop")]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.answer: SimAnswer | None = None
        self.open_loop = False
        self.label = "roofline"
        self._sheet: Sheet | None = None
        self._engine = "vllm"  # whose scheduler runs: the scenario's engine

    @classmethod
    def create(cls, context: ViewContext) -> SimulatePanel:
        return cls(id="simulate-panel")

    def compose(self) -> ComposeResult:
        yield Static(Text("simulating…", style="dim"), id="sim-summary")
        with Horizontal(id="sim-cdfs"):
            yield CdfPlot("ttft", id="sim-ttft")
            yield CdfPlot("itl", id="sim-itl")
        yield BatchPlot(id="sim-batch")

    def refresh_from(self, session: Session, cell: str | None) -> None:
        self.label = session.scenario.prediction
        self._sheet = session.sheet
        self._engine = session.scenario.engine
        self.rerun()

    def rerun(self) -> None:
        if self._sheet is None:
            return
        self.query_one("#sim-summary", Static).update(Text("simulating…", style="dim"))
        self._run(self._sheet.fork(), self.label, self.open_loop, self._engine)

    def action_loop(self) -> None:
        self.open_loop = not self.open_loop
        self.rerun()

    @work(thread=True, exclusive=True, group="simulate")
    def _run(self, sheet: Sheet, label: str, open_loop: bool, engine: str) -> None:
        from perfgraph.tui import simulation

        try:
            answer: SimAnswer | str = simulation.run(sheet, label, open_loop,
                                                     scheduler=engine)
        except PerfgraphError as exc:
            answer = exc.message
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self.show, answer)

    def show(self, answer: SimAnswer | str) -> None:
        """Draw a run (or say why there is none: the model does not fit …)."""
        summary = self.query_one("#sim-summary", Static)
        if isinstance(answer, str):
            self.answer = None
            summary.update(Text(f"no simulation: {answer}", style="red"))
        else:
            self.answer = answer
            summary.update(summary_text(answer))
        for plot in self.query(CdfPlot):
            plot.draw(self.answer)
        self.query_one(BatchPlot).draw(self.answer)
