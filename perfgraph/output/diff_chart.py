"""The chart of a diff: BASE's and HEAD's curves overlaid (``perfgraph plot diff`` and
``perfgraph diff --plot``), and the one check that matplotlib, the ``plot`` extra, is here."""

from __future__ import annotations

import importlib.util
from typing import Any

from perfgraph.errors import InputError

MISSING = "perfgraph plot needs matplotlib: pip install 'perfgraph[plot]'"


def need_matplotlib() -> None:
    if importlib.util.find_spec("matplotlib") is None:
        raise InputError(MISSING)


def diff_figure(base: tuple[str, Any], head: tuple[str, Any], x: str = "concurrency") -> Any:
    """BASE's and HEAD's curves (each a (label, Scenario)) overlaid, against ``x``."""
    from perfgraph.output import chart_data, charts

    panels = chart_data.merge(
        chart_data.scenario_panels(base[1].sheet, x, f"BASE {base[0]}", "C0"),
        chart_data.scenario_panels(head[1].sheet, x, f"HEAD {head[0]}", "C3"))
    return charts.across(panels, x=x, title=f"{base[0]} → {head[0]}, against "
                                            f"{charts.X_LABELS[x]}")


def draw_diff(base: tuple[str, Any], head: tuple[str, Any], out: str) -> None:
    """``perfgraph diff --plot``: the diff chart, written to ``out``."""
    need_matplotlib()
    from perfgraph.output import charts

    charts.suffix_format(out)
    charts.save(diff_figure(base, head), out)
