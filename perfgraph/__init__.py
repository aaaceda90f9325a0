"""perfgraph: a spreadsheet-style, declarative model of LLM inference performance.

For notebooks::

    import perfgraph

    sc = perfgraph.load(model="llama-3.1-8b", precision="bf16", set={"tp": 1})
    sc.sheet.get("itl")                 # a Pint Quantity
    sc.sheet.set("concurrency", 128)    # recomputes what concurrency reaches
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from perfgraph.scenario.loading import Scenario, ScenarioSpec

__all__ = ["Scenario", "ScenarioSpec", "load"]
__version__ = "0.1.0"

#: The layers, lowest first: a module imports only its own layer and those before it, and no
#: modules import in a circle (``tests/test_layers.py`` enforces this; it is stated nowhere
#: else). A dotted name is a sub-package that is a layer of its own: the simulator
#: (``whatif.simulate``) sits below the rest of ``whatif`` and below ``measured``, which both
#: drive it. The CLI launches the dashboard; nothing below imports either. Beside the order,
#: the adapters (``measured.adapters``) import nothing of perfgraph but ``errors`` and are
#: imported from ``measured`` up; this ``__init__`` (the public API) may import up to
#: ``scenario``.
LAYERS = ("errors", "_infra", "engine", "scenario", "whatif.simulate", "whatif", "measured",
          "output", "tui", "cli")


def __getattr__(name: str) -> Any:
    """``perfgraph.Scenario`` and ``perfgraph.ScenarioSpec``, imported when first asked
    for: ``import perfgraph.cli`` must not load NumPy before the command line has set how
    NumPy starts (:mod:`perfgraph.cli`)."""
    if name in ("Scenario", "ScenarioSpec"):
        from perfgraph.scenario import loading

        return getattr(loading, name)
    raise AttributeError(f"module 'perfgraph' has no attribute {name!r}")


def load(scenario: str | None = None, *, model: str | None = None,
         hardware: str | None = None, workload: str | None = None,
         precision: str | None = None, set: Mapping[str, object] | None = None) -> Scenario:
    """Load a scenario (file and/or catalog choices) with optional ``--set``-style values."""
    from perfgraph.scenario.loading import ScenarioSpec
    from perfgraph.scenario.loading import load as _load

    sets = tuple((name, value if isinstance(value, str) else repr(value))
                 for name, value in (set or {}).items())
    return _load(ScenarioSpec(file=scenario, model=model, hardware=hardware,
                              workload=workload, precision=precision, sets=sets))
