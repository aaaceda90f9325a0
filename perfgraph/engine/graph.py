"""The dependency graph as two adjacency maps, and the plans that evaluate it lazily.

A sheet's graph is small (a few hundred cells) and changes only when a cell is pinned, so it
is kept as plain dicts (``reads``: a cell → the cells its formula reads; ``dependents``: a
cell → the cells that read it) with the walks it needs written out here: NetworkX is not
imported to evaluate a sheet (it costs a cold start more than the sheet does), only when
:attr:`~perfgraph.engine.sheet.Sheet.graph` is asked for.

:class:`Plans` answers, for one graph structure, "which cells must run, in which order" and
caches each answer: an edit marks what it reaches *stale* (nothing is computed), and reading a
stale cell runs only its stale ancestors, so an in-process loop that sets a few inputs and
reads a few outputs computes just the cells between them. The stale sets are interned
frozensets and the answers are keyed by (stale set, what happened), so after the first round
a repeated loop costs one dict lookup per edit or read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

Fn = Callable[[Any], Any]
#: One cell to compute: its name, its compiled formula (None for an input), what it reads.
Step = tuple[str, Fn | None, tuple[str, ...]]
Adjacency = Mapping[str, Iterable[str]]

#: Cached answers kept per graph structure before the caches start again: a bound on memory
#: (a stale set of the default sheet is a frozenset of up to ~280 names, ~10 KB) for
#: sessions that edit many different cells; a loop over the same few never reaches it.
MAX_CACHED = 512


def reach(adjacency: Adjacency, starts: Iterable[str]) -> set[str]:
    """``starts`` and every cell reachable from them along ``adjacency``."""
    seen = set(starts)
    stack = list(seen)
    while stack:
        for nxt in adjacency[stack.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def topological(names: Iterable[str], reads: Mapping[str, tuple[str, ...]],
                dependents: Adjacency) -> list[str]:
    """The cells in an order where each comes after what it reads (Kahn's algorithm; the
    cells on or below a cycle are left out, so a short result means a cycle)."""
    waiting = {n: len(reads[n]) for n in names}
    order = [n for n, count in waiting.items() if count == 0]
    for name in order:  # the list grows as cells become ready
        for dep in dependents[name]:
            waiting[dep] -= 1
            if waiting[dep] == 0:
                order.append(dep)
    return order


def find_cycle(candidates: Iterable[str], dependents: Adjacency) -> list[str] | None:
    """The shortest cycle through the first candidate on one: its members in the order
    of the edges (each is read by the next, the last by the first), or None."""
    for start in candidates:
        parent: dict[str, str] = {}
        frontier = [start]
        while frontier:
            following = []
            for node in frontier:
                for dep in dependents[node]:
                    if dep == start:
                        path = [node]
                        while path[-1] != start:
                            path.append(parent[path[-1]])
                        return path[::-1]
                    if dep not in parent:
                        parent[dep] = node
                        following.append(dep)
            frontier = following
    return None


class Plans:
    """What to compute, for one graph structure (a new one is made when the graph changes,
    so a sheet and its forks may share one): from snapshots, never from live dicts."""

    def __init__(self, order: list[str], reads: Mapping[str, tuple[str, ...]],
                 dependents: Mapping[str, Iterable[str]], compiled: Mapping[str, Fn]) -> None:
        self.order = order
        self.index = {name: i for i, name in enumerate(order)}
        self.reads = dict(reads)
        self.dependents = {name: tuple(deps) for name, deps in dependents.items()}
        self.steps: dict[str, Step] = {n: (n, compiled.get(n), self.reads[n]) for n in order}
        self.everything: list[Step] = [self.steps[n] for n in order]
        self._reached: dict[tuple[str, ...], tuple[list[str], frozenset[str]]] = {}
        self._edits: dict[tuple[frozenset[str], tuple[str, ...]], frozenset[str]] = {}
        self._reads_of: dict[tuple[frozenset[str], str], tuple[list[Step], frozenset[str]]] = {}
        self._ancestors: dict[str, frozenset[str]] = {}
        self._interned: dict[frozenset[str], frozenset[str]] = {}
        self._columns: dict[tuple[tuple[str, ...], tuple[str, ...] | None], list[str]] = {}

    def reached(self, names: tuple[str, ...]) -> tuple[list[str], frozenset[str]]:
        """The cells ``names`` reach (themselves included), in topological order and as a set."""
        got = self._reached.get(names)
        if got is None:
            cells = reach(self.dependents, names)
            got = self._reached[names] = (sorted(cells, key=self.index.__getitem__),
                                          frozenset(cells))
        return got

    def edit(self, stale: frozenset[str], names: tuple[str, ...]) -> frozenset[str]:
        """The stale cells after ``names`` change."""
        key = (stale, names)
        got = self._edits.get(key)
        if got is None:
            self._bound()
            got = self._edits[key] = self._intern(stale | self.reached(names)[1])
        return got

    def read(self, stale: frozenset[str], name: str) -> tuple[list[Step], frozenset[str]]:
        """What to compute, in order, to read ``name`` (stale), and the cells stale after."""
        key = (stale, name)
        got = self._reads_of.get(key)
        if got is None:
            ancestors = self._ancestors.get(name)
            if ancestors is None:
                ancestors = self._ancestors[name] = frozenset(reach(self.reads, (name,)))
            self._bound()
            todo = ancestors & stale
            steps = [self.steps[n] for n in sorted(todo, key=self.index.__getitem__)]
            got = self._reads_of[key] = (steps, self._intern(stale - todo))
        return got

    def read_all(self, stale: frozenset[str]) -> list[Step]:
        """What to compute, in order, to bring every stale cell up to date."""
        return [self.steps[n] for n in sorted(stale, key=self.index.__getitem__)]

    def columns(self, names: tuple[str, ...], wanted: tuple[str, ...] | None) -> list[str]:
        """The cells ``names`` reach (themselves included) that the ``wanted`` cells read
        (all, for None), in topological order: what a sweep over ``names`` computes."""
        key = (names, wanted)
        got = self._columns.get(key)
        if got is None:
            cells = reach(self.dependents, names)
            if wanted is not None:
                cells &= reach(self.reads, wanted) | set(names)
            got = self._columns[key] = [n for n in self.order if n in cells]
        return got

    def _intern(self, cells: frozenset[str]) -> frozenset[str]:
        return self._interned.setdefault(cells, cells)

    def _bound(self) -> None:
        if len(self._edits) + len(self._reads_of) > MAX_CACHED:
            self._edits.clear()
            self._reads_of.clear()
            self._interned.clear()
