"""The data behind ``perfgraph plot pareto``: what ``perfgraph plan --out`` wrote, as the
InferenceMAX chart draws it.

Each feasible plan is a point at its interactivity (``tokens_per_s_per_user``, output tokens/s
one user sees) and what its configuration serves per GPU at capacity
(``capacity_throughput_per_gpu``, the sheet's cell: not the offered rate over the GPUs, which
caps every plan at the demand). Plans group into families (accelerator × precision ×
aggregated or disaggregated, and the engine when more than one was searched); each family has
its frontier (no plan of it is faster per user and serves more per GPU) and a thinned
scatter of its plans; the plan the search chose (``rank`` 1) is marked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from perfgraph.engine.numbers import number
from perfgraph.errors import InputError
from perfgraph.output.charts import Series, frontier

#: The columns of ``plan --out`` the chart reads.
COLUMNS = ("engine", "hardware", "precision", "disaggregated", "tp", "pp", "concurrency",
           "deployment_gpus", "tokens_per_s_per_user", "capacity_throughput_per_gpu", "rank")
X, Y = "tokens_per_s_per_user", "capacity_throughput_per_gpu"
#: The most plans drawn as the light scatter behind the frontiers, all families together.
SCATTER = 1200


#: The most families drawn in colour (tab10); the others' frontiers are thin and grey.
COLOURED = 10


@dataclass(frozen=True)
class ParetoData:
    frontiers: tuple[Series, ...]  # one per family drawn in colour, its label the family's
    scatter: tuple[Series, ...]  # the same families' thinned plans, in the same order
    chosen: Series | None  # the plan the search chose, its label what it is
    plans: int
    others: tuple[Series, ...] = ()  # the frontiers of the families not drawn in colour


def family_codes(cols: Mapping[str, np.ndarray]) -> tuple[np.ndarray, list[str]]:
    """Each row's family as an index into the names returned: accelerator · precision ·
    aggregated|disaggregated (the engine first when the plans hold more than one)."""
    parts = [np.unique(np.asarray(cols[c], dtype=str), return_inverse=True)
             for c in ("engine", "hardware", "precision")]
    disagg = (np.asarray(cols["disaggregated"], dtype=float) != 0).astype(np.int64)
    code = disagg.copy()
    for values, inverse in parts:
        code = code * len(values) + inverse.reshape(-1)
    _, first, family = np.unique(code, return_index=True, return_inverse=True)
    engines = len(parts[0][0]) > 1
    names = []
    for row in first:
        words = [str(cols["hardware"][row]), str(cols["precision"][row]),
                 "disaggregated" if disagg[row] else "aggregated"]
        names.append(" · ".join([str(cols["engine"][row])] * engines + words))
    return family.reshape(-1), names


def thinned(xs: np.ndarray, ys: np.ndarray, most: int) -> np.ndarray:
    """At most ``most`` indices, evenly spread over the plans in order of interactivity."""
    order = np.argsort(xs, kind="stable")
    if len(order) <= most:
        return order
    return order[np.unique(np.linspace(0, len(order) - 1, max(most, 1)).round().astype(int))]


@dataclass
class _Family:
    names: list[str]
    rows: np.ndarray
    best: np.ndarray  # its frontier's rows


def families(cols: Mapping[str, np.ndarray], xs: np.ndarray, ys: np.ndarray,
             ) -> list[_Family]:
    """The families, those whose frontiers are the same (fp8 and int8 alike) made one, the
    one that serves most per GPU first."""
    family, names = family_codes(cols)
    order = np.argsort(family, kind="stable")
    found: list[_Family] = []
    for f, rows in enumerate(np.split(order, np.cumsum(np.bincount(family))[:-1])):
        best = rows[frontier(xs[rows], ys[rows])]
        same = next((g for g in found if np.array_equal(xs[g.best], xs[best])
                     and np.array_equal(ys[g.best], ys[best])), None)
        if same is None:
            found.append(_Family([names[f]], rows, best))
        else:
            same.names.append(names[f])
            same.rows = np.concatenate([same.rows, rows])
    return sorted(found, key=lambda g: -float(np.max(ys[g.best], initial=-np.inf)))


def coloured_first(found: list[_Family], xs: np.ndarray, ys: np.ndarray,
                   chosen: int | None) -> list[_Family]:
    """``found`` reordered: the families on the frontier of every plan, then the chosen
    plan's, then the others (each group the one serving most per GPU first)."""
    overall = set(frontier(xs, ys).tolist())
    lead = [g for g in found if overall.intersection(g.best.tolist())]
    mine = [g for g in found if chosen is not None and bool(np.any(g.rows == chosen))
            and g not in lead]
    return lead + mine + [g for g in found if g not in lead and g not in mine]


def pareto_data(cols: Mapping[str, np.ndarray]) -> ParetoData:
    """Families, their frontiers and thinned plans, and the chosen plan, from ``cols``:
    :data:`COLOURED` families in colour (those on the overall frontier and the chosen plan's
    first), the rest as thin grey frontiers."""
    xs, ys = (np.asarray(cols[c], dtype=float) for c in (X, Y))
    if len(xs) == 0:
        raise InputError("no feasible plan to plot")
    ranks = np.flatnonzero(np.asarray(cols["rank"], dtype=float) == 1)
    chosen = int(ranks[0]) if len(ranks) else None
    ordered = coloured_first(families(cols, xs, ys), xs, ys, chosen)
    shown, rest = ordered[:COLOURED], ordered[COLOURED:]
    share = max(SCATTER // len(shown), 1)
    fronts, scatter = [], []
    for g in shown:
        label = " = ".join(g.names)
        fronts.append(Series(label, xs[g.best], ys[g.best], "line"))
        some = g.rows[thinned(xs[g.rows], ys[g.rows], share)]
        scatter.append(Series(label, xs[some], ys[some], "points"))
    others = tuple(Series(" = ".join(g.names), xs[g.best], ys[g.best], "line", "0.6")
                   for g in rest)
    return ParetoData(tuple(fronts), tuple(scatter), _chosen(cols, chosen, xs, ys), len(xs),
                      others)


def _chosen(cols: Mapping[str, np.ndarray], i: int | None, xs: np.ndarray,
            ys: np.ndarray) -> Series | None:
    """The chosen plan (row ``i``) as a marker, its label what it is."""
    if i is None:
        return None
    mode = "disaggregated" if float(cols["disaggregated"][i]) else "aggregated"
    parts = [f"TP {number(float(cols['tp'][i]))}"]
    if float(cols["pp"][i]) != 1:
        parts.append(f"PP {number(float(cols['pp'][i]))}")
    parts += [f"batch {number(float(cols['concurrency'][i]))}",
              f"{number(float(cols['deployment_gpus'][i]))} GPUs"]
    what = " · ".join(str(cols[c][i]) for c in ("engine", "hardware", "precision"))
    return Series(f"chosen plan: {what} · {mode}, {', '.join(parts)}", np.array([xs[i]]),
                  np.array([ys[i]]), "marker", color="gold")
