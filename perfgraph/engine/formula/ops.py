"""The operator table: every operator and function of the formula language, once.

Each entry says what the four walks of a formula need (Pint's ``pint_eval.py`` dispatches
through tables the same way): the AST type it comes from, how the renderer writes it and how
tightly it binds, its implementation on floats (the compiled scalar path: Python's operators
and :mod:`math`) and on NumPy columns, the rule its dimensions follow, and what it tells about
the formula (an on/off result; a result that a NaN operand may not reach). The validator
allows what is in these tables and nothing else.
"""

from __future__ import annotations

import ast
import importlib
import math
import operator
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import reduce
from typing import Any

Value = Any  # float or numpy.ndarray
Env = Mapping[str, Value]
Fn = Callable[[Env], Value]

#: Dimension rules (the dimension walker has one method per rule):
#: operands agree (a literal 0 agrees with anything) and the result has their dimensions;
SAME = "same"
#: operands agree and the result is dimensionless;
COMPARE = "compare"
#: operands may have any dimensions and the result is dimensionless (and, or, not);
LOGIC = "logic"
#: the result has its one operand's dimensions (unary minus and plus);
OPERAND = "operand"
#: the product, or the quotient, of its operands' dimensions;
MULTIPLY = "multiply"
DIVIDE = "divide"
#: a dimensionless exponent, constant unless the base is dimensionless;
POWER = "power"
#: the test may have any dimensions, the two branches agree (``a if c else b``);
CHOOSE = "choose"
#: functions: a dimensionless argument and result; the square root halves the dimensions.
DIMLESS = "dimless"
SQRT = "sqrt"


@dataclass(frozen=True, eq=False)
class Op:
    """One operator of the formula language.

    ``prec`` is how tightly it binds, for the renderer's parentheses (a comparison, ``and``,
    ``or`` and a choice bind loosest; a unary operator wraps an operand looser than itself).
    ``scalar`` and ``array`` compute it on floats and on values that may be NumPy columns;
    ``and``/``or`` take the list of their operands, and the choice (which must not compute
    the branch it does not take) builds its closure from its three compiled parts (and the
    test's cell name, when the test is one cell, to read it in place).
    ``chain`` groups the operators whose left-leaning runs are walked with a loop.
    """

    node: type[ast.AST]
    symbol: str
    prec: int
    scalar: Callable[..., Any]
    array: Callable[..., Any]
    dims: str
    verb: str = ""  # what a dimension error says the operator does ("add or subtract")
    chain: int | None = None
    flag: bool = False  # its result is on/off: 1 or 0
    may_hide_nan: bool = False  # a NaN operand may give a number (``x ** 0``, a choice)


@dataclass(frozen=True, eq=False)
class Function:
    """One function a formula may call: how many arguments (None: one or more), the rule its
    dimensions follow, and its implementations on floats and on NumPy columns. A function of
    one or more arguments folds them (``min``, ``max``): of one, it is that one, and the
    compiler calls it only with two or more."""

    arity: int | None
    dims: str
    scalar: Callable[..., Any]
    array: Callable[..., Any]


def is_array(*xs: Value) -> bool:
    """Whether any of ``xs`` is a NumPy column. NumPy is imported by what builds columns (a
    sweep, a simulation); until then no value can be one, and the scalar path (``eval``, the
    dashboard's start-up) does not pay for the import."""
    np = sys.modules.get("numpy")
    return np is not None and any(isinstance(x, np.ndarray) for x in xs)


def _numpy(name: str) -> Callable[..., Any]:
    """NumPy's function ``name`` (``minimum``, ``where`` …), looked up when called: only on
    columns, so NumPy is loaded by then."""
    def call(*args: Any) -> Any:
        np = sys.modules.get("numpy") or importlib.import_module("numpy")
        return getattr(np, name)(*args)
    return call


_logical_not, _logical_and, _logical_or, _where = (
    _numpy("logical_not"), _numpy("logical_and"), _numpy("logical_or"), _numpy("where"))


def _elementwise(scalar: Callable[[float], float],
                 array: Callable[..., Any]) -> Callable[[Value], Value]:
    def call(x: Value) -> Value:
        return array(x) if is_array(x) else float(scalar(x))
    return call


def _fold(scalar: Callable[..., Any], array: Callable[..., Any]) -> Callable[..., Value]:
    def call(*xs: Value) -> Value:
        return reduce(array, xs) if is_array(*xs) else float(scalar(xs))
    return call


def _not(x: Value) -> Value:
    return _logical_not(x).astype(float) if is_array(x) else float(not x)


def _all(xs: list[Value]) -> Value:
    return float(all(xs))


def _any(xs: list[Value]) -> Value:
    return float(any(xs))


def _all_columns(xs: list[Value]) -> Value:
    return reduce(_logical_and, xs).astype(float) if is_array(*xs) else float(all(xs))


def _any_columns(xs: list[Value]) -> Value:
    return reduce(_logical_or, xs).astype(float) if is_array(*xs) else float(any(xs))


def _choose(test: Fn, body: Fn, orelse: Fn, name: str | None = None) -> Fn:
    if name is not None:  # the test is a cell: read in place
        return lambda env: body(env) if env[name] else orelse(env)
    return lambda env: body(env) if test(env) else orelse(env)


def _choose_columns(test: Fn, body: Fn, orelse: Fn, name: str | None = None) -> Fn:
    def choose(env: Env) -> Value:
        chosen = test(env)
        if is_array(chosen):
            return _where(chosen, body(env), orelse(env))
        return body(env) if chosen else orelse(env)
    return choose


def _binary(node: type[ast.operator], symbol: str, prec: int, impl: Callable[..., Any],
            dims: str, chain: int | None, **more: Any) -> Op:
    return Op(node, symbol, prec, impl, impl, dims, chain=chain, **more)


#: ``+ - * / **``: the two chain groups (``+ −`` and ``× ÷``) and the power.
BINARY: dict[type[ast.AST], Op] = {op.node: op for op in (
    _binary(ast.Add, "+", 1, operator.add, SAME, 1, verb="add or subtract"),
    _binary(ast.Sub, "-", 1, operator.sub, SAME, 1, verb="add or subtract"),
    _binary(ast.Mult, "×", 2, operator.mul, MULTIPLY, 2),
    _binary(ast.Div, "÷", 2, operator.truediv, DIVIDE, 2),
    _binary(ast.Pow, "**", 4, operator.pow, POWER, None, may_hide_nan=True),
)}

#: ``-x``, ``+x``, ``not x``.
UNARY: dict[type[ast.AST], Op] = {op.node: op for op in (
    Op(ast.USub, "-", 3, operator.neg, operator.neg, OPERAND),
    Op(ast.UAdd, "+", 3, operator.pos, operator.pos, OPERAND),
    Op(ast.Not, "not ", 3, lambda x: float(not x), _not, LOGIC, flag=True, may_hide_nan=True),
)}


def _compare(node: type[ast.cmpop], symbol: str, impl: Callable[..., Any]) -> Op:
    return Op(node, symbol, 0, impl, impl, COMPARE, verb="compare", flag=True,
              may_hide_nan=True)


#: The comparisons; a chain of them (``a < b < c``) holds when each does.
COMPARISONS: dict[type[ast.AST], Op] = {op.node: op for op in (
    _compare(ast.Lt, "<", operator.lt),
    _compare(ast.LtE, "≤", operator.le),
    _compare(ast.Gt, ">", operator.gt),
    _compare(ast.GtE, "≥", operator.ge),
    _compare(ast.Eq, "=", operator.eq),
    _compare(ast.NotEq, "≠", operator.ne),
)}

#: ``and``, ``or``: every operand is computed (a column has no short circuit).
BOOLEAN: dict[type[ast.AST], Op] = {op.node: op for op in (
    Op(ast.And, " and ", 0, _all, _all_columns, LOGIC, flag=True, may_hide_nan=True),
    Op(ast.Or, " or ", 0, _any, _any_columns, LOGIC, flag=True, may_hide_nan=True),
)}

#: ``body if test else orelse``.
CHOICE = Op(ast.IfExp, " if ", 0, _choose, _choose_columns, CHOOSE, verb="choose between",
            may_hide_nan=True)


#: The functions a formula may call, by name.
FUNCTIONS: dict[str, Function] = {
    "min": Function(None, SAME, min, _fold(min, _numpy("minimum"))),
    "max": Function(None, SAME, max, _fold(max, _numpy("maximum"))),
    "abs": Function(1, SAME, abs, _elementwise(abs, _numpy("abs"))),
    "ceil": Function(1, DIMLESS, lambda x: float(math.ceil(x)),
                     _elementwise(math.ceil, _numpy("ceil"))),
    "floor": Function(1, DIMLESS, lambda x: float(math.floor(x)),
                      _elementwise(math.floor, _numpy("floor"))),
    "round": Function(1, DIMLESS, lambda x: float(round(x)), _elementwise(round, _numpy("round"))),
    "sqrt": Function(1, SQRT, math.sqrt, _elementwise(math.sqrt, _numpy("sqrt"))),
    "log": Function(1, DIMLESS, math.log, _elementwise(math.log, _numpy("log"))),
    "log2": Function(1, DIMLESS, math.log2, _elementwise(math.log2, _numpy("log2"))),
    "log10": Function(1, DIMLESS, math.log10, _elementwise(math.log10, _numpy("log10"))),
    "exp": Function(1, DIMLESS, math.exp, _elementwise(math.exp, _numpy("exp"))),
}


def op_of(node: ast.AST) -> Op | None:
    """The table's entry for an operator node (a comparison by its first operator, when all
    of its operators are in the table); None for anything the language does not have."""
    if isinstance(node, ast.BinOp):
        return BINARY.get(type(node.op))
    if isinstance(node, ast.UnaryOp):
        return UNARY.get(type(node.op))
    if isinstance(node, ast.BoolOp):
        return BOOLEAN.get(type(node.op))
    if isinstance(node, ast.Compare):
        if all(type(o) in COMPARISONS for o in node.ops):
            return COMPARISONS[type(node.ops[0])]
        return None
    return CHOICE if isinstance(node, ast.IfExp) else None


def chain(node: ast.BinOp) -> tuple[ast.expr, list[tuple[ast.operator, ast.expr]]]:
    """``a - b + c`` → ``a, [(Sub, b), (Add, c)]``: the first operand of a left-leaning run
    of + and − (or × and ÷) and each operator with the operand on its right."""
    group = BINARY[type(node.op)].chain
    rest: list[tuple[ast.operator, ast.expr]] = []
    current: ast.expr = node
    while group is not None and isinstance(current, ast.BinOp) \
            and type(current.op) in BINARY and BINARY[type(current.op)].chain == group:
        rest.append((current.op, current.right))
        current = current.left
    rest.reverse()
    return current, rest


def is_chain(node: ast.AST) -> bool:
    return isinstance(node, ast.BinOp) and type(node.op) in BINARY \
        and BINARY[type(node.op)].chain is not None


def operands(node: ast.AST) -> list[ast.expr]:
    """The expressions an operator node or a call reads, left to right (a chain's terms
    all at once); a test before the branches it chooses between."""
    if is_chain(node):
        first, rest = chain(node)  # type: ignore[arg-type]
        return [first, *(operand for _, operand in rest)]
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.UnaryOp):
        return [node.operand]
    if isinstance(node, ast.Compare):
        return [node.left, *node.comparators]
    if isinstance(node, ast.BoolOp):
        return list(node.values)
    if isinstance(node, ast.IfExp):
        return [node.test, node.body, node.orelse]
    return list(node.args) if isinstance(node, ast.Call) else []
