"""Explain: a cell's formula, the formula with its values, its precedents and dependents.

Picking a precedent or a dependent (Enter) jumps to it, so a value can be followed back to
the inputs it comes from, or forward to the results it moves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from perfgraph.engine.explanation import explain
from perfgraph.engine.numbers import cell_text
from perfgraph.engine.views import CellView, Explanation
from perfgraph.tui.session import Session
from perfgraph.tui.text import delta_text, short_origin

if TYPE_CHECKING:
    from perfgraph.tui.view_registry import ViewContext


def grid(rows: list[tuple[Text, Text | str]], width: int, console: Console) -> Text:
    """Two columns as one Text: the labels (dim), two spaces, then each value wrapped at
    ``width`` under itself. What a rich ``Table.grid`` draws, built once per edit instead of
    measured and laid out at every paint (a Text paints about four times faster here)."""
    label_width = max(label.cell_len for label, _ in rows)
    room = width - label_width - 2
    out = Text(no_wrap=True, overflow="ellipsis")
    for i, (label, value) in enumerate(rows):
        text = value if isinstance(value, Text) else Text(value)
        lines = text.wrap(console, room) if room > 0 else [text]
        for j, line in enumerate(lines):
            if i or j:
                out.append("\n")
            head = label if j == 0 else Text()
            out.append_text(Text(head.plain, style=head.style or "dim"))
            out.append(" " * (label_width - head.cell_len + 2))
            out.append_text(line)
    return out


class ExplainPanel(Vertical):
    """How the highlighted cell is computed, and where it leads (view ``1``)."""


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
                yield OptionList(id="precedents", markup=False)
            with Vertical():
                yield Label("read by", classes="links-title")
                yield OptionList(id="dependents", markup=False)

    def show(self, name: str | None) -> None:
        """Explain ``name`` (again, after an edit); None keeps the cell shown."""
        name = name or self.name_shown
        if name is None or name not in self.session.sheet.names:
            return
        e = self.explanation = explain(self.session.sheet, name)
        body = self.query_one("#explain-text", Static)
        # a fixed height (see dashboard.tcss): no layout pass while keys are held down
        body.update(grid(self._rows(e), body.content_size.width, self.app.console),
                    layout=False)
        self._links("#precedents", e.precedents)
        self._links("#dependents", e.dependents)

    @property
    def name_shown(self) -> str | None:
        return self.explanation.cell.name if self.explanation else None

    def on_resize(self) -> None:
        self.show(None)  # the values wrap at the panel's width

    def _rows(self, e: Explanation) -> list[tuple[Text, Text | str]]:
        c = e.cell
        rows: list[tuple[Text, Text | str]] = [(Text(c.name, style="bold"), Text(c.doc))]
        add = rows.append
        value = Text(cell_text(c), style="bold red" if c.error else "bold")
        delta = delta_text(self.session, c.name)
        if delta.plain:
            value.append("   ").append_text(delta)
        if c.formula:
            add((Text("formula"), Text(c.formula, style="cyan")))
            add((Text("with values"), e.substituted or ""))
            add((Text("result"), value))
        else:
            add((Text("input"), value))
        if c.pinned:
            add((Text("pinned"), f"was {self._loaded_formula(c.name)}"))
        if e.origin:
            add((Text("set at"), short_origin(e.origin)))
        if c.source:
            add((Text("source"), c.source))
        add((Text("unit"), c.unit or "(a plain number)"))
        return rows

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
