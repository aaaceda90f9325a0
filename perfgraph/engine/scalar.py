"""Formulas compiled for the scalar path with the names and constants folded into their
parents, so that ``a * b`` is one closure, not three.

:meth:`Formula.compile <perfgraph.engine.formula.Formula.compile>` makes a closure per node of
the tree: a cell name is a call that reads the env, a constant a call that returns it. Here a
node is one of three things — a constant, a name, or a closure — and an operator, comparison,
choice or function picks the closure that reads its names and constants in place. Nothing is
executed but these closures over an allowlisted :mod:`ast` tree (no source is generated), and
each computes what ``Formula.compile`` computes, the same operations in the same order (the
tests check both on every cell of every shipped sheet): the sheet uses it when it evaluates
one configuration at a time (issue 15). A run of ``+ -`` or ``* /`` longer than
:data:`NESTED` is walked with a loop, so no formula nests calls deeper than that.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from perfgraph.engine.formula import ARITHMETIC, FUNCTIONS, Formula
from perfgraph.engine.units import formula_unit, parse_quantity

Fn = Callable[[Any], Any]
#: A compiled node: (CONST, value), (NAME, cell name) or (CALL, closure of the env).
Node = tuple[int, Any]
CONST, NAME, CALL = 0, 1, 2
#: The longest run of ``+ -`` (or ``* /``) compiled as nested closures; longer, a loop.
NESTED = 32

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.Pow: operator.pow}
_GROUPS = {ast.Add: 1, ast.Sub: 1, ast.Mult: 2, ast.Div: 2}
_CMPOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": min, "max": max, "abs": abs,
    "ceil": lambda x: float(math.ceil(x)), "floor": lambda x: float(math.floor(x)),
    "round": lambda x: float(round(x)), "sqrt": math.sqrt, "log": math.log,
    "log2": math.log2, "log10": math.log10, "exp": math.exp}


def compile_scalar(formula: Formula) -> Fn:
    """A closure computing ``formula`` from an env of canonical magnitudes (floats)."""
    return _closure(_compile(formula.tree))


def _closure(node: Node) -> Fn:
    kind, payload = node
    if kind == CALL:
        return payload  # type: ignore[no-any-return]
    if kind == NAME:
        return operator.itemgetter(payload)
    return lambda env: payload


def _compile(tree: ast.expr) -> Node:
    node = _node(tree)
    if node[0] == CALL and _reads_nothing(tree):
        try:  # a subtree of constants (``FLOP / token ** 2``): its value, once
            return CONST, node[1]({})
        except ARITHMETIC:  # fails when evaluated, as it should
            pass
    return node


def _reads_nothing(tree: ast.AST) -> bool:
    return not any(isinstance(n, ast.Name) and n.id not in FUNCTIONS
                   and formula_unit(n.id) is None for n in ast.walk(tree))


def _node(tree: ast.expr) -> Node:
    if isinstance(tree, ast.Constant):
        raw: Any = tree.value
        return CONST, parse_quantity(raw)[0] if isinstance(raw, str) else float(raw)
    if isinstance(tree, ast.Name):
        u = formula_unit(tree.id)
        return (CONST, u.factor) if u is not None else (NAME, tree.id)
    if isinstance(tree, ast.UnaryOp):
        inner = _closure(_compile(tree.operand))
        if isinstance(tree.op, ast.USub):
            return CALL, lambda env: -inner(env)
        if isinstance(tree.op, ast.Not):
            return CALL, lambda env: float(not inner(env))
        return CALL, inner
    if isinstance(tree, ast.BinOp):
        return _chain(tree) if type(tree.op) in _GROUPS else \
            _binop(_BINOPS[type(tree.op)], _compile(tree.left), _compile(tree.right))
    if isinstance(tree, ast.Compare):
        return _compare(tree)
    if isinstance(tree, ast.BoolOp):
        parts = [_closure(_compile(v)) for v in tree.values]
        test = all if isinstance(tree.op, ast.And) else any
        return CALL, lambda env: float(test([p(env) for p in parts]))
    if isinstance(tree, ast.IfExp):
        return _ifexp(tree)
    assert isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name)
    args = [_compile(a) for a in tree.args]
    if tree.func.id in ("min", "max") and len(args) == 1:
        return args[0]  # min(x) is x
    return _call(_FUNCTIONS[tree.func.id], args)


def _binop(op: Callable[[Any, Any], Any], left: Node, right: Node) -> Node:
    """``op`` of two nodes, reading a name or a constant in place."""
    (lk, a), (rk, b) = left, right
    if lk == NAME:
        if rk == NAME:
            return CALL, lambda env: op(env[a], env[b])
        if rk == CONST:
            return CALL, lambda env: op(env[a], b)
        return CALL, lambda env: op(env[a], b(env))
    if lk == CONST:
        if rk == NAME:
            return CALL, lambda env: op(a, env[b])
        if rk == CONST:
            return CALL, lambda env: op(a, b)
        return CALL, lambda env: op(a, b(env))
    if rk == NAME:
        return CALL, lambda env: op(a(env), env[b])
    if rk == CONST:
        return CALL, lambda env: op(a(env), b)
    return CALL, lambda env: op(a(env), b(env))


def _chain(tree: ast.BinOp) -> Node:
    """``a + b - c …`` left to right, as Python would, without recursing per term."""
    group, rest = _GROUPS[type(tree.op)], []
    current: ast.expr = tree
    while isinstance(current, ast.BinOp) and _GROUPS.get(type(current.op)) == group:
        rest.append((_BINOPS[type(current.op)], current.right))
        current = current.left
    rest.reverse()
    if len(rest) > NESTED:
        start = _closure(_compile(current))
        steps = [(op, _closure(_compile(operand))) for op, operand in rest]

        def run(env: Any) -> Any:
            value = start(env)
            for op, term in steps:
                value = op(value, term(env))
            return value
        return CALL, run
    node = _compile(current)
    for op, operand in rest:
        node = _binop(op, node, _compile(operand))
    return node


def _compare(tree: ast.Compare) -> Node:
    operands = [_compile(n) for n in (tree.left, *tree.comparators)]
    ops = [_CMPOPS[type(o)] for o in tree.ops]
    if len(ops) == 1:
        test = _binop(ops[0], *operands)[1]
        return CALL, lambda env: float(test(env))
    terms = [_closure(n) for n in operands]

    def compare(env: Any) -> Any:
        values = [t(env) for t in terms]
        return float(all([op(a, b) for op, a, b in zip(ops, values, values[1:],
                                                            strict=False)]))
    return CALL, compare


def _ifexp(tree: ast.IfExp) -> Node:
    body, orelse = _closure(_compile(tree.body)), _closure(_compile(tree.orelse))
    kind, test = _compile(tree.test)
    if kind == NAME:
        return CALL, lambda env: body(env) if env[test] else orelse(env)
    if kind == CONST:
        return CALL, lambda env: body(env) if test else orelse(env)
    return CALL, lambda env: body(env) if test(env) else orelse(env)


def _call(impl: Callable[..., Any], args: list[Node]) -> Node:
    if len(args) == 1:
        (kind, a), = args
        if kind == NAME:
            return CALL, lambda env: impl(env[a])
        arg = _closure(args[0])
        return CALL, lambda env: impl(arg(env))
    if len(args) == 2:
        return _binop(impl, *args)
    fns = [_closure(a) for a in args]
    return CALL, lambda env: impl([f(env) for f in fns])
