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
import heapq
import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from perfgraph.engine.formula.compile import ARITHMETIC
from perfgraph.engine.formula.ops import BOOLEAN, FUNCTIONS, UNARY, is_array
from perfgraph.engine.formula.parse import Formula
from perfgraph.engine.sheet import Sheet
from perfgraph.engine.units import formula_unit, parse_quantity
from perfgraph.errors import EvaluationError

_serial = itertools.count()
#: The calls that never fail on numbers (the table's, as the fused function names them).
_SAFE = frozenset({"_min", "_max", "_abs", "_And", "_Or", "_not", "_pick"})


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
    cells = _ordered(formulas, {n: i for i, n in enumerate(sheet.names)})
    read = {n for f in formulas.values() for n in f.names} | set(outs)
    consts = {n: sheet.raw(n) for n in read
              if n not in formulas and n not in ins and formula_unit(n) is None}
    bad = sorted(n for n, v in consts.items() if not isinstance(v, float))
    if bad:
        why = getattr(consts[bad[0]], "message", "no value")
        raise EvaluationError(f"read by {outs[0]}, it has no value: {why}", name=bad[0])
    body = _Body(ins, set(formulas), consts, columns)
    stmts: list[ast.stmt] = []
    for n in cells:
        value = body.expr(formulas[n].tree)
        if isinstance(value, ast.Constant):  # the same every call: a constant from here on
            body.computed.discard(n)
            body.consts[n] = value.value
        elif isinstance(value, ast.Name):  # another cell's value: read that one
            body.aliases[n] = value
        else:
            stmts.append(ast.Assign([ast.Name(_local(n), ast.Store())], value))
            if body.may_raise(value):
                body.risky.add(_local(n))
    returned = [body.name(n) for n in outs]
    call = _function(ins, _needed(stmts, returned), returned, body.globals)
    every = [body.name(n) for n in cells]
    return Fused(ins, outs, cells, formulas, call,
                 _later(lambda: _function(ins, stmts, every, body.globals)))


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


def _later(build: Callable[[], Callable[..., tuple[Any, ...]]],
           ) -> Callable[..., tuple[Any, ...]]:
    """A function compiled when first called (``trace`` is for explanations only)."""
    built: list[Callable[..., tuple[Any, ...]]] = []

    def call(*args: Any) -> tuple[Any, ...]:
        if not built:
            built.append(build())
        return built[0](*args)
    return call


def _needed(stmts: list[ast.stmt], returned: list[ast.expr]) -> list[ast.stmt]:
    """The assignments the returned values read, directly or not."""
    wanted = {n.id for r in returned for n in ast.walk(r) if isinstance(n, ast.Name)}
    kept: list[ast.stmt] = []
    for stmt in reversed(stmts):
        assert isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)
        if stmt.targets[0].id in wanted:
            kept.append(stmt)
            wanted |= {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
    return kept[::-1]


def _ordered(formulas: dict[str, Formula], rank: dict[str, int]) -> tuple[str, ...]:
    """The cells in topological order, each as early as the sheet declares it."""
    sorter = graphlib.TopologicalSorter(
        {n: [r for r in f.names if r in formulas] for n, f in formulas.items()})
    sorter.prepare()
    ready: list[tuple[int, str]] = []
    out: list[str] = []
    while sorter.is_active():
        for name in sorter.get_ready():
            heapq.heappush(ready, (rank[name], name))
        rank_, name = heapq.heappop(ready)
        out.append(name)
        sorter.done(name)
    return tuple(out)


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
        self.aliases: dict[str, ast.Name] = {}
        self.risky: set[str] = set()  # locals whose expression may raise (a cell that fails)

    def expr(self, tree: ast.expr) -> ast.expr:
        return self._visit(tree)

    def _visit(self, node: ast.expr) -> ast.expr:
        """The node translated, and computed now when it reads no argument or cell the
        function computes (a choice whose test is such takes its branch now)."""
        out = self._translate(node)
        if not self._constant_parts(out):
            return out
        try:
            code = compile(ast.fix_missing_locations(ast.Expression(out)), "<fold>", "eval")
            value = eval(code, self.globals)  # noqa: S307 — constants and table functions
        except ARITHMETIC:
            return out  # fails when called, as the cell would
        return ast.Constant(value) if isinstance(value, float | int | bool) else out

    def _constant_parts(self, node: ast.expr) -> bool:
        """An operator or call whose operands are all constants (or table functions)."""
        if isinstance(node, ast.Constant | ast.Name | ast.Lambda):
            return False
        parts = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]
        parts += [e for c in parts if isinstance(c, ast.List) for e in c.elts]
        return all(isinstance(c, ast.Constant | ast.List) or (
            isinstance(c, ast.Name) and c.id in self.globals) for c in parts)

    def _impl(self, key: str, impl: Callable[..., Any]) -> ast.Name:
        self.globals[key] = impl
        return ast.Name(key, ast.Load())

    def _translate(self, node: ast.expr) -> ast.expr:
        if isinstance(node, ast.Constant):
            raw: Any = node.value
            return ast.Constant(parse_quantity(raw)[0] if isinstance(raw, str) else float(raw))
        if isinstance(node, ast.Name):
            return self.name(node.id)
        if isinstance(node, ast.BinOp):
            return self._simplified(self._visit(node.left), node.op, self._visit(node.right))
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                return self._call(f"_not{int(self.columns)}", UNARY[ast.Not], [node.operand])
            return ast.UnaryOp(node.op, self._visit(node.operand))
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.BoolOp):
            return self._boolean(node)
        if isinstance(node, ast.IfExp):
            return self._choice(node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return self._call(f"_{node.func.id}{int(self.columns)}",
                              FUNCTIONS[node.func.id], node.args)
        raise EvaluationError(f"cannot fuse {ast.dump(node)}")  # the validator allows no more

    def _simplified(self, left: ast.expr, op: ast.operator, right: ast.expr) -> ast.expr:
        """``x × 1``, ``x ÷ 1``, ``x ± 0`` are ``x``; ``0 × x`` is 0 where ``x`` cannot fail
        (a term switched off costs nothing, and what it would have read is not computed)."""
        lv = left.value if isinstance(left, ast.Constant) else None
        rv = right.value if isinstance(right, ast.Constant) else None
        if isinstance(op, ast.Mult | ast.Div) and rv == 1 or isinstance(op, ast.Add | ast.Sub) \
                and rv == 0:
            return left
        if isinstance(op, ast.Mult) and lv == 1 or isinstance(op, ast.Add) and lv == 0:
            return right
        if isinstance(op, ast.Mult) and (lv == 0 and not self.may_raise(right)
                                         or rv == 0 and not self.may_raise(left)):
            return ast.Constant(0.0)
        return ast.BinOp(left, op, right)

    def may_raise(self, tree: ast.expr) -> bool:
        """Whether computing ``tree`` may fail (as its cell would, a value that is no
        number): a division by anything but a constant other than 0, a power, a function
        other than min, max and abs, or a local that may."""
        for n in ast.walk(tree):
            if isinstance(n, ast.BinOp) and (isinstance(n.op, ast.Pow) or isinstance(
                    n.op, ast.Div) and not _nonzero(n.right)):
                return True
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) \
                    and n.func.id.rstrip("01") not in _SAFE:
                return True
            if isinstance(n, ast.Name) and n.id in self.risky:
                return True
        return False

    def _boolean(self, node: ast.BoolOp) -> ast.expr:
        """``and`` / ``or``: a constant operand that decides it decides it now; the
        others are left out (``x and 1`` is ``x``'s truth)."""
        deciding = isinstance(node.op, ast.Or)  # the truth that settles it
        values: list[ast.expr] = []
        settled = False
        for v in node.values:
            out = self._visit(v)
            if isinstance(out, ast.Constant):
                settled = settled or bool(out.value) == deciding
                continue
            values.append(out)
        if settled and not any(self.may_raise(v) for v in values):  # every operand counts
            return ast.Constant(float(deciding))
        if settled:
            values.append(ast.Constant(float(deciding)))
        if not values:
            return ast.Constant(float(not deciding))
        op = BOOLEAN[type(node.op)]
        fn = self._impl(f"_{type(node.op).__name__}{int(self.columns)}",
                        op.array if self.columns else op.scalar)
        return ast.Call(fn, [ast.List(values, ast.Load())], [])

    def name(self, name: str) -> ast.expr:
        if name in self.aliases:
            return self.aliases[name]
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
        test = self._visit(node.test)
        if isinstance(test, ast.Constant):
            return self._visit(node.body if test.value else node.orelse)
        body, orelse = self._visit(node.body), self._visit(node.orelse)
        if isinstance(body, ast.Constant) and isinstance(orelse, ast.Constant) \
                and body.value == orelse.value and not self.may_raise(test):
            return body  # either way the same
        if not self.columns:
            return ast.IfExp(test, body, orelse)
        lazy = [ast.Lambda(ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                         kw_defaults=[], kwarg=None, defaults=[]), b)
                for b in (body, orelse)]
        return ast.Call(ast.Name("_pick", ast.Load()), [test, *lazy], [])


def _nonzero(tree: ast.expr) -> bool:
    """A divisor that is never 0: a constant other than 0, or max(…, c) with c > 0."""
    if isinstance(tree, ast.Constant):
        return bool(tree.value != 0)
    return isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) \
        and tree.func.id.startswith("_max") and any(
            isinstance(a, ast.Constant) and isinstance(a.value, float) and a.value > 0
            for a in tree.args)


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
