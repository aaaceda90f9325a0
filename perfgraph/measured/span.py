"""The domain of a fit (perfgraph.scenario.domain): the span of the runs it was fitted on.

Each run is a point: its model's class and size from the model's cells in the sheet its
group loads, its precision and engine, its ISL/OSL as its benchmark configured them (the
shapes a user asks for; the modelled means are 0.9 × those for InferenceX's random lengths)
and its parallelism (TP from the run, the rest from its deployment cells).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from perfgraph.measured.comparison import Comparison
from perfgraph.measured.setup import Baseline
from perfgraph.scenario import domain
from perfgraph.scenario.loading import load


def build_tag(c: Comparison) -> str:
    """The run's engine build as its image's tag (``v0.5.12-cu130``); ``?`` when it names
    none."""
    return (c.run.engine_build or "?").rsplit(":", 1)[-1]


def domain_of(runs: Sequence[Comparison], base: Baseline) -> domain.Domain:
    """The span of ``runs`` (compared runs, each with a setup)."""
    sheets: dict[tuple, domain.Point] = {}
    points = []
    for c in runs:
        s = c.setup
        if s.group not in sheets:
            scenario = load(s.spec(base.spec))
            sheets[s.group] = domain.point_of(scenario.sheet, scenario.model.slug,
                                              scenario.precision, scenario.engine,
                                              scenario.hardware.slug)
        point = sheets[s.group]
        tp = [] if (s.tp or 1) <= 1 else ["tp"]
        kinds = (*tp, *(k for k in point.parallelism if k != "tp"))
        points.append(replace(point, isl=float(c.run.isl_configured or s.isl or 0),
                              osl=float(c.run.osl_configured or s.osl or 0),
                              parallelism=kinds))
    return domain.span(points, (build_tag(c) for c in runs))
