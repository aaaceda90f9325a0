"""Scenarios: the catalogs (models, hardware, workloads), the formula sheets (``sheets/``), the
precisions, loading a scenario into a sheet, saving edits back, and config.json import."""

from perfgraph.scenario.loading import Scenario, ScenarioSpec, load

__all__ = ["Scenario", "ScenarioSpec", "load"]
