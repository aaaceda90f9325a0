"""The formula language: parsed with :mod:`ast`, checked against an allowlist, never eval'd.

A formula is one expression over cell names::

    peak_flops * weight_bytes / (2 * FLOP / token * hbm_bandwidth)
    max(0, concurrency * (isl + osl) - osl * compute_bound_threshold)
    (1 - spec_alpha ** (spec_k + 1)) / (1 - spec_alpha)
    prefill_time if chunked_prefill else 0 * s

Allowed: numbers, ``"3.35 TB/s"`` quantity strings, cell names, unit names (FLOP, token, B,
s, ms, GB … — dimensions of information, time, FLOP, token, request), ``+ - * / **``,
comparisons, ``and or not``, ``a if c else b`` and the functions in :data:`FUNCTIONS`.
Anything else — attributes, subscripts, lambdas, comprehensions, keywords, dunder names,
a constant exponent beyond ±64, an expression nested more than :data:`MAX_DEPTH` deep — is a
:class:`~perfgraph.errors.FormulaSyntaxError`. A run of ``+ -`` (or ``* /``) counts as one
level and is walked with a loop, so ``a + b + c + …`` may have as many terms as fit.

The same walk yields the names a formula reads (the graph's edges), its dimensions (checked
against the cell's declared unit when a sheet loads) and a closure that computes it over
canonical magnitudes: floats, or whole NumPy columns for a sweep.
"""

from __future__ import annotations

import ast
import math
import operator
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import reduce
from typing import Any

import numpy as np

from perfgraph.engine.units import Dims, formula_unit, parse_quantity
from perfgraph.errors import (
    DimensionError,
    EvaluationError,
    FormulaSyntaxError,
    UnitError,
    UnknownNameError,
)

MAX_LENGTH = 2000
MAX_EXPONENT = 64.0
#: How deeply a formula may nest; every walk of a tree that passed the validator is then
#: far from Python's recursion limit.
MAX_DEPTH = 100

Value = Any  # float or numpy.ndarray
Env = Mapping[str, Value]
Fn = Callable[[Env], Value]


def _is_array(*xs: Value) -> bool:
    return any(isinstance(x, np.ndarray) for x in xs)


def _elementwise(scalar: Callable[[float], float],
                 array: Callable[..., Any]) -> Callable[[Value], Value]:
    def call(x: Value) -> Value:
        return array(x) if _is_array(x) else float(scalar(x))
    return call


def _fold(scalar: Callable[..., Any], array: Callable[..., Any]) -> Callable[..., Value]:
    def call(*xs: Value) -> Value:
        return reduce(array, xs) if _is_array(*xs) else float(scalar(xs))
    return call


#: name → (arity or None for 1+, dimension rule, implementation)
#: rules: "same" all args share dims → that; "dimless" args and result dimensionless;
#: "sqrt" halves the dims.
FUNCTIONS: dict[str, tuple[int | None, str, Callable[..., Value]]] = {
    "min": (None, "same", _fold(min, np.minimum)),
    "max": (None, "same", _fold(max, np.maximum)),
    "abs": (1, "same", _elementwise(abs, np.abs)),
    "ceil": (1, "dimless", _elementwise(math.ceil, np.ceil)),
    "floor": (1, "dimless", _elementwise(math.floor, np.floor)),
    "round": (1, "dimless", _elementwise(round, np.round)),
    "sqrt": (1, "sqrt", _elementwise(math.sqrt, np.sqrt)),
    "log": (1, "dimless", _elementwise(math.log, np.log)),
    "log2": (1, "dimless", _elementwise(math.log2, np.log2)),
    "log10": (1, "dimless", _elementwise(math.log10, np.log10)),
    "exp": (1, "dimless", _elementwise(math.exp, np.exp)),
}

_BINOPS: dict[type, tuple[str, Callable[[Value, Value], Value]]] = {
    ast.Add: ("+", operator.add),
    ast.Sub: ("-", operator.sub),
    ast.Mult: ("×", operator.mul),
    ast.Div: ("÷", operator.truediv),
    ast.Pow: ("**", operator.pow),
}



#: Why a formula failed, for the ArithmeticError / ValueError Python raised.
_REASONS = {"math domain error": "a function's argument is outside its domain",
            "math range error": "the result is too large",
            "float division by zero": "division by zero"}


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


#: What evaluating an allowlisted formula can raise: all of them mean "no value".
ARITHMETIC = (ZeroDivisionError, OverflowError, ValueError, TypeError)


_CMPOPS: dict[type, Callable[[Value, Value], Value]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}


@dataclass(frozen=True)
class Formula:
    """A parsed, allowlisted formula. ``names`` are the cells it reads, in order of use."""

    text: str
    tree: ast.expr
    names: tuple[str, ...]

    def dims(self, dims_of: Callable[[str], Dims]) -> Dims:
        """The formula's dimensions, given each cell's (DimensionError if inconsistent)."""
        return _DimsWalker(self.text, dims_of).visit(self.tree)

    def compile(self) -> Fn:
        """A closure computing the formula from an env of canonical magnitudes (floats).

        The scalar path: Python's operators and :mod:`math`, no type checks; a subtree of
        constants is computed once, here. :meth:`compile_columns` serves NumPy columns.
        """
        return _compile(self.tree, _SCALAR)

    def compile_columns(self) -> Fn:
        """A closure computing the formula over an env whose values may be NumPy columns."""
        return _compile(self.tree, _COLUMNS)

    def value(self, env: Env) -> float:
        """The formula's value over ``env`` as a finite float; EvaluationError saying why
        there is none (division by zero, a domain error, overflow, a complex result)."""
        try:
            result = float(self.compile()(env))
        except ARITHMETIC as exc:
            raise EvaluationError(failure(exc, self.text)) from None
        if not math.isfinite(result):
            raise EvaluationError(f"{self.text!r} is not a finite number ({result})")
        return result

    def render(self, show: Callable[[str], str]) -> str:
        """The formula with each cell name replaced by ``show(name)``: ``1024 × 2 × 7.00E10``."""
        return str(_Renderer(show).visit(self.tree))


def parse(text: str) -> Formula:
    """Parse ``text`` into a :class:`Formula`, or raise FormulaSyntaxError saying why."""
    if not isinstance(text, str):
        raise FormulaSyntaxError(f"a formula must be text, not {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise FormulaSyntaxError(f"formula longer than {MAX_LENGTH} characters")
    if "\x00" in text:
        raise FormulaSyntaxError("formula contains a NUL character")
    try:
        with warnings.catch_warnings():  # "invalid decimal literal" and the like
            warnings.simplefilter("ignore")
            tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        at = f" at column {exc.offset}" if exc.offset else ""
        raise FormulaSyntaxError(f"invalid formula {text!r}: {exc.msg}{at}",
                                 grammar=True) from None
    except (RecursionError, MemoryError, ValueError):
        raise FormulaSyntaxError(f"formula {_short(text)} is nested too deeply",
                                 grammar=True) from None
    try:
        names = _Validator(text).collect(tree.body)
    except RecursionError:  # pragma: no cover - MAX_DEPTH keeps the walk shallow
        raise FormulaSyntaxError(f"formula {_short(text)} is nested too deeply") from None
    return Formula(text=text.strip(), tree=tree.body, names=tuple(dict.fromkeys(names)))


def _short(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:40]) + "…"


#: The runs walked with a loop: a left-leaning chain of + and −, or of × and ÷.
_CHAIN_GROUPS: dict[type, int] = {ast.Add: 1, ast.Sub: 1, ast.Mult: 2, ast.Div: 2}


def _chain(node: ast.BinOp) -> tuple[ast.expr, list[tuple[ast.operator, ast.expr]]]:
    """``a - b + c`` → ``a, [(Sub, b), (Add, c)]``: the first operand of a left-leaning run
    of + and − (or × and ÷) and each operator with the operand on its right."""
    group = _CHAIN_GROUPS.get(type(node.op))
    rest: list[tuple[ast.operator, ast.expr]] = []
    current: ast.expr = node
    while group is not None and isinstance(current, ast.BinOp) \
            and _CHAIN_GROUPS.get(type(current.op)) == group:
        rest.append((current.op, current.right))
        current = current.left
    rest.reverse()
    return current, rest


def _is_chain(node: ast.AST) -> bool:
    return isinstance(node, ast.BinOp) and type(node.op) in _CHAIN_GROUPS


class _Validator:
    """Walks the tree; anything not on the allowlist is a FormulaSyntaxError."""

    def __init__(self, text: str) -> None:
        self.text = text

    def fail(self, node: ast.AST, what: str) -> FormulaSyntaxError:
        col = getattr(node, "col_offset", None)
        at = f" (column {col + 1})" if col is not None else ""
        return FormulaSyntaxError(f"{what} is not allowed in a formula: {self.text!r}{at}")

    def collect(self, node: ast.AST) -> list[str]:
        names: list[str] = []
        self.walk(node, names, 0)
        return names

    def walk(self, node: ast.AST, names: list[str], depth: int) -> None:
        if depth > MAX_DEPTH:
            raise FormulaSyntaxError(
                f"formula {_short(self.text)} is nested more than {MAX_DEPTH} levels deep; "
                "split it into cells")
        self.node(node, names, depth + 1)

    def node(self, node: ast.AST, names: list[str], depth: int) -> None:
        """Check one node; ``depth`` is that of its children."""
        if isinstance(node, ast.Constant):
            self.constant(node)
        elif isinstance(node, ast.Name):
            if node.id.startswith("_"):
                raise self.fail(node, f"the name {node.id!r} (leading underscore)")
            if node.id not in FUNCTIONS and formula_unit(node.id) is None:
                names.append(node.id)
            elif node.id in FUNCTIONS:
                raise self.fail(node, f"the function {node.id!r} without a call")
        elif _is_chain(node):
            first, rest = _chain(node)  # type: ignore[arg-type]
            for child in (first, *(operand for _, operand in rest)):
                self.walk(child, names, depth)
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            self.walk(node.left, names, depth)
            self.walk(node.right, names, depth)
            self.power(node)  # after the walk: the exponent is known to be shallow
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd,
                                                                     ast.Not)):
            self.walk(node.operand, names, depth)
        elif isinstance(node, ast.Compare) and all(type(o) in _CMPOPS for o in node.ops):
            for child in (node.left, *node.comparators):
                self.walk(child, names, depth)
        elif isinstance(node, ast.BoolOp):
            for child in node.values:
                self.walk(child, names, depth)
        elif isinstance(node, ast.IfExp):
            for child in (node.test, node.body, node.orelse):
                self.walk(child, names, depth)
        elif isinstance(node, ast.Call):
            self.call(node, names, depth)
        elif isinstance(node, ast.Attribute):
            raise self.fail(node, f"attribute access (.{node.attr})")
        elif isinstance(node, (ast.Subscript, ast.Slice)):
            raise self.fail(node, "indexing")
        else:
            raise self.fail(node, f"{type(node).__name__} syntax")

    def constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, bool) or isinstance(node.value, (int, float)):
            if isinstance(node.value, int) and abs(node.value) > 10**30:
                raise self.fail(node, "an integer this large")
            return
        if isinstance(node.value, str):
            try:
                parse_quantity(node.value)
            except UnitError as exc:
                raise FormulaSyntaxError(f"{exc.message} in {self.text!r}") from None
            return
        raise self.fail(node, f"the constant {node.value!r}")

    def power(self, node: ast.BinOp) -> None:
        if not isinstance(node.op, ast.Pow):
            return
        exp = _constant_number(node.right)
        if exp is not None and abs(exp) > MAX_EXPONENT:
            raise self.fail(node, f"an exponent of {exp:g} (at most ±{MAX_EXPONENT:g})")

    def call(self, node: ast.Call, names: list[str], depth: int) -> None:
        if not isinstance(node.func, ast.Name):
            self.walk(node.func, names, depth)  # reports the attribute access or the like
            raise self.fail(node, "calling the result of an expression")
        if node.func.id.startswith("_"):
            raise self.fail(node, f"the name {node.func.id!r} (leading underscore)")
        if node.func.id not in FUNCTIONS:
            what = node.func.id
            known = ", ".join(sorted(FUNCTIONS))
            raise FormulaSyntaxError(
                f"unknown function {what!r} in {self.text!r}; known: {known}")
        if node.keywords:
            raise self.fail(node, "a keyword argument")
        arity = FUNCTIONS[node.func.id][0]
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise self.fail(node, "a starred argument")
        if (arity is not None and len(node.args) != arity) or not node.args:
            want = arity if arity is not None else "one or more"
            raise FormulaSyntaxError(
                f"{node.func.id}() takes {want} argument(s), got {len(node.args)}: "
                f"{self.text!r}")
        for arg in node.args:
            self.walk(arg, names, depth)


def _constant_number(node: ast.AST) -> float | None:
    """The value of an expression of numeric literals alone (``2``, ``-0.5``, ``10 ** 3``).

    None when it reads a name; ``inf`` when folding it overflows (``10 ** 10 ** 10``).
    """
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _constant_number(node.operand)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
            and not isinstance(node.value, bool):
        return float(node.value)
    if _is_chain(node):
        first, rest = _chain(node)  # type: ignore[arg-type]
        value = _constant_number(first)
        for op, operand in rest:
            right = _constant_number(operand)
            if value is None or right is None:
                return None
            value = _fold_constant(op, value, right)
        return value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _constant_number(node.left), _constant_number(node.right)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            return math.inf
        return _fold_constant(node.op, left, right)
    return None


def _fold_constant(op: ast.operator, left: float, right: float) -> float:
    try:
        return float(_BINOPS[type(op)][1](left, right))
    except (OverflowError, ZeroDivisionError, ValueError, TypeError):
        return math.inf


def _is_zero(node: ast.AST) -> bool:
    return _constant_number(node) == 0.0


class _DimsWalker:
    def __init__(self, text: str, dims_of: Callable[[str], Dims]) -> None:
        self.text = text
        self.dims_of = dims_of

    def mismatch(self, what: str, a: Dims, b: Dims) -> DimensionError:
        return DimensionError(f"cannot {what} {a} and {b} in {self.text!r}")

    def same(self, what: str, nodes: list[ast.expr]) -> Dims:
        """Operands that must agree; a literal 0 agrees with anything."""
        typed = [(n, self.visit(n)) for n in nodes]
        ref = next((d for n, d in typed if not _is_zero(n)), Dims.none())
        for n, d in typed:
            if not _is_zero(n) and d != ref:
                raise self.mismatch(what, ref, d)
        return ref

    def visit(self, node: ast.expr) -> Dims:
        if isinstance(node, ast.Constant):
            return parse_quantity(node.value)[1] if isinstance(node.value, str) else Dims.none()
        if isinstance(node, ast.Name):
            u = formula_unit(node.id)
            return u.dims if u is not None else self.dims_of(node.id)
        if isinstance(node, ast.UnaryOp):
            inner = self.visit(node.operand)
            return Dims.none() if isinstance(node.op, ast.Not) else inner
        if isinstance(node, ast.BinOp):
            return self.binop(node)
        if isinstance(node, ast.Compare):
            self.same("compare", [node.left, *node.comparators])
            return Dims.none()
        if isinstance(node, ast.BoolOp):
            for v in node.values:
                self.visit(v)
            return Dims.none()
        if isinstance(node, ast.IfExp):
            self.visit(node.test)
            return self.same("choose between", [node.body, node.orelse])
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        return self.call(node.func.id, node.args)

    def binop(self, node: ast.BinOp) -> Dims:
        if isinstance(node.op, (ast.Add, ast.Sub)):
            first, rest = _chain(node)
            return self.same("add or subtract", [first, *(operand for _, operand in rest)])
        if isinstance(node.op, (ast.Mult, ast.Div)):
            first, rest = _chain(node)
            out = self.visit(first)
            for op, operand in rest:
                d = self.visit(operand)
                out = out * d if isinstance(op, ast.Mult) else out / d
            return out
        left, right = self.visit(node.left), self.visit(node.right)
        if not right.dimensionless:
            raise DimensionError(f"an exponent must be dimensionless, not {right}, "
                                 f"in {self.text!r}")
        if left.dimensionless:
            return left
        exp = _constant_number(node.right)
        if exp is None:
            raise DimensionError(f"{left} raised to a computed power has no fixed unit "
                                 f"in {self.text!r}")
        return left ** exp

    def call(self, name: str, args: list[ast.expr]) -> Dims:
        rule = FUNCTIONS[name][1]
        if rule == "same":
            return self.same(f"take {name}() of", list(args))
        d = self.visit(args[0])
        if rule == "sqrt":
            return d ** 0.5
        if not d.dimensionless:
            raise DimensionError(f"{name}() needs a dimensionless argument, not {d}, "
                                 f"in {self.text!r}")
        return d


class _Mode:
    """How a compiled formula computes: functions, ``not``, ``and``/``or`` and choices."""

    def __init__(self, functions: dict[str, Callable[..., Any]], not_: Callable[..., Any],
                 boolop: Callable[..., Any], ifexp: Callable[..., Any] | None,
                 fold: bool) -> None:
        self.functions, self.not_, self.boolop, self.ifexp = functions, not_, boolop, ifexp
        self.fold = fold


def _bool_scalar(is_and: bool, xs: list[Value]) -> Value:
    return float(all(xs) if is_and else any(xs))


_SCALAR = _Mode(
    {"min": lambda *xs: min(xs), "max": lambda *xs: max(xs), "abs": abs,
     "ceil": lambda x: float(math.ceil(x)), "floor": lambda x: float(math.floor(x)),
     "round": lambda x: float(round(x)), "sqrt": math.sqrt,
     "log": math.log, "log2": math.log2, "log10": math.log10, "exp": math.exp},
    lambda x: float(not x), _bool_scalar, None, fold=True)
_COLUMNS = _Mode({name: impl for name, (_, _, impl) in FUNCTIONS.items()},
                 lambda x: _not(x), lambda is_and, xs: _boolop(is_and, xs),
                 lambda test, body, orelse, env: _ifexp(test, body, orelse, env),
                 fold=False)


def _compile(node: ast.expr, mode: _Mode) -> Fn:
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


def _compile_node(node: ast.expr, mode: _Mode) -> Fn:
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
    if isinstance(node, ast.UnaryOp):
        inner = _compile(node.operand, mode)
        if isinstance(node.op, ast.USub):
            return lambda env: -inner(env)
        if isinstance(node.op, ast.Not):
            not_ = mode.not_
            return lambda env: not_(inner(env))
        return inner
    if _is_chain(node):
        return _compile_chain(node, mode)  # type: ignore[arg-type]
    if isinstance(node, ast.BinOp):
        op = _BINOPS[type(node.op)][1]
        left, right = _compile(node.left, mode), _compile(node.right, mode)
        return lambda env: op(left(env), right(env))
    if isinstance(node, ast.Compare):
        return _compile_compare(node, mode)
    if isinstance(node, ast.BoolOp):
        parts = [_compile(v, mode) for v in node.values]
        is_and, boolop = isinstance(node.op, ast.And), mode.boolop
        return lambda env: boolop(is_and, [p(env) for p in parts])
    if isinstance(node, ast.IfExp):
        return _compile_ifexp(node, mode)
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    impl = mode.functions[node.func.id]
    args = [_compile(a, mode) for a in node.args]
    if len(args) == 1:
        (arg,) = args
        return lambda env: impl(arg(env))
    return lambda env: impl(*[a(env) for a in args])


def _compile_ifexp(node: ast.IfExp, mode: _Mode) -> Fn:
    test = _compile(node.test, mode)
    body, orelse = _compile(node.body, mode), _compile(node.orelse, mode)
    if mode.ifexp is None:
        return lambda env: body(env) if test(env) else orelse(env)
    ifexp = mode.ifexp
    return lambda env: ifexp(test(env), body, orelse, env)


def _compile_chain(node: ast.BinOp, mode: _Mode) -> Fn:
    """``a + b - c …`` as a loop over its terms, left to right as Python would."""
    first, rest = _chain(node)
    start = _compile(first, mode)
    steps = [(_BINOPS[type(op)][1], _compile(operand, mode)) for op, operand in rest]
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


def _compile_compare(node: ast.Compare, mode: _Mode) -> Fn:
    operands = [_compile(n, mode) for n in (node.left, *node.comparators)]
    ops = [_CMPOPS[type(o)] for o in node.ops]
    boolop = mode.boolop
    if len(ops) == 1 and mode.ifexp is None:
        (op,), (a, b) = ops, operands
        return lambda env: float(op(a(env), b(env)))

    def compare(env: Env) -> Value:
        values = [o(env) for o in operands]
        results = [op(a, b) for op, a, b in zip(ops, values, values[1:], strict=False)]
        return boolop(True, results)
    return compare


def _not(x: Value) -> Value:
    return np.logical_not(x).astype(float) if _is_array(x) else float(not x)


def _boolop(is_and: bool, xs: list[Value]) -> Value:
    if _is_array(*xs):
        fn = np.logical_and if is_and else np.logical_or
        return reduce(fn, xs).astype(float)
    return float(all(xs) if is_and else any(xs))


def _ifexp(test: Value, body: Fn, orelse: Fn, env: Env) -> Value:
    if _is_array(test):
        return np.where(test, body(env), orelse(env))
    return body(env) if test else orelse(env)


class _Renderer(ast.NodeVisitor):
    """Writes a formula back out with names shown as values and × ÷ for * /."""

    PREC = {ast.Add: 1, ast.Sub: 1, ast.Mult: 2, ast.Div: 2, ast.Pow: 4}

    def __init__(self, show: Callable[[str], str]) -> None:
        self.show = show

    def wrap(self, node: ast.expr, parent: int, right: bool = False) -> str:
        text = self.visit(node)
        mine = self.PREC.get(type(node.op), 0) if isinstance(node, ast.BinOp) else 9
        if isinstance(node, (ast.IfExp, ast.BoolOp, ast.Compare)):
            mine = 0
        return f"({text})" if mine < parent or (right and mine == parent) else text

    def visit_BinOp(self, node: ast.BinOp) -> str:
        prec = self.PREC[type(node.op)]
        if not _is_chain(node):
            symbol = _BINOPS[type(node.op)][0]
            return f"{self.wrap(node.left, prec)} {symbol} {self.wrap(node.right, prec, True)}"
        first, rest = _chain(node)
        parts = [self.wrap(first, prec)]
        for op, operand in rest:
            parts.append(f"{_BINOPS[type(op)][0]} {self.wrap(operand, prec, True)}")
        return " ".join(parts)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> str:
        symbol = {ast.USub: "-", ast.UAdd: "+", ast.Not: "not "}[type(node.op)]
        return symbol + self.wrap(node.operand, 3)

    def visit_Constant(self, node: ast.Constant) -> str:
        raw: Any = node.value
        return repr(raw) if isinstance(raw, str) else f"{raw:g}"

    def visit_Name(self, node: ast.Name) -> str:
        return node.id if formula_unit(node.id) is not None else self.show(node.id)

    def visit_Call(self, node: ast.Call) -> str:
        assert isinstance(node.func, ast.Name)
        return f"{node.func.id}({', '.join(self.visit(a) for a in node.args)})"

    def visit_IfExp(self, node: ast.IfExp) -> str:
        return f"{self.visit(node.body)} if {self.visit(node.test)} else {self.visit(node.orelse)}"

    def visit_Compare(self, node: ast.Compare) -> str:
        ops = {ast.Lt: "<", ast.LtE: "≤", ast.Gt: ">", ast.GtE: "≥", ast.Eq: "=",
               ast.NotEq: "≠"}
        out = self.wrap(node.left, 1)
        for op, right in zip(node.ops, node.comparators, strict=True):
            out += f" {ops[type(op)]} {self.wrap(right, 1)}"
        return out

    def visit_BoolOp(self, node: ast.BoolOp) -> str:
        joiner = " and " if isinstance(node.op, ast.And) else " or "
        return joiner.join(self.wrap(v, 1) for v in node.values)


def check_names(formula: Formula, known: Mapping[str, object] | set[str]) -> None:
    """UnknownNameError (with a near miss) for the first name that is not a cell."""
    from perfgraph.errors import did_you_mean

    for name in formula.names:
        if name not in known:
            raise UnknownNameError(
                f"unknown name {name!r} in formula {formula.text!r}"
                f"{did_you_mean(name, known)}")
