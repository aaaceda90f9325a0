"""Evaluating cells on floats: the hot loop, and the slow path that says why a cell has none.

Values are canonical magnitudes (floats) or :class:`~perfgraph.errors.CellError`. The loop
calls each compiled formula and keeps a finite result straight away; only an input, a formula
that reads a failed cell, raises, or gives NaN or infinity takes :func:`compute`, which names
the cause (a cell that reads a failed one names the root cell).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from perfgraph.engine.declarations import Declaration
from perfgraph.engine.formula import ARITHMETIC, Fn, failure
from perfgraph.engine.graph import Step
from perfgraph.errors import CellError

Value = float | CellError


def compute(decl: Declaration, fn: Fn | None, reads: tuple[str, ...],
            values: Mapping[str, Value]) -> Value:
    """One cell's value, or the CellError that says why it has none."""
    if fn is None:
        if decl.value is None:
            return CellError("no value: set it in a catalog, a scenario or with --set",
                             decl.name)
        return decl.value * decl.parsed_unit.factor
    for src in reads:
        v = values[src]
        if isinstance(v, CellError):
            return CellError.reading(src, v)
    try:
        result = float(fn(values))
    except ARITHMETIC as exc:
        return CellError(failure(exc, decl.formula.text), decl.name)  # type: ignore[union-attr]
    if not math.isfinite(result):
        return CellError(f"result is not a finite number ({result})", decl.name)
    return result


def run(steps: list[Step], values: dict[str, Value], failed: set[str],
        decls: Mapping[str, Declaration]) -> None:
    """Evaluate ``steps`` (in topological order) into ``values``; ``failed`` holds the
    cells whose value is a CellError, so that a read of one is found without a check of
    every read."""
    for name, fn, reads in steps:
        if fn is not None and (not failed or failed.isdisjoint(reads)):
            try:
                result = float(fn(values))
            except ARITHMETIC:
                pass
            else:
                if result - result == 0.0:  # finite: NaN and ±inf are not
                    values[name] = result
                    if failed:
                        failed.discard(name)
                    continue
        value = values[name] = compute(decls[name], fn, reads, values)
        if isinstance(value, CellError):
            failed.add(name)
        elif failed:
            failed.discard(name)
