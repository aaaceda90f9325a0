"""The dashboard app: a scenario as a live spreadsheet, its plots, explain and levers.

Build it with :func:`make_app` from a loaded Scenario (tests hand it a fixture). The app
only wires widgets to a :class:`~perfgraph.tui.session.Session`: every edit goes through
the session, which returns the cells it recomputed, and only those rows are redrawn.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Header, Static, TabbedContent, TabPane

from perfgraph.errors import PerfgraphError
from perfgraph.scenario.loading import Scenario
from perfgraph.scenario.save import FileChangedError, TargetExistsError
from perfgraph.tui.palette import CellCommands
from perfgraph.tui.screens.dialogs import ConfirmScreen, SaveAsScreen
from perfgraph.tui.session import Session
from perfgraph.tui.text import headline, short_path, value_text
from perfgraph.tui.view_registry import VIEWS, View, ViewContext, Views
from perfgraph.tui.widgets.cell_table import CellTable
from perfgraph.tui.widgets.edit_bar import EditBar
from perfgraph.tui.widgets.key_line import KeyLine
from perfgraph.tui.widgets.scenario_bar import PARALLEL, BarChoice, ScenarioBar

if TYPE_CHECKING:
    from perfgraph.measured.curves import MeasuredView
    from perfgraph.tui.widgets.levers_panel import LeversPanel
    from perfgraph.tui.widgets.plan_panel import PlanPanel

#: Below these sizes the layout collapses (see dashboard.tcss): the views go under the cell
#: table (beside its 76 columns they would have under 80 of their own: the plans table needs
#: 76 and a scroll bar), the header, the tabs
#: and the bar's labels go; 80 × 24 keeps both readable.
NARROW, SHORT = 156, 32
#: Which keys the key line shows when a widget of this id has the focus (else the cells').
FOCUS_PLACES = {"advice": "levers", "runs": "measured", "plans": "plan",
                "plan-ttft": "question", "plan-itl": "question", "plan-e2e": "question",
                "plan-rate": "question", "simulate-panel": "simulate",
                **{f"choose-{kind}": "bar" for kind in
                   ("model", "hardware", "workload", "precision", "tp", "pp")}}


class PerfgraphApp(App[None]):
    """``perfgraph tui``."""

    CSS_PATH = "dashboard.tcss"
    TITLE = "perfgraph"
    COMMANDS = App.COMMANDS | {CellCommands}
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (SHORT, "-tall")]
    BINDINGS = [
        Binding("question_mark", "help", "Help"),
        Binding("u,ctrl+z", "undo", "Undo"),
        Binding("ctrl+s", "save", "Save"),
        Binding("ctrl+a", "save_as", "Save as"),
        Binding("b", "bar", "Scenario bar"),
        *(Binding(v.key, f"view('{v.view_id}')", v.title, show=v.view_id != "explain")
          for v in VIEWS),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, scenario: Scenario, *, cell: str | None = None,
                 measured: MeasuredView | None = None) -> None:
        super().__init__()
        self.session = Session(scenario)
        self.start_cell = cell
        self.measured = measured
        # view id → its widget (a View), built when first needed
        self.views = Views(ViewContext(self.session, measured))
        self._stale: set[str] = set()
        self._summary: Text | None = None
        self._previewed: tuple[str, str] | None = None  # (cell, text) the sheet shows now

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        width, height = self.size  # the breakpoints' classes now, not after a first layout
        self.screen.update_classes({"-narrow": width < NARROW, "-wide": width >= NARROW,
                                    "-short": height < SHORT, "-tall": height >= SHORT},
                                   animate=False)
        yield Header(show_clock=False, icon="∑")
        yield ScenarioBar(self.session, id="bar")
        yield Static(id="summary")
        yield EditBar(id="edit-bar")  # the formula bar: one line, always there
        with Horizontal(id="body"):
            yield CellTable(self.session, id="cells")
            with TabbedContent(id="views", initial=VIEWS[0].view_id):
                for view_id, view in self.views.entries.items():
                    with TabPane(view.title, id=view_id):  # the others when first
                        if view is VIEWS[0]:  # shown (mount_view): startup composes one
                            yield self.views[view_id]
        self.keys = KeyLine(id="keys")
        yield self.keys

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
    def bar(self) -> EditBar:
        return self.query_one(EditBar)

    @property
    def view(self) -> str:
        return self.query_one(TabbedContent).active

    # ------------------------------------------------------------------ redrawing
    def redraw(self, names: Iterable[str] | None) -> None:
        """Show the session after a change: ``names`` recomputed, or None for everything.

        Only the rows whose text changed are repainted, the summary only if it changed, and
        of the views only the one on screen (the others when they are next shown).
        """
        table = self.table
        if names is None:
            table.fill()
        else:
            table.update_rows(names)
        summary = headline(self.session)
        if summary != self._summary:
            self._summary = summary
            self.query_one("#summary", Static).update(summary, layout=False)  # fixed size
        title = self.session.scenario.title
        if self.sub_title != title:
            self.sub_title = title
        self.query_one(ScenarioBar).sync()
        self.bar.show_cell(self.session.sheet, table.current)  # its formula may have moved
        self._stale = set(self.views)
        self.draw_view()

    def draw_view(self) -> None:
        """Redraw the view on screen if the sheet (or the cursor it follows) moved since."""
        view_id = self.view
        if view_id not in self._stale:
            return
        widget = self.views[view_id]
        if not widget.is_mounted:  # shown by a click on its tab
            if widget.parent is None:
                self.query_one(f"TabPane#{view_id}", TabPane).mount(widget)
            self.call_after_refresh(self.draw_view)
            return
        self._stale.discard(view_id)
        cast("View", widget).refresh_from(self.session, self.table.current)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """The key line follows the focus: the cells (or the edit), the levers, the runs."""
        self.keys.show(self._key_place(event.widget))

    def _key_place(self, widget: object) -> str:
        if widget is self.table and self.bar.editing:
            return "edit"
        return FOCUS_PLACES.get(getattr(widget, "id", None) or "", "cells")

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self.draw_view()

    def fail(self, exc: PerfgraphError) -> None:
        self.notify(str(exc), title="not done", severity="error", timeout=8)

    # ------------------------------------------------------------------ cells
    def on_cell_table_cell_highlighted(self, message: CellTable.CellHighlighted) -> None:
        self._stale |= {v.view_id for v in VIEWS if v.follows_cursor and v.view_id in self.views}
        self.bar.show_cell(self.session.sheet, message.name)
        self.draw_view()

    def on_explain_panel_jump(self, message: Any) -> None:
        self.explain_cell(message.name)

    def explain_cell(self, name: str) -> None:
        self.table.go_to(name)
        self.query_one(TabbedContent).active = "explain"
        self.table.focus()

    def on_cell_table_edit_requested(self, message: CellTable.EditRequested) -> None:
        """Open the edit in the formula bar; the table keeps the focus and hands it keys."""
        bar = self.bar
        if bar.editing:
            return
        self._previewed = None
        bar.open(self.session.sheet, message.name)
        self.table.keys_to = bar
        self.keys.show("edit")

    def on_cell_table_reset_requested(self, message: CellTable.ResetRequested) -> None:
        self.redraw(self.session.reset(message.name))

    def on_edit_bar_typed(self, message: EditBar.Typed) -> None:
        self._preview(message.name, message.text)

    def _preview(self, name: str, text: str) -> bool:
        bar, session = self.bar, self.session
        assert bar.before is not None
        if self._previewed == (name, text):
            bar.refresh()  # the sheet shows it already: Enter keeps it without a recompute
            return True
        self._previewed = None
        try:
            changed = session.preview(name, text, bar.before)
        except PerfgraphError as exc:
            bar.hint(exc.message, error=True)
            self.redraw([name, *session.sheet.downstream(name)])
            return False
        bar.hint(f"= {value_text(session, name).plain}")
        self.redraw(changed)
        self._previewed = (name, text)
        return True

    def on_edit_bar_finished(self, message: EditBar.Finished) -> None:
        """Enter keeps the edit (already on screen: nothing recomputes), Esc undoes it."""
        bar, table = self.bar, self.table
        if bar.before is None:
            return  # a second Enter that came before the first was handled
        if message.keep:
            if not self._preview(message.name, message.text):
                return  # the hint says why; the edit stays open
            self.session.commit(message.name, bar.before)
        else:
            self.redraw(self.session.cancel(bar.before))
        self._previewed = None
        bar.close()
        table.keys_to = None
        bar.show_cell(self.session.sheet, table.current)
        self.keys.show(self._key_place(self.focused))

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

    def on_plan_panel_apply(self, message: PlanPanel.Apply) -> None:
        try:
            self.redraw(self.session.apply_choices(message.label, message.choices,
                                                   message.sets))
        except PerfgraphError as exc:
            self.fail(exc)
            return
        self.notify(f"applied {message.label} (u to undo)")

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

    async def mount_view(self, view_id: str) -> None:
        """Mount a view the first time it is shown (startup composes only the first)."""
        view = self.views[view_id]
        if view.parent is None:
            await self.query_one(f"TabPane#{view_id}", TabPane).mount(view)

    async def action_view(self, view_id: str) -> None:
        """Show a view; a view with its own table (levers, measured) takes the keys."""
        if view_id not in self.views:
            self.notify("no measured runs: start with perfgraph tui --measured RUN…"
                        if view_id == "measured" else f"no {view_id} view")
            return
        await self.mount_view(view_id)
        self.query_one(TabbedContent).active = view_id
        focus_on = self.views.entries[view_id].focus_on
        if focus_on is None:
            self.table.focus()
        else:
            self.query_one(focus_on).focus()

    def action_bar(self) -> None:
        """Put the focus on the scenario bar's first choice (Tab moves on, Esc comes back)."""
        self.query_one(ScenarioBar).query_one(BarChoice).focus()

    async def action_quit(self) -> None:
        """Quit; with edits not saved, ask first (Ctrl+S saves them)."""
        if not self.session.unsaved:
            self.exit()
            return
        question = "The edits are not saved. Quit without saving them? (Ctrl+S saves)"
        self.push_screen(ConfirmScreen(question, yes="Quit (y)", no="Stay (n)"),
                         lambda yes: self.exit() if yes else None)

    def action_help(self) -> None:
        from perfgraph.tui.screens.help import HelpScreen  # Markdown: when first asked for

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
        for view_id in self.views:
            yield SystemCommand(f"Show {view_id}", f"the {view_id} view",
                                lambda v=view_id: self.action_view(v))


def make_app(scenario: Scenario, *, cell: str | None = None,
             measured: MeasuredView | None = None) -> PerfgraphApp:
    """The dashboard for a loaded scenario; ``cell`` starts highlighted (else the first).

    ``measured`` (from :func:`perfgraph.measured.curves.measured_view`) adds the measured
    view: the runs against the model at their own configurations.
    """
    return PerfgraphApp(scenario, cell=cell, measured=measured)
