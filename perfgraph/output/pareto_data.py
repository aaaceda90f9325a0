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
from dataclasses import dataclass, replace

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


@dataclass(frozen=True)
class ParetoData:
    frontiers: tuple[Series, ...]  # one per family, its label the family's
    scatter: tuple[Series, ...]  # the same families' thinned plans, in the same order
    chosen: Series | None  # the plan the search chose, its label what it is
    plans: int


def family_keys(cols: Mapping[str, np.ndarray]) -> np.ndarray:
    """Each row's family, as text: accelerator · precision · aggregated|disaggregated (the
    engine first when the plans hold more than one)."""
    mode = np.where(np.asarray(cols["disaggregated"], dtype=float) != 0, "disaggregated",
                    "aggregated")
    keys = np.char.add(np.char.add(np.asarray(cols["hardware"], dtype=str), " · "),
                       np.asarray(cols["precision"], dtype=str))
    keys = np.char.add(np.char.add(keys, " · "), mode)
    engines = np.asarray(cols["engine"], dtype=str)
    if len(np.unique(engines)) > 1:
        keys = np.char.add(np.char.add(engines, " · "), keys)
    return keys


def thinned(xs: np.ndarray, ys: np.ndarray, most: int) -> np.ndarray:
    """At most ``most`` indices, evenly spread over the plans in order of interactivity."""
    order = np.argsort(xs, kind="stable")
    if len(order) <= most:
        return order
    return order[np.unique(np.linspace(0, len(order) - 1, max(most, 1)).round().astype(int))]


def pareto_data(cols: Mapping[str, np.ndarray]) -> ParetoData:
    """Families, their frontiers and thinned plans, and the chosen plan, from ``cols``."""
    xs, ys = (np.asarray(cols[c], dtype=float) for c in (X, Y))
    if len(xs) == 0:
        raise InputError("no feasible plan to plot")
    keys = family_keys(cols)
    names = sorted(np.unique(keys), key=lambda k: -np.nanmax(ys[keys == k]))
    fronts: list[Series] = []
    members: list[list[str]] = []
    for name in names:  # families whose plans are the same (fp8 and int8 alike) drawn once
        rows = np.flatnonzero(keys == name)
        best = rows[frontier(xs[rows], ys[rows])]
        same = next((i for i, f in enumerate(fronts) if np.array_equal(f.x, xs[best])
                     and np.array_equal(f.y, ys[best])), None)
        if same is None:
            fronts.append(Series(str(name), xs[best], ys[best], "line"))
            members.append([str(name)])
        else:
            members[same].append(str(name))
    share = max(SCATTER // len(fronts), 1)
    scatter = []
    for i, group in enumerate(members):
        rows = np.flatnonzero(np.isin(keys, group))
        some = rows[thinned(xs[rows], ys[rows], share)]
        scatter.append(Series(" = ".join(group), xs[some], ys[some], "points"))
        fronts[i] = replace(fronts[i], label=" = ".join(group))
    return ParetoData(tuple(fronts), tuple(scatter), _chosen(cols, keys, xs, ys), len(xs))


def _chosen(cols: Mapping[str, np.ndarray], keys: np.ndarray, xs: np.ndarray,
            ys: np.ndarray) -> Series | None:
    ranks = np.asarray(cols["rank"], dtype=float)
    if not (ranks == 1).any():
        return None
    i = int(np.flatnonzero(ranks == 1)[0])
    parts = [f"TP {number(float(cols['tp'][i]))}"]
    if float(cols["pp"][i]) != 1:
        parts.append(f"PP {number(float(cols['pp'][i]))}")
    parts += [f"batch {number(float(cols['concurrency'][i]))}",
              f"{number(float(cols['deployment_gpus'][i]))} GPUs"]
    return Series(f"chosen plan: {keys[i]}, {', '.join(parts)}", np.array([xs[i]]),
                  np.array([ys[i]]), "marker", color="gold")
