"""The sheet: declarations compiled into a NetworkX dependency graph and evaluated.

Values are plain floats in canonical (base) units; Pint is consulted only when the sheet
compiles (factors, dimensions) and at the edges (:meth:`Sheet.get` returns a Quantity).
Editing an input recomputes only its descendants, in topological order; pinning a cell
(to a value or a formula) rewires its incoming edges and refuses a cycle, naming it.
A formula that fails gives its cell a :class:`~perfgraph.errors.CellError`; cells that read
it say so, and the rest of the sheet computes.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Iterable, Mapping
from typing import Any

import networkx as nx
import numpy as np

from perfgraph.engine import units as _units
from perfgraph.engine.assign import interpret
from perfgraph.engine.declarations import Declaration, Origin
from perfgraph.engine.formula import ARITHMETIC, Fn, check_names, failure
from perfgraph.errors import (
    CellError,
    CycleError,
    DimensionError,
    EvaluationError,
    FormulaSyntaxError,
    PerfgraphError,
    UnknownNameError,
    did_you_mean,
)

Value = float | CellError


class Sheet:
    """A live spreadsheet of performance quantities."""

    def __init__(self, declarations: Iterable[Declaration]) -> None:
        self._decls: dict[str, Declaration] = {d.name: d for d in declarations}
        self._loaded: dict[str, Declaration] = dict(self._decls)
        self._graph: nx.DiGraph = nx.DiGraph()
        self._compiled: dict[str, Fn] = {}
        self._column_fns: dict[str, Fn] = {}
        self._failed: set[str] = set()  # the cells whose value is a CellError
        self._reads: dict[str, tuple[str, ...]] = {}
        self._values: dict[str, Value] = {}
        self._downstream: dict[tuple[str, ...], list[str]] = {}
        self._column_plans: dict[tuple[tuple[str, ...], tuple[str, ...] | None],
                                 list[str]] = {}
        self._graph.add_nodes_from(self._decls)
        for decl in self._decls.values():
            self._wire(decl)
        self._check_acyclic()
        self._order: list[str] = list(nx.topological_sort(self._graph))
        self.recompute()

    # ----------------------------------------------------------------- structure
    def _wire(self, decl: Declaration) -> None:
        """Check and compile one declaration, and give it its incoming edges."""
        name = decl.name
        try:
            if decl.formula is not None:
                check_names(decl.formula, self._decls)
                got = decl.formula.dims(lambda n: self._decls[n].parsed_unit.dims)
                want = decl.parsed_unit.dims
                if got != want:
                    raise DimensionError(
                        f"formula {decl.formula.text!r} gives {got}, but the cell is "
                        f"declared in {decl.unit or 'dimensionless'} ({want})")
                self._compiled[name] = decl.formula.compile()
                self._column_fns.pop(name, None)
                self._reads[name] = decl.formula.names
            else:
                decl.parsed_unit  # noqa: B018 - an unknown unit fails here, with its origin
                self._compiled.pop(name, None)
                self._reads[name] = ()
        except RecursionError:  # pragma: no cover - the parser's depth limit prevents it
            origin = decl.origin or Origin("")
            raise FormulaSyntaxError("formula is nested too deeply", file=origin.file or None,
                                     line=origin.line, name=name) from None
        except PerfgraphError as exc:
            origin = decl.origin or Origin("")
            raise exc.located(file=origin.file or None, line=origin.line, name=name) from None
        self._graph.remove_edges_from(list(self._graph.in_edges(name)))
        self._graph.add_edges_from((src, name) for src in self._reads[name])
        self.__dict__.pop("_varying_cache", None)  # the edges changed

    def _check_acyclic(self) -> None:
        try:
            cycle = nx.find_cycle(self._graph)
        except nx.NetworkXNoCycle:
            return
        members = [u for u, _ in cycle]
        # blame the member a user set (--set, a scenario, a catalog), not a shipped sheet
        start = next((i for i, m in enumerate(members) if not _from_sheets(self._decls[m])), 0)
        members = members[start:] + members[:start]
        decl = self._decls[members[0]]
        raise CycleError("formulas form a cycle: " + " → ".join([*members, members[0]]),
                         file=decl.origin.file if decl.origin else None,
                         line=decl.origin.line if decl.origin else None, cycle=members)

    def _restructure(self, decl: Declaration) -> None:
        """Replace one declaration, refusing (and undoing) a change that makes a cycle."""
        previous = self._decls[decl.name]
        self._decls[decl.name] = decl
        try:
            self._wire(decl)
            self._check_acyclic()
        except PerfgraphError:
            self._decls[decl.name] = previous
            self._wire(previous)
            raise
        self._order = list(nx.topological_sort(self._graph))
        self._downstream.clear()
        self._column_plans.clear()

    # ----------------------------------------------------------------- evaluation
    def _compute(self, name: str) -> Value:
        decl = self._decls[name]
        fn = self._compiled.get(name)
        if fn is None:
            if decl.value is None:
                return CellError("no value: set it in a catalog, a scenario or with --set", name)
            return decl.value * decl.parsed_unit.factor
        values = self._values
        for src in self._reads[name]:
            v = values[src]
            if isinstance(v, CellError):
                return CellError.reading(src, v)
        try:
            result = float(fn(values))
        except ARITHMETIC as exc:
            return CellError(failure(exc, decl.formula.text), name)  # type: ignore[union-attr]
        if not math.isfinite(result):
            return CellError(f"result is not a finite number ({result})", name)
        return result

    def recompute(self) -> None:
        """Evaluate every cell, in topological order."""
        self._run(self._order)

    def _run(self, order: list[str]) -> None:
        """Evaluate ``order`` (topological). The fast path calls each compiled formula on
        floats and keeps a finite result; a formula that reads a failed cell, raises, or
        gives NaN or infinity takes :meth:`_compute`, which says why."""
        values, failed, compiled, reads = self._values, self._failed, self._compiled, self._reads
        for name in order:
            fn = compiled.get(name)
            if fn is not None and (not failed or failed.isdisjoint(reads[name])):
                try:
                    result = float(fn(values))
                except ARITHMETIC:
                    pass
                else:
                    if result - result == 0.0:  # finite: NaN and ±inf are not
                        values[name] = result
                        if failed:
                            failed.discard(name)
                        continue
            value = values[name] = self._compute(name)
            if isinstance(value, CellError):
                failed.add(name)
            elif failed:
                failed.discard(name)

    def _recompute_from(self, *names: str) -> list[str]:
        order = self._downstream.get(names)
        if order is None:
            index = {n: i for i, n in enumerate(self._order)}
            reach = set(names)
            for name in names:
                reach |= nx.descendants(self._graph, name)
            order = sorted(reach, key=index.__getitem__)
            self._downstream[names] = order
        self._run(order)
        return order

    # ----------------------------------------------------------------- edits
    def set(self, name: str, raw: Any, origin: Origin | None = None) -> list[str]:
        """Set an input, or pin any cell, to a value or formula; returns the cells recomputed.

        ``raw`` is a number in the cell's unit, a quantity string or Pint Quantity, a bool,
        or a formula of other cells (``"floor(max_concurrency_paged)"``).
        """
        self._assign(name, raw, origin)
        return self._recompute_from(self._decls[name].name)

    def assign(self, values: Mapping[str, Any], origin: Origin | None = None) -> list[str]:
        """Set several cells at once (as :meth:`set` does each), then recompute what they
        reach, once; returns the cells recomputed. The way to evaluate many configurations
        in-process: ``sheet.assign({"tp": 4, "concurrency": 32}); sheet.magnitude("itl")``.
        """
        for name, raw in values.items():
            self._assign(name, raw, origin)
        return self._recompute_from(*values)

    def _assign(self, name: str, raw: Any, origin: Origin | None) -> None:
        decl = self._decl(name)
        assignment = interpret(decl, raw)
        if assignment.formula is not None:
            self._restructure(decl.with_formula(assignment.formula.text, origin))
        elif decl.is_input:
            self._decls[name] = decl.with_value(assignment.value, origin)  # type: ignore[arg-type]
        else:
            self._restructure(decl.with_value(assignment.value, origin))  # type: ignore[arg-type]

    def unpin(self, name: str) -> list[str]:
        """Put a cell back as it was loaded."""
        self._decl(name)
        self._restructure(self._loaded[name])
        return self._recompute_from(name)

    def restore(self, decl: Declaration) -> list[str]:
        """Put back a declaration read earlier from :meth:`declaration` (an undo)."""
        self._decl(decl.name)
        self._restructure(decl)
        return self._recompute_from(decl.name)

    def declare(self, decl: Declaration) -> None:
        """Add or replace a declaration (used by loaders); recomputes everything."""
        if decl.name not in self._decls:
            self._decls[decl.name] = decl
            self._graph.add_node(decl.name)
            self.__dict__.pop("_varying_cache", None)
        self._restructure(decl)
        self._loaded[decl.name] = decl
        self.recompute()

    def mark_loaded(self) -> None:
        """Take the current state as 'the scenario as loaded' (the base for deltas, unpin)."""
        self._loaded = dict(self._decls)

    def fork(self) -> Sheet:
        """An independent copy, for what-ifs (levers, sweeps) that must not touch this one."""
        twin = object.__new__(Sheet)
        twin._decls = dict(self._decls)
        twin._loaded = dict(self._loaded)
        twin._graph = self._graph.copy()
        twin._compiled = dict(self._compiled)
        twin._column_fns = dict(self._column_fns)
        twin._failed = set(self._failed)
        twin._reads = dict(self._reads)
        twin._values = dict(self._values)
        twin._downstream = dict(self._downstream)
        twin._column_plans = dict(self._column_plans)
        twin._order = list(self._order)
        return twin

    # ----------------------------------------------------------------- reading
    def _decl(self, name: str) -> Declaration:
        try:
            return self._decls[name]
        except KeyError:
            raise UnknownNameError(f"no cell named {name!r}{did_you_mean(name, self._decls)}",
                                   name=name) from None

    @property
    def names(self) -> list[str]:
        return list(self._decls)

    def declaration(self, name: str) -> Declaration:
        return self._decl(name)

    def loaded_declaration(self, name: str) -> Declaration:
        return self._loaded[self._decl(name).name]

    def is_pinned(self, name: str) -> bool:
        """True when a computed cell was given a value or another formula after loading."""
        return self._decl(name) is not self._loaded[name] and not self._loaded[name].is_input

    def raw(self, name: str) -> Value:
        """The canonical magnitude (or CellError) — for engine-side code."""
        self._decl(name)
        return self._values[name]

    def magnitude(self, name: str, unit: str | None = None) -> float:
        """The value in its declared unit (or ``unit``); EvaluationError if it failed."""
        decl = self._decl(name)
        v = self._values[name]
        if isinstance(v, CellError):
            raise EvaluationError(v.message, name=name)
        if unit is None:
            return v / decl.parsed_unit.factor
        return float(_units.Q_(v / decl.parsed_unit.factor,
                               decl.parsed_unit.pint_unit).to(unit).m)

    def get(self, name: str) -> Any:
        """The value as a Pint Quantity in its declared unit."""
        decl = self._decl(name)
        return _units.Q_(self.magnitude(name), decl.parsed_unit.pint_unit)

    def error(self, name: str) -> CellError | None:
        v = self._values[self._decl(name).name]
        return v if isinstance(v, CellError) else None

    def precedents(self, name: str) -> list[str]:
        return list(self._reads[self._decl(name).name])

    def dependents(self, name: str) -> list[str]:
        return sorted(self._graph.successors(self._decl(name).name))

    def downstream(self, name: str) -> builtins.set[str]:
        return set(nx.descendants(self._graph, self._decl(name).name))

    @property
    def graph(self) -> nx.DiGraph:
        """A read-only view of the dependency graph (edges point from reader to read's reader)."""
        return self._graph.copy(as_view=True)

    # ----------------------------------------------------------------- columns
    def evaluate_columns(self, columns: Mapping[str, np.ndarray], length: int,
                         only: Iterable[str] | None = None) -> dict[str, np.ndarray]:
        """Evaluate every cell (or the cells ``only`` names) over whole columns, each
        formula once.

        ``columns`` gives inputs (in their declared units) that vary by row; the result has
        every cell of ``only`` (default: all), in declared units, NaN where a row fails (as
        the cell would fail). Only the cells downstream of ``columns`` that the wanted cells
        read are evaluated; the others are constant columns of their current value
        (read-only views, ``strides == (0,)``, that cost no memory).
        """
        wanted = tuple(self._decls) if only is None else tuple(self._decl(n).name
                                                              for n in only)
        env: dict[str, Any] = {n: math.nan if isinstance(v, CellError) else v
                               for n, v in self._values.items()}
        with np.errstate(all="ignore"):
            for name in self._varying(columns, wanted if only is not None else None):
                env[name] = self._column(name, columns, env)
        out: dict[str, np.ndarray] = {}
        seen: set[int] = set()
        for name in wanted:
            v, factor = env[name], self._decls[name].parsed_unit.factor
            if not isinstance(v, np.ndarray):
                out[name] = np.broadcast_to(np.float64(v / factor), (length,))
            elif factor != 1:
                out[name] = v / factor
            else:  # a formula that is just another cell: give it its own copy
                out[name] = v.copy() if id(v) in seen else v
            seen.add(id(out[name]))
        return out

    def _varying(self, columns: Mapping[str, np.ndarray],
                 wanted: tuple[str, ...] | None) -> list[str]:
        """The cells that ``columns`` reach (themselves included) and that the ``wanted``
        cells read (all, for None), in topological order; kept for the next chunk."""
        key = (tuple(columns), wanted)
        order = self._column_plans.get(key)
        if order is None:
            reach = {self._decl(n).name for n in columns}
            for n in list(reach):
                reach |= nx.descendants(self._graph, n)
            if wanted is not None:
                needed = set(wanted)
                for n in wanted:
                    needed |= nx.ancestors(self._graph, n)
                reach &= needed | set(columns)
            order = [n for n in self._order if n in reach]
            self._column_plans[key] = order
        return order

    def _column(self, name: str, columns: Mapping[str, np.ndarray], env: dict[str, Any],
                ) -> Any:
        """One cell over the rows: NaN where it, or any cell it reads, fails."""
        if name in columns:
            value = np.asarray(columns[name], dtype=float) * self._decls[name].parsed_unit.factor
            return _nan_for_inf(value)
        reads = [env[src] for src in self._reads[name]]
        if any(not isinstance(v, np.ndarray) and v != v for v in reads):
            return math.nan
        try:
            fn = self._column_fns.get(name)
            if fn is None:
                fn = self._column_fns[name] = self._decls[name].formula.compile_columns()  # type: ignore[union-attr]
            value = fn(env)
        except (ZeroDivisionError, OverflowError, ValueError, TypeError):
            return math.nan
        if not isinstance(value, np.ndarray):
            scalar = float(value)
            return scalar if math.isfinite(scalar) else math.nan
        if self._decls[name].formula.may_hide_nan:  # type: ignore[union-attr]
            # a comparison or a choice can turn a failed read into a number; it must not:
            # adding 0 × each read (0, or NaN where the read is NaN) fails those rows
            arrays = [v for v in reads if isinstance(v, np.ndarray)]
            if arrays:
                nan_rows = arrays[0] * 0.0
                for v in arrays[1:]:
                    nan_rows += v * 0.0
                value = value + nan_rows
        return _nan_for_inf(value)


def _from_sheets(decl: Declaration) -> bool:
    """Declared by a shipped formula sheet: a cycle is blamed on a cell set elsewhere."""
    return decl.origin is not None and decl.origin.shipped


def _nan_for_inf(column: np.ndarray) -> np.ndarray:
    inf = np.isinf(column)
    return np.where(inf, math.nan, column) if inf.any() else column
