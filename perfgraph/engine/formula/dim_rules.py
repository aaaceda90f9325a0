"""A formula's dimensions, by the rule the operator table gives each operator and function."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable

from perfgraph.engine.formula.ops import (
    BINARY,
    CHOOSE,
    COMPARE,
    DIMLESS,
    DIVIDE,
    FUNCTIONS,
    LOGIC,
    MULTIPLY,
    OPERAND,
    POWER,
    SAME,
    SQRT,
    Op,
    chain,
    is_chain,
    op_of,
    operands,
)
from perfgraph.engine.formula.validate import constant_number, is_zero
from perfgraph.engine.units import Dims, formula_unit, parse_quantity
from perfgraph.errors import DimensionError

#: How the dimensions of a run of × and ÷ combine, by the rule of each operator.
_COMBINE: dict[str, Callable[[Dims, Dims], Dims]] = {MULTIPLY: operator.mul,
                                                     DIVIDE: operator.truediv}


class DimsWalker:
    """Walks a validated tree; DimensionError where its dimensions do not fit together."""

    def __init__(self, text: str, dims_of: Callable[[str], Dims]) -> None:
        self.text = text
        self.dims_of = dims_of

    def mismatch(self, what: str, a: Dims, b: Dims) -> DimensionError:
        return DimensionError(f"cannot {what} {a} and {b} in {self.text!r}")

    def same(self, what: str, nodes: list[ast.expr]) -> Dims:
        """Operands that must agree; a literal 0 agrees with anything."""
        typed = [(n, self.visit(n)) for n in nodes]
        ref = next((d for n, d in typed if not is_zero(n)), Dims.none())
        for n, d in typed:
            if not is_zero(n) and d != ref:
                raise self.mismatch(what, ref, d)
        return ref

    def visit(self, node: ast.expr) -> Dims:
        if isinstance(node, ast.Constant):
            return parse_quantity(node.value)[1] if isinstance(node.value, str) else Dims.none()
        if isinstance(node, ast.Name):
            u = formula_unit(node.id)
            return u.dims if u is not None else self.dims_of(node.id)
        if isinstance(node, ast.Call):
            assert isinstance(node.func, ast.Name)
            return self.call(node.func.id, node.args)
        op = op_of(node)
        assert op is not None, "validated: every operator is in the table"
        if is_chain(node):
            return self.chain(node, op)  # type: ignore[arg-type]
        return self.RULES[op.dims](self, op, operands(node))

    def chain(self, node: ast.BinOp, op: Op) -> Dims:
        """A run of + and − (which agree), or of × and ÷ (which combine), term by term."""
        first, rest = chain(node)
        if op.dims == SAME:
            return self.same(op.verb, [first, *(operand for _, operand in rest)])
        out = self.visit(first)
        for each, operand in rest:
            out = _COMBINE[BINARY[type(each)].dims](out, self.visit(operand))
        return out

    def operand(self, op: Op, nodes: list[ast.expr]) -> Dims:
        return self.visit(nodes[0])

    def logic(self, op: Op, nodes: list[ast.expr]) -> Dims:
        for node in nodes:
            self.visit(node)
        return Dims.none()

    def compare(self, op: Op, nodes: list[ast.expr]) -> Dims:
        self.same(op.verb, nodes)
        return Dims.none()

    def choose(self, op: Op, nodes: list[ast.expr]) -> Dims:
        test, *branches = nodes
        self.visit(test)
        return self.same(op.verb, branches)

    def power(self, op: Op, nodes: list[ast.expr]) -> Dims:
        left, right = self.visit(nodes[0]), self.visit(nodes[1])
        if not right.dimensionless:
            raise DimensionError(f"an exponent must be dimensionless, not {right}, "
                                 f"in {self.text!r}")
        if left.dimensionless:
            return left
        exp = constant_number(nodes[1])
        if exp is None:
            raise DimensionError(f"{left} raised to a computed power has no fixed unit "
                                 f"in {self.text!r}")
        return left ** exp

    RULES: dict[str, Callable[[DimsWalker, Op, list[ast.expr]], Dims]] = {
        OPERAND: operand, LOGIC: logic, COMPARE: compare, CHOOSE: choose, POWER: power,
    }

    def call(self, name: str, args: list[ast.expr]) -> Dims:
        rule = FUNCTIONS[name].dims
        if rule == SAME:
            return self.same(f"take {name}() of", list(args))
        d = self.visit(args[0])
        if rule == SQRT:
            return d ** 0.5
        assert rule == DIMLESS
        if not d.dimensionless:
            raise DimensionError(f"{name}() needs a dimensionless argument, not {d}, "
                                 f"in {self.text!r}")
        return d
