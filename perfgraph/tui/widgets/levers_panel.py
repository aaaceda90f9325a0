"""Levers: the symptoms that hold for this scenario, and each lever's computed effect.

``perfgraph.whatif.lever_advice`` diagnoses a fork of the sheet (off the UI thread: each lever is a
what-if on its own copy); Enter or ``a`` applies the highlighted lever to the live sheet,
and undo takes it back. Effects read as ``perfgraph levers`` prints them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Static

from perfgraph.engine.sheet import Sheet
from perfgraph.whatif import lever_advice as levers
from perfgraph.whatif.lever_advice import Advice, Lever

if TYPE_CHECKING:
    from perfgraph.tui.session import Session
    from perfgraph.tui.view_registry import ViewContext


#: (key, label, width): 70 columns with the cells' padding, within the 76 the view has at
#: the narrowest; a longer text wraps onto more lines of its row, never cut.
COLUMNS = (("symptom", "symptom", 22), ("lever", "lever", 20), ("effect", "first effect", 22))


class LeversPanel(Vertical):
    """The advice table and the detail of the highlighted advice (view ``4``)."""


    BINDINGS = [Binding("a", "apply", "Apply lever")]

    class Apply(Message):
        def __init__(self, lever: Lever) -> None:
            super().__init__()
            self.lever = lever

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.advice: list[Advice] = []
        self._sheet: Sheet | None = None

    @classmethod
    def create(cls, context: ViewContext) -> LeversPanel:
        return cls(id="levers-panel")

    def refresh_from(self, session: Session, cell: str | None) -> None:
        self.diagnose(session.sheet)

    def compose(self) -> ComposeResult:
        yield DataTable(id="advice", cursor_type="row")
        yield Static(id="advice-detail")

    def on_mount(self) -> None:
        table = self.query_one("#advice", DataTable)
        for key, label, width in COLUMNS:
            table.add_column(label, key=key, width=width)

    def diagnose(self, sheet: Sheet) -> None:
        """Diagnose a fork of ``sheet`` in a worker; the table fills when it is done."""
        self._diagnose(sheet.fork())

    @work(thread=True, exclusive=True, group="levers")
    def _diagnose(self, sheet: Sheet) -> None:
        advice = levers.diagnose(sheet)
        self.app.call_from_thread(self.show, advice, sheet)

    def show(self, advice: list[Advice], sheet: Sheet) -> None:
        """Fill the table with ``advice``, diagnosed on ``sheet`` (its effects read there)."""
        self.advice, self._sheet = advice, sheet
        table = self.query_one("#advice", DataTable)
        table.clear()
        for i, a in enumerate(advice):
            first = a.error or (levers.effect_text(sheet, a.effects[0]) if a.effects else "")
            table.add_row(a.symptom.title, a.lever.title, first, key=str(i),
                          height=None)  # as many lines as the longest text wraps to
        if not advice:
            self.query_one("#advice-detail", Static).update(
                "No symptom holds for this scenario: nothing to advise.")
        else:
            self._detail(advice[min(table.cursor_row, len(advice) - 1)])

    def _detail(self, a: Advice) -> None:
        sheet = self._sheet
        assert sheet is not None, "details follow show()"
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column()
        grid.add_row("symptom", Text(a.symptom.title, style="bold"))
        grid.add_row("", a.symptom.doc)
        grid.add_row("lever", Text(f"{a.lever.title} ({a.lever.stage})", style="bold"))
        grid.add_row("trade-off", a.lever.tradeoff)
        grid.add_row("sets", ", ".join(f"{n} = {v}" for n, v in a.lever.pins))
        if a.error:
            grid.add_row("error", Text(a.error, style="red"))
        for e in a.effects:
            grid.add_row("effect", levers.effect_text(sheet, e))
        for symptom in a.brings:
            grid.add_row("brings on", Text(symptom.title, style="yellow"))
        self.query_one("#advice-detail", Static).update(grid)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if 0 <= event.cursor_row < len(self.advice):
            self._detail(self.advice[event.cursor_row])

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_apply()

    def action_apply(self) -> None:
        row = self.query_one("#advice", DataTable).cursor_row
        if 0 <= row < len(self.advice) and self.advice[row].error is None:
            self.post_message(self.Apply(self.advice[row].lever))
