"""The allowlist: a parsed tree holds only what the operator table has, or it is refused.

Anything else — attributes, subscripts, lambdas, comprehensions, keywords, dunder names, a
constant exponent beyond ±64, an expression nested more than :data:`MAX_DEPTH` deep — is a
:class:`~perfgraph.errors.FormulaSyntaxError`. The same walk collects the names a formula
reads and what its operators say about it (see :class:`Structure`).
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field

from perfgraph.engine.formula.ops import (
    BINARY,
    CHOICE,
    FUNCTIONS,
    OPERAND,
    POWER,
    UNARY,
    Op,
    chain,
    is_chain,
    op_of,
    operands,
)
from perfgraph.engine.units import formula_unit, parse_quantity
from perfgraph.errors import FormulaSyntaxError, UnitError

MAX_LENGTH = 2000
MAX_EXPONENT = 64.0
#: How deeply a formula may nest; every walk of a tree that passed the validator is then
#: far from Python's recursion limit.
MAX_DEPTH = 100


@dataclass
class Structure:
    """What the walk found: the names read, in order of use (repeats included), whether an
    if-expression branches, and whether an operator may turn a NaN operand into a number."""

    names: list[str] = field(default_factory=list)
    branches: bool = False
    may_hide_nan: bool = False

    def saw(self, op: Op) -> None:
        self.branches = self.branches or op is CHOICE
        self.may_hide_nan = self.may_hide_nan or op.may_hide_nan


def short(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:40]) + "…"


class Validator:
    """Walks the tree; anything not on the allowlist is a FormulaSyntaxError."""

    def __init__(self, text: str) -> None:
        self.text = text

    def fail(self, node: ast.AST, what: str) -> FormulaSyntaxError:
        col = getattr(node, "col_offset", None)
        at = f" (column {col + 1})" if col is not None else ""
        return FormulaSyntaxError(f"{what} is not allowed in a formula: {self.text!r}{at}")

    def collect(self, node: ast.AST) -> Structure:
        found = Structure()
        self.walk(node, found, 0)
        return found

    def walk(self, node: ast.AST, found: Structure, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise FormulaSyntaxError(
                f"formula {short(self.text)} is nested more than {MAX_DEPTH} levels deep; "
                "split it into cells")
        self.node(node, found, depth + 1)

    def node(self, node: ast.AST, found: Structure, depth: int) -> None:
        """Check one node; ``depth`` is that of its children."""
        if isinstance(node, ast.Constant):
            self.constant(node)
        elif isinstance(node, ast.Name):
            self.name(node, found)
        elif isinstance(node, ast.Call):
            self.call(node, found, depth)
        elif (op := op_of(node)) is not None:
            found.saw(op)
            for child in operands(node):
                self.walk(child, found, depth)
            if isinstance(node, ast.BinOp):
                self.power(node)  # after the walk: the exponent is known to be shallow
        elif isinstance(node, ast.Attribute):
            raise self.fail(node, f"attribute access (.{node.attr})")
        elif isinstance(node, (ast.Subscript, ast.Slice)):
            raise self.fail(node, "indexing")
        else:
            raise self.fail(node, f"{type(node).__name__} syntax")

    def name(self, node: ast.Name, found: Structure) -> None:
        if node.id.startswith("_"):
            raise self.fail(node, f"the name {node.id!r} (leading underscore)")
        if node.id not in FUNCTIONS and formula_unit(node.id) is None:
            found.names.append(node.id)
        elif node.id in FUNCTIONS:
            raise self.fail(node, f"the function {node.id!r} without a call")

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
        if BINARY[type(node.op)].dims != POWER:
            return
        exp = constant_number(node.right)
        if exp is not None and abs(exp) > MAX_EXPONENT:
            raise self.fail(node, f"an exponent of {exp:g} (at most ±{MAX_EXPONENT:g})")

    def call(self, node: ast.Call, found: Structure, depth: int) -> None:
        if not isinstance(node.func, ast.Name):
            self.walk(node.func, found, depth)  # reports the attribute access or the like
            raise self.fail(node, "calling the result of an expression")
        name = node.func.id
        if name.startswith("_"):
            raise self.fail(node, f"the name {name!r} (leading underscore)")
        if name not in FUNCTIONS:
            known = ", ".join(sorted(FUNCTIONS))
            raise FormulaSyntaxError(
                f"unknown function {name!r} in {self.text!r}; known: {known}")
        if node.keywords:
            raise self.fail(node, "a keyword argument")
        arity = FUNCTIONS[name].arity
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise self.fail(node, "a starred argument")
        if (arity is not None and len(node.args) != arity) or not node.args:
            want = arity if arity is not None else "one or more"
            raise FormulaSyntaxError(
                f"{name}() takes {want} argument(s), got {len(node.args)}: {self.text!r}")
        for arg in node.args:
            self.walk(arg, found, depth)


def constant_number(node: ast.AST) -> float | None:
    """The value of an expression of numeric literals alone (``2``, ``-0.5``, ``10 ** 3``).

    None when it reads a name; ``inf`` when folding it overflows (``10 ** 10 ** 10``).
    """
    if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY \
            and UNARY[type(node.op)].dims == OPERAND:  # -x, +x
        inner = constant_number(node.operand)
        return None if inner is None else float(UNARY[type(node.op)].scalar(inner))
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
            and not isinstance(node.value, bool):
        return float(node.value)
    if is_chain(node):
        first, rest = chain(node)  # type: ignore[arg-type]
        value = constant_number(first)
        for op, operand in rest:
            right = constant_number(operand)
            if value is None or right is None:
                return None
            value = _fold_constant(op, value, right)
        return value
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        left, right = constant_number(node.left), constant_number(node.right)
        if left is None or right is None:
            return None
        if BINARY[type(node.op)].dims == POWER and abs(right) > MAX_EXPONENT:
            return math.inf
        return _fold_constant(node.op, left, right)
    return None


def _fold_constant(op: ast.operator, left: float, right: float) -> float:
    try:
        return float(BINARY[type(op)].scalar(left, right))
    except (OverflowError, ZeroDivisionError, ValueError, TypeError):
        return math.inf


def is_zero(node: ast.AST) -> bool:
    return constant_number(node) == 0.0
