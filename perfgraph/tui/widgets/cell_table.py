"""The sheet as a table: one row per cell, grouped as the formula sheets group them.

Rows are keyed by cell name (group headings by ``group:NAME``); after an edit only the rows
the sheet recomputed are redrawn, with ``update_cell``, never the whole table.

While a cell is edited the table keeps the focus and hands every key (and a paste) to the
formula bar (:attr:`CellTable.keys_to`): moving the focus would restyle the table (its
``:focus`` look) and repaint the whole screen, twice an edit.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable

from perfgraph.engine.explanation import cell_views, grouped
from perfgraph.tui.session import Session
from perfgraph.tui.text import delta_text, mark_text, value_text

COLUMNS = (("cell", "cell", 32), ("value", "value", 16), ("delta", "Δ loaded", 9),
           ("mark", "", 6))
GROUP_PREFIX = "group:"


class KeySink(Protocol):
    """Where the keys go while an edit is open (the formula bar)."""

    def edit_key(self, key: str, character: str | None) -> bool: ...

    def paste(self, text: str) -> None: ...


class CellTable(DataTable):
    """Every cell of the sheet: name, value, delta against the load, and its kind."""

    BINDINGS = [
        Binding("e", "edit", "Edit"),
        Binding("x", "reset", "Reset"),
    ]

    class EditRequested(Message):
        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    class ResetRequested(Message):
        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    class CellHighlighted(Message):
        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    def __init__(self, session: Session, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)  # type: ignore[arg-type]
        self.session = session
        self._shown: dict[str, tuple[Text, Text, Text]] = {}  # each row's value, delta, mark
        self.keys_to: KeySink | None = None  # set while an edit is open

    def on_key(self, event: events.Key) -> None:
        """While an edit is open, the keys are the edit's: no binding (the table's arrows,
        the app's ``q``, ``u``, ``1``–``7``) sees them. Priority bindings (Ctrl+Q,
        Ctrl+P) still act first, as Textual checks them before any widget."""
        if self.keys_to is not None and self.keys_to.edit_key(event.key, event.character):
            event.stop()
            event.prevent_default()

    def on_paste(self, event: events.Paste) -> None:
        if self.keys_to is not None:
            event.stop()
            self.keys_to.paste(event.text)

    def on_mount(self) -> None:
        for key, label, width in COLUMNS:
            self.add_column(label, key=key, width=width)
        self.fill()

    def fill(self) -> None:
        """(Re)build every row: at mount, and after a reload (another model, an undo)."""
        current = self.current
        self.clear()
        self._shown.clear()
        for group, cells in grouped(cell_views(self.session.sheet)):
            self.add_row(Text(group.upper(), style="bold underline"), "", "", "",
                         key=GROUP_PREFIX + group)
            for cell in cells:
                shown = self._shown[cell.name] = self._texts(cell.name)
                self.add_row(Text(cell.name), *shown, key=cell.name)
        if current is not None:
            self.go_to(current)

    def _texts(self, name: str) -> tuple[Text, Text, Text]:
        session = self.session
        return value_text(session, name), delta_text(session, name), mark_text(session, name)

    def update_rows(self, names: Iterable[str]) -> None:
        """Redraw the value, delta and mark of ``names`` (the cells an edit recomputed):
        only the table cells whose text changed, and without a new layout (the columns
        have fixed widths)."""
        for name in names:
            old, new = self._shown.get(name), self._texts(name)
            if old is None or old == new:
                continue
            self._shown[name] = new
            for column, before, after in zip(("value", "delta", "mark"), old, new,
                                             strict=True):
                if before != after:
                    self.update_cell(name, column, after)

    @property
    def current(self) -> str | None:
        """The cell under the cursor (None on a group heading or an empty table)."""
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        return None if key is None or key.startswith(GROUP_PREFIX) else key

    def go_to(self, name: str, *, centre: bool = False) -> None:
        """Put the cursor on ``name`` (in the middle of the view with ``centre``)."""
        row = self.get_row_index(name)
        self.move_cursor(row=row, scroll=False)
        self.call_after_refresh(self._centre, row, centre)  # once the table knows its height

    def _centre(self, row: int, always: bool) -> None:
        """Scroll ``row`` to the middle (if it is out of view, or ``always``)."""
        height = self.scrollable_content_region.height
        top = self.scroll_offset.y
        if always or not top <= row < top + height - 1:  # the header takes a line
            self.scroll_to(y=max(0, row - height // 2), animate=False, immediate=True)

    @property
    def first_cell(self) -> str | None:
        """The first cell in the table's order (under the first group heading)."""
        for key in self.rows:
            if key.value and not key.value.startswith(GROUP_PREFIX):
                return key.value
        return None

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        name = self.current
        if name is not None:
            self.post_message(self.CellHighlighted(name))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_edit()

    def action_edit(self) -> None:
        if self.current is not None:
            self.post_message(self.EditRequested(self.current))

    def action_reset(self) -> None:
        if self.current is not None:
            self.post_message(self.ResetRequested(self.current))
