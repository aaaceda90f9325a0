"""Dimensionalities as hashable values, written in perfgraph's units (``FLOP/token``)."""

from __future__ import annotations

import math
from typing import Any


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
