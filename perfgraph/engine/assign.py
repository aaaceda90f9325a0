"""Reading what a user assigns to a cell: a number, a quantity, a flag, or a formula.

The same rules serve TOML ``[values]`` tables, scenario files and ``--set NAME=VALUE``:

* a number or a TOML boolean is a value in the cell's declared unit;
* a string is read as a formula; if it names no cell it is a constant (``"2 * GB"``);
* a string that is not a formula but reads as a quantity (``"3.35 TB/s"``) is a value;
* a formula that names cells pins the cell to that formula.

A value whose dimensions differ from the cell's is a DimensionError naming both units.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pint

from perfgraph.engine.declarations import Declaration
from perfgraph.engine.formula import Formula, parse
from perfgraph.engine.units import Dims, parse_quantity, reads_as_quantity, units_read_as
from perfgraph.errors import (
    DimensionError,
    FormulaSyntaxError,
    InputError,
    PerfgraphError,
    UnitError,
)


@dataclass(frozen=True)
class Assignment:
    """Either ``value`` (in the cell's declared unit) or ``formula`` is set."""

    value: float | None = None
    formula: Formula | None = None
    flag: bool = False


def interpret(decl: Declaration, raw: object) -> Assignment:
    """What assigning ``raw`` to the cell ``decl`` means (errors name the cell)."""
    try:
        return _interpret(decl, raw)
    except PerfgraphError as exc:
        raise exc.located(name=decl.name) from None


def _interpret(decl: Declaration, raw: object) -> Assignment:
    if isinstance(raw, bool):
        if not decl.flag:
            raise InputError("true/false is for on/off cells; this one is a number"
                             + (f" in {decl.unit}" if decl.unit else ""))
        return Assignment(value=1.0 if raw else 0.0, flag=True)
    if isinstance(raw, (int, float)):
        return Assignment(value=_finite(float(raw)))
    if isinstance(raw, pint.Quantity):
        return Assignment(value=_convert(decl, float(raw.to_base_units().magnitude),
                                         Dims.of(raw.units), str(raw), bare=False))
    if not isinstance(raw, str):
        raise InputError(f"expected a number, a quantity such as \"3.35 TB/s\" or a formula, "
                         f"not {type(raw).__name__}")
    text = raw.strip()
    if text.lower() in ("true", "on", "yes", "false", "off", "no") and decl.flag:
        return Assignment(value=float(text.lower() in ("true", "on", "yes")), flag=True)
    try:
        formula = parse(text)
    except FormulaSyntaxError as syntax:
        if not (text[:1].isdigit() or text[:1] in ".-+"):
            raise syntax from None
        try:
            magnitude, dims = parse_quantity(text)
        except UnitError as unit_error:
            raise _clearer(syntax, unit_error, text) from None
        return Assignment(value=_convert(decl, magnitude, dims, text, bare=False))
    if formula.names:
        return Assignment(formula=formula)
    dims = formula.dims(lambda name: Dims.none())
    magnitude = formula.compile()({})
    # A formula of plain numbers (no unit names) is a bare number: in the declared unit.
    return Assignment(value=_convert(decl, float(magnitude), dims, text,
                                     bare=dims.dimensionless))


def _clearer(syntax: FormulaSyntaxError, unit_error: UnitError, text: str,
             ) -> PerfgraphError:
    """Which of two failed readings of ``text`` explains it better.

    An unknown unit says it all. A formula refused by the allowlist (``9**9**9``, an
    exponent too big) was a formula. Text that Python cannot parse at all and whose words
    are all units (``3,35 TB/s``, ``64 64``) was meant as a quantity.
    """
    if unit_error.extra.get("unknown"):
        return unit_error
    if syntax.extra.get("grammar") and reads_as_quantity(text):
        return unit_error
    return syntax


def _convert(decl: Declaration, canonical: float, dims: Dims, text: str, *,
             bare: bool) -> float:
    """A canonical magnitude of ``dims`` → the cell's declared unit, checking dimensions.

    A bare number (no units written) is taken to be in the declared unit already.
    """
    target = decl.parsed_unit
    if bare:
        return _finite(canonical)
    if dims != target.dims:
        read = units_read_as(text)
        reading = f" (its units read as {read})" if read else ""
        raise DimensionError(
            f"{text!r} is {dims}{reading}, but the cell is declared in "
            f"{decl.unit or 'dimensionless'} ({target.dims})")
    return _finite(canonical / target.factor)


def _finite(x: float) -> float:
    if not math.isfinite(x):
        raise InputError(f"expected a finite number, got {x}")
    return x
