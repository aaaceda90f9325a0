"""The dashboard's views: one small protocol, one registry (:data:`VIEWS`).

A view is a widget shown in a tab beside the cell table (below it at 80 columns). Its entry
in :data:`VIEWS` (a :class:`ViewEntry`) says

* ``view_id`` (the tab's id and the name ``action_view`` takes), ``title`` (the tab's label)
  and ``key`` (the key that shows it: ``1``, ``2`` …);
* ``focus_on``: the selector of its own widget that takes the keys when it is shown (the
  levers table, the runs table), or None to leave the keys with the cell table;
* ``follows_cursor``: True when what it shows depends on the highlighted cell (explain);
* ``needs_measured``: True when it has something to show only with measured runs;
* ``widget``: where its widget class is, ``module:Class``. The module is imported when the
  view is first needed, not at start-up: the plots pull in plotext and NumPy, which the
  first paint (the cells and the explain view) does not need.

The widget class has the two members of :class:`View`: ``create(context)``, a classmethod
building the widget, and ``refresh_from(session, cell)``, redrawing it from the session (and
the highlighted cell). The app calls ``refresh_from`` only for the view on screen, and only
once per change of the sheet (or of the highlighted cell, for a view that follows it): a view
that is not shown costs nothing on an edit. A new view (a plot, a plan, a simulation) is one
widget file under ``perfgraph/tui/widgets/`` and one entry in :data:`VIEWS`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast

from perfgraph.tui.session import Session

if TYPE_CHECKING:
    from textual.widget import Widget

    from perfgraph.measured.curves import MeasuredView


@dataclass(frozen=True)
class ViewContext:
    """What a view may be built from: the session, and the measured runs if any."""

    session: Session
    measured: MeasuredView | None = None


class View(Protocol):
    """What the app needs of a view's widget class (see the module docstring)."""

    @classmethod
    def create(cls, context: ViewContext) -> Widget: ...

    def refresh_from(self, session: Session, cell: str | None) -> None: ...


@dataclass(frozen=True)
class ViewEntry:
    """One view as the app knows it before its widget is built (see the module docstring)."""

    view_id: str
    title: str
    key: str
    widget: str
    focus_on: str | None = None
    follows_cursor: bool = False
    needs_measured: bool = False

    def widget_class(self) -> type[View]:
        """The view's widget class, its module imported now if it was not already."""
        module, _, name = self.widget.partition(":")
        return cast("type[View]", getattr(importlib.import_module(module), name))

    def available(self, context: ViewContext) -> bool:
        return context.measured is not None or not self.needs_measured


_WIDGETS = "perfgraph.tui.widgets"

#: Every view, in the order of its key.
VIEWS: tuple[ViewEntry, ...] = (
    ViewEntry("explain", "Explain", "1", f"{_WIDGETS}.explain_panel:ExplainPanel",
              follows_cursor=True),
    ViewEntry("roofline", "Roofline", "2", f"{_WIDGETS}.plots:RooflinePlot"),
    ViewEntry("concurrency", "Concurrency", "3", f"{_WIDGETS}.plots:ConcurrencyView"),
    ViewEntry("levers", "Levers", "4", f"{_WIDGETS}.levers_panel:LeversPanel",
              focus_on="#advice"),
    ViewEntry("measured", "Measured", "5", f"{_WIDGETS}.measured_panel:MeasuredPanel",
              focus_on="#runs", needs_measured=True),
    ViewEntry("plan", "Plan", "6", f"{_WIDGETS}.plan_panel:PlanPanel", focus_on="#plans"),
    ViewEntry("simulate", "Simulate", "7", f"{_WIDGETS}.simulate_panel:SimulatePanel",
              focus_on="#simulate-panel"),
)


class Views(Mapping[str, "Widget"]):
    """The views this session has, by id, each widget built when first asked for."""

    def __init__(self, context: ViewContext) -> None:
        self.context = context
        self.entries = {v.view_id: v for v in VIEWS if v.available(context)}
        self._built: dict[str, Widget] = {}

    def __getitem__(self, view_id: str) -> Widget:
        widget = self._built.get(view_id)
        if widget is None:
            entry = self.entries[view_id]  # KeyError: a view this session does not have
            widget = self._built[view_id] = entry.widget_class().create(self.context)
        return widget

    def __contains__(self, view_id: object) -> bool:
        return view_id in self.entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)
