"""The sheet: declarations compiled into a dependency graph and evaluated.

Values are plain floats in canonical (base) units; Pint is consulted only when the sheet
compiles (factors, dimensions) and at the edges (:meth:`Sheet.get` returns a Quantity).
Editing an input marks its descendants stale; reading a cell computes, in topological
order, only the stale cells it reads (:mod:`perfgraph.engine.graph` keeps the graph and
these plans). Pinning a cell (to a value or a formula) rewires its incoming edges and
refuses a cycle, naming it; :attr:`Sheet.graph` gives the graph as a NetworkX view.
A formula that fails gives its cell a :class:`~perfgraph.errors.CellError`; cells that read
it say so, and the rest of the sheet computes.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from perfgraph.engine import units as _units
from perfgraph.engine.assign import interpret
from perfgraph.engine.declarations import Declaration, Origin
from perfgraph.engine.evaluator import Value, run
from perfgraph.engine.formula import Fn, check_names
from perfgraph.engine.graph import Plans, Step, find_cycle, reach, topological
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

if TYPE_CHECKING:
    import networkx as nx
    import numpy as np  # imported where columns are evaluated: scalar work never needs it



class Sheet:
    """A live spreadsheet of performance quantities."""

    def __init__(self, declarations: Iterable[Declaration]) -> None:
        self._decls: dict[str, Declaration] = {d.name: d for d in declarations}
        self._loaded: dict[str, Declaration] = dict(self._decls)
        self._reads: dict[str, tuple[str, ...]] = {}  # the graph: what each cell reads
        self._dependents: dict[str, dict[str, None]] = {n: {} for n in self._decls}
        self._compiled: dict[str, Fn] = {}
        self._column_fns: dict[str, Fn] = {}
        self._failed: set[str] = set()  # the cells whose value is a CellError
        self._values: dict[str, Value] = {}
        self._stale: frozenset[str] = frozenset()  # edited since last computed
        for decl in self._decls.values():
            self._wire(decl)
        self._replan()
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
                reads = decl.formula.names
            else:
                decl.parsed_unit  # noqa: B018 - an unknown unit fails here, with its origin
                self._compiled.pop(name, None)
                reads = ()
        except RecursionError:  # pragma: no cover - the parser's depth limit prevents it
            origin = decl.origin or Origin("")
            raise FormulaSyntaxError("formula is nested too deeply", file=origin.file or None,
                                     line=origin.line, name=name) from None
        except PerfgraphError as exc:
            origin = decl.origin or Origin("")
            raise exc.located(file=origin.file or None, line=origin.line, name=name) from None
        for src in self._reads.get(name, ()):
            self._dependents[src].pop(name, None)
        self._reads[name] = reads
        for src in reads:
            self._dependents[src][name] = None

    def _replan(self, changed: str | None = None) -> None:
        """Order the graph and start new plans for it; a CycleError if it has a cycle."""
        order = topological(self._decls, self._reads, self._dependents)
        if len(order) < len(self._decls):
            ordered = set(order)
            candidates = [n for n in self._decls if n not in ordered]
            if changed is not None:  # a new cycle runs through the changed cell
                candidates.insert(0, changed)
            raise self._cycle(find_cycle(candidates, self._dependents) or candidates[:1])
        self._plans = Plans(order, self._reads, self._dependents, self._compiled)

    def _cycle(self, members: list[str]) -> CycleError:
        # blame the member a user set (--set, a scenario, a catalog), not a shipped sheet
        start = next((i for i, m in enumerate(members) if not _from_sheets(self._decls[m])), 0)
        members = members[start:] + members[:start]
        decl = self._decls[members[0]]
        return CycleError("formulas form a cycle: " + " → ".join([*members, members[0]]),
                          file=decl.origin.file if decl.origin else None,
                          line=decl.origin.line if decl.origin else None, cycle=members)

    def _restructure(self, decl: Declaration) -> None:
        """Replace one declaration, refusing (and undoing) a change that makes a cycle."""
        previous = self._decls[decl.name]
        self._decls[decl.name] = decl
        try:
            self._wire(decl)
            self._replan(decl.name)
        except PerfgraphError:
            self._decls[decl.name] = previous
            self._wire(previous)
            raise

    # ----------------------------------------------------------------- evaluation
    def recompute(self) -> None:
        """Evaluate every cell, in topological order."""
        self._run(self._plans.everything)
        self._stale = frozenset()

    def _run(self, steps: list[Step]) -> None:
        run(steps, self._values, self._failed, self._decls)

    def _edited(self, names: tuple[str, ...], changed: tuple[str, ...]) -> list[str]:
        """Mark what the ``changed`` cells reach stale (computed when read); returns the
        cells that ``names`` reach."""
        if changed:
            self._stale = self._plans.edit(self._stale, changed)
        return list(self._plans.reached(names)[0])

    def _fresh(self, name: str) -> Value:
        """The value of ``name``, computing first what it reads that an edit made stale."""
        if name in self._stale:
            steps, self._stale = self._plans.read(self._stale, name)
            self._run(steps)
        return self._values[name]

    # ----------------------------------------------------------------- edits
    def set(self, name: str, raw: Any, origin: Origin | None = None) -> list[str]:
        """Set an input, or pin any cell, to a value or formula; returns the cells whose
        values it may change (computed when read), in topological order.

        ``raw`` is a number in the cell's unit, a quantity string or Pint Quantity, a bool,
        or a formula of other cells (``"floor(max_concurrency_paged)"``).
        """
        changed = self._assign(name, raw, origin)
        return self._edited((name,), (name,) if changed else ())

    def assign(self, values: Mapping[str, Any], origin: Origin | None = None) -> list[str]:
        """Set several cells at once (as :meth:`set` does each); returns the cells they
        reach. Reading a cell computes only what it reads of those, so this is the way to
        evaluate many configurations in-process:
        ``sheet.assign({"tp": 4, "concurrency": 32}); sheet.magnitude("itl")``.
        """
        changed = tuple(name for name, raw in values.items()
                        if self._assign(name, raw, origin))
        return self._edited(tuple(values), changed)

    def _assign(self, name: str, raw: Any, origin: Origin | None) -> bool:
        """Give ``name`` what ``raw`` means; False when its value stays as it was (an input
        given the number it holds), so nothing it reaches need be computed again."""
        decl = self._decl(name)
        if decl.formula is None and (type(raw) is float or type(raw) is int):
            value = float(raw)  # a plain number for an input: the hot path
            if value - value != 0.0:
                interpret(decl, raw)  # not finite: the refusal that says so
        else:
            assignment = interpret(decl, raw)
            if assignment.formula is not None:
                self._restructure(decl.with_formula(assignment.formula.text, origin))
                return True
            value = assignment.value  # type: ignore[assignment]
            if not decl.is_input:
                self._restructure(decl.with_value(value, origin))
                return True
        if origin is None and decl.value is not None and _same(value, decl.value):
            return False
        self._decls[name] = decl.with_value(value, origin)
        return not (decl.value is not None and _same(value, decl.value))

    def unpin(self, name: str) -> list[str]:
        """Put a cell back as it was loaded."""
        self._decl(name)
        self._restructure(self._loaded[name])
        return self._edited((name,), (name,))

    def restore(self, decl: Declaration) -> list[str]:
        """Put back a declaration read earlier from :meth:`declaration` (an undo)."""
        self._decl(decl.name)
        self._restructure(decl)
        return self._edited((decl.name,), (decl.name,))

    def declare(self, decl: Declaration) -> None:
        """Add or replace a declaration (used by loaders); recomputes everything."""
        if decl.name not in self._decls:
            self._decls[decl.name] = decl
            self._dependents[decl.name] = {}
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
        twin._reads = dict(self._reads)
        twin._dependents = {name: dict(deps) for name, deps in self._dependents.items()}
        twin._compiled = dict(self._compiled)
        twin._column_fns = dict(self._column_fns)
        twin._failed = set(self._failed)
        twin._values = dict(self._values)
        twin._stale = self._stale
        twin._plans = self._plans  # made from snapshots: safe to share until one changes
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
        return self._fresh(name)

    def magnitude(self, name: str, unit: str | None = None) -> float:
        """The value in its declared unit (or ``unit``); EvaluationError if it failed."""
        decl = self._decl(name)
        v = self._fresh(name)
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
        v = self._fresh(self._decl(name).name)
        return v if isinstance(v, CellError) else None

    def precedents(self, name: str) -> list[str]:
        return list(self._reads[self._decl(name).name])

    def dependents(self, name: str) -> list[str]:
        return sorted(self._dependents[self._decl(name).name])

    def downstream(self, name: str) -> builtins.set[str]:
        name = self._decl(name).name
        return reach(self._dependents, (name,)) - {name}

    @property
    def graph(self) -> nx.DiGraph:
        """A read-only NetworkX view of the dependency graph (edges point from a cell to the
        cells that read it); NetworkX is imported only here."""
        import networkx

        graph = networkx.DiGraph()
        graph.add_nodes_from(self._decls)
        graph.add_edges_from((src, name) for name, reads in self._reads.items()
                             for src in reads)
        return graph.copy(as_view=True)

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
        import numpy as np

        wanted = tuple(self._decls) if only is None else tuple(self._decl(n).name
                                                              for n in only)
        if self._stale:
            self._run(self._plans.read_all(self._stale))
            self._stale = frozenset()
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
        return self._plans.columns(tuple(self._decl(n).name for n in columns), wanted)

    def _column(self, name: str, columns: Mapping[str, np.ndarray], env: dict[str, Any],
                ) -> Any:
        """One cell over the rows: NaN where it, or any cell it reads, fails."""
        import numpy as np

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
        if self._decls[name].formula.may_hide_nan:  # type: ignore[union-attr]
            # a comparison or a choice can turn a failed read into a number (a constant
            # branch, even); it must not: adding 0 × each read (0, or NaN where the read is
            # NaN) fails those rows. Not in place: a later read may broadcast to more axes.
            arrays = [v for v in reads if isinstance(v, np.ndarray)]
            if arrays:
                nan_rows = arrays[0] * 0.0
                for v in arrays[1:]:
                    nan_rows = nan_rows + v * 0.0
                value = value + nan_rows
        if not isinstance(value, np.ndarray):
            scalar = float(value)
            return scalar if math.isfinite(scalar) else math.nan
        return _nan_for_inf(value)


def _from_sheets(decl: Declaration) -> bool:
    """Declared by a shipped formula sheet: a cycle is blamed on a cell set elsewhere."""
    return decl.origin is not None and decl.origin.shipped


def _same(a: float, b: float) -> bool:
    """The same float, the sign of a zero included."""
    return a == b and (a != 0.0 or math.copysign(1.0, a) == math.copysign(1.0, b))


def _nan_for_inf(column: np.ndarray) -> np.ndarray:
    import numpy as np

    inf = np.isinf(column)
    return np.where(inf, math.nan, column) if inf.any() else column
