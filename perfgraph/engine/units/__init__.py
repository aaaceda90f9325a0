"""The one unit registry, and the conversions the engine needs.

perfgraph adds two base dimensions to Pint's: ``[flop]`` (unit ``FLOP``) and ``[token]``
(unit ``token``). Everything the engine computes is a plain float (or a NumPy column) in
canonical units; this package turns declared unit strings into the factor and dimensionality
that let it do so, once, when a sheet compiles:

- :mod:`.grammar` reads unit expressions and quantity strings (``"3.35 TB/s"``), token by
  token, before Pint is handed anything;
- :mod:`.table` keeps what Pint said about each unit between commands (the user's cache
  folder), so that a command whose units are all known never imports Pint;
- :mod:`.registry` builds Pint's registry, with ``bit`` a dimension of its own;
- :mod:`.dims` holds :class:`Dims`, a hashable dimensionality;
- here: :class:`Unit`, :func:`unit`, :func:`parse_quantity` and the names a formula may use.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from perfgraph.engine.units.dims import Dims
from perfgraph.engine.units.grammar import (
    EXPECTED_QUANTITY,
    MAX_QUANTITY_LENGTH,
    MAX_UNIT_EXPONENT,
    MAX_UNIT_NAMES,
    MAX_UNIT_PARENS,
    reads_as_quantity,
    vet_unit_expression,
    vetted_quantity,
)
from perfgraph.engine.units.registry import _cached_registry as _cached_registry
from perfgraph.engine.units.registry import _definitions as _definitions
from perfgraph.engine.units.registry import _registry as _registry
from perfgraph.engine.units.registry import get_registry
from perfgraph.engine.units.table import TABLE
from perfgraph.errors import PerfgraphError, UnitError

__all__ = ["EXPECTED_QUANTITY", "FORMULA_UNITS", "MAX_QUANTITY_LENGTH", "MAX_UNIT_EXPONENT",
           "MAX_UNIT_NAMES", "MAX_UNIT_PARENS", "Dims", "Unit", "formula_unit",
           "parse_quantity", "reads_as_quantity", "unit", "units_read_as",
           "vet_unit_expression"]


def __getattr__(name: str) -> Any:
    """``ureg`` and ``Q_``, built on first use."""
    if name == "ureg":
        return get_registry()
    if name == "Q_":
        return get_registry().Quantity
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: The unit names a formula may use bare (``2 * FLOP / token``, ``0 * ms``). A fixed list, so
#: that no cell name is ever read as a unit (Pint knows ``a`` as a year and ``pp`` as a point);
#: a cell may not be named after one of these.
FORMULA_UNITS = frozenset(
    [p + base for p in ("", "k", "M", "G", "T", "P", "E") for base in ("FLOP", "B", "bit")]
    + ["KiB", "MiB", "GiB", "TiB", "token", "tokens", "request", "requests",
       "s", "ms", "us", "ns"])


class Unit:
    """A declared unit: its text, its dimensionality and its factor to canonical units."""

    __slots__ = ("text", "dims", "factor", "_vetted")

    def __init__(self, text: str) -> None:
        self.text = text
        if not isinstance(text, str):
            raise UnitError(f"a unit must be text, not {type(text).__name__}")
        vetted = self._vetted = vet_unit_expression(text)
        known = TABLE.units.get(vetted)
        if known is None:
            factor, dims = self._ask_pint(text, vetted)
            TABLE.units[vetted] = [factor, [list(item) for item in dims.items]]
            TABLE.changed = True
        else:
            factor, dims = float(known[0]), Dims(tuple((k, float(v)) for k, v in known[1]))
        if not math.isfinite(factor) or factor == 0:
            raise UnitError(f"the unit {text!r} has no finite size", unit=text)
        self.dims = dims
        self.factor = factor

    @staticmethod
    def _ask_pint(text: str, vetted: str) -> tuple[float, Dims]:
        import pint

        registry = get_registry()
        try:
            unit = registry.parse_units(vetted) if vetted else registry.dimensionless
            factor = float((1 * unit).to_base_units().magnitude)
        except (pint.PintError, ArithmeticError, AttributeError, TypeError, ValueError,
                AssertionError, SyntaxError, RecursionError) as exc:
            raise UnitError(f"unknown unit {text!r}", unit=text) from exc
        return factor, Dims.of(unit)

    @property
    def pint_unit(self) -> Any:
        """The Pint unit (builds the registry: for the edges, not the engine)."""
        registry = get_registry()
        return registry.parse_units(self._vetted) if self._vetted else registry.dimensionless

    def __repr__(self) -> str:
        return f"Unit({self.text!r})"


@lru_cache(maxsize=512)
def unit(text: str) -> Unit:
    """The parsed :class:`Unit` for ``text`` (cached: a sheet names few units)."""
    return Unit(text)


def formula_unit(name: str) -> Unit | None:
    """The unit a bare name in a formula stands for, or None if it is not one we allow."""
    return unit(name) if name in FORMULA_UNITS else None


def parse_quantity(text: str) -> tuple[float, Dims]:
    """``"3.35 TB/s"`` → (magnitude in canonical units, its Dims). UnitError on anything else.

    A quantity is exactly one number followed by an optional unit expression (see
    :class:`~.grammar._UnitGrammar`; ``"2 * GB"`` is two gigabytes, ``"2 /s"`` two per second). Both
    are checked here, before Pint sees the unit, so ``"64 64"``, ``"3,35 TB/s"`` or
    ``"9**9**9 B"`` are refused, not read as some other number.
    """
    if not isinstance(text, str):
        raise UnitError(f"expected a quantity as text, not {type(text).__name__}")
    return _parse_quantity(text)


@lru_cache(maxsize=1024)
def _parse_quantity(text: str) -> tuple[float, Dims]:
    number, vetted = vetted_quantity(text)
    declared = unit(vetted)
    value = number * declared.factor
    if not math.isfinite(value):
        raise UnitError(f"cannot read {text!r}: the number is too large; "
                        f"{EXPECTED_QUANTITY}", unit=text)
    return value, declared.dims


def units_read_as(text: str) -> str | None:
    """How Pint names the units of a quantity that reads (``"8k"`` → ``boltzmann_constant``,
    ``"400 Gb/s"`` → ``gilbert / second``), for messages; None if it does not read."""
    import pint

    try:
        vetted = vetted_quantity(text)[1]
        return str(get_registry().Unit(vetted)) if vetted else None
    except (PerfgraphError, pint.PintError, ValueError, TypeError, AttributeError):
        return None
