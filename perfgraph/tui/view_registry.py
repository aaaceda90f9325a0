"""The dashboard's views: one small protocol, one registry (:data:`VIEWS`).

A view is a widget shown in a tab beside the cell table (below it at 80 columns). It says

* ``view_id`` (the tab's id and the name ``action_view`` takes), ``title`` (the tab's label)
  and ``key`` (the key that shows it: ``1``, ``2`` …);
* ``focus_on``: the selector of its own widget that takes the keys when it is shown (the
  levers table, the runs table), or None to leave the keys with the cell table;
* ``follows_cursor``: True when what it shows depends on the highlighted cell (explain);
* ``create(context)``: a classmethod building the widget, or None where the view has
  nothing to show in this session (the measured view without ``--measured``);
* ``refresh_from(session, cell)``: redraw from the session (and the highlighted cell).

The app calls ``refresh_from`` only for the view on screen, and only once per change of the
sheet (or of the highlighted cell, for a view that follows it): a view that is not shown
costs nothing on an edit. A new view (a plot, a plan, a simulation) is one widget file under
``perfgraph/tui/widgets/`` with these five members, and one entry in :data:`VIEWS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

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
    """What the app needs of a view (see the module docstring)."""

    view_id: ClassVar[str]
    title: ClassVar[str]
    key: ClassVar[str]
    focus_on: ClassVar[str | None]
    follows_cursor: ClassVar[bool]

    @classmethod
    def create(cls, context: ViewContext) -> Widget | None: ...

    def refresh_from(self, session: Session, cell: str | None) -> None: ...


def _registry() -> tuple[type[View], ...]:
    from perfgraph.tui.widgets.explain_panel import ExplainPanel
    from perfgraph.tui.widgets.levers_panel import LeversPanel
    from perfgraph.tui.widgets.measured_panel import MeasuredPanel
    from perfgraph.tui.widgets.plan_panel import PlanPanel
    from perfgraph.tui.widgets.plots import ConcurrencyView, RooflinePlot
    from perfgraph.tui.widgets.simulate_panel import SimulatePanel

    return (ExplainPanel, RooflinePlot, ConcurrencyView, LeversPanel, MeasuredPanel,
            PlanPanel, SimulatePanel)


#: Every view, in the order of its key.
VIEWS: tuple[type[View], ...] = _registry()
