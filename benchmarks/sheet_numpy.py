"""The sweep's baseline: every formula of a sheet restated as plain NumPy, generated from it.

``bench_sweep.py`` once timed the engine against the default sheet typed out by hand; the
sheet grew and the hand-written copy fell behind (188 of 434 cells missing, 16 by older
formulas), so its ratios flattered nobody. This module writes the same straight-line NumPy
from the sheet as it stands: one statement a cell, in an order where each comes after what
it reads, each formula's tree turned into NumPy calls (``min`` → ``np.minimum``, ``a if c
else b`` → ``np.where``, ``and`` → ``np.logical_and``, a unit name → its canonical factor).
What it leaves out is the engine's bookkeeping: no graph, no plans of what a column reaches,
no closures, every cell computed over the chunk whether it varies or not. It keeps the
engine's two rules of what a row's value is, so that both give the same numbers: an
infinite result is a failed row (NaN), and a formula whose operators may hide a NaN operand
(a comparison, a choice) fails the rows where a read failed (``+ 0 × read``).

The code is generated from formulas the engine's own allowlist has parsed (``Formula.tree``),
compiled once, and run on canonical magnitudes (B, s, FLOP, token, request).
"""

from __future__ import annotations

import ast
import copy
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from perfgraph.engine.sheet import Sheet
from perfgraph.engine.units import formula_unit, parse_quantity

#: The formula language's functions, as NumPy's (``min`` and ``max`` fold their arguments).
CALLS = {"min": "minimum", "max": "maximum", "abs": "abs", "ceil": "ceil", "floor": "floor",
         "round": "round", "sqrt": "sqrt", "log": "log", "log2": "log2", "log10": "log10",
         "exp": "exp"}
COMPARE = {ast.Lt: "less", ast.LtE: "less_equal", ast.Gt: "greater", ast.GtE: "greater_equal",
           ast.Eq: "equal", ast.NotEq: "not_equal"}


def _np(name: str, *args: ast.expr) -> ast.Call:
    return ast.Call(ast.Attribute(ast.Name("np", ast.Load()), name, ast.Load()), list(args), [])


def _fold(name: str, args: list[ast.expr]) -> ast.expr:
    out = args[0]
    for arg in args[1:]:
        out = _np(name, out, arg)
    return out


class ToNumpy(ast.NodeTransformer):
    """A formula's tree → a NumPy expression over ``v``, the dict of canonical values."""

    def visit_Name(self, node: ast.Name) -> ast.expr:
        u = formula_unit(node.id)
        if u is not None:
            return ast.Constant(u.factor)
        return ast.Subscript(ast.Name("v", ast.Load()), ast.Constant(node.id), ast.Load())

    def visit_Constant(self, node: ast.Constant) -> ast.expr:
        raw = node.value
        return ast.Constant(parse_quantity(raw)[0] if isinstance(raw, str) else float(raw))

    def visit_Call(self, node: ast.Call) -> ast.expr:
        assert isinstance(node.func, ast.Name)
        name, args = CALLS[node.func.id], [self.visit(a) for a in node.args]
        return _fold(name, args) if name in ("minimum", "maximum") else _np(name, *args)

    def visit_IfExp(self, node: ast.IfExp) -> ast.expr:
        return _np("where", self.visit(node.test), self.visit(node.body),
                   self.visit(node.orelse))

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.expr:
        name = "logical_and" if isinstance(node.op, ast.And) else "logical_or"
        return _fold(name, [self.visit(v) for v in node.values])

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.expr:
        if isinstance(node.op, ast.Not):
            return _np("logical_not", self.visit(node.operand))
        return ast.UnaryOp(node.op, self.visit(node.operand))

    def visit_Compare(self, node: ast.Compare) -> ast.expr:
        terms = [self.visit(node.left), *(self.visit(c) for c in node.comparators)]
        pairs = [_np(COMPARE[type(op)], a, b)
                 for op, a, b in zip(node.ops, terms, terms[1:], strict=False)]
        return _fold("logical_and", pairs)


def source(sheet: Sheet, given: set[str]) -> str:
    """The Python source of ``evaluate(v)``: every formula cell of ``sheet`` not in ``given``
    (the sweep's axes), in dependency order, into ``v``."""
    formulas = {n: sheet.declaration(n).formula for n in sheet.names
                if n not in given and sheet.declaration(n).formula is not None}
    lines = ["def evaluate(v):"]
    for name in _order(formulas):
        formula = formulas[name]
        assert formula is not None
        expr = ast.unparse(ToNumpy().visit(copy.deepcopy(formula.tree)))  # not in place
        if formula.may_hide_nan and formula.names:
            expr = f"({expr}) + 0.0 * ({' + '.join(f'v[{n!r}]' for n in formula.names)})"
        lines.append(f"    v[{name!r}] = finite({expr})")
    return "\n".join(lines) + "\n"


def _order(formulas: dict[str, Any]) -> list[str]:
    """The formula cells, each after the formula cells it reads."""
    done: dict[str, None] = {}

    def visit(name: str) -> None:
        if name in done or name not in formulas:
            return
        for read in formulas[name].names:
            visit(read)
        done[name] = None

    for name in formulas:
        visit(name)
    return list(done)


def finite(value: Any) -> Any:
    """An infinite result is a failed row (NaN), as in the engine; an on/off result a float.
    A scalar stays a NumPy float, whose division by zero gives infinity (then NaN), as a
    column's does, where a Python float's would raise."""
    if np.ndim(value):
        value = np.asarray(value, dtype=float)
        inf = np.isinf(value)
        return np.where(inf, math.nan, value) if inf.any() else value
    value = np.float64(value)
    return np.float64(math.nan) if np.isinf(value) else value


def compiled(sheet: Sheet, given: set[str]) -> Callable[[dict[str, Any]], None]:
    """``evaluate(v)`` for ``sheet``, compiled once."""
    namespace: dict[str, Any] = {"np": np, "finite": finite}
    exec(compile(source(sheet, given), "<sheet as NumPy>", "exec"), namespace)  # noqa: S102
    return namespace["evaluate"]  # type: ignore[no-any-return]
