"""The one unit registry, and the conversions the engine needs.

perfgraph adds two base dimensions to Pint's: ``[flop]`` (unit ``FLOP``) and ``[token]``
(unit ``token``). Everything the engine computes is a plain float (or a NumPy column) in
canonical units; this module turns declared unit strings into the factor and dimensionality
that let it do so, once, when a sheet compiles.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Any

import pint

from perfgraph.errors import UnitError


def _registry() -> pint.UnitRegistry:
    """Pint's default units, except that ``bit`` (hence ``B``) is a dimension of its own.

    Pint declares ``bit = []``, dimensionless, so bytes would silently mix with plain
    numbers; a sheet must reject ``weights_bytes + n_params``.
    """
    folder = Path(pint.__file__).parent
    text = (folder / "default_en.txt").read_text(encoding="utf-8")
    text = text.replace("@import constants_en.txt",
                        (folder / "constants_en.txt").read_text(encoding="utf-8"))
    text = text.replace("\nbit = []", "\nbit = [information]")
    registry: pint.UnitRegistry = pint.UnitRegistry(None,
                                                    autoconvert_offset_to_baseunit=False)
    registry.load_definitions(text.splitlines())
    if registry.byte.dimensionless:  # pragma: no cover - a Pint whose file we did not expect
        raise RuntimeError("could not give bytes a dimension in this version of Pint")
    return registry


ureg = _registry()
ureg.define("FLOP = [flop] = flop = FLOPs = flops")
ureg.define("token = [token] = tokens = tok")
ureg.define("request = [request] = requests = req")

Q_ = ureg.Quantity

#: The unit names a formula may use bare (``2 * FLOP / token``, ``0 * ms``). A fixed list, so
#: that no cell name is ever read as a unit (Pint knows ``a`` as a year and ``pp`` as a point);
#: a cell may not be named after one of these.
FORMULA_UNITS = frozenset(
    [p + base for p in ("", "k", "M", "G", "T", "P", "E") for base in ("FLOP", "B", "bit")]
    + ["KiB", "MiB", "GiB", "TiB", "token", "tokens", "request", "requests",
       "s", "ms", "us", "ns"])


class Unit:
    """A declared unit: its text, its dimensionality and its factor to canonical units."""

    __slots__ = ("text", "dims", "factor", "pint_unit")

    def __init__(self, text: str) -> None:
        self.text = text
        try:
            unit = ureg.parse_units(text) if text.strip() else ureg.dimensionless
        except (pint.UndefinedUnitError, pint.DefinitionSyntaxError, AttributeError,
                TypeError, ValueError, AssertionError) as exc:
            raise UnitError(f"unknown unit {text!r}", unit=text) from exc
        self.pint_unit = unit
        base = (1 * unit).to_base_units()
        self.dims = Dims.of(unit)
        self.factor = float(base.magnitude)

    def __repr__(self) -> str:
        return f"Unit({self.text!r})"


class Dims:
    """Hashable dimensionality: a sorted tuple of (dimension, exponent)."""

    __slots__ = ("items",)

    def __init__(self, items: tuple[tuple[str, float], ...]) -> None:
        self.items = items

    @classmethod
    def of(cls, unit: Any) -> Dims:
        """The Dims of a Pint unit."""
        return cls(tuple(sorted((k, float(v)) for k, v in dict(unit.dimensionality).items())))

    @classmethod
    def none(cls) -> Dims:
        return cls(())

    def __mul__(self, other: Dims) -> Dims:
        out = dict(self.items)
        for k, v in other.items:
            out[k] = out.get(k, 0) + v
        return Dims(tuple(sorted((k, v) for k, v in out.items() if v != 0)))

    def __truediv__(self, other: Dims) -> Dims:
        return self * other ** -1

    def __pow__(self, exp: float) -> Dims:
        return Dims(tuple((k, v * exp) for k, v in self.items if v * exp != 0))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Dims) and _close(self.items, other.items)

    def __hash__(self) -> int:
        return hash(tuple(k for k, _ in self.items))

    @property
    def dimensionless(self) -> bool:
        return not self.items

    def __str__(self) -> str:
        """The dimensions written as perfgraph's units: ``FLOP/token``, ``B/s``."""
        if not self.items:
            return "dimensionless"
        up = [_power(_DIM_UNIT.get(k, k), v) for k, v in self.items if v > 0]
        down = [_power(_DIM_UNIT.get(k, k), -v) for k, v in self.items if v < 0]
        text = "*".join(up) or "1"
        if down:
            text += "/" + (down[0] if len(down) == 1 else "(" + "*".join(down) + ")")
        return text


_DIM_UNIT = {"[information]": "B", "[time]": "s", "[flop]": "FLOP", "[token]": "token",
             "[request]": "request"}


def _power(name: str, exp: float) -> str:
    return name if exp == 1 else f"{name}**{exp:g}"


def _close(a: tuple[tuple[str, float], ...], b: tuple[tuple[str, float], ...]) -> bool:
    return len(a) == len(b) and all(
        ka == kb and math.isclose(va, vb) for (ka, va), (kb, vb) in zip(a, b, strict=True)
    )


@lru_cache(maxsize=512)
def unit(text: str) -> Unit:
    """The parsed :class:`Unit` for ``text`` (cached: a sheet names few units)."""
    return Unit(text)


def formula_unit(name: str) -> Unit | None:
    """The unit a bare name in a formula stands for, or None if it is not one we allow."""
    return unit(name) if name in FORMULA_UNITS else None


def parse_quantity(text: str) -> tuple[float, Dims]:
    """``"3.35 TB/s"`` → (magnitude in canonical units, its Dims). UnitError on anything else."""
    expected = "expected a number with units such as \"3.35 TB/s\""
    try:
        q: Any = ureg.Quantity(text)
    except pint.UndefinedUnitError as exc:
        unknown = ", ".join(repr(u) for u in exc.unit_names) if hasattr(exc, "unit_names") \
            else str(exc)
        raise UnitError(f"cannot read {text!r}: unknown unit {unknown}; {expected}",
                        unit=text) from None
    except (pint.DefinitionSyntaxError, AttributeError, TypeError, ValueError,
            AssertionError, SyntaxError, pint.DimensionalityError) as exc:
        raise UnitError(f"cannot read {text!r}; {expected}", unit=text) from exc
    if not isinstance(q, pint.Quantity) or not isinstance(q.magnitude, (int, float)) \
            or isinstance(q.magnitude, bool):
        raise UnitError(f"cannot read {text!r}; {expected}", unit=text)
    base = q.to_base_units()
    return float(base.magnitude), Dims.of(q.units)
