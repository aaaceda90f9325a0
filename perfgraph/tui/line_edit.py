"""The text of an edit and its cursor: what the formula bar's keys do, without a terminal.

The formula bar is not focusable (the cell table keeps the focus while a cell is edited, so
an edit moves no focus and restyles nothing); the table hands it the keys, and this model
says what each does. It opens with the whole text selected, as a spreadsheet's cell does:
the first character typed replaces it, an arrow key keeps it and moves the cursor.
"""

from __future__ import annotations

from dataclasses import dataclass


def _word_start(text: str, cursor: int) -> int:
    """Where the word before ``cursor`` starts (spaces before it skipped, as Ctrl+W does)."""
    i = cursor
    while i > 0 and text[i - 1] == " ":
        i -= 1
    while i > 0 and text[i - 1] != " ":
        i -= 1
    return i


@dataclass
class LineEdit:
    """One line of text, a cursor in it, and whether all of it is selected."""

    text: str = ""
    cursor: int = 0
    selected: bool = False

    def start(self, text: str) -> None:
        """Begin an edit with ``text``, all of it selected, the cursor at its end."""
        self.text, self.cursor, self.selected = text, len(text), bool(text)

    def insert(self, chars: str) -> None:
        """Type ``chars`` at the cursor (over the selection, if there is one)."""
        if self.selected:
            self.text, self.cursor = "", 0
        self.text = self.text[:self.cursor] + chars + self.text[self.cursor:]
        self.cursor += len(chars)
        self.selected = False

    def paste(self, pasted: str) -> None:
        """A paste: its lines joined by spaces (a formula copied over two lines still reads)."""
        self.insert(" ".join(line.strip() for line in pasted.splitlines() if line.strip()))

    def key(self, key: str, character: str | None) -> bool | None:
        """Apply one key (Textual's name for it, and the character it types, if any).

        Returns True when the text changed, False when only the cursor moved, and None for a
        key that does nothing here (the caller decides what it means: Enter, Escape).
        """
        if character is not None and len(character) == 1 and character.isprintable():
            self.insert(character)
            return True
        before = self.text
        if key in _DELETES:
            start, end = (0, len(self.text)) if self.selected else _DELETES[key](self)
            self.text = self.text[:start] + self.text[end:]
            self.cursor, self.selected = start, False
            return self.text != before
        if key in _MOVES:
            self.cursor = _MOVES[key](self)
            self.selected = False
            return False
        return None


_MOVES = {
    "left": lambda e: 0 if e.selected else max(0, e.cursor - 1),
    "right": lambda e: len(e.text) if e.selected else min(len(e.text), e.cursor + 1),
    "home": lambda e: 0, "ctrl+a": lambda e: 0,
    "end": lambda e: len(e.text), "ctrl+e": lambda e: len(e.text),
}
#: (start, end) of what a key deletes, when nothing is selected (a selection goes whole).
_DELETES = {
    "backspace": lambda e: (max(0, e.cursor - 1), e.cursor),
    "delete": lambda e: (e.cursor, min(len(e.text), e.cursor + 1)),
    "ctrl+w": lambda e: (_word_start(e.text, e.cursor), e.cursor),
    "ctrl+u": lambda e: (0, e.cursor),
    "ctrl+k": lambda e: (e.cursor, len(e.text)),
}


def window(text: str, cursor: int, width: int) -> tuple[int, str]:
    """The part of ``text`` a field ``width`` cells wide shows with ``cursor`` in view (the
    cursor may sit after the last character): (index of its first character, the part)."""
    width = max(1, width)
    if len(text) < width:
        return 0, text
    start = max(0, min(cursor - width + 1, len(text) - width + 1))
    return start, text[start:start + width]
