"""The scenario bar: pick model, hardware, workload and precision from the catalogs; TP, PP.

Catalog choices reload the scenario (keeping the edits); TP and PP are inputs of the sheet,
set like any other edit. Both come back to the app as one message, :class:`Chosen`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Label, Select

from perfgraph.engine.numbers import number
from perfgraph.scenario.catalog import catalog_names
from perfgraph.scenario.loading import precisions
from perfgraph.tui.session import Session

#: Choices a scenario makes from a catalog (key, label); precision comes from precisions.toml.
CATALOGS = (("model", "model"), ("hardware", "hw"), ("workload", "workload"),
            ("precision", "precision"))
#: Parallelism inputs offered in the bar, with their usual values.
PARALLEL = (("tp", (1, 2, 4, 8, 16)), ("pp", (1, 2, 4, 8)))


def catalog_options(kind: str, current: str) -> list[tuple[str, str]]:
    names = list(precisions().data) if kind == "precision" else catalog_names(kind)
    if current not in names:  # a file outside the catalog
        names.append(current)
    return [(n, n) for n in names]


class ScenarioBar(Horizontal):
    """Selects for the scenario's choices, kept in step with the session."""

    class Chosen(Message):
        def __init__(self, key: str, value: str) -> None:
            super().__init__()
            self.key = key
            self.value = value

    def __init__(self, session: Session, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.session = session

    def compose(self) -> ComposeResult:
        choices = self.session.choices()
        for kind, label in CATALOGS:
            yield Label(label, classes="bar-label catalog-label")
            yield Select(catalog_options(kind, choices[kind]), value=choices[kind],
                         allow_blank=False, compact=True, id=f"choose-{kind}")
        for name, usual in PARALLEL:
            yield Label(name.upper(), classes="bar-label")
            yield Select(self._parallel_options(name, usual), value=self._current(name),
                         allow_blank=False, compact=True, id=f"choose-{name}")

    def _current(self, name: str) -> str:
        value = self.session.value(name)
        return "?" if value is None else number(value)

    def _parallel_options(self, name: str, usual: tuple[int, ...]) -> list[tuple[str, str]]:
        values = [str(u) for u in usual]
        current = self._current(name)
        if current not in values:
            values.append(current)
        return [(v, v) for v in values]

    def sync(self) -> None:
        """Show the session's choices (after an edit of tp/pp, a reload or an undo)."""
        choices = self.session.choices()
        for kind, _ in CATALOGS:
            self._show(kind, choices[kind], partial(catalog_options, kind, choices[kind]))
        for name, usual in PARALLEL:
            self._show(name, self._current(name),
                       partial(self._parallel_options, name, usual))

    def _show(self, key: str, value: str, options: Callable[[], list[tuple[str, str]]]) -> None:
        """Show ``value`` in the select for ``key`` without it posting Changed: a value the
        session already holds is not a choice the user made (posting it would set TP back
        to the options' first entry, and push an undo step for each select touched)."""
        select = self.query_one(f"#choose-{key}", Select)
        if select.value == value:
            return
        with select.prevent(Select.Changed):
            select.set_options(options())
            select.value = value

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        key = (event.select.id or "").removeprefix("choose-")
        value = str(event.value)
        current = self.session.choices().get(key) if key not in dict(PARALLEL) \
            else self._current(key)
        if value != current:
            self.post_message(self.Chosen(key, value))
