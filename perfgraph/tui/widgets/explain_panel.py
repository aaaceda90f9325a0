"""Explain: a cell's formula, the formula with its values, its precedents and dependents.

Picking a precedent or a dependent (Enter) jumps to it, so a value can be followed back to
the inputs it comes from, or forward to the results it moves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from perfgraph.engine.explain import explain
from perfgraph.engine.numbers import cell_text
from perfgraph.engine.views import CellView, Explanation
from perfgraph.tui.session import Session
from perfgraph.tui.text import delta_text, short_origin

if TYPE_CHECKING:
    from perfgraph.tui.views import ViewContext


class ExplainPanel(Vertical):
    """How the highlighted cell is computed, and where it leads (view ``1``)."""

    view_id: ClassVar[str] = "explain"
    title: ClassVar[str] = "Explain"
    key: ClassVar[str] = "1"
    focus_on: ClassVar[str | None] = None  # the keys stay with the cell table
    follows_cursor: ClassVar[bool] = True

    class Jump(Message):
        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    def __init__(self, session: Session, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.session = session
        self.explanation: Explanation | None = None

    @classmethod
    def create(cls, context: ViewContext) -> ExplainPanel:
        return cls(context.session, id="explain-panel")

    def refresh_from(self, session: Session, cell: str | None) -> None:
        self.session = session
        self.show(cell)

    def compose(self) -> ComposeResult:
        yield Static(id="explain-text")
        with Horizontal(id="explain-links"):
            with Vertical():
                yield Label("reads", classes="links-title")
                yield OptionList(id="precedents")
            with Vertical():
                yield Label("read by", classes="links-title")
                yield OptionList(id="dependents")

    def show(self, name: str | None) -> None:
        """Explain ``name`` (again, after an edit); None keeps the cell shown."""
        name = name or self.name_shown
        if name is None or name not in self.session.sheet.names:
            return
        e = self.explanation = explain(self.session.sheet, name)
        # a fixed height (see dashboard.tcss): no layout pass while keys are held down
        self.query_one("#explain-text", Static).update(self._body(e), layout=False)
        self._links("#precedents", e.precedents)
        self._links("#dependents", e.dependents)

    @property
    def name_shown(self) -> str | None:
        return self.explanation.cell.name if self.explanation else None

    def _body(self, e: Explanation) -> Table:
        c = e.cell
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column()
        grid.add_row(Text(c.name, style="bold"), Text(c.doc))
        value = Text(cell_text(c), style="bold red" if c.error else "bold")
        delta = delta_text(self.session, c.name)
        if delta.plain:
            value.append("   ").append_text(delta)
        if c.formula:
            grid.add_row("formula", Text(c.formula, style="cyan"))
            grid.add_row("with values", e.substituted or "")
            grid.add_row("result", value)
        else:
            grid.add_row("input", value)
        if c.pinned:
            grid.add_row("pinned", f"was {self._loaded_formula(c.name)}")
        if e.origin:
            grid.add_row("set at", short_origin(e.origin))
        if c.source:
            grid.add_row("source", c.source)
        grid.add_row("unit", c.unit or "(a plain number)")
        return grid

    def _loaded_formula(self, name: str) -> str:
        loaded = self.session.sheet.loaded_declaration(name)
        return loaded.formula.text if loaded.formula else "an input"

    def _links(self, selector: str, cells: tuple[CellView, ...]) -> None:
        """List ``cells``; when the same cells are listed, only the values that changed are
        redrawn (each replaced prompt makes the list measure all its options again)."""
        options = self.query_one(selector, OptionList)
        shown = [options.get_option_at_index(i) for i in range(options.option_count)]
        if [o.id for o in shown] == [c.name for c in cells]:
            for option, c in zip(shown, cells, strict=True):
                prompt = f"{c.name} = {cell_text(c)}"
                if option.prompt != prompt:
                    options.replace_option_prompt(c.name, prompt)
            return
        options.clear_options()
        options.add_options([Option(f"{c.name} = {cell_text(c)}", id=c.name) for c in cells]
                            or [Option("—", disabled=True)])

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id:
            self.post_message(self.Jump(event.option.id))
