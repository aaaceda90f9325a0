"""The columns that name a scenario's catalog choices, as rows of results carry them.

A row of a sweep or of ``perfgraph eval --format parquet`` starts with the model, hardware,
workload (catalog slugs, or the path of a file outside the catalog) and precision, then one
Float64 column per cell in the cell's declared unit.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from perfgraph.engine.sheet import Sheet
from perfgraph.scenario.catalog import KINDS, catalog_dir
from perfgraph.scenario.loading import Scenario

if TYPE_CHECKING:
    import polars as pl

#: The columns naming the catalog choices of each row, before the cells (the engine last:
#: its memory rule and scheduling defaults are a choice too).
CHOICE_COLUMNS = (*KINDS, "precision", "engine")


def choices(scenario: Scenario) -> dict[str, str]:
    """Model, hardware, workload (catalog slugs, or the path of a file outside the
    catalog), precision and engine, as a user would name them."""
    named = {kind: _entry_name(kind, scenario.choice(kind)) for kind in KINDS}
    return {**named, "precision": scenario.precision, "engine": scenario.engine}


def _entry_name(kind: str, path: str) -> str:
    p = Path(path).resolve()
    return p.stem if p.parent == catalog_dir(kind).resolve() else path


def units(sheet: Sheet, names: Sequence[str]) -> dict[str, str]:
    return {n: sheet.declaration(n).unit for n in names}


def schema(cells: Sequence[str]) -> dict[str, pl.DataType]:
    """Choice columns (text), then one Float64 column per cell."""
    import polars as pl

    return {**{c: pl.String() for c in CHOICE_COLUMNS}, **{n: pl.Float64() for n in cells}}
