"""A formula written back out for people, with each operator's symbol and precedence from the
operator table (× ÷ for * /, ≤ ≥ ≠ for <= >= !=) and cell names shown as their values."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from perfgraph.engine.formula.ops import BINARY, COMPARISONS, UNARY, chain, is_chain, op_of
from perfgraph.engine.units import formula_unit

#: How tightly a name, a number, a call or a unary operator binds: never wrapped.
_ATOM = 9


class Renderer:
    """Writes a formula back out with names shown as values."""

    def __init__(self, show: Callable[[str], str]) -> None:
        self.show = show

    def visit(self, node: ast.expr) -> str:
        if isinstance(node, ast.Constant):
            raw: Any = node.value
            return repr(raw) if isinstance(raw, str) else f"{raw:g}"
        if isinstance(node, ast.Name):
            return node.id if formula_unit(node.id) is not None else self.show(node.id)
        if isinstance(node, ast.Call):
            assert isinstance(node.func, ast.Name)
            return f"{node.func.id}({', '.join(self.visit(a) for a in node.args)})"
        return self._WRITERS[type(node)](self, node)

    def wrap(self, node: ast.expr, parent: int, right: bool = False) -> str:
        """``node`` in parentheses where it binds looser than ``parent`` (or as loose, on the
        right of a left-associative operator)."""
        text = self.visit(node)
        op = op_of(node)
        mine = op.prec if op is not None and not isinstance(node, ast.UnaryOp) else _ATOM
        return f"({text})" if mine < parent or (right and mine == parent) else text

    def binop(self, node: ast.BinOp) -> str:
        prec = BINARY[type(node.op)].prec
        if not is_chain(node):
            symbol = BINARY[type(node.op)].symbol
            return f"{self.wrap(node.left, prec)} {symbol} {self.wrap(node.right, prec, True)}"
        first, rest = chain(node)
        parts = [self.wrap(first, prec)]
        for op, operand in rest:
            parts.append(f"{BINARY[type(op)].symbol} {self.wrap(operand, prec, True)}")
        return " ".join(parts)

    def unary(self, node: ast.UnaryOp) -> str:
        op = UNARY[type(node.op)]
        return op.symbol + self.wrap(node.operand, op.prec)

    def ifexp(self, node: ast.IfExp) -> str:
        return f"{self.visit(node.body)} if {self.visit(node.test)} else {self.visit(node.orelse)}"

    def compare(self, node: ast.Compare) -> str:
        """Operands bind tighter than the comparison: one in them is wrapped."""
        level = COMPARISONS[type(node.ops[0])].prec + 1
        out = self.wrap(node.left, level)
        for op, right in zip(node.ops, node.comparators, strict=True):
            out += f" {COMPARISONS[type(op)].symbol} {self.wrap(right, level)}"
        return out

    def boolop(self, node: ast.BoolOp) -> str:
        op = op_of(node)
        assert op is not None
        return op.symbol.join(self.wrap(v, op.prec + 1) for v in node.values)

    _WRITERS: dict[type[ast.AST], Callable[[Renderer, Any], str]] = {
        ast.BinOp: binop, ast.UnaryOp: unary, ast.IfExp: ifexp, ast.Compare: compare,
        ast.BoolOp: boolop,
    }
