"""The formula bar's line editing (perfgraph.tui.line_edit): what each key does to the text.

The model has no terminal, so each key's effect is asserted on the text and the cursor; the
Pilot tests (test_tui.py) drive the same keys through the dashboard.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfgraph.tui.line_edit import LineEdit, window


def opened(text: str) -> LineEdit:
    line = LineEdit()
    line.start(text)
    return line


def test_an_edit_opens_with_its_text_selected_and_the_first_key_replaces_it() -> None:
    line = opened("64")
    assert (line.text, line.cursor, line.selected) == ("64", 2, True)
    assert line.key("1", "1") is True
    assert (line.text, line.cursor, line.selected) == ("1", 1, False)
    line.key("2", "2")
    line.key("8", "8")
    assert line.text == "128"


def test_an_arrow_keeps_the_text_and_moves_the_cursor_to_that_end() -> None:
    line = opened("decode_step_time")
    assert line.key("right", None) is False
    assert (line.text, line.cursor, line.selected) == ("decode_step_time", 16, False)
    line.key("space", " ")
    for ch in "* 1.1":
        line.key(ch, ch)
    assert line.text == "decode_step_time * 1.1"
    line = opened("64")
    line.key("left", None)
    line.key("1", "1")
    assert line.text == "164"  # typed at the start, where Left put the cursor


@pytest.mark.parametrize(("key", "text", "cursor", "after", "cursor_after"), [
    ("backspace", "abcd", 3, "abd", 2),
    ("backspace", "abcd", 0, "abcd", 0),
    ("delete", "abcd", 1, "acd", 1),
    ("delete", "abcd", 4, "abcd", 4),
    ("ctrl+u", "abcd", 2, "cd", 0),
    ("ctrl+k", "abcd", 2, "ab", 2),
    ("ctrl+w", "tp * 2 + pp", 9, "tp * 2 pp", 7),
    ("ctrl+w", "tp  * 2", 4, "* 2", 0),
])
def test_deleting_keys(key: str, text: str, cursor: int, after: str, cursor_after: int) -> None:
    line = LineEdit(text, cursor)
    assert line.key(key, None) is (after != text)
    assert (line.text, line.cursor) == (after, cursor_after)


def test_a_deleting_key_on_the_selection_clears_it() -> None:
    for key in ("backspace", "delete", "ctrl+w"):
        line = opened("nope + 1")
        assert line.key(key, None) is True
        assert (line.text, line.cursor) == ("", 0)


def test_moves_and_keys_that_do_nothing_here() -> None:
    line = LineEdit("abc", 1)
    for key, cursor in (("end", 3), ("home", 0), ("ctrl+e", 3), ("ctrl+a", 0),
                        ("right", 1), ("left", 0), ("left", 0)):
        assert line.key(key, None) is False
        assert line.cursor == cursor
    assert line.key("enter", "\r") is None  # not printable: the bar decides (keep)
    assert line.key("tab", "\t") is None
    assert line.key("f5", None) is None
    assert line.text == "abc"


def test_a_paste_joins_its_lines() -> None:
    line = opened("64")
    line.paste("decode_memory_time\n  / (pp - 1)\n")
    assert line.text == "decode_memory_time / (pp - 1)"
    assert line.cursor == len(line.text)


def test_the_window_keeps_the_cursor_in_view() -> None:
    assert window("abc", 3, 10) == (0, "abc")
    assert window("abcdefghij", 10, 5) == (6, "ghij")  # the cursor's cell after the text
    assert window("abcdefghij", 0, 5) == (0, "abcde")
    assert window("abcdefghij", 7, 5) == (3, "defgh")


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=30), st.integers(0, 40), st.integers(1, 20))
def test_the_window_always_shows_the_cursor(text: str, cursor: int, width: int) -> None:
    cursor = min(cursor, len(text))
    start, shown = window(text, cursor, width)
    assert shown == text[start:start + len(shown)] and len(shown) <= width
    assert start <= cursor <= start + len(shown)  # on a character shown, or just after
    assert cursor - start < width  # and its cell fits


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", " ", "left", "right", "home", "end", "backspace",
                                 "delete", "ctrl+w", "ctrl+u", "ctrl+k"]), max_size=25))
def test_any_keys_keep_the_cursor_inside_the_text(keys: list[str]) -> None:
    line = opened("tp * 2")
    for key in keys:
        line.key(key, key if len(key) == 1 else None)
        assert 0 <= line.cursor <= len(line.text)
