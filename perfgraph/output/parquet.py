"""Files out: which format a file gets, and a scenario's cells as a one-row Parquet file, every
cell a column named as in the vocabulary (the writer: :mod:`perfgraph._infra.parquet_write`).

:func:`output_format` picks the format from ``--format``, else from ``--out``'s suffix, and
refuses the two disagreeing (Parquet bytes in ``x.csv``) and an empty ``--out``.

Values are in each cell's declared unit, NaN where the cell failed. A calibrated scenario's
file also has the ends of each fitted metric's 80% band beside its cell (``itl_p10``,
``itl_p90``, in the cell's unit).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from perfgraph._infra.parquet_write import UNITS_KEY, read_units, write_frames
from perfgraph.errors import InputError
from perfgraph.scenario import profiles
from perfgraph.scenario.choices import CHOICE_COLUMNS, choices, schema, units
from perfgraph.scenario.loading import Scenario

if TYPE_CHECKING:
    import polars as pl

__all__ = ["CHOICE_COLUMNS", "UNITS_KEY", "choices", "output_format", "read_units",
           "scenario_frame", "schema", "units", "write_frames", "write_scenario"]
#: The format a file's suffix names.
SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".json": "json",
            ".md": "markdown", ".markdown": "markdown"}


def output_format(out: str | None, given: str | None, formats: Sequence[str],
                  default: str, file_default: str | None = None) -> str:
    """The format to write: ``given`` (``--format``), else the one ``out``'s suffix names,
    else ``file_default`` (with ``--out``) or ``default``. InputError for an empty ``--out``,
    a suffix naming a format not in ``formats``, a ``--format`` the suffix contradicts, or
    Parquet asked for without ``--out`` (it is never printed)."""
    if out is None:
        if given == "parquet":
            raise InputError("--format parquet needs --out FILE.parquet")
        return given or default
    if not out.strip():
        raise InputError("--out needs a file name (leave --out off to print to stdout)")
    suffix = Path(out).suffix.lower()
    named = SUFFIXES.get(suffix)
    if named is not None and named not in formats:
        raise InputError(f"--out {out}: a {suffix} file holds {named}, which this command "
                         f"does not write; it writes {' or '.join(formats)}")
    if given is None:
        return named or file_default or default
    if named is not None and named != given:
        raise InputError(f"--format {given} does not match --out {out} (a {suffix} file "
                         f"holds {named}); name the file .{_suffix(given)} or drop --format")
    return given


def _suffix(fmt: str) -> str:
    return next((s[1:] for s, f in SUFFIXES.items() if f == fmt), "txt")


def band_units(scenario: Scenario, cells: Sequence[str]) -> dict[str, str]:
    """The band columns a calibrated scenario's file has beside ``cells`` (``itl_p10``,
    ``itl_p90`` …), each in its cell's unit; none for the roofline."""
    if scenario.calibration is None:
        return {}
    return {col: scenario.sheet.declaration(c).unit
            for c in profiles.banded(cells) for col in profiles.band_columns(c)}


def scenario_frame(scenario: Scenario, cells: Sequence[str]) -> pl.DataFrame:
    """One row: the scenario's choices, every cell in ``cells`` (NaN where it failed) and,
    calibrated, the ends of each fitted metric's 80% band (NaN where none was measured)."""
    import polars as pl

    sheet = scenario.sheet
    row: dict[str, object] = dict(choices(scenario))
    for name in cells:
        row[name] = float("nan") if sheet.error(name) else sheet.magnitude(name)
    extra = band_units(scenario, cells)
    judged = scenario.assessment
    for name in profiles.banded(cells) if extra else ():
        band = judged.band(name, None if sheet.error(name) else sheet.magnitude(name))
        for col, end in zip(profiles.band_columns(name), band or (math.nan, math.nan),
                            strict=True):
            row[col] = end
    return pl.DataFrame([row], schema=schema([*cells, *extra]))


def write_scenario(path: str | Path, scenario: Scenario, cells: Sequence[str]) -> None:
    """``perfgraph eval --format parquet --out FILE``: one row, every cell a column (and,
    calibrated, the band columns: :func:`scenario_frame`)."""
    frame = scenario_frame(scenario, cells)
    extra = band_units(scenario, cells)
    write_frames(path, lambda: iter([frame]), schema([*cells, *extra]),
                 {**units(scenario.sheet, cells), **extra})


