"""The 80% band beside each calibrated value of a sweep's rows.

A calibrated sweep (``--calibration``) has, beside each fitted metric's cell it writes,
two columns for the ends of that value's 80% band: ``itl_p10`` and ``itl_p90`` (in the
cell's unit). Each row is judged as ``perfgraph eval`` judges one scenario
(:func:`perfgraph.scenario.profiles.assess`): a row whose ISL, parallelism or model cells
leave the profile's domain takes the band measured for that extrapolation, or none (NaN)
where none was measured. Rows are judged once per distinct point, not once per row.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from perfgraph.scenario import domain, profiles
from perfgraph.scenario.loading import Scenario


def band_units(calibrated: bool, units: Mapping[str, str]) -> dict[str, str]:
    """The band columns of the cells in ``units`` that can carry one, each in its cell's
    unit (none for an uncalibrated sweep)."""
    if not calibrated:
        return {}
    return {col: units[c] for c in profiles.banded(units) for col in profiles.band_columns(c)}


def needed(scenario: Scenario, units: Mapping[str, str]) -> list[str]:
    """The cells a chunk must compute to judge its rows: the point's (none uncalibrated)."""
    if scenario.calibration is None or not any(c in units for c in _band_cells(units)):
        return []
    return [c for c in domain.POINT_CELLS if c in scenario.sheet.names]


def band_columns(scenario: Scenario, columns: Mapping[str, np.ndarray],
                 units: Mapping[str, str], length: int,
                 scale: Mapping[str, float] | None = None) -> dict[str, np.ndarray]:
    """The band columns of one chunk (``columns``: its computed cells in declared units,
    the point's among them), each the row's value times its band's end, in the column's
    unit (``scale``: a cell's factor to it); NaN where no band applies."""
    cells = [c for c in _band_cells(units) if c in columns]
    if scenario.calibration is None or not cells:
        return {}
    doc = scenario.calibration.doc
    names = [c for c in domain.POINT_CELLS if c in columns]
    table = np.column_stack([np.broadcast_to(columns[c], (length,)) for c in names]) \
        if names else np.zeros((length, 0))
    points, which = np.unique(table, axis=0, return_inverse=True)
    twins = domain.twins(scenario.sheet, scenario.model,
                         profiles.fitted_models(doc))
    judged = [profiles.assess(doc, _point(scenario, dict(zip(names, row, strict=True)), twins))
              for row in points]
    out: dict[str, np.ndarray] = {}
    for cell in cells:
        ends = np.array([j.band(cell, 1.0) or (math.nan, math.nan) for j in judged])
        value = np.broadcast_to(columns[cell], (length,)) * (scale or {}).get(cell, 1.0)
        for i, col in enumerate(profiles.band_columns(cell)):
            out[col] = value * ends[np.ravel(which), i]
    return out


def _band_cells(units: Mapping[str, str]) -> list[str]:
    return profiles.banded(units)


def _point(scenario: Scenario, values: Mapping[str, float],
           twins: tuple[str, ...]) -> domain.Point:
    point = domain.point_from(values, scenario.model.slug, scenario.precision,
                              scenario.engine, scenario.hardware.slug)
    return domain.Point(**{**point.__dict__, "twins": twins})
