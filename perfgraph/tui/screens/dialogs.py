"""Small modal questions: a path to save as, and yes/no before overwriting a file."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label


class SaveAsScreen(ModalScreen[str | None]):
    """Ask for the path of a new scenario file; dismisses with it, or None."""

    BINDINGS = [Binding("escape", "dismiss_none", "Cancel")]

    def __init__(self, suggestion: str = "") -> None:
        super().__init__()
        self.suggestion = suggestion

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Save the scenario as (a .toml path):")
            yield Input(value=self.suggestion, id="save-path")
            yield Label("Enter saves · Esc cancels", classes="dim")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip() or None)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    """A yes/no question; ``y`` or the button confirms, ``n``/Esc declines."""

    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, question: str, yes: str = "Overwrite (y)", no: str = "Cancel (n)",
                 ) -> None:
        super().__init__()
        self.question, self.yes, self.no = question, yes, no

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.question)
            with Horizontal(classes="buttons"):
                yield Button(self.yes, variant="error", id="yes")
                yield Button(self.no, id="no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class ChoiceScreen(ModalScreen[str | None]):
    """Pick one of ``options`` (the scenario bar's list, built only when it opens);
    dismisses with the value, or None (Esc)."""

    BINDINGS = [Binding("escape", "dismiss_none", "Cancel")]

    def __init__(self, title: str, options: list[str], current: str) -> None:
        super().__init__()
        self.title_text, self.options, self.current = title, options, current

    def compose(self) -> ComposeResult:
        from textual.widgets import OptionList

        with Vertical(classes="dialog choice"):
            yield Label(f"{self.title_text}: Enter picks · Esc cancels", classes="dim")
            yield OptionList(*self.options, id="choice-list")

    def on_mount(self) -> None:
        from textual.widgets import OptionList

        if self.current in self.options:
            self.query_one(OptionList).highlighted = self.options.index(self.current)

    def on_option_list_option_selected(self, event: object) -> None:
        self.dismiss(self.options[event.option_index])  # type: ignore[attr-defined]

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
