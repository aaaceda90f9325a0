"""Parameter sweeps: the cartesian product of axes, every cell a column, one row a point.

An axis is ``NAME=V1,V2,…``. NAME is a cell (any cell: an input, or a computed cell pinned
to each value) or a catalog axis (``model``, ``hardware``, ``workload``, ``precision``,
``engine``) whose values are catalog names. A value may carry units
(``hbm_bandwidth=3.35 TB/s,4.8 TB/s``) and an item may be a range: ``1..512:x2`` (1, 2, 4
… 512), ``0..64:+16``, ``1..8`` (step 1).

Rows go catalog combination by catalog combination (each builds one sheet), and within one
the cell axes as given, the last varying fastest. The cell points of a combination are
evaluated a chunk at a time, each chunk with one :meth:`Sheet.evaluate_columns` call (each
formula once over whole columns), and streamed to Parquet or CSV
(:mod:`perfgraph.output.sweep_file`), so memory stays bounded however
many points there are.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from perfgraph.engine.assign import interpret
from perfgraph.engine.sheet import Sheet
from perfgraph.engine.units import unit
from perfgraph.errors import CatalogError, InputError, PerfgraphError, UnknownNameError
from perfgraph.errors import did_you_mean as _near
from perfgraph.scenario.catalog import KINDS, load_entry, resolve
from perfgraph.scenario.loading import Scenario, ScenarioSpec, engine_names, load, precisions
from perfgraph.whatif import sweep_bands
from perfgraph.whatif.grid import CHUNK_ROWS, grid_columns  # noqa: F401  (sweep.grid_columns, as before)

#: The most points one sweep may have.
MAX_POINTS = 50_000_000
CATALOG_AXES = (*KINDS, "precision", "engine")
#: Catalog axes that are not catalog files declaring cells.
_NOT_FILES = ("precision", "engine")
#: Scenarios :func:`plan` keeps for the sweep to use (about 0.5 MB each); beyond this many
#: combinations each is loaded again when its turn comes.
KEEP_LOADED = 64

_RANGE = re.compile(r"^(?P<start>[^:]+?)\.\.(?P<stop>[^:]+?)(?::(?P<op>[x*+])(?P<step>.+))?$")
RANGE_FORMS = "START..STOP, START..STOP:xFACTOR or START..STOP:+STEP"
#: A value that starts like a number: the number, then nothing, or a unit after it.
_NUMBER = re.compile(r"^[+-]?(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d+)?(?P<rest>.*)$")
_UNIT_START = re.compile(r"^(?:$|\s|[^\W\d_]|%)")

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
    """A scenario and the axes to sweep it over; ``loaded`` keeps the scenarios that
    :func:`plan` loaded to check them, so a sweep of few combinations loads each once."""

    spec: ScenarioSpec
    axes: tuple[Axis, ...]
    loaded: Mapping[ScenarioSpec, Scenario] = field(default_factory=dict, compare=False,
                                                    repr=False)

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

    def combinations(self) -> Iterator[tuple[str, ScenarioSpec]]:
        """Each catalog combination, in row order: ``"hardware=h200, precision=fp8"``
        (empty without catalog axes) and its scenario."""
        names = [a.name for a in self.catalog_axes]
        for combo in itertools.product(*(a.values for a in self.catalog_axes)):
            # catalog axes hold names; Any because the keys (spec fields) are only known at run time
            chosen: dict[str, Any] = dict(zip(names, combo, strict=True))
            label = ", ".join(f"{k}={v}" for k, v in chosen.items())
            yield label, replace(self.spec, **chosen)

    def specs(self) -> Iterator[ScenarioSpec]:
        """One scenario per catalog combination, in row order."""
        return (spec for _, spec in self.combinations())

    def scenario(self, spec: ScenarioSpec) -> Scenario:
        found = self.loaded.get(spec)
        return found if found is not None else load(spec)


# --------------------------------------------------------------------- parsing axes
def plan(spec: ScenarioSpec, axis_texts: Sequence[str], sheet: Sheet | None = None) -> Sweep:
    """Parse ``--axis`` texts and check them against every catalog combination up front:
    each must load and have every cell axis, in units that convert (so a sweep never
    fails half way for a bad combination). InputError etc., naming the combination."""
    if not axis_texts:
        raise InputError("a sweep needs at least one --axis NAME=V1,V2,…")
    split = [(text.partition("=")[0].strip(), text) for text in axis_texts]
    for i, (name, _) in enumerate(split):
        if name and any(other == name for other, _ in split[:i]):
            raise InputError(f"axis {name!r} given twice", name=name)
    catalog = {n: parse_axis(t, None) for n, t in split if n in CATALOG_AXES}
    draft = Sweep(spec, tuple(catalog.values()))
    check_size(draft.points)
    combos = draft.combinations()
    label, first = next(combos)
    loaded = {first: _load(first, label)}
    if sheet is None:
        sheet = loaded[first].sheet
    axes = []
    for name, text in split:
        if name not in catalog and label and name not in sheet.names and _in_any(name, draft):
            raise _missing(name, label)
        axes.append(catalog[name] if name in catalog else parse_axis(text, sheet))
    sweep = Sweep(spec, tuple(axes), loaded)
    check_size(sweep.points)
    cells = {a.name: sheet.declaration(a.name).unit for a in sweep.cell_axes}
    for label, other in combos:
        scenario = _load(other, label)
        _check_combination(scenario.sheet, cells, label)
        if len(loaded) < KEEP_LOADED:
            loaded[other] = scenario
    return sweep


def _load(spec: ScenarioSpec, label: str) -> Scenario:
    """A combination's scenario; its error names the combination (when there are any)."""
    try:
        return load(spec)
    except PerfgraphError as exc:
        if not label:
            raise
        raise InputError(f"the sweep's combination {label} cannot load: {exc}") from None


def _missing(name: str, label: str) -> InputError:
    return InputError(f"the sweep's combination {label} has no cell named {name!r} to "
                      f"sweep (a catalog entry on another axis declares it)", name=name)


def _in_any(name: str, draft: Sweep) -> bool:
    """Whether a catalog entry on one of the axes declares the cell ``name``."""
    return any(name == cell for axis in draft.catalog_axes if axis.name not in _NOT_FILES
               for value in axis.values for cell, _ in load_entry(axis.name, str(value)).cells())


def _check_combination(sheet: Sheet, cells: Mapping[str, str], label: str) -> None:
    """Every cell axis is in ``sheet``, declared in a unit its values convert to."""
    for name, wanted in cells.items():
        if name not in sheet.names:
            raise _missing(name, label)
        declared = sheet.declaration(name).unit
        if declared != wanted and unit(declared).dims != unit(wanted).dims:
            raise InputError(f"the sweep's combination {label} declares it in {declared}, "
                             f"which the axis values (in {wanted}) do not convert to",
                             name=name)


def check_size(points: int) -> None:
    if points > MAX_POINTS:
        raise InputError(f"the axes make {points:,} points, more than the limit of "
                         f"{MAX_POINTS:,}; sweep fewer values or split the sweep")


def parse_axis(text: str, sheet: Sheet | None) -> Axis:
    """``NAME=V1,V2,…``: a catalog axis (``sheet`` is not needed), or a cell of ``sheet``."""
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
    assert sheet is not None, "a cell axis is read against a sheet"
    if name not in sheet.names:
        raise UnknownNameError(f"no cell named {name!r} to sweep"
                               f"{_near(name, [*sheet.names, *CATALOG_AXES])}", name=name)
    values: list[float] = []
    for part in parts:
        values.extend(_range(part, name) if ".." in part else [_value(sheet, name, part)])
        check_size(len(values))
    decl = sheet.declaration(name)
    if decl.is_input:  # what --set would refuse, an axis refuses too (tp=0, a 1.5 fraction)
        for value in values:
            try:
                decl.check_value(value)
            except PerfgraphError as exc:
                raise InputError(f"axis {text!r}: {exc.message}", name=name) from None
    return Axis(name, tuple(values))


def _catalog_value(kind: str, name: str) -> str:
    if kind in _NOT_FILES:
        known = list(precisions().data) if kind == "precision" else engine_names()
        if name not in known:
            raise CatalogError(f"unknown {kind} {name!r}{_near(name, known)}; known: "
                               f"{', '.join(known)}", name=kind)
    else:
        resolve(kind, name)  # CatalogError naming the known entries
    return name


def _value(sheet: Sheet, name: str, text: str) -> float:
    number = _NUMBER.match(text)
    if number is not None and not _UNIT_START.match(number["rest"]):
        raise InputError(f"malformed value {text!r}: expected a number, with units if any "
                         f"(3.35 TB/s), or a range {RANGE_FORMS}", name=name)
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
    if m is None or item.count("..") != 1 or "..." in item:
        raise InputError(f"malformed range {item!r}: expected {RANGE_FORMS}", name=name)
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


def cell_units(sweep: Sweep, sheet: Sheet) -> dict[str, str]:
    """Every cell a row may have, with its unit: the scenario's, then any that a catalog
    entry on an axis declares (DeepSeek-V3's MLA widths); rows without one hold NaN."""
    out = {n: sheet.declaration(n).unit for n in sheet.names}
    for axis in sweep.catalog_axes:
        if axis.name in _NOT_FILES:
            continue
        for value in axis.values:
            for name, table in load_entry(axis.name, str(value)).cells():
                if name not in out and isinstance(table.get("unit"), str):
                    out[name] = table["unit"]
    return out


def selected_units(sweep: Sweep, only: Sequence[str] | None = None) -> dict[str, str]:
    """The cell columns to write (``only``, or every cell), each with its unit; then,
    calibrated, each fitted metric's band columns (:mod:`perfgraph.whatif.sweep_bands`)."""
    units = cell_units(sweep, sweep.scenario(next(sweep.specs())).sheet)
    if only is not None:
        for name in only:
            if name not in units:
                raise UnknownNameError(f"no cell named {name!r}{_near(name, units)}",
                                       name=name)
        units = {n: units[n] for n in only}
    return {**units, **sweep_bands.band_units(sweep.spec.calibration is not None, units)}
