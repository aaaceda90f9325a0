"""What measured runs achieved, through the sheet's cells (``sheets/achieved.toml``).

A run's throughput pins the cell of its own definition (output tokens/s of the whole run,
total tokens/s, or total tokens/s per GPU) and its TPOT pins ``measured_tpot``; the graph
derives the rest (MFU, MBU, decode headroom, output tokens/s, FLOP/s on the roofline), so
``perfgraph explain achieved_mfu`` shows each step. Nothing here computes a quantity: it only
pins columns and reads cells back in the unit their users keep them in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from perfgraph.engine.sheet import Sheet
from perfgraph.engine.units import unit

#: A file's throughput definition → the cell its value pins (a run without one pins the
#: output throughput to NaN: no MFU, its MBU still).
MEASURED_CELL = {None: "measured_output_throughput",
                 "output_throughput": "measured_output_throughput",
                 "total_throughput": "measured_total_throughput",
                 "throughput_per_gpu": "measured_throughput_total_per_gpu"}
#: What a run achieved: Comparison's field → (the sheet's cell, the unit it is kept in).
ACHIEVED = {"mfu": ("achieved_mfu", ""), "mbu": ("achieved_mbu", ""),
            "headroom": ("achieved_decode_headroom", ""),
            "measured_output": ("measured_output_throughput", "token/s"),
            "measured_output_per_gpu": ("measured_output_throughput_per_gpu", "token/s"),
            "achieved_flops": ("achieved_flops", "FLOP/s"),
            "achieved_decode_flops": ("achieved_decode_flops", "FLOP/s")}


def achieved_by(sheet: Sheet, cols: Mapping[str, np.ndarray],
                throughputs: Sequence[tuple[str | None, float]],
                tpot_ms: Sequence[float]) -> dict[str, np.ndarray]:
    """Per :data:`ACHIEVED` field, a column over the runs (``cols``: their configurations;
    ``throughputs``: each run's (definition, value in token/s), ``tpot_ms`` its TPOT, NaN
    where it has none); one evaluation per throughput definition."""
    n = len(throughputs)
    out = {field: np.full(n, math.nan) for field in ACHIEVED}
    tpot = np.asarray(tpot_ms, dtype=float) * to_declared(sheet, "ms", "measured_tpot")
    for key in dict.fromkeys(k for k, _ in throughputs):
        rows = np.array([i for i, (k, _) in enumerate(throughputs) if k == key])
        pinned = MEASURED_CELL[key]
        value = np.array([throughputs[i][1] for i in rows]) * to_declared(sheet, "token/s",
                                                                          pinned)
        given = {name: np.asarray(col)[rows] for name, col in cols.items()}
        values = sheet.evaluate_columns({**given, "measured_tpot": tpot[rows], pinned: value},
                                        len(rows), only=[c for c, _ in ACHIEVED.values()])
        for field, (cell, target) in ACHIEVED.items():
            out[field][rows] = in_unit(sheet, values, cell, target)
    return out


def in_unit(sheet: Sheet, columns: Mapping[str, np.ndarray], name: str,
            target: str) -> np.ndarray:
    """A column of ``evaluate_columns`` (in the cell's declared unit) in ``target``."""
    factor = unit(sheet.declaration(name).unit).factor / unit(target).factor
    return np.asarray(columns[name], dtype=float) * factor


def to_declared(sheet: Sheet, given: str, name: str) -> float:
    """The factor from ``given`` to ``name``'s declared unit (a column to pin)."""
    return float(unit(given).factor / unit(sheet.declaration(name).unit).factor)
