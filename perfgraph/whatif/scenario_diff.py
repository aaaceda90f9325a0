"""Two scenarios compared: which inputs changed, which results moved, and which edit moved each.

:func:`diff` is pure: two loaded scenarios in, a frozen :class:`DiffReport` out. An input
change is any cell whose declaration differs (a value, or a formula: a pin, or a catalog
entry's own formula); a result is any other cell whose value moved or whose error came or
went. Each moved result is attributed to the changed inputs that reach it: each is applied
alone to a fork of BASE, and the result read there ("concurrency alone: ITL 12.9 → 13.2 ms").
Values are in HEAD's declared units; results are ordered by size of change as a ratio
(``|log(new/old)|``, so halving ranks with doubling), and filtered by relative change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from perfgraph.engine.declarations import Declaration
from perfgraph.engine.numbers import quantity
from perfgraph.engine.sheet import Sheet
from perfgraph.engine.units import unit as parse_unit
from perfgraph.errors import CellError, PerfgraphError
from perfgraph.scenario.catalog import KINDS
from perfgraph.scenario.loading import Scenario

#: Values closer than this (relative) are the same value.
SAME = 1e-12


@dataclass(frozen=True)
class ChoiceChange:
    """A catalog choice that differs: ``hardware: h100-sxm → h200``."""

    kind: str
    old: str
    new: str


@dataclass(frozen=True)
class InputChange:
    """A cell whose declaration differs. ``old``/``new`` are as a person reads them."""

    name: str
    unit: str
    kind: str  # "value", "formula", "added" or "removed"
    old: str
    new: str
    old_value: float | None
    new_value: float | None


@dataclass(frozen=True)
class Contribution:
    """One changed input applied alone to BASE: the result there, and its change."""

    input: str
    alone: float | None
    delta: float | None
    error: str | None = None


@dataclass(frozen=True)
class MovedResult:
    """A result in BASE and HEAD, in HEAD's unit; ``None`` values are failed cells."""

    name: str
    unit: str
    flag: bool
    old: float | None
    new: float | None
    old_error: str | None
    new_error: str | None
    contributions: tuple[Contribution, ...]

    @property
    def delta(self) -> float | None:
        return None if self.old is None or self.new is None else self.new - self.old

    @property
    def ratio(self) -> float | None:
        if self.old is None or self.new is None or self.old == 0:
            return None
        return self.new / self.old

    @property
    def change(self) -> float:
        """Relative size of the change; infinite when a value appears, fails or leaves 0."""
        delta, old = self.delta, self.old
        if delta is None or old is None or old == 0:  # delta is None whenever old is
            return math.inf
        return abs(delta) / abs(old)

    @property
    def size(self) -> float:
        """``|log(new / old)|``: a 2.8× shrink outranks a 1.66× growth. Infinite when a
        value appears, fails, leaves or reaches 0, or changes sign."""
        if self.old is None or self.new is None or self.old * self.new <= 0:
            return math.inf
        return abs(math.log(self.new / self.old))


@dataclass(frozen=True)
class DiffReport:
    base: str
    head: str
    choices: tuple[ChoiceChange, ...]
    inputs: tuple[InputChange, ...]
    results: tuple[MovedResult, ...]

    def moved(self, threshold: float = 0.0) -> tuple[MovedResult, ...]:
        """Results that moved by more than ``threshold`` (a fraction: 0.01 is 1 %)."""
        return tuple(r for r in self.results if r.change > threshold)


def diff(base: Scenario, head: Scenario, base_label: str = "BASE",
         head_label: str = "HEAD", *, attribute: bool = True) -> DiffReport:
    """Compare two loaded scenarios (neither is changed)."""
    inputs = changed_inputs(base.sheet, head.sheet)
    results = moved_results(base.sheet, head.sheet, {c.name for c in inputs})
    if attribute:
        results = attributed(base.sheet, head.sheet, inputs, results)
    return DiffReport(base_label, head_label, choice_changes(base, head), tuple(inputs),
                      tuple(sorted(results, key=lambda r: (-r.size, r.name))))


def choice_changes(base: Scenario, head: Scenario) -> tuple[ChoiceChange, ...]:
    named = [(kind, getattr(base, kind).slug, getattr(head, kind).slug) for kind in KINDS]
    named.append(("precision", base.precision, head.precision))
    return tuple(ChoiceChange(*n) for n in named if n[1] != n[2])


# ----------------------------------------------------------------- inputs
def changed_inputs(base: Sheet, head: Sheet) -> list[InputChange]:
    """Cells declared differently, in HEAD's order (then cells only BASE has)."""
    out = []
    for name in [*head.names, *(n for n in base.names if n not in set(head.names))]:
        old = base.declaration(name) if name in base.names else None
        new = head.declaration(name) if name in head.names else None
        kind = _declaration_change(old, new)
        if kind is not None:
            shown = new or old
            assert shown is not None
            out.append(InputChange(
                name, shown.unit, kind, _text(old), _text(new),
                _value(old, base, shown.unit), _value(new, head, shown.unit)))
    return out


def _declaration_change(old: Declaration | None, new: Declaration | None) -> str | None:
    if old is None or new is None:
        return "added" if old is None else "removed"
    if old.formula is not None or new.formula is not None:
        same = (old.formula and new.formula and old.formula.text == new.formula.text
                and old.parsed_unit.factor == new.parsed_unit.factor)
        return None if same else "formula"
    if old.value is None or new.value is None:
        return None if old.value is new.value else "value"
    if _same(old.value * old.parsed_unit.factor, new.value * new.parsed_unit.factor):
        return None
    return "value"


def _text(decl: Declaration | None) -> str:
    if decl is None:
        return "—"
    if decl.formula is not None:
        return f"= {decl.formula.text}"
    if decl.value is None:
        return "no value"
    return quantity(decl.value, decl.unit, flag=decl.flag)


def _value(decl: Declaration | None, sheet: Sheet, unit: str) -> float | None:
    if decl is None:
        return None
    return _in(sheet, decl.name, unit)


# ----------------------------------------------------------------- results
def _in(sheet: Sheet, name: str, unit: str) -> float | None:
    """``name``'s value in ``unit`` (a unit of the same dimensions), None if it failed."""
    raw = sheet.raw(name)
    if isinstance(raw, CellError):
        return None
    return raw / parse_unit(unit).factor


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=SAME, abs_tol=0.0)


def moved_results(base: Sheet, head: Sheet, changed: set[str]) -> list[MovedResult]:
    """Cells in both sheets, not changed inputs, whose value moved or failed differently;
    not the cells that only mirror the model's own (:func:`mirroring`)."""
    out = []
    skipped = changed | mirroring(base, head)
    for name in head.names:
        if name in skipped or name not in base.names:
            continue
        old_raw, new_raw = base.raw(name), head.raw(name)
        if isinstance(old_raw, CellError) and isinstance(new_raw, CellError):
            continue
        if not isinstance(old_raw, CellError) and not isinstance(new_raw, CellError) \
                and _same(old_raw, new_raw):
            continue
        decl = head.declaration(name)
        out.append(MovedResult(
            name, decl.unit, decl.flag, _in(base, name, decl.unit), _in(head, name, decl.unit),
            _error(old_raw), _error(new_raw), ()))
    return out


def mirroring(base: Sheet, head: Sheet) -> set[str]:
    """The cells that stand for a measurement (``mirrors_model``) and, no run pinning them or
    a measured cell they follow from in either sheet, hold the model's own figures: their
    moves repeat the model's."""
    mirrors, pinned = set(), set()
    for sheet in (base, head):
        for name in sheet.names:
            if sheet.loaded_declaration(name).mirrors_model:
                mirrors.add(name)
                if sheet.declaration(name).is_input or sheet.is_pinned(name):
                    pinned |= {name} | sheet.downstream(name)
    return mirrors - pinned


def _error(raw: float | CellError) -> str | None:
    return raw.message if isinstance(raw, CellError) else None


# ----------------------------------------------------------------- attribution
def attributed(base: Sheet, head: Sheet, inputs: list[InputChange],
               results: list[MovedResult]) -> list[MovedResult]:
    """Each result with, for each changed input that reaches it and moves it alone, its
    value with that input alone applied to BASE. A result moved only by edits together
    (``max(a, b)`` where neither alone wins) has none."""
    moved = {r.name for r in results}
    found: dict[str, list[Contribution]] = {r.name: [] for r in results}
    for change in inputs:
        if change.kind in ("added", "removed"):
            continue
        reached = (base.downstream(change.name) | head.downstream(change.name)) & moved
        if not reached:
            continue
        alone, error = _apply_alone(base, head.declaration(change.name))
        for result in results:
            if result.name in reached:
                c = _contribution(change.name, result, alone, error)
                found[result.name] += [c] if c is not None else []
    return [_with(r, found[r.name]) for r in results]


def _apply_alone(base: Sheet, decl: Declaration) -> tuple[Sheet | None, str | None]:
    fork = base.fork()
    try:
        fork.restore(decl)
    except PerfgraphError as exc:  # a HEAD formula that names a cell BASE lacks, say
        return None, f"cannot be applied alone: {exc.message}"
    return fork, None


def _contribution(name: str, result: MovedResult, alone: Sheet | None,
                  error: str | None) -> Contribution | None:
    if alone is None:
        return Contribution(name, None, None, error)
    value = _in(alone, result.name, result.unit)
    if value is None:
        failed = alone.error(result.name)
        return Contribution(name, None, None, failed.message if failed else None)
    delta = None if result.old is None else value - result.old
    if delta is not None and _same(value, result.old):  # type: ignore[arg-type]
        return None  # this edit alone leaves the result where it was
    return Contribution(name, value, delta)


def _with(result: MovedResult, contributions: list[Contribution]) -> MovedResult:
    ranked = sorted(contributions, key=lambda c: (
        c.delta is None, -abs(c.delta or 0.0), c.input))
    return replace(result, contributions=tuple(ranked))
