"""The scenario bar: pick model, hardware, workload and precision from the catalogs; TP, PP.

Catalog choices reload the scenario (keeping the edits); TP and PP are inputs of the sheet,
set like any other edit. Both come back to the app as one message, :class:`Chosen`.

Each choice is a :class:`BarChoice`: one line of text that opens a list (a modal
:class:`~perfgraph.tui.screens.dialogs.ChoiceScreen`) on Enter or a click. Textual's
``Select`` composes an overlay and an option list per choice at startup (six of them were a
fifth of the dashboard's startup); here the list is built when it opens.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Label, Static

from perfgraph.engine.numbers import number
from perfgraph.scenario.catalog import catalog_names
from perfgraph.scenario.loading import precisions
from perfgraph.tui.screens.dialogs import ChoiceScreen
from perfgraph.tui.session import Session

#: Choices a scenario makes from a catalog (key, label); precision comes from precisions.toml.
CATALOGS = (("model", "model"), ("hardware", "hw"), ("workload", "workload"),
            ("precision", "precision"))
#: Parallelism inputs offered in the bar, with their usual values.
PARALLEL = (("tp", (1, 2, 4, 8, 16)), ("pp", (1, 2, 4, 8)))


def catalog_options(kind: str, current: str) -> list[str]:
    names = list(precisions().data) if kind == "precision" else catalog_names(kind)
    if current not in names:  # a file outside the catalog
        names.append(current)
    return names


class BarChoice(Static, can_focus=True):
    """``value ▾``: Enter, space or a click opens the list of ``options()``."""

    BINDINGS = [Binding("enter,space", "open", "Choose")]

    class Picked(Message):
        def __init__(self, choice: BarChoice, value: str) -> None:
            super().__init__()
            self.choice, self.value = choice, value

    def __init__(self, title: str, value: str, options: Callable[[], list[str]],
                 **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.title, self.options = title, options
        self.value = value
        self.update(self._text(), layout=False)

    def _text(self) -> Text:
        return Text.assemble((self.value, "bold"), " ▾", no_wrap=True, overflow="ellipsis")

    def show(self, value: str, options: Callable[[], list[str]]) -> None:
        """Show ``value`` (the session's) without posting anything."""
        self.options = options
        if value != self.value:
            self.value = value
            self.update(self._text(), layout=False)  # a fixed width: no layout

    def action_open(self) -> None:
        self.app.push_screen(ChoiceScreen(self.title, self.options(), self.value),
                             self._picked)

    def _picked(self, value: str | None) -> None:
        if value is not None and value != self.value:
            self.post_message(self.Picked(self, value))

    def on_click(self, event: events.Click) -> None:
        self.action_open()


class ScenarioBar(Horizontal):
    """Choices for the scenario's model, hardware, workload, precision, TP and PP, kept in
    step with the session. ``b`` (the app's) focuses it; Esc hands the keys back to the cells."""

    BINDINGS = [Binding("escape", "leave", "Back to the cells", show=False)]

    class Chosen(Message):
        def __init__(self, key: str, value: str) -> None:
            super().__init__()
            self.key = key
            self.value = value

    def __init__(self, session: Session, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.session = session

    def action_leave(self) -> None:
        self.app.query_one("#cells").focus()

    def compose(self) -> ComposeResult:
        choices = self.session.choices()
        for kind, label in CATALOGS:
            yield Label(label, classes="bar-label catalog-label")
            yield BarChoice(kind, choices[kind], partial(catalog_options, kind, choices[kind]),
                            id=f"choose-{kind}")
        for name, usual in PARALLEL:
            yield Label(name.upper(), classes="bar-label")
            yield BarChoice(name, self._current(name),
                            partial(self._parallel_options, name, usual), id=f"choose-{name}")

    def _current(self, name: str) -> str:
        value = self.session.value(name)
        return "?" if value is None else number(value)

    def _parallel_options(self, name: str, usual: tuple[int, ...]) -> list[str]:
        values = [str(u) for u in usual]
        current = self._current(name)
        if current not in values:
            values.append(current)
        return values

    def sync(self) -> None:
        """Show the session's choices (after an edit of tp/pp, a reload or an undo): a value
        the session already holds is not a choice the user made, so nothing is posted."""
        choices = self.session.choices()
        for kind, _ in CATALOGS:
            self.query_one(f"#choose-{kind}", BarChoice).show(
                choices[kind], partial(catalog_options, kind, choices[kind]))
        for name, usual in PARALLEL:
            self.query_one(f"#choose-{name}", BarChoice).show(
                self._current(name), partial(self._parallel_options, name, usual))

    def on_bar_choice_picked(self, event: BarChoice.Picked) -> None:
        event.stop()
        key = (event.choice.id or "").removeprefix("choose-")
        self.post_message(self.Chosen(key, event.value))
