"""A sweep written out: its rows streamed a chunk at a time as Polars frames into Parquet or
CSV, or, for a sweep of at most one chunk, as whole columns (which pyarrow writes without
Polars being imported).

Rows go catalog combination by catalog combination (each builds one sheet), and within one
the cell axes as given, the last varying fastest; each column is in the unit of
:func:`perfgraph.whatif.sweep_axes.cell_units` (a catalog entry may declare a cell in another).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import numpy as np

from perfgraph._infra.atomic import write_atomic
from perfgraph.engine.sheet import Sheet
from perfgraph.engine.units import unit
from perfgraph.errors import InputError, PerfgraphError
from perfgraph.output import parquet
from perfgraph.whatif import grid, sweep_bands
from perfgraph.whatif.grid import CHUNK_ROWS
from perfgraph.whatif.sweep_axes import Sweep, selected_units

if TYPE_CHECKING:
    import polars as pl

def write(sweep: Sweep, path: str | Path, only: Sequence[str] | None = None,
          progress: Progress | None = None) -> dict[str, str]:
    """Run the sweep into a Parquet file at ``path``; returns the cells written, with units.

    ``only`` limits the cell columns (default: every cell). A failure part way (a catalog
    combination that cannot load, a full disk) leaves no file behind; a catalog
    combination's own error is raised as it is.
    """
    units = selected_units(sweep, only)
    failure: list[PerfgraphError] = []

    def guarded() -> Iterator[pl.DataFrame]:
        try:
            yield from frames(sweep, units, progress)
        except PerfgraphError as exc:  # re-raised below, once the writer has let go
            failure.append(exc)
            raise

    axes = {"perfgraph.axes": ",".join(a.name for a in sweep.axes)}
    if sweep.points <= CHUNK_ROWS and parquet.write_table(
            path, whole(sweep, units, progress), units, axes):
        return units  # small: every column at once, without importing Polars
    try:
        parquet.write_frames(path, guarded, parquet.schema(list(units)), units, axes)
    except Exception:
        if failure:
            raise failure[0] from None
        raise
    return units


def write_csv(sweep: Sweep, stream: TextIO, only: Sequence[str] | None = None) -> None:
    """The sweep as CSV on ``stream`` (a header, then a chunk at a time)."""
    for i, frame in enumerate(frames(sweep, selected_units(sweep, only))):
        stream.write(frame.write_csv(include_header=i == 0))


def write_csv_file(sweep: Sweep, path: str | Path, only: Sequence[str] | None = None) -> None:
    """The sweep as a CSV file at ``path``, all or nothing."""
    def into(tmp: Path) -> None:
        with tmp.open("w", encoding="utf-8", newline="") as stream:
            write_csv(sweep, stream, only)

    write_atomic(path, into)


Progress = Callable[[int], None]


def frames(sweep: Sweep, units: Mapping[str, str], progress: Progress | None = None,
           chunk_rows: int = CHUNK_ROWS) -> Iterator[pl.DataFrame]:
    """Every row of the sweep, a chunk at a time: choice columns, then a column per cell
    of ``units``, in that unit (a catalog entry may declare a cell in another)."""
    import polars as pl

    for spec in sweep.specs():
        scenario = sweep.scenario(spec)
        chosen = [pl.lit(v, dtype=pl.String).alias(k)
                  for k, v in parquet.choices(scenario).items()]
        scale = rescale(scenario.sheet, units)
        known = set(scenario.sheet.names)
        present = [n for n in units if n in known]  # only what is written is computed
        judge = sweep_bands.needed(scenario, units)
        for start, stop, columns in grid.chunks(scenario.sheet, sweep.cell_axes,
                                                only=[*present, *judge],
                                                chunk_rows=chunk_rows, scale=scale):
            columns = {**columns, **sweep_bands.band_columns(scenario, columns, units,
                                                             stop - start, scale)}
            yield chunk_frame(columns, units, scale, chosen, stop - start)
            if progress is not None:
                progress(stop - start)


def chunk_frame(columns: Mapping[str, np.ndarray], units: Mapping[str, str],
           scale: Mapping[str, float], chosen: list[pl.Expr], length: int) -> pl.DataFrame:
    """One chunk as a frame. A cell the axes do not reach is a literal, not a column of
    copies; a cell this scenario lacks is NaN."""
    import polars as pl

    varying: dict[str, np.ndarray] = {}
    constant = []
    for name in units:
        column, factor = columns.get(name), scale.get(name, 1.0)
        if column is None or column.strides == (0,):  # before scaling: a product is a copy
            value = math.nan if column is None else float(column[0]) * factor
            constant.append(pl.lit(value, dtype=pl.Float64).alias(name))
        else:
            varying[name] = column * factor if name in scale else column
    frame = pl.DataFrame(varying) if varying else pl.DataFrame(height=length)
    return frame.with_columns(*chosen, *constant).select(*parquet.CHOICE_COLUMNS, *units)


def rescale(sheet: Sheet, units: Mapping[str, str]) -> dict[str, float]:
    """For each cell that ``sheet`` declares in a unit other than its column's, the factor
    from the sheet's unit to the column's."""
    out: dict[str, float] = {}
    for name in set(units) & set(sheet.names):
        declared = sheet.declaration(name).unit
        if declared == units[name]:
            continue
        have, want = unit(declared), unit(units[name])
        if have.dims != want.dims:
            raise InputError(f"declared in {declared} in one scenario of the sweep and in "
                             f"{units[name]} in another; they do not convert", name=name)
        out[name] = have.factor / want.factor
    return out


def whole(sweep: Sweep, units: Mapping[str, str], progress: Progress | None,
           ) -> dict[str, list[str] | np.ndarray]:
    """Every column of a sweep of at most one chunk: the choices, then each cell."""
    choices: dict[str, list[str]] = {name: [] for name in parquet.CHOICE_COLUMNS}
    cells: dict[str, list[np.ndarray]] = {name: [] for name in units}
    for spec in sweep.specs():
        scenario = sweep.scenario(spec)
        scale = rescale(scenario.sheet, units)
        known = set(scenario.sheet.names)
        present = [n for n in units if n in known]
        judge = sweep_bands.needed(scenario, units)
        for start, stop, columns in grid.chunks(scenario.sheet, sweep.cell_axes,
                                                only=[*present, *judge], scale=scale):
            columns = {**columns, **sweep_bands.band_columns(scenario, columns, units,
                                                             stop - start, scale)}
            for name, value in parquet.choices(scenario).items():
                choices[name] += [value] * (stop - start)
            for name in units:
                column = columns.get(name)
                if column is None:
                    column = np.full(stop - start, math.nan)
                cells[name].append(column * scale[name] if name in scale else column)
            if progress is not None:
                progress(stop - start)
    # one part (one combination): as it is, a constant column the broadcast view it came as
    return {**choices, **{name: parts[0] if len(parts) == 1 else np.concatenate(parts)
                          for name, parts in cells.items()}}
