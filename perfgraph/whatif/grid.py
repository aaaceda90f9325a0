"""The search core that ``perfgraph sweep`` and ``perfgraph plan`` share: the cartesian product
of axes as columns, evaluated a chunk at a time by :meth:`Sheet.evaluate_columns`.

An axis is one cell and its values (:class:`perfgraph.whatif.sweep_axes.Axis`), or a
:class:`Block`: several cells that change together, one row of values per item (a catalog
accelerator at one precision sets hbm_bandwidth, peak_flops, weight_bytes … at once). Rows
run through the product with the last axis varying fastest.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator, Mapping, Sequence
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


def axis_stride(axes: Sequence[AnyAxis], name: str) -> int:
    """Rows between two items of axis ``name`` in the product: its faster axes' sizes."""
    names = [a.name for a in axes]
    return math.prod(len(a.values) for a in axes[names.index(name) + 1:])


def grid_columns(axes: Sequence[AnyAxis], start: int, stop: int) -> dict[str, np.ndarray]:
    """The axes' cell values for rows ``start:stop`` of their product (last fastest): each
    column spread from its axis's values by runs or a repeated period (:func:`spread`),
    the same values :func:`indices` would pick, without a division per row."""
    out: dict[str, np.ndarray] = {}
    stride = 1
    strides: dict[str, int] = {}
    for axis in reversed(axes):
        strides[axis.name], stride = stride, stride * len(axis.values)
    for axis in axes:
        if isinstance(axis, Choice):
            continue
        if isinstance(axis, Block):
            table = np.asarray(axis.rows, dtype=float).reshape(len(axis.rows), len(axis.names))
            for j, name in enumerate(axis.names):
                out[name] = spread(table[:, j], start, stop, strides[axis.name])
        else:
            values = np.asarray(axis.values, dtype=float)
            out[axis.name] = spread(values, start, stop, strides[axis.name])
    return out


def spread(values: np.ndarray, start: int, stop: int, stride: int) -> np.ndarray:
    """``values[(row // stride) % len(values)]`` for rows ``start:stop``: a period that fits
    the rows is repeated (``np.resize``), a longer one is cut into its runs of one value."""
    n, period = stop - start, len(values) * stride
    if period <= n:
        pattern = np.roll(np.repeat(values, stride), -(start % period))
        return np.resize(pattern, n)
    first, last = start // stride, (stop - 1) // stride
    edges = np.clip(np.arange(first, last + 2, dtype=np.int64) * stride, start, stop)
    return np.repeat(values[np.arange(first, last + 1) % len(values)], np.diff(edges))


def spans(rows: range, chunk_rows: int = CHUNK_ROWS) -> list[tuple[int, int]]:
    """``rows`` cut into runs of at most ``chunk_rows``: the chunks a search evaluates."""
    return [(start, min(rows.stop, start + chunk_rows))
            for start in range(rows.start, rows.stop, chunk_rows)]


def chunks(sheet: Sheet, axes: Sequence[AnyAxis], only: Collection[str] | None = None,
           chunk_rows: int = CHUNK_ROWS, scale: dict[str, float] | None = None,
           rows: range | None = None) -> Iterator[tuple[int, int, dict[str, np.ndarray]]]:
    """``(start, stop, columns)`` for each chunk of the product of ``axes`` on ``sheet``:
    every cell (or those of ``only``) over the chunk's rows, in declared units. ``scale``
    divides an axis's values first (a column unit that is not the sheet's); ``rows`` limits
    the chunks to a run of the product (one value of a :class:`Choice`)."""
    rows = rows if rows is not None else range(size(axes))
    for start, stop in spans(rows, chunk_rows):
        grid = grid_columns(axes, start, stop)
        if scale:
            grid = {n: c / scale.get(n, 1.0) for n, c in grid.items()}
        yield start, stop, sheet.evaluate_columns(grid, stop - start, only)


# --------------------------------------------------------------------- boxes: N-D chunks
def box_spans(axes: Sequence[AnyAxis], chunk_rows: int = CHUNK_ROWS) -> list[tuple[int, int]]:
    """The product's rows cut into boxes of about ``chunk_rows`` (at least one run of the
    fastest axes): a box fixes the slower axes, takes a run of one axis and all of each
    faster one, so its columns are an N-D grid (:func:`box_columns`)."""
    sizes = [len(a.values) for a in axes]
    tail, j = 1, len(sizes)
    while j > 0 and tail * sizes[j - 1] <= chunk_rows:
        j -= 1
        tail *= sizes[j]
    if j == 0:
        return [(0, tail)]
    length, step = sizes[j - 1], max(1, chunk_rows // tail)
    return [(base + a * tail, base + min(a + step, length) * tail)
            for base in range(0, size(axes), length * tail) for a in range(0, length, step)]


def box_columns(axes: Sequence[AnyAxis], start: int, stop: int,
                ) -> tuple[tuple[int, ...], dict[str, np.ndarray]]:
    """A box's shape (one dimension per axis) and its columns, each along its own axis's
    dimension (1 elsewhere): NumPy broadcasts each cell to the axes it depends on."""
    where = indices(axes, start, start + 1)
    counts, rest = [], stop - start
    for axis in reversed(axes):
        count = min(len(axis.values), rest)
        counts.append(count)
        rest = rest // count if count == len(axis.values) else 1
    counts.reverse()
    assert math.prod(counts) == stop - start, "rows start:stop are not a box (box_spans)"
    return tuple(counts), _box(axes, [int(where[a.name][0]) for a in axes], counts)


def _box(axes: Sequence[AnyAxis], firsts: Sequence[int], counts: Sequence[int],
         ) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for i, axis in enumerate(axes):
        shape = [1] * len(axes)
        shape[i] = counts[i]
        items = slice(firsts[i], firsts[i] + counts[i])
        if isinstance(axis, Block):
            table = np.asarray(axis.rows, dtype=float).reshape(len(axis.rows), len(axis.names))
            out.update({n: table[items, j].reshape(shape) for j, n in enumerate(axis.names)})
        elif not isinstance(axis, Choice):
            out[axis.name] = np.asarray(axis.values, dtype=float)[items].reshape(shape)
    return out


def broadcasts(sheet: Sheet, axes: Sequence[AnyAxis], only: Collection[str]) -> bool:
    """Whether ``sheet`` evaluates ``only`` over N-D columns (a probe of the first two values
    of each axis). Where a formula cannot broadcast its reads' shapes (NumPy raises
    ValueError), a search evaluates flat columns instead (the same values, every cell at
    every row)."""
    counts = [min(2, len(a.values)) for a in axes]
    try:
        sheet.evaluate_columns(_box(axes, [0] * len(axes), counts), math.prod(counts), only)
    except ValueError:
        return False
    return True


def evaluate_box(sheet: Sheet, axes: Sequence[AnyAxis], start: int, stop: int,
                 only: Collection[str], shaped: bool,
                 cap: Mapping[str, float] | None = None) -> dict[str, np.ndarray]:
    """Rows ``start:stop`` (a box of :func:`box_spans`) on ``sheet``: each cell of ``only``
    as a flat column, as ``evaluate_columns(grid_columns(…))`` gives it. ``shaped``: over the
    box's N-D grid, each cell computed once per combination of the axes it depends on (a
    cell of the accelerator alone once per accelerator, not once per row). ``cap``: an
    axis column held at or below a value (a link no faster than the other end's)."""
    n = stop - start
    if not shaped:
        return sheet.evaluate_columns(_capped(grid_columns(axes, start, stop), cap), n, only)
    shape, columns = box_columns(axes, start, stop)
    out = sheet.evaluate_columns(_capped(columns, cap), n, only)
    return {name: (np.broadcast_to(v, shape).reshape(-1) if v.ndim == len(shape)
                   else np.broadcast_to(v.reshape(-1)[:1], (n,)))  # a constant: 1-D, 0-stride
            for name, v in out.items()}


def _capped(columns: dict[str, np.ndarray], cap: Mapping[str, float] | None,
            ) -> dict[str, np.ndarray]:
    for name, most in (cap or {}).items():
        if name in columns:
            columns[name] = np.minimum(columns[name], most)
    return columns
