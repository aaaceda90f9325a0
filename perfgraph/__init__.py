"""perfgraph: a spreadsheet-style, declarative model of LLM inference performance.

For notebooks::

    import perfgraph

    sc = perfgraph.load(model="llama-3.1-8b", precision="bf16", set={"tp": 1})
    sc.sheet.get("itl")                 # a Pint Quantity
    sc.sheet.set("concurrency", 128)    # recomputes what concurrency reaches
"""

from __future__ import annotations

from collections.abc import Mapping

from perfgraph.scenario.loading import Scenario, ScenarioSpec

__all__ = ["Scenario", "ScenarioSpec", "load"]
__version__ = "0.1.0"


def load(scenario: str | None = None, *, model: str | None = None,
         hardware: str | None = None, workload: str | None = None,
         precision: str | None = None, set: Mapping[str, object] | None = None) -> Scenario:
    """Load a scenario (file and/or catalog choices) with optional ``--set``-style values."""
    from perfgraph.scenario.loading import load as _load

    sets = tuple((name, value if isinstance(value, str) else repr(value))
                 for name, value in (set or {}).items())
    return _load(ScenarioSpec(file=scenario, model=model, hardware=hardware,
                              workload=workload, precision=precision, sets=sets))
