"""The formula bar: one line over the sheet, like a spreadsheet's.

Idle, it shows what the highlighted cell holds (its formula, or its value in its unit).
``e`` edits the cell in it: the sheet follows every keystroke, Enter keeps the edit (undo
takes it back), Escape puts the cell back as it was. Text that is not yet a value or a
formula shows why at the end of the line, and the sheet shows the cell as it was before
the edit, so nothing half-typed ever leaves a wrong number on screen.

The bar is always on screen and never takes the focus: the cell table keeps it and hands
the bar its keys while an edit is open (:meth:`EditBar.edit_key`). So an edit lays nothing
out and restyles nothing; Enter repaints this line and the cells whose text changed.
"""

from __future__ import annotations

from rich.text import Text
from textual.message import Message
from textual.widget import Widget

from perfgraph.engine.declarations import Declaration
from perfgraph.engine.numbers import number
from perfgraph.engine.sheet import Sheet
from perfgraph.tui.line_edit import LineEdit, window


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


def _unit(decl: Declaration) -> str:
    return f" (in {decl.unit})" if decl.unit and decl.formula is None else ""


class EditBar(Widget):
    """The formula bar (one line; its look is in dashboard.tcss, ``#edit-bar``)."""

    class Typed(Message):
        def __init__(self, name: str, text: str) -> None:
            super().__init__()
            self.name = name
            self.text = text

    class Finished(Message):
        def __init__(self, name: str, keep: bool, text: str) -> None:
            super().__init__()
            self.name = name
            self.keep = keep
            self.text = text

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.cell: str | None = None  # the cell being edited (None: idle)
        self.before: Declaration | None = None
        self.line = LineEdit()
        self.prompt = Text()
        self.hint_text = Text()
        self.idle = Text()

    @property
    def editing(self) -> bool:
        return self.cell is not None

    def show_cell(self, sheet: Sheet, name: str | None) -> None:
        """Idle: show what ``name`` holds (nothing on a group heading)."""
        idle = Text(no_wrap=True, overflow="ellipsis")
        if name is not None:
            decl = sheet.declaration(name)
            idle.append(name, style="bold")
            idle.append(f" = {edit_text(sheet, name)}")
            idle.append(_unit(decl), style="dim")
        if idle != self.idle:
            self.idle = idle
            if not self.editing:
                self.refresh()

    def open(self, sheet: Sheet, name: str) -> None:
        decl = sheet.declaration(name)
        self.cell, self.before = name, decl
        kind = "set" if decl.is_input else "pin"
        # a number typed is in the cell's unit, a formula's result included: say it
        unit = f" (in {decl.unit})" if decl.unit else ""
        self.prompt = Text.assemble((f"{kind} ", "dim"), (name, "bold"), (unit, "dim"), " = ")
        self.hint_text = Text()
        self.line.start(edit_text(sheet, name))
        self.refresh()

    def hint(self, text: str, error: bool = False) -> None:
        """What the text typed gives (or why it is not yet a value): at the line's end."""
        self.hint_text = Text(text, style="bold red" if error else "dim")
        self.refresh()

    def close(self) -> None:
        self.cell = self.before = None
        self.refresh()

    @property
    def text(self) -> str:
        return self.line.text

    # ------------------------------------------------------------------ keys
    def edit_key(self, key: str, character: str | None) -> bool:
        """A key the cell table hands over while an edit is open: True when it is taken
        (every key is, while editing: none may act on the sheet behind a half-typed edit)."""
        if self.cell is None:
            return False
        if key in ("enter", "escape"):
            self.post_message(self.Finished(self.cell, key == "enter", self.line.text))
            return True
        changed = self.line.key(key, character)
        if changed:  # the app previews it and gives the hint: one repaint with the sheet's
            self.post_message(self.Typed(self.cell, self.line.text))
        elif changed is False:
            self.refresh()
        return True

    def paste(self, text: str) -> None:
        if self.cell is not None:
            self.line.paste(text)
            self.post_message(self.Typed(self.cell, self.line.text))

    # ------------------------------------------------------------------ drawing
    def render(self) -> Text:
        if self.cell is None:
            return self.idle
        width = self.content_size.width
        room = max(1, width - self.prompt.cell_len)
        hint = self.hint_text
        field = room - min(hint.cell_len + 2, room // 2) if hint else room
        line = self.line
        start, shown = window(line.text, line.cursor, field)
        out = Text(no_wrap=True, overflow="ellipsis")
        out.append_text(self.prompt)
        if line.selected:
            out.append(shown, style="reverse")
        else:
            at = line.cursor - start
            out.append(shown[:at])
            out.append(shown[at:at + 1] or " ", style="reverse")
            out.append(shown[at + 1:])
        if hint:  # at a fixed column, the end of the field, so it does not move as one types
            out.append(" " * max(2, self.prompt.cell_len + field + 2 - out.cell_len))
            out.append_text(hint)
        return out
