"""The edit bar: type a value or a formula for a cell; the sheet follows every keystroke.

Enter keeps the edit (undo takes it back), Escape puts the cell back as it was. Text that
is not yet a value or a formula shows why under the input, and the sheet shows the cell as
it was before the edit, so nothing half-typed ever leaves a wrong number on screen.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, Label, Static

from perfgraph.engine.declarations import Declaration
from perfgraph.engine.numbers import number
from perfgraph.engine.sheet import Sheet


def edit_text(sheet: Sheet, name: str) -> str:
    """What the editor starts with: the cell's formula, or its value in its declared unit."""
    decl = sheet.declaration(name)
    if decl.formula is not None:
        return decl.formula.text
    if decl.value is None:
        return ""
    if decl.flag:
        return "on" if decl.value else "off"
    return repr(int(decl.value)) if decl.value.is_integer() else number(decl.value, 12)


class EditBar(Vertical):
    """Hidden until a cell is edited."""

    BINDINGS = [Binding("escape", "cancel", "Cancel edit")]

    class Typed(Message):
        def __init__(self, name: str, text: str) -> None:
            super().__init__()
            self.name = name
            self.text = text

    class Finished(Message):
        def __init__(self, name: str, keep: bool) -> None:
            super().__init__()
            self.name = name
            self.keep = keep

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.cell: str | None = None
        self.before: Declaration | None = None

    def compose(self) -> ComposeResult:
        yield Label(id="edit-prompt")
        yield Input(id="edit-input", select_on_focus=True)
        yield Static(id="edit-hint")

    def open(self, sheet: Sheet, name: str) -> None:
        decl = sheet.declaration(name)
        self.cell, self.before = name, decl
        unit = f" (in {decl.unit})" if decl.unit else ""
        kind = "set" if decl.is_input else "pin"
        self.query_one("#edit-prompt", Label).update(
            f"{kind} [b]{name}[/b]{unit}: a value, a quantity like \"4.8 TB/s\", or a formula "
            "of other cells · Enter keeps · Esc cancels")
        self.hint("")
        self.display = True
        field = self.query_one("#edit-input", Input)
        with field.prevent(Input.Changed):
            field.value = edit_text(sheet, name)
        field.focus()

    def hint(self, text: str, error: bool = False) -> None:
        hint = self.query_one("#edit-hint", Static)
        hint.update(text, layout=False)  # one line, always: no layout needed
        hint.set_class(error, "error")

    def close(self) -> None:
        self.display = False
        self.cell = self.before = None

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self.cell is not None:
            self.post_message(self.Typed(self.cell, event.value))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.cell is not None:
            self.post_message(self.Finished(self.cell, keep=True))

    def action_cancel(self) -> None:
        if self.cell is not None:
            self.post_message(self.Finished(self.cell, keep=False))
