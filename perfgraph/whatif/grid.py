"""The search core that ``perfgraph sweep`` and ``perfgraph plan`` share: the cartesian product
of axes as columns, evaluated a chunk at a time by :meth:`Sheet.evaluate_columns`.

An axis is one cell and its values (:class:`perfgraph.whatif.sweep.Axis`), or a
:class:`Block`: several cells that change together, one row of values per item (a catalog
accelerator at one precision sets hbm_bandwidth, peak_flops, weight_bytes … at once). Rows
run through the product with the last axis varying fastest.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from perfgraph.engine.sheet import Sheet

#: Rows per evaluation: small enough that a chunk's columns stay in cache.
CHUNK_ROWS = 65_536


class OneCell(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def values(self) -> tuple[float, ...] | tuple[str, ...]: ...


@dataclass(frozen=True)
class Block:
    """Cells that vary together: ``labels[i]`` names the item whose values are ``rows[i]``
    (one value per name, each in that cell's declared unit)."""

    name: str
    names: tuple[str, ...]
    labels: tuple[str, ...]
    rows: tuple[tuple[float, ...], ...]

    @property
    def values(self) -> tuple[str, ...]:
        return self.labels


@dataclass(frozen=True)
class Choice:
    """A choice that sets no cell of a column but needs a sheet of its own (the engine: its
    file's memory rule and defaults are formulas). Its rows are searched one value at a
    time, each on its own sheet; :func:`grid_columns` gives it no column."""

    name: str
    values: tuple[str, ...]


AnyAxis = OneCell | Block | Choice


def size(axes: Sequence[AnyAxis]) -> int:
    return math.prod(len(a.values) for a in axes)


def indices(axes: Sequence[AnyAxis], start: int, stop: int) -> dict[str, np.ndarray]:
    """Each axis's item index for rows ``start:stop`` of the product (last fastest)."""
    rows = np.arange(start, stop, dtype=np.int64)
    out: dict[str, np.ndarray] = {}
    stride = 1
    for axis in reversed(axes):
        out[axis.name] = (rows // stride) % len(axis.values)
        stride *= len(axis.values)
    return out


def grid_columns(axes: Sequence[AnyAxis], start: int, stop: int) -> dict[str, np.ndarray]:
    """The axes' cell values for rows ``start:stop`` of their product (last fastest)."""
    out: dict[str, np.ndarray] = {}
    where = indices(axes, start, stop)
    for axis in axes:
        if isinstance(axis, Choice):
            continue
        if isinstance(axis, Block):
            table = np.asarray(axis.rows, dtype=float).reshape(len(axis.rows), len(axis.names))
            for j, name in enumerate(axis.names):
                out[name] = table[where[axis.name], j]
        else:
            out[axis.name] = np.asarray(axis.values, dtype=float)[where[axis.name]]
    return out


def chunks(sheet: Sheet, axes: Sequence[AnyAxis], only: Collection[str] | None = None,
           chunk_rows: int = CHUNK_ROWS, scale: dict[str, float] | None = None,
           rows: range | None = None) -> Iterator[tuple[int, int, dict[str, np.ndarray]]]:
    """``(start, stop, columns)`` for each chunk of the product of ``axes`` on ``sheet``:
    every cell (or those of ``only``) over the chunk's rows, in declared units. ``scale``
    divides an axis's values first (a column unit that is not the sheet's); ``rows`` limits
    the chunks to a run of the product (one value of a :class:`Choice`)."""
    rows = rows if rows is not None else range(size(axes))
    for start in range(rows.start, rows.stop, chunk_rows):
        stop = min(rows.stop, start + chunk_rows)
        grid = grid_columns(axes, start, stop)
        if scale:
            grid = {n: c / scale.get(n, 1.0) for n, c in grid.items()}
        yield start, stop, sheet.evaluate_columns(grid, stop - start, only)
