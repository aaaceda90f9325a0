"""Numbers for people: a value in the most readable prefix of its unit (ms, GB, TB/s, TFLOP/s)."""

from __future__ import annotations

import math

from perfgraph.engine.units import Dims, unit
from perfgraph.engine.views import CellView

#: For each dimensionality, the units a value may be shown in, smallest first.
_LADDERS: dict[str, tuple[str, ...]] = {}


def _ladder(*units: str) -> None:
    _LADDERS[str(unit(units[0]).dims)] = units


_ladder("ns", "us", "ms", "s")
_ladder("B", "kB", "MB", "GB", "TB", "PB")
_ladder("B/s", "kB/s", "MB/s", "GB/s", "TB/s", "PB/s")
_ladder("FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP")
_ladder("FLOP/s", "kFLOP/s", "MFLOP/s", "GFLOP/s", "TFLOP/s", "PFLOP/s", "EFLOP/s")
_ladder("B/token", "kB/token", "MB/token", "GB/token")
_ladder("FLOP/token", "kFLOP/token", "MFLOP/token", "GFLOP/token", "TFLOP/token")

_PRETTY = {"us": "µs", "token": "tok", "token/s": "tok/s", "1/s": "/s"}


def number(x: float, digits: int = 4) -> str:
    """``36.22``, ``2490``, ``0.3378``, ``1.43e+14``: short, with ``digits`` significant."""
    if x == 0 or not math.isfinite(x):
        return "0" if x == 0 else str(x)
    mag = abs(x)
    if 1e-3 <= mag < 1e6:
        decimals = max(0, digits - 1 - int(math.floor(math.log10(mag))))
        text = f"{x:.{decimals}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    return f"{x:.{digits - 1}e}"


def readable(value: float, unit_text: str) -> tuple[float, str]:
    """``value`` in ``unit_text`` → (value, unit) in the prefix that reads best."""
    declared = unit(unit_text)
    ladder = _LADDERS.get(str(declared.dims))
    if ladder is None or value == 0 or not math.isfinite(value):
        return value, unit_text
    canonical = value * declared.factor
    best = ladder[0]
    for candidate in ladder:
        if abs(canonical) / unit(candidate).factor >= 1:
            best = candidate
    return canonical / unit(best).factor, best


def pretty_unit(text: str) -> str:
    return _PRETTY.get(text, text.replace("us", "µs") if text.endswith("us") else text)


def quantity(value: float, unit_text: str, *, flag: bool = False) -> str:
    """One value for a table or a sentence: ``36.22 ms``, ``on``, ``15.8 %``."""
    if flag:
        return "on" if value else "off"
    shown, shown_unit = readable(value, unit_text)
    text = number(shown)
    if Dims.of(unit(shown_unit).pint_unit).dimensionless and not shown_unit:
        return text
    return f"{text} {pretty_unit(shown_unit)}"


def cell_text(cell: CellView) -> str:
    """A cell's value as shown in tables: the quantity, or ``#ERR why``."""
    if cell.error is not None:
        return f"#ERR {cell.error}"
    assert cell.value is not None
    return quantity(cell.value, cell.unit, flag=cell.flag)
