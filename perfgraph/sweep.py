"""Parameter sweeps: the cartesian product of axes, every cell a column, one row a point.

An axis is ``NAME=V1,V2,…``. NAME is a cell (any cell: an input, or a computed cell pinned
to each value) or a catalog axis (``model``, ``hardware``, ``workload``, ``precision``)
whose values are catalog names. A value may carry units (``hbm_bandwidth=3.35 TB/s,4.8 TB/s``)
and an item may be a range: ``1..512:x2`` (1, 2, 4 … 512), ``0..64:+16``, ``1..8`` (step 1).

Rows go catalog combination by catalog combination (each builds one sheet), and within one
the cell axes as given, the last varying fastest. The cell points of a combination are
evaluated a chunk at a time, each chunk with one :meth:`Sheet.evaluate_columns` call (each
formula once over whole columns), and streamed to Parquet, so memory stays bounded however
many points there are.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

import numpy as np
import polars as pl

from perfgraph import export
from perfgraph.assign import interpret
from perfgraph.catalog import KINDS, load_entry, resolve
from perfgraph.errors import CatalogError, InputError, PerfgraphError, UnknownNameError
from perfgraph.errors import did_you_mean as _near
from perfgraph.graph import Sheet
from perfgraph.scenario import ScenarioSpec, load, precisions
from perfgraph.units import unit

#: The most points one sweep may have.
MAX_POINTS = 50_000_000
#: Rows per evaluation: small enough that a chunk's columns stay in cache.
CHUNK_ROWS = 65_536
CATALOG_AXES = (*KINDS, "precision")

_RANGE = re.compile(r"^(?P<start>[^:]+?)\.\.(?P<stop>[^:]+?)(?::(?P<op>[x*+])(?P<step>.+))?$")

Progress = Callable[[int], None]


@dataclass(frozen=True)
class Axis:
    """One axis: a cell's values (in its declared unit) or catalog names."""

    name: str
    values: tuple[float, ...] | tuple[str, ...]

    @property
    def is_catalog(self) -> bool:
        return self.name in CATALOG_AXES


@dataclass(frozen=True)
class Sweep:
    """A scenario and the axes to sweep it over."""

    spec: ScenarioSpec
    axes: tuple[Axis, ...]

    @property
    def catalog_axes(self) -> tuple[Axis, ...]:
        return tuple(a for a in self.axes if a.is_catalog)

    @property
    def cell_axes(self) -> tuple[Axis, ...]:
        return tuple(a for a in self.axes if not a.is_catalog)

    @property
    def grid_size(self) -> int:
        """Points per catalog combination."""
        return math.prod(len(a.values) for a in self.cell_axes)

    @property
    def points(self) -> int:
        return math.prod(len(a.values) for a in self.axes)

    def specs(self) -> Iterator[ScenarioSpec]:
        """One scenario per catalog combination, in row order."""
        names = [a.name for a in self.catalog_axes]
        for combo in itertools.product(*(a.values for a in self.catalog_axes)):
            yield replace(self.spec, **dict(zip(names, combo, strict=True)))


# --------------------------------------------------------------------- parsing axes
def plan(spec: ScenarioSpec, axis_texts: Sequence[str], sheet: Sheet | None = None) -> Sweep:
    """Parse ``--axis`` texts against the scenario's sheet; InputError etc. for bad axes."""
    if not axis_texts:
        raise InputError("a sweep needs at least one --axis NAME=V1,V2,…")
    sheet = sheet if sheet is not None else load(spec).sheet
    axes: list[Axis] = []
    for text in axis_texts:
        axis = parse_axis(text, sheet)
        if any(a.name == axis.name for a in axes):
            raise InputError(f"axis {axis.name!r} given twice", name=axis.name)
        axes.append(axis)
    sweep = Sweep(spec, tuple(axes))
    check_size(sweep.points)
    return sweep


def check_size(points: int) -> None:
    if points > MAX_POINTS:
        raise InputError(f"the axes make {points:,} points, more than the limit of "
                         f"{MAX_POINTS:,}; sweep fewer values or split the sweep")


def parse_axis(text: str, sheet: Sheet) -> Axis:
    name, sep, items = text.partition("=")
    name = name.strip()
    if not sep or not name or not items.strip():
        raise InputError(f"--axis expects NAME=V1,V2,… or NAME=START..STOP:xFACTOR, "
                         f"got {text!r}")
    parts = [p.strip() for p in items.split(",")]
    if any(not p for p in parts):
        raise InputError(f"empty value in axis {text!r}", name=name)
    if name in CATALOG_AXES:
        return Axis(name, tuple(_catalog_value(name, p) for p in parts))
    if name not in sheet.names:
        raise UnknownNameError(f"no cell named {name!r} to sweep"
                               f"{_near(name, [*sheet.names, *CATALOG_AXES])}", name=name)
    values: list[float] = []
    for part in parts:
        values.extend(_range(part, name) if _RANGE.match(part) else [_value(sheet, name, part)])
        check_size(len(values))
    return Axis(name, tuple(values))


def _catalog_value(kind: str, name: str) -> str:
    if kind == "precision":
        known = precisions().data
        if name not in known:
            raise CatalogError(f"unknown precision {name!r}{_near(name, known)}; known: "
                               f"{', '.join(known)}", name="precision")
    else:
        resolve(kind, name)  # CatalogError naming the known entries
    return name


def _value(sheet: Sheet, name: str, text: str) -> float:
    assignment = interpret(sheet.declaration(name), text)
    if assignment.value is None:
        raise InputError(f"axis values must be numbers (with units if any), not the "
                         f"formula {text!r}", name=name)
    return assignment.value


def _number(text: str, name: str, item: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise InputError(f"range {item!r}: {text.strip()!r} is not a number", name=name) from None
    if not math.isfinite(x):
        raise InputError(f"range {item!r}: {text.strip()!r} is not a finite number", name=name)
    return x


def _check_range(item: str, name: str, count: int) -> None:
    if count > MAX_POINTS:
        raise InputError(f"range {item!r} has {count:,} values, more than the limit of "
                         f"{MAX_POINTS:,} points", name=name)


def _range(item: str, name: str) -> list[float]:
    """``START..STOP[:xF|:+S]``, both ends included when the steps land on STOP."""
    m = _RANGE.match(item)
    assert m is not None
    start, stop = _number(m["start"], name, item), _number(m["stop"], name, item)
    op, step = m["op"] or "+", _number(m["step"] or "1", name, item)
    if start > stop:
        raise InputError(f"empty range {item!r}: {m['start']} is above {m['stop']}", name=name)
    if op == "+":
        if step <= 0:
            raise InputError(f"range {item!r}: the step must be above 0", name=name)
        count = math.floor((stop - start) / step + 1e-9) + 1
        _check_range(item, name, count)
        return [_tidy(start + k * step) for k in range(count)]
    if start <= 0 or step <= 1:
        raise InputError(f"range {item!r}: a ×FACTOR range needs START > 0 and FACTOR > 1",
                         name=name)
    count = math.floor(math.log(stop / start) / math.log(step) + 1e-9) + 1
    _check_range(item, name, count)
    return [_tidy(start * step ** k) for k in range(count)]


def _tidy(x: float) -> float:
    """``0.30000000000000004`` → ``0.3``: a range's steps as a person would write them."""
    return float(f"{x:.12g}")


# --------------------------------------------------------------------- evaluating
def grid_columns(axes: Sequence[Axis], start: int, stop: int) -> dict[str, np.ndarray]:
    """The cell axes' values for rows ``start:stop`` of their product (last fastest)."""
    rows = np.arange(start, stop, dtype=np.int64)
    out: dict[str, np.ndarray] = {}
    stride = 1
    for axis in reversed(axes):
        values = np.asarray(axis.values, dtype=float)
        out[axis.name] = values[(rows // stride) % len(values)]
        stride *= len(values)
    return out


def frames(sweep: Sweep, units: Mapping[str, str], progress: Progress | None = None,
           chunk_rows: int = CHUNK_ROWS) -> Iterator[pl.DataFrame]:
    """Every row of the sweep, a chunk at a time: choice columns, then a column per cell
    of ``units``, in that unit (a catalog entry may declare a cell in another)."""
    grid = sweep.grid_size
    for spec in sweep.specs():
        scenario = load(spec)
        chosen = [pl.lit(v, dtype=pl.String).alias(k)
                  for k, v in export.choices(scenario).items()]
        scale = _rescale(scenario.sheet, units)
        for start in range(0, grid, chunk_rows):
            stop = min(grid, start + chunk_rows)
            grid_cols = grid_columns(sweep.cell_axes, start, stop)
            columns = scenario.sheet.evaluate_columns(
                {n: c / scale.get(n, 1.0) for n, c in grid_cols.items()}, stop - start)
            yield chunk_frame(columns, units, scale, chosen, stop - start)
            if progress is not None:
                progress(stop - start)


def chunk_frame(columns: Mapping[str, np.ndarray], units: Mapping[str, str],
           scale: Mapping[str, float], chosen: list[pl.Expr], length: int) -> pl.DataFrame:
    """One chunk as a frame. A cell the axes do not reach is a literal, not a column of
    copies; a cell this scenario lacks is NaN."""
    varying: dict[str, np.ndarray] = {}
    constant = []
    for name in units:
        column = columns.get(name)
        if column is not None and name in scale:
            column = column * scale[name]
        if column is None or column.strides == (0,):
            value = math.nan if column is None else float(column[0])
            constant.append(pl.lit(value, dtype=pl.Float64).alias(name))
        else:
            varying[name] = column
    frame = pl.DataFrame(varying) if varying else pl.DataFrame(height=length)
    return frame.with_columns(*chosen, *constant).select(*export.CHOICE_COLUMNS, *units)


def _rescale(sheet: Sheet, units: Mapping[str, str]) -> dict[str, float]:
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


def cell_units(sweep: Sweep, sheet: Sheet) -> dict[str, str]:
    """Every cell a row may have, with its unit: the scenario's, then any that a catalog
    entry on an axis declares (DeepSeek-V3's MLA widths); rows without one hold NaN."""
    out = export.units(sheet, sheet.names)
    for axis in sweep.catalog_axes:
        if axis.name == "precision":
            continue
        for value in axis.values:
            for name, table in load_entry(axis.name, str(value)).cells():
                if name not in out and isinstance(table.get("unit"), str):
                    out[name] = table["unit"]
    return out


def selected_units(sweep: Sweep, only: Sequence[str] | None = None) -> dict[str, str]:
    """The cell columns to write (``only``, or every cell), each with its unit."""
    units = cell_units(sweep, load(sweep.spec).sheet)
    if only is None:
        return units
    for name in only:
        if name not in units:
            raise UnknownNameError(f"no cell named {name!r}{_near(name, units)}", name=name)
    return {n: units[n] for n in only}


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
    try:
        export.write_frames(path, guarded, export.schema(list(units)), units, axes)
    except Exception:
        if failure:
            raise failure[0] from None
        raise
    return units


def write_csv(sweep: Sweep, stream: TextIO, only: Sequence[str] | None = None) -> None:
    """The sweep as CSV on ``stream`` (a header, then a chunk at a time)."""
    for i, frame in enumerate(frames(sweep, selected_units(sweep, only))):
        stream.write(frame.write_csv(include_header=i == 0))
