"""A validated formula as a closure over canonical magnitudes: floats, or NumPy columns.

Each operator's implementation comes from the operator table, looked up here, once, when the
closure is built: the scalar closures call Python's operators and :mod:`math` on floats, with
no type checks, and a subtree of constants is computed once, at compile time. The column
closures take NumPy arrays wherever a float may stand (a sweep).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

from perfgraph.engine.formula.ops import (
    BINARY,
    BOOLEAN,
    CHOICE,
    COMPARISONS,
    FUNCTIONS,
    UNARY,
    Env,
    Fn,
    Function,
    Op,
    Value,
    chain,
)
from perfgraph.engine.units import formula_unit, parse_quantity

#: Why a formula failed, for the ArithmeticError / ValueError Python raised.
_REASONS = {"math domain error": "a function's argument is outside its domain",
            "math range error": "the result is too large",
            "float division by zero": "division by zero"}

#: What evaluating an allowlisted formula can raise: all of them mean "no value".
ARITHMETIC = (ZeroDivisionError, OverflowError, ValueError, TypeError)


def failure(exc: Exception, text: str) -> str:
    """One line saying why the formula ``text`` failed with ``exc``."""
    if isinstance(exc, ZeroDivisionError):
        return f"division by zero in {text!r}"
    if isinstance(exc, TypeError) and "complex" in str(exc):  # (-8) ** 0.5 is complex
        return f"a negative number to a fractional power has no real value in {text!r}"
    reason = _REASONS.get(str(exc), str(exc))
    if isinstance(exc, OverflowError) and reason == str(exc):
        reason = f"the result is too large ({exc})"
    return f"{reason} in {text!r}"


class Mode:
    """Floats (constant subtrees folded) or columns: which implementation of each entry."""

    def __init__(self, columns: bool) -> None:
        self.columns = columns
        self.fold = not columns

    def impl(self, entry: Op | Function) -> Callable[..., Any]:
        return entry.array if self.columns else entry.scalar


SCALAR = Mode(columns=False)
COLUMNS = Mode(columns=True)


def compile_tree(node: ast.expr, mode: Mode) -> Fn:
    fn = _compile_node(node, mode)
    if mode.fold and not isinstance(node, (ast.Constant, ast.Name)) and _reads_nothing(node):
        try:  # a subtree of constants (``FLOP / token ** 2``): its value, once
            value = fn({})
        except ARITHMETIC:  # fails when evaluated, as it should
            return fn
        return lambda env: value
    return fn


def _reads_nothing(node: ast.AST) -> bool:
    return not any(isinstance(n, ast.Name) and n.id not in FUNCTIONS
                   and formula_unit(n.id) is None for n in ast.walk(node))


def _compile_node(node: ast.expr, mode: Mode) -> Fn:
    if isinstance(node, ast.Constant):
        raw: Any = node.value
        value = parse_quantity(raw)[0] if isinstance(raw, str) else float(raw)
        return lambda env: value
    if isinstance(node, ast.Name):
        u = formula_unit(node.id)
        if u is not None:
            factor = u.factor
            return lambda env: factor
        name = node.id
        return lambda env: env[name]
    return _COMPILERS[type(node)](node, mode)


def _compile_unary(node: ast.UnaryOp, mode: Mode) -> Fn:
    inner = compile_tree(node.operand, mode)
    impl = mode.impl(UNARY[type(node.op)])
    if impl is operator.pos:
        return inner
    if impl is operator.neg:  # inline: a call less
        return lambda env: -inner(env)
    return lambda env: impl(inner(env))


def _compile_binop(node: ast.BinOp, mode: Mode) -> Fn:
    op = BINARY[type(node.op)]
    if op.chain is not None:
        return _compile_chain(node, mode)
    impl = mode.impl(op)
    left, right = compile_tree(node.left, mode), compile_tree(node.right, mode)
    return lambda env: impl(left(env), right(env))


def _compile_chain(node: ast.BinOp, mode: Mode) -> Fn:
    """``a + b - c …`` as a loop over its terms, left to right as Python would."""
    first, rest = chain(node)
    start = compile_tree(first, mode)
    steps = [(mode.impl(BINARY[type(op)]), compile_tree(operand, mode))
             for op, operand in rest]
    if len(steps) == 1:
        (op, right), = steps
        return lambda env: op(start(env), right(env))
    if len(steps) == 2:
        (op1, t1), (op2, t2) = steps
        return lambda env: op2(op1(start(env), t1(env)), t2(env))

    def run(env: Env) -> Value:
        value = start(env)
        for op, term in steps:
            value = op(value, term(env))
        return value
    return run


def _compile_compare(node: ast.Compare, mode: Mode) -> Fn:
    operands = [compile_tree(n, mode) for n in (node.left, *node.comparators)]
    ops = [mode.impl(COMPARISONS[type(o)]) for o in node.ops]
    every = mode.impl(BOOLEAN[ast.And])
    if len(ops) == 1 and not mode.columns:
        (op,), (a, b) = ops, operands
        return lambda env: float(op(a(env), b(env)))

    def compare(env: Env) -> Value:
        values = [o(env) for o in operands]
        return every([op(a, b) for op, a, b in zip(ops, values, values[1:], strict=False)])
    return compare


def _compile_boolop(node: ast.BoolOp, mode: Mode) -> Fn:
    parts = [compile_tree(v, mode) for v in node.values]
    impl = mode.impl(BOOLEAN[type(node.op)])
    return lambda env: impl([p(env) for p in parts])


def _compile_ifexp(node: ast.IfExp, mode: Mode) -> Fn:
    test = compile_tree(node.test, mode)
    body, orelse = compile_tree(node.body, mode), compile_tree(node.orelse, mode)
    build: Callable[[Fn, Fn, Fn], Fn] = mode.impl(CHOICE)
    return build(test, body, orelse)


def _compile_call(node: ast.Call, mode: Mode) -> Fn:
    assert isinstance(node.func, ast.Name)
    impl = mode.impl(FUNCTIONS[node.func.id])
    args = [compile_tree(a, mode) for a in node.args]
    if len(args) == 1:
        (arg,) = args
        return lambda env: impl(arg(env))
    return lambda env: impl(*[a(env) for a in args])


_COMPILERS: dict[type[ast.AST], Callable[[Any, Mode], Fn]] = {
    ast.UnaryOp: _compile_unary, ast.BinOp: _compile_binop, ast.Compare: _compile_compare,
    ast.BoolOp: _compile_boolop, ast.IfExp: _compile_ifexp, ast.Call: _compile_call,
}
