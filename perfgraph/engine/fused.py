"""A slice of the sheet fused into one Python function: some cells in, some cells out.

:func:`fuse` takes input cells (the function's arguments), output cells (what it returns)
and bindings (a cell that, inside the function, reads another cell in place of its own
formula), finds the cells the outputs read that the inputs or bindings reach, and joins
their formulas, in topological order, into the body of one function: one local variable a
cell, every other cell it reads put in as its current value. A step of a simulation then
costs one call of plain float arithmetic, not a closure a node and a dict lookup a name.

The function is built as an :mod:`ast` tree from the formulas' own allowlisted trees (a name
becomes a local, an argument or a constant; a unit its factor; a function call the operator
table's implementation, :mod:`.formula.ops`) and compiled from that tree: no source text is
written or read. In the column mode the implementations accept NumPy columns and a choice
whose test is a column takes both branches row by row (``np.where``).

Values are canonical magnitudes, as in the sheet's own evaluation. A pinned cell is its pin: a
value is a constant, a formula is compiled in place of the sheet's.
"""

from __future__ import annotations

import ast
import graphlib
import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from perfgraph.engine.formula.ops import BOOLEAN, FUNCTIONS, UNARY, is_array
from perfgraph.engine.formula.parse import Formula
from perfgraph.engine.sheet import Sheet
from perfgraph.engine.units import formula_unit, parse_quantity
from perfgraph.errors import EvaluationError

_serial = itertools.count()


@dataclass(frozen=True)
class Fused:
    """The fused slice: ``call(*inputs)`` gives the outputs; ``trace(*inputs)`` every cell it
    computes (``cells``, in order), for an explanation."""

    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    cells: tuple[str, ...]  # the cells computed, in topological order
    formulas: Mapping[str, Formula]  # each computed cell's formula, as the function has it
    call: Callable[..., tuple[Any, ...]]
    trace: Callable[..., tuple[Any, ...]]


def fuse(sheet: Sheet, inputs: Iterable[str], outputs: Iterable[str],
         binds: Mapping[str, str] | None = None, columns: bool = False) -> Fused:
    """Fuse the cells between ``inputs`` and ``outputs`` into one function (see the module
    docstring); ``binds`` maps a cell to the cell it reads in the function instead."""
    ins, outs, binds = tuple(inputs), tuple(outputs), dict(binds or {})
    formulas = _formulas(sheet, ins, outs, binds)
    cells = tuple(graphlib.TopologicalSorter(
        {n: [r for r in f.names if r in formulas] for n, f in formulas.items()}).static_order())
    read = {n for f in formulas.values() for n in f.names} | set(outs)
    consts = {n: sheet.raw(n) for n in read
              if n not in formulas and n not in ins and formula_unit(n) is None}
    bad = [n for n, v in consts.items() if not isinstance(v, float)]
    if bad:
        raise EvaluationError(f"the cells {', '.join(sorted(bad))} have no value", name=bad[0])
    body = _Body(ins, set(formulas), consts, columns)
    stmts: list[ast.stmt] = [ast.Assign([ast.Name(_local(n), ast.Store())],
                                         body.expr(formulas[n].tree)) for n in cells]
    returned = {"call": [body.name(n) for n in outs],
                "trace": [body.name(n) for n in cells]}
    fns = {kind: _function(ins, stmts, values, body.globals)
           for kind, values in returned.items()}
    return Fused(ins, outs, cells, formulas, fns["call"], fns["trace"])


def _formulas(sheet: Sheet, ins: tuple[str, ...], outs: tuple[str, ...],
              binds: dict[str, str]) -> dict[str, Formula]:
    """The formula of each cell the function computes: those the outputs read (through the
    bindings) that an input or a binding reaches."""
    reached = set(binds)
    for name in (*ins, *binds):
        reached |= sheet.downstream(name)
    found: dict[str, Formula] = {}
    stack, seen = [n for n in outs if n not in ins], set(ins)
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        formula = _formula_of(sheet, name, binds)
        if formula is None or name not in reached:  # a constant: what it reads is not asked
            continue
        found[name] = formula
        stack.extend(formula.names)
    return found


def _formula_of(sheet: Sheet, name: str, binds: dict[str, str]) -> Formula | None:
    if name in binds:
        return Formula(text=binds[name], tree=ast.Name(binds[name], ast.Load()),
                       names=(binds[name],))
    return sheet.declaration(name).formula


def _local(name: str) -> str:
    return f"c_{name}"


class _Body:
    """Turns a formula's tree into the function's expression: names to locals, arguments
    or constants, calls to the operator table's implementations (held in ``globals``)."""

    def __init__(self, ins: tuple[str, ...], computed: set[str], consts: dict[str, Any],
                 columns: bool) -> None:
        self.ins, self.computed, self.consts, self.columns = set(ins), computed, consts, columns
        self.globals: dict[str, Any] = {"__builtins__": {}, "_pick": _pick}

    def expr(self, tree: ast.expr) -> ast.expr:
        out = self._visit(tree)
        return ast.fix_missing_locations(out)

    def _impl(self, key: str, impl: Callable[..., Any]) -> ast.Name:
        self.globals[key] = impl
        return ast.Name(key, ast.Load())

    def _visit(self, node: ast.expr) -> ast.expr:
        if isinstance(node, ast.Constant):
            raw: Any = node.value
            return ast.Constant(parse_quantity(raw)[0] if isinstance(raw, str) else float(raw))
        if isinstance(node, ast.Name):
            return self.name(node.id)
        if isinstance(node, ast.BinOp):
            return ast.BinOp(self._visit(node.left), node.op, self._visit(node.right))
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                return self._call(f"_not{int(self.columns)}", UNARY[ast.Not], [node.operand])
            return ast.UnaryOp(node.op, self._visit(node.operand))
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.BoolOp):
            op = BOOLEAN[type(node.op)]
            fn = self._impl(f"_{type(node.op).__name__}{int(self.columns)}",
                            op.array if self.columns else op.scalar)
            return ast.Call(fn, [ast.List([self._visit(v) for v in node.values], ast.Load())],
                            [])
        if isinstance(node, ast.IfExp):
            return self._choice(node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return self._call(f"_{node.func.id}{int(self.columns)}",
                              FUNCTIONS[node.func.id], node.args)
        raise EvaluationError(f"cannot fuse {ast.dump(node)}")  # the validator allows no more

    def name(self, name: str) -> ast.expr:
        u = formula_unit(name)
        if u is not None and name not in self.ins and name not in self.computed:
            return ast.Constant(u.factor)
        if name in self.ins or name in self.computed:
            return ast.Name(_local(name), ast.Load())
        return ast.Constant(self.consts[name])

    def _call(self, key: str, entry: Any, args: list[ast.expr]) -> ast.expr:
        if len(args) == 1 and getattr(entry, "arity", 1) is None:  # min(x) is x
            return self._visit(args[0])
        fn = self._impl(key, entry.array if self.columns else entry.scalar)
        return ast.Call(fn, [self._visit(a) for a in args], [])

    def _compare(self, node: ast.Compare) -> ast.expr:
        if len(node.ops) == 1:
            return ast.Compare(self._visit(node.left), node.ops,
                               [self._visit(node.comparators[0])])
        operands = [node.left, *node.comparators]
        pairs: list[ast.expr] = [ast.Compare(a, [op], [b])
                 for op, a, b in zip(node.ops, operands, operands[1:], strict=False)]
        return self._visit(ast.BoolOp(ast.And(), pairs))

    def _choice(self, node: ast.IfExp) -> ast.expr:
        test, body, orelse = (self._visit(n) for n in (node.test, node.body, node.orelse))
        if not self.columns:
            return ast.IfExp(test, body, orelse)
        lazy = [ast.Lambda(ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                         kw_defaults=[], kwarg=None, defaults=[]), b)
                for b in (body, orelse)]
        return ast.Call(ast.Name("_pick", ast.Load()), [test, *lazy], [])


def _pick(test: Any, body: Callable[[], Any], orelse: Callable[[], Any]) -> Any:
    """A choice over columns: row by row when the test is a column, else the branch."""
    if is_array(test):
        with np.errstate(all="ignore"):
            return np.where(test, body(), orelse())
    return body() if test else orelse()


def _function(ins: tuple[str, ...], stmts: list[ast.stmt], returned: list[ast.expr],
              env: dict[str, Any]) -> Callable[..., tuple[Any, ...]]:
    """Compile ``def fused(*ins): stmts; return returned`` from its tree."""
    name = f"fused_{next(_serial)}"
    args = ast.arguments(posonlyargs=[], args=[ast.arg(_local(n)) for n in ins], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    ret = ast.Return(ast.Tuple(returned, ast.Load()))
    fn = ast.FunctionDef(name=name, args=args, body=[*stmts, ret], decorator_list=[],
                         returns=None, type_comment=None)
    module = ast.fix_missing_locations(ast.Module([fn], []))
    namespace = dict(env)
    exec(compile(module, f"<fused {name}>", "exec"), namespace)  # noqa: S102 — a tree we built
    return namespace[name]  # type: ignore[no-any-return]
