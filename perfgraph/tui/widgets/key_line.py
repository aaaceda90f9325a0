"""The key line at the foot of the screen: the keys that act where the focus is.

Textual's ``Footer`` recomposes itself whenever the focus moves (an edit moves it twice), a
layout pass each time; this line is one Static of fixed height, rewritten without a layout.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

#: (key, what it does) for each place the keys can be.
KEYS: dict[str, tuple[tuple[str, str], ...]] = {
    "cells": (("e", "edit"), ("x", "reset"), ("u", "undo"), ("1-7", "views"),
              ("b", "bar"), ("^s", "save"), ("^p", "palette"), ("?", "help"), ("q", "quit")),
    "bar": (("Enter", "choose"), ("Tab", "next"), ("Esc", "cells"), ("?", "help"),
            ("q", "quit")),
    "edit": (("Enter", "keep"), ("Esc", "cancel"), ("", "a number, \"4.8 TB/s\" or a formula")),
    "levers": (("a", "apply lever"), ("u", "undo"), ("1", "cells"), ("2-7", "views"),
               ("^s", "save"), ("?", "help"), ("q", "quit")),
    "measured": (("↑↓", "runs"), ("1", "cells"), ("2-7", "views"), ("?", "help"),
                 ("q", "quit")),
    "plan": (("s", "search"), ("a", "apply plan"), ("e", "edit SLOs"), ("u", "undo"),
             ("1", "cells"), ("2-7", "views"), ("?", "help"), ("q", "quit")),
    "question": (("Enter", "search"), ("Tab", "next"), ("Esc", "plans"),
                 ("", "\"500 ms\", \"20 request/s\"")),
    "simulate": (("o", "open/closed loop"), ("u", "undo"), ("1", "cells"), ("2-7", "views"),
                 ("?", "help"), ("q", "quit")),
}


def keys_text(place: str) -> Text:
    """`` e edit  x reset …``: fits 80 columns (Ctrl+A and the rest are in help, ``?``)."""
    out = Text(no_wrap=True, overflow="ellipsis")
    for key, what in KEYS[place]:
        out.append(" ")
        if key:
            out.append(key, style="bold")
            out.append(" ")
        out.append(what + " ")
    return out


class KeyLine(Static):
    """One line of keys; :meth:`show` switches it to another place's keys."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(keys_text("cells"), **kwargs)  # type: ignore[arg-type]
        self.place = "cells"

    def show(self, place: str) -> None:
        if place != self.place and place in KEYS:
            self.place = place
            self.update(keys_text(place), layout=False)
