"""A validated formula as a closure over canonical magnitudes: floats, or NumPy columns.

The one compiler, in two modes (:class:`Mode`): every operator's and function's
implementation comes from the operator table (:mod:`.ops`), looked up once, when the closure
is built. A node of the tree compiles to one of three things — a constant, a cell name, or a
closure of the env — and an operator, comparison or function picks the closure that reads its
names and constants in place, so that ``a * b`` is one closure, not three. The scalar mode
takes the table's float implementations (Python's operators and :mod:`math`, no type checks)
and computes a subtree of constants once, here; the column mode takes the implementations
that also accept NumPy arrays wherever a float may stand (a sweep). Nothing is executed but
these closures over an allowlisted :mod:`ast` tree: no source is generated. A run of ``+ -``
(or ``* /``) longer than :data:`NESTED` is walked with a loop, so no formula nests calls
deeper than that.
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

#: A compiled node: (CONST, value), (NAME, cell name) or (CALL, closure of the env).
Node = tuple[int, Any]
CONST, NAME, CALL = 0, 1, 2
#: The longest run of ``+ -`` (or ``* /``) compiled as nested closures; longer, a loop.
NESTED = 32


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


def compile_tree(tree: ast.expr, mode: Mode) -> Fn:
    """The closure computing ``tree`` from an env, in ``mode``."""
    return _closure(_compile(tree, mode))


def _closure(node: Node) -> Fn:
    kind, payload = node
    if kind == CALL:
        return payload  # type: ignore[no-any-return]
    if kind == NAME:
        return operator.itemgetter(payload)
    return lambda env: payload


def _compile(tree: ast.expr, mode: Mode) -> Node:
    node = _node(tree, mode)
    if mode.fold and node[0] == CALL and _reads_nothing(tree):
        try:  # a subtree of constants (``FLOP / token ** 2``): its value, once
            return CONST, node[1]({})
        except ARITHMETIC:  # fails when evaluated, as it should
            pass
    return node


def _reads_nothing(tree: ast.AST) -> bool:
    return not any(isinstance(n, ast.Name) and n.id not in FUNCTIONS
                   and formula_unit(n.id) is None for n in ast.walk(tree))


def _node(tree: ast.expr, mode: Mode) -> Node:
    if isinstance(tree, ast.Constant):
        raw: Any = tree.value
        return CONST, parse_quantity(raw)[0] if isinstance(raw, str) else float(raw)
    if isinstance(tree, ast.Name):
        u = formula_unit(tree.id)
        return (CONST, u.factor) if u is not None else (NAME, tree.id)
    return _COMPILERS[type(tree)](tree, mode)


def _apply(impl: Callable[[Value], Value], arg: Node) -> Node:
    """``impl`` of one node, reading a name in place."""
    kind, a = arg
    if kind == NAME:
        return CALL, lambda env: impl(env[a])
    inner = _closure(arg)
    return CALL, lambda env: impl(inner(env))


def _binop(impl: Callable[[Value, Value], Value], left: Node, right: Node) -> Node:
    """``impl`` of two nodes, reading a name or a constant in place."""
    (lk, a), (rk, b) = left, right
    if lk == NAME:
        if rk == NAME:
            return CALL, lambda env: impl(env[a], env[b])
        if rk == CONST:
            return CALL, lambda env: impl(env[a], b)
        return CALL, lambda env: impl(env[a], b(env))
    if lk == CONST:
        if rk == NAME:
            return CALL, lambda env: impl(a, env[b])
        if rk == CONST:
            return CALL, lambda env: impl(a, b)
        return CALL, lambda env: impl(a, b(env))
    if rk == NAME:
        return CALL, lambda env: impl(a(env), env[b])
    if rk == CONST:
        return CALL, lambda env: impl(a(env), b)
    return CALL, lambda env: impl(a(env), b(env))


def _compile_unary(tree: ast.UnaryOp, mode: Mode) -> Node:
    inner = _compile(tree.operand, mode)
    impl = mode.impl(UNARY[type(tree.op)])
    return inner if impl is operator.pos else _apply(impl, inner)


def _compile_binop(tree: ast.BinOp, mode: Mode) -> Node:
    op = BINARY[type(tree.op)]
    if op.chain is not None:
        return _compile_chain(tree, mode)
    return _binop(mode.impl(op), _compile(tree.left, mode), _compile(tree.right, mode))


def _compile_chain(tree: ast.BinOp, mode: Mode) -> Node:
    """``a + b - c …`` left to right, as Python would, without recursing per term."""
    first, rest = chain(tree)
    steps = [(mode.impl(BINARY[type(op)]), operand) for op, operand in rest]
    if len(steps) > NESTED:
        start = compile_tree(first, mode)
        terms = [(impl, compile_tree(operand, mode)) for impl, operand in steps]

        def run(env: Env) -> Value:
            value = start(env)
            for impl, term in terms:
                value = impl(value, term(env))
            return value
        return CALL, run
    node = _compile(first, mode)
    for impl, operand in steps:
        node = _binop(impl, node, _compile(operand, mode))
    return node


def _compile_compare(tree: ast.Compare, mode: Mode) -> Node:
    operands = [_compile(n, mode) for n in (tree.left, *tree.comparators)]
    ops = [mode.impl(COMPARISONS[type(o)]) for o in tree.ops]
    if len(ops) == 1 and not mode.columns:  # on/off as 1.0 or 0.0, what ``and`` gives
        test = _binop(ops[0], *operands)[1]
        return CALL, lambda env: float(test(env))
    every = mode.impl(BOOLEAN[ast.And])
    terms = [_closure(n) for n in operands]

    def compare(env: Env) -> Value:
        values = [t(env) for t in terms]
        return every([op(a, b) for op, a, b in zip(ops, values, values[1:], strict=False)])
    return CALL, compare


def _compile_boolop(tree: ast.BoolOp, mode: Mode) -> Node:
    parts = [compile_tree(v, mode) for v in tree.values]
    impl = mode.impl(BOOLEAN[type(tree.op)])
    return CALL, lambda env: impl([p(env) for p in parts])


def _compile_ifexp(tree: ast.IfExp, mode: Mode) -> Node:
    kind, test = _test(tree.test, mode)
    body, orelse = compile_tree(tree.body, mode), compile_tree(tree.orelse, mode)
    build: Callable[[Fn, Fn, Fn, str | None], Fn] = mode.impl(CHOICE)
    return CALL, build(_closure((kind, test)), body, orelse, test if kind == NAME else None)


def _test(tree: ast.expr, mode: Mode) -> Node:
    """A choice's test: one comparison on floats gives its truth as it comes (the choice
    needs no 1.0 or 0.0), a call less; anything else compiles as it would anywhere."""
    if isinstance(tree, ast.Compare) and len(tree.ops) == 1 and not mode.columns \
            and not _reads_nothing(tree):
        left, right = _compile(tree.left, mode), _compile(tree.comparators[0], mode)
        return _binop(mode.impl(COMPARISONS[type(tree.ops[0])]), left, right)
    return _compile(tree, mode)


def _compile_call(tree: ast.Call, mode: Mode) -> Node:
    assert isinstance(tree.func, ast.Name)
    function = FUNCTIONS[tree.func.id]
    impl, args = mode.impl(function), [_compile(a, mode) for a in tree.args]
    if len(args) == 1:  # a fold (min, max) of one operand is that operand
        return args[0] if function.arity is None else _apply(impl, args[0])
    if len(args) == 2:
        return _binop(impl, *args)
    fns = [_closure(a) for a in args]
    return CALL, lambda env: impl(*[f(env) for f in fns])


_COMPILERS: dict[type[ast.AST], Callable[[Any, Mode], Node]] = {
    ast.UnaryOp: _compile_unary, ast.BinOp: _compile_binop, ast.Compare: _compile_compare,
    ast.BoolOp: _compile_boolop, ast.IfExp: _compile_ifexp, ast.Call: _compile_call,
}
