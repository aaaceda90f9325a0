"""Declarations: what a TOML sheet says about a cell, as frozen data that never evaluates.

A declaration is a name, a unit, either a value (an input) or a formula, a one-line doc, a
group for the dashboard, where the formula comes from, and where it was declared (file and
line), so that any later error can point back at the TOML.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from perfgraph.engine.formula import Formula, parse
from perfgraph.engine.units import FORMULA_UNITS, Unit, unit
from perfgraph.errors import DeclarationError

#: What an input may hold, by the ``domain`` a sheet declares for it: (test, expected).
DOMAINS: dict[str, tuple[Callable[[float], bool], str]] = {
    "positive": (lambda x: x > 0, "a number above 0"),
    "nonnegative": (lambda x: x >= 0, "a number of at least 0"),
    "count": (lambda x: x >= 1 and x == int(x), "a whole number of at least 1"),
    "whole": (lambda x: x >= 0 and x == int(x), "a whole number of at least 0"),
    "fraction": (lambda x: 0 < x <= 1, "a fraction above 0 and at most 1"),
    "probability": (lambda x: 0 <= x <= 1, "a probability from 0 to 1"),
    "at_least_one": (lambda x: x >= 1, "a number of at least 1"),
}


@dataclass(frozen=True)
class Origin:
    """Where something was declared or set."""

    file: str
    line: int | None = None
    #: Declared by one of the shipped formula sheets (not by a user, a catalog or --set).
    shipped: bool = False

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True)
class Declaration:
    """One cell of the sheet.

    ``value`` is in ``unit`` (not canonical) and only for inputs; ``formula`` only for
    computed cells. ``flag`` marks on/off inputs (TOML booleans). ``mirrors_model`` marks a
    cell that stands for a measurement and holds the model's own figure until a run pins it
    (``diff`` reports it only where one is pinned). ``domain`` names what an
    input may hold (a key of :data:`DOMAINS`); a value outside it is refused wherever it
    comes from (a catalog, a scenario, ``--set``, the dashboard, a lever).
    """

    name: str
    unit: str
    doc: str = ""
    group: str = "other"
    source: str = ""
    value: float | None = None
    formula: Formula | None = None
    flag: bool = False
    origin: Origin | None = None
    domain: str | None = None
    mirrors_model: bool = False

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or self.name.startswith("_"):
            raise DeclarationError(
                "a cell name must be a plain identifier (letters, digits, _; not starting "
                "with _ or a digit)", name=self.name)
        if self.name in FORMULA_UNITS:
            raise DeclarationError(
                f"{self.name!r} is a unit in formulas; choose another cell name",
                name=self.name)
        if self.value is not None and self.formula is not None:
            raise DeclarationError("a cell has either a value or a formula, not both",
                                   name=self.name)
        if self.domain is not None and self.domain not in DOMAINS:
            raise DeclarationError(f"unknown domain {self.domain!r}; expected one of: "
                                   f"{', '.join(DOMAINS)}", name=self.name)
        if self.value is not None:
            self._check_value(self.value)

    def check_value(self, value: float) -> None:
        """Refuse ``value`` (in the declared unit) if this input cannot hold it: a
        DeclarationError naming the cell, the value and what it can hold."""
        self._check_value(value, located=False)

    def _check_value(self, value: float, located: bool = True) -> None:
        """Refuse a value this input cannot hold, saying what it can (and, ``located``,
        where the value was set)."""
        if not math.isfinite(value):
            expected = "a finite number"
        elif self.flag and value not in (0, 1):
            expected = "on or off (true/false, 1/0)"
        elif self.domain is not None and not DOMAINS[self.domain][0](value):
            expected = DOMAINS[self.domain][1]
        else:
            return
        shown = f"{value:g}" + (f" {self.unit}" if self.unit else "")
        where = self.origin if located else None
        raise DeclarationError(f"{shown} is out of range: expected {expected}",
                               name=self.name, file=where.file if where else None,
                               line=where.line if where else None)

    @property
    def is_input(self) -> bool:
        return self.formula is None

    @property
    def parsed_unit(self) -> Unit:
        return unit(self.unit)

    def with_value(self, value: float, origin: Origin | None = None) -> Declaration:
        """The same cell as an input holding ``value`` (in its declared unit)."""
        if self.formula is not None:
            return replace(self, value=value, formula=None, origin=origin or self.origin)
        # An input given another value (the in-process hot path): only the value is new,
        # so only the value is checked, without replace()'s generic walk over the fields.
        twin = object.__new__(Declaration)
        twin.__dict__.update(self.__dict__, value=value, origin=origin or self.origin)
        twin._check_value(value)
        return twin

    def with_formula(self, text: str, origin: Origin | None = None) -> Declaration:
        return replace(self, value=None, formula=parse(text), origin=origin or self.origin)
