"""Shared fixtures: scenarios loaded from the catalogs, as a user would name them."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfgraph.engine.declarations import Declaration
from perfgraph.engine.formula import parse
from perfgraph.scenario.loading import Scenario, ScenarioSpec, load

DATA = Path(__file__).parent / "data"


def scenario(*sets: tuple[str, object], **choices: str) -> Scenario:
    """Load a catalog scenario with ``--set``-style overrides (values as the CLI takes them)."""
    return load(ScenarioSpec(sets=tuple((k, str(v)) for k, v in sets), **choices))


@pytest.fixture
def default_scenario() -> Scenario:
    return load()


def cell(name: str, unit: str, formula: str | None = None, value: float | None = None,
         ) -> Declaration:
    """A declaration for a hand-built test sheet: an input (``value``) or a formula."""
    return Declaration(name=name, unit=unit, value=value,
                       formula=parse(formula) if formula else None)
