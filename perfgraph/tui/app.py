"""The dashboard app: a scenario as a live spreadsheet, its plots, explain and levers.

Build it with :func:`make_app` from a loaded Scenario (tests hand it a fixture). The app
only wires widgets to a :class:`~perfgraph.tui.session.Session`: every edit goes through
the session, which returns the cells it recomputed, and only those rows are redrawn.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Footer, Header, Static, TabbedContent, TabPane

from perfgraph.errors import PerfgraphError
from perfgraph.measured.curves import MeasuredView
from perfgraph.scenario.loading import Scenario
from perfgraph.scenario.save import FileChangedError, TargetExistsError
from perfgraph.tui import curves
from perfgraph.tui.palette import CellCommands
from perfgraph.tui.screens.dialogs import ConfirmScreen, SaveAsScreen
from perfgraph.tui.screens.help import HelpScreen
from perfgraph.tui.session import Session
from perfgraph.tui.text import headline, short_path, value_text
from perfgraph.tui.widgets.cell_table import CellTable
from perfgraph.tui.widgets.edit_bar import EditBar
from perfgraph.tui.widgets.explain_panel import ExplainPanel
from perfgraph.tui.widgets.levers_panel import LeversPanel
from perfgraph.tui.widgets.measured_panel import MeasuredPanel
from perfgraph.tui.widgets.plots import ConcurrencyPlot, RooflinePlot
from perfgraph.tui.widgets.scenario_bar import PARALLEL, ScenarioBar

VIEWS = ("explain", "roofline", "concurrency", "levers", "measured")


class PerfgraphApp(App[None]):
    """``perfgraph tui``."""

    CSS_PATH = "dashboard.tcss"
    TITLE = "perfgraph"
    COMMANDS = App.COMMANDS | {CellCommands}
    BINDINGS = [
        Binding("question_mark", "help", "Help"),
        Binding("u,ctrl+z", "undo", "Undo"),
        Binding("ctrl+s", "save", "Save"),
        Binding("ctrl+a", "save_as", "Save as"),
        *(Binding(str(i), f"view('{v}')", v.capitalize(), show=i == 1 or v != "explain")
          for i, v in enumerate(VIEWS, start=1)),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, scenario: Scenario, *, cell: str | None = None,
                 measured: MeasuredView | None = None) -> None:
        super().__init__()
        self.session = Session(scenario)
        self.start_cell = cell
        self.measured = measured
        self._drawn: set[str] = set()
        self._summary: Text | None = None

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield Header(show_clock=False, icon="∑")
        yield ScenarioBar(self.session, id="bar")
        yield Static(id="summary")
        with Horizontal(id="body"):
            yield CellTable(self.session, id="cells")
            with TabbedContent(id="views", initial="explain"):
                with TabPane("Explain", id="explain"):
                    yield ExplainPanel(self.session, id="explain-panel")
                with TabPane("Roofline", id="roofline"):
                    yield RooflinePlot(id="roofline-plot")
                with TabPane("Concurrency", id="concurrency"):
                    for which in ("throughput", "itl"):
                        yield ConcurrencyPlot(which, id=f"{which}-plot")
                with TabPane("Levers", id="levers"):
                    yield LeversPanel(id="levers-panel")
                if self.measured is not None:
                    m = self.measured
                    with TabPane("Measured", id="measured"):
                        yield MeasuredPanel(m.comparisons, m.lines, m.measured, m.reference,
                                            id="measured-panel")
        yield EditBar(id="edit-bar")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = self.session.scenario.title
        table = self.query_one(CellTable)
        table.focus()
        start = self.start_cell if self.start_cell in self.session.sheet.names \
            else table.first_cell
        if start is not None:
            table.go_to(start, centre=True)
        self.redraw(())

    @property
    def table(self) -> CellTable:
        return self.query_one(CellTable)

    @property
    def view(self) -> str:
        return self.query_one(TabbedContent).active

    # ------------------------------------------------------------------ redrawing
    def redraw(self, names: Iterable[str] | None) -> None:
        """Show the session after a change: ``names`` recomputed, or None for everything."""
        table = self.table
        if names is None:
            table.fill()
        else:
            table.update_rows(names)
        summary = headline(self.session)
        if summary != self._summary:
            self._summary = summary
            self.query_one("#summary", Static).update(summary, layout=False)  # fixed size
        self.sub_title = self.session.scenario.title
        self.query_one(ScenarioBar).sync()
        self.query_one(ExplainPanel).show(table.current)
        self._drawn.clear()
        self.draw_view()

    def draw_view(self) -> None:
        """Draw the active plot or levers view, once per change of the sheet."""
        view, sheet = self.view, self.session.sheet
        if view in self._drawn:
            return
        self._drawn.add(view)
        if view == "roofline":
            self.query_one(RooflinePlot).draw(curves.roofline(sheet))
        elif view == "concurrency":
            data = curves.concurrency_curves(sheet)
            for plot in self.query(ConcurrencyPlot):
                plot.draw(data)
        elif view == "levers":
            self.query_one(LeversPanel).diagnose(sheet)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self.draw_view()

    def fail(self, exc: PerfgraphError) -> None:
        self.notify(str(exc), title="not done", severity="error", timeout=8)

    # ------------------------------------------------------------------ cells
    def on_cell_table_cell_highlighted(self, message: CellTable.CellHighlighted) -> None:
        self.query_one(ExplainPanel).show(message.name)

    def on_explain_panel_jump(self, message: ExplainPanel.Jump) -> None:
        self.explain_cell(message.name)

    def explain_cell(self, name: str) -> None:
        self.table.go_to(name)
        self.query_one(TabbedContent).active = "explain"
        self.table.focus()

    def on_cell_table_edit_requested(self, message: CellTable.EditRequested) -> None:
        self.query_one(EditBar).open(self.session.sheet, message.name)

    def on_cell_table_reset_requested(self, message: CellTable.ResetRequested) -> None:
        self.redraw(self.session.reset(message.name))

    def on_edit_bar_typed(self, message: EditBar.Typed) -> None:
        self._preview(message.name, message.text)

    def _preview(self, name: str, text: str) -> bool:
        bar, session = self.query_one(EditBar), self.session
        assert bar.before is not None
        try:
            changed = session.preview(name, text, bar.before)
        except PerfgraphError as exc:
            bar.hint(exc.message, error=True)
            self.redraw([name, *session.sheet.downstream(name)])
            return False
        bar.hint(f"{name} = {value_text(session, name).plain}")
        self.redraw(changed)
        return True

    def on_edit_bar_finished(self, message: EditBar.Finished) -> None:
        bar = self.query_one(EditBar)
        assert bar.before is not None
        if message.keep:
            text = bar.query_one("#edit-input").value  # type: ignore[attr-defined]
            if not self._preview(message.name, text):
                return  # the hint says why; the edit stays open
            self.session.commit(message.name, bar.before)
        else:
            self.redraw(self.session.cancel(bar.before))
        bar.close()
        self.table.focus()

    # ------------------------------------------------------------------ scenario
    def on_scenario_bar_chosen(self, message: ScenarioBar.Chosen) -> None:
        self.choose(message.key, message.value)

    def choose(self, key: str, value: str) -> None:
        """Set TP or PP, or switch the model, hardware, workload or precision."""
        try:
            if key in dict(PARALLEL):
                self.redraw(self.session.set(key, value))
                return
            self.session.switch(key, value)
        except PerfgraphError as exc:
            self.fail(exc)
            self.query_one(ScenarioBar).sync()
            return
        self.redraw(None)
        for note in self.session.notes:
            self.notify(note, severity="warning")

    def on_levers_panel_apply(self, message: LeversPanel.Apply) -> None:
        try:
            self.redraw(self.session.apply_lever(message.lever))
        except PerfgraphError as exc:
            self.fail(exc)
            return
        self.notify(f"applied: {message.lever.title} (u to undo)")

    def action_undo(self) -> None:
        try:
            label = self.session.undo()
        except PerfgraphError as exc:
            self.fail(exc)
            return
        if label is None:
            self.notify("nothing to undo")
            return
        self.redraw(None)
        self.notify(f"undone: {label}")

    def action_view(self, view: str) -> None:
        """Show a view; the levers view takes the keys (to pick and apply a lever)."""
        if view == "measured" and self.measured is None:
            self.notify("no measured runs: start with perfgraph tui --measured RUN…")
            return
        self.query_one(TabbedContent).active = view
        if view == "levers":
            self.query_one("#advice").focus()
        elif view == "measured":
            self.query_one("#runs").focus()
        elif view == "explain":
            self.table.focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The measured view's key exists only where runs were given."""
        if action == "view" and parameters == ("measured",):
            return self.measured is not None
        return True

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    # ------------------------------------------------------------------ saving
    def action_save(self) -> None:
        if self.session.stamp is None:
            self.action_save_as()
            return
        self._save(lambda force: self.session.save(force=force))

    def action_save_as(self) -> None:
        stamp = self.session.stamp
        suggestion = "" if stamp is None else \
            short_path(str(Path(stamp.path).with_name(Path(stamp.path).stem + "-edited.toml")))
        self.push_screen(SaveAsScreen(suggestion or "scenario.toml"), self._save_as)

    def _save_as(self, path: str | None) -> None:
        if path:
            self._save(lambda force: self.session.save_as(path, overwrite=force))

    def _save(self, write: Any, force: bool = False) -> None:
        try:
            path = write(force)
        except (FileChangedError, TargetExistsError) as exc:
            question = f"{short_path(exc.file or '')}: {exc.message}. Overwrite it?"
            self.push_screen(ConfirmScreen(question),
                             lambda yes: self._save(write, force=True) if yes else None)
            return
        except PerfgraphError as exc:
            self.fail(exc)
            return
        self.notify(f"saved {short_path(path)}")

    # ------------------------------------------------------------------ palette
    def get_system_commands(self, screen: Screen) -> Iterator[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Save", "write the edits into the scenario file", self.action_save)
        yield SystemCommand("Save as", "write a new scenario file", self.action_save_as)
        yield SystemCommand("Undo", "take back the last edit, switch or lever",
                            self.action_undo)
        yield SystemCommand("Help", "keys and concepts", self.action_help)
        for view in VIEWS:
            if view == "measured" and self.measured is None:
                continue
            yield SystemCommand(f"Show {view}", f"the {view} view",
                                lambda v=view: self.action_view(v))


def make_app(scenario: Scenario, *, cell: str | None = None,
             measured: MeasuredView | None = None) -> PerfgraphApp:
    """The dashboard for a loaded scenario; ``cell`` starts highlighted (else the first).

    ``measured`` (from :func:`perfgraph.measured.curves.measured_view`) adds the measured
    view: the runs against the model at their own configurations.
    """
    return PerfgraphApp(scenario, cell=cell, measured=measured)
