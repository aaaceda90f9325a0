"""Parsing a formula, and the :class:`Formula` that walks it (see the package docstring)."""

from __future__ import annotations

import ast
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from perfgraph.engine.formula.compile import ARITHMETIC, COLUMNS, SCALAR, compile_tree, failure
from perfgraph.engine.formula.dim_rules import DimsWalker
from perfgraph.engine.formula.ops import Env, Fn, op_of
from perfgraph.engine.formula.render import Renderer
from perfgraph.engine.formula.validate import MAX_LENGTH, Validator, short
from perfgraph.engine.units import Dims
from perfgraph.errors import EvaluationError, FormulaSyntaxError, UnknownNameError


@dataclass(frozen=True)
class Formula:
    """A parsed, allowlisted formula, and what its operators say about it (found once, when
    it is parsed):

    - ``names``: the cells it reads, in order of use;
    - ``is_flag``: its value is on/off, 1 or 0 (a comparison, ``and``/``or``, ``not``);
    - ``branches``: it holds an if-expression (``a if c else b``);
    - ``may_hide_nan``: an operator in it may give a number from a NaN operand (a
      comparison, a choice, ``and``/``or``/``not``, or ``**``: ``x ** 0``).
    """

    text: str
    tree: ast.expr
    names: tuple[str, ...]
    is_flag: bool = False
    branches: bool = False
    may_hide_nan: bool = False

    def dims(self, dims_of: Callable[[str], Dims]) -> Dims:
        """The formula's dimensions, given each cell's (DimensionError if inconsistent)."""
        return DimsWalker(self.text, dims_of).visit(self.tree)

    def compile(self) -> Fn:
        """A closure computing the formula from an env of canonical magnitudes (floats).

        The scalar path: Python's operators and :mod:`math`, no type checks; a subtree of
        constants is computed once, here. :meth:`compile_columns` serves NumPy columns.
        """
        return compile_tree(self.tree, SCALAR)

    def compile_columns(self) -> Fn:
        """A closure computing the formula over an env whose values may be NumPy columns."""
        return compile_tree(self.tree, COLUMNS)

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
        return Renderer(show).visit(self.tree)


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
        raise FormulaSyntaxError(f"formula {short(text)} is nested too deeply",
                                 grammar=True) from None
    try:
        found = Validator(text).collect(tree.body)
    except RecursionError:  # pragma: no cover - MAX_DEPTH keeps the walk shallow
        raise FormulaSyntaxError(f"formula {short(text)} is nested too deeply") from None
    root = op_of(tree.body)
    return Formula(text=text.strip(), tree=tree.body, names=tuple(dict.fromkeys(found.names)),
                   is_flag=root is not None and root.flag, branches=found.branches,
                   may_hide_nan=found.may_hide_nan)


def check_names(formula: Formula, known: Mapping[str, object] | set[str]) -> None:
    """UnknownNameError (with a near miss) for the first name that is not a cell."""
    from perfgraph.errors import did_you_mean

    for name in formula.names:
        if name not in known:
            raise UnknownNameError(
                f"unknown name {name!r} in formula {formula.text!r}"
                f"{did_you_mean(name, known)}")
