"""Declarations: what a TOML sheet says about a cell, as frozen data that never evaluates.

A declaration is a name, a unit, either a value (an input) or a formula, a one-line doc, a
group for the dashboard, where the formula comes from, and where it was declared (file and
line), so that any later error can point back at the TOML.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from perfgraph.errors import DeclarationError
from perfgraph.formula import Formula, parse
from perfgraph.units import FORMULA_UNITS, Unit, unit


@dataclass(frozen=True)
class Origin:
    """Where something was declared or set."""

    file: str
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True)
class Declaration:
    """One cell of the sheet.

    ``value`` is in ``unit`` (not canonical) and only for inputs; ``formula`` only for
    computed cells. ``flag`` marks on/off inputs (TOML booleans).
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

    @property
    def is_input(self) -> bool:
        return self.formula is None

    @property
    def parsed_unit(self) -> Unit:
        return unit(self.unit)

    def with_value(self, value: float, origin: Origin | None = None) -> Declaration:
        """The same cell as an input holding ``value`` (in its declared unit)."""
        return replace(self, value=value, formula=None, origin=origin or self.origin)

    def with_formula(self, text: str, origin: Origin | None = None) -> Declaration:
        return replace(self, value=None, formula=parse(text), origin=origin or self.origin)
