"""A scenario's catalog choices as a user names them: the model, hardware, workload (catalog
slugs, or the path of a file outside the catalog), precision and engine. Rows of results
(a sweep's, ``perfgraph eval --format parquet``'s: :mod:`perfgraph.output.parquet`) start
with them, in the order of :data:`CHOICE_COLUMNS`.
"""

from __future__ import annotations

from pathlib import Path

from perfgraph.scenario.catalog import KINDS, catalog_dir
from perfgraph.scenario.loading import Scenario

#: The choices, in order (the engine last: its memory rule and scheduling defaults are a
#: choice too).
CHOICE_COLUMNS = (*KINDS, "precision", "engine")


def choices(scenario: Scenario) -> dict[str, str]:
    """Model, hardware, workload (catalog slugs, or the path of a file outside the
    catalog), precision and engine, as a user would name them."""
    named = {kind: _entry_name(kind, scenario.choice(kind)) for kind in KINDS}
    return {**named, "precision": scenario.precision, "engine": scenario.engine}


def _entry_name(kind: str, path: str) -> str:
    p = Path(path).resolve()
    return p.stem if p.parent == catalog_dir(kind).resolve() else path
