"""``perfgraph plan``'s search: every candidate deployment, evaluated exactly as columns.

A candidate is a serving engine (a :class:`~perfgraph.whatif.grid.Choice`: each engine's
memory rule is a sheet of its own), an accelerator at a precision (one
:class:`~perfgraph.whatif.grid.Block` row: its datasheet values, the precision's bytes and
peak, its hourly price), TP, PP, aggregated or disaggregated, and a batch (``concurrency``).
The sheet's planning cells size the replicas (or the prefill and decode pools) that carry the
request rate and say whether every SLO holds (``plan_feasible``), TTFT counting the prefill
queue wait at the rate (``prefill_queueing`` on); the search keeps the feasible rows and, for
every row, how close it came, and for each family (engine, accelerator, precision, aggregated
or disaggregated) the best each served latency reached.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TypeVar

import numpy as np

from perfgraph.engine.assign import interpret
from perfgraph.engine.sheet import Sheet
from perfgraph.errors import (
    InputError,
    UnknownNameError,
)
from perfgraph.errors import did_you_mean as _near
from perfgraph.scenario.catalog import catalog_names, load_entry
from perfgraph.scenario.loading import DEFAULT_ENGINE, ScenarioSpec, load, precisions
from perfgraph.whatif import grid
from perfgraph.whatif import sweep_axes as sweep
from perfgraph.whatif.engine_hardware import apart_pairs, runnable_hardware
from perfgraph.whatif.plan_prices import PRICES_FILE as PRICES_FILE
from perfgraph.whatif.plan_prices import prices as prices
from perfgraph.whatif.plan_question import OBJECTIVES as OBJECTIVES
from perfgraph.whatif.plan_question import SLO_CELLS as SLO_CELLS
from perfgraph.whatif.plan_question import Question as Question
from perfgraph.whatif.plan_question import parse_rate as parse_rate
from perfgraph.whatif.plan_question import parse_slo as parse_slo
from perfgraph.whatif.plan_question import question as question
from perfgraph.whatif.plan_question import question_sets as question_sets

_T = TypeVar("_T")
_R = TypeVar("_R")
#: Rows per evaluation in a search: larger than a sweep's (fewer, longer column passes).
CHUNK_ROWS = 131_072
SERVED = {"ttft": "ttft_at_rate", "itl": "itl_worst", "e2e": "e2e_served"}
VALUES = ("deployment_replicas", "prefill_replicas", "decode_replicas_at_batch",
          "deployment_gpus", "n_gpus", "ttft_served", "itl_worst", "e2e_served",
          "served_throughput_per_gpu", "tokens_per_s_per_user", "cost_per_mtok_input",
          "cost_per_mtok_output", "cost_per_mtok_total", "energy_per_token", "max_concurrency",
          "ttft_at_rate", "prefill_queue_wait", "prefill_pool_replicas",
          "capacity_throughput_per_gpu", "served_output_rate")
#: engine_starts: a candidate the engine would refuse to start (its KV cannot hold its
#: minimum, or its CUDA graphs do not fit in what the budget leaves) is never proposed
MASKS = ("plan_feasible", "batch_fits", "model_fits", "engine_starts")
DEFAULT_AXES = {"tp": (1.0, 2.0, 4.0, 8.0, 16.0), "pp": (1.0, 2.0, 4.0, 8.0),
                "disaggregated": (0.0, 1.0), "concurrency": tuple(float(c) for c in range(1, 1025))}


@dataclass
class Result:
    question: Question
    spec: ScenarioSpec
    axes: tuple[grid.AnyAxis, ...]
    units: dict[str, str]
    searched: int = 0
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    values: dict[str, np.ndarray] = field(default_factory=dict)
    #: per searched row: objective and how far it is from meeting every constraint (≤ 1: met)
    objective_all: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    violation_all: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    best_reached: dict[str, float] = field(default_factory=dict)
    #: the first engine's sheet; ``sheets`` has each engine's
    sheet: Sheet | None = None
    sheets: dict[str, Sheet] = field(default_factory=dict)
    #: per family (engine, hardware@precision, disaggregated): the best each of SERVED
    #: reached among rows that fit in memory (inf: none fits), and the closest violation
    families: list[tuple[str, str, bool]] = field(default_factory=list)
    family_best: dict[str, np.ndarray] = field(default_factory=dict)
    #: accelerators left out of a cost search: no price (prices.toml, --prices)
    unpriced: list[str] = field(default_factory=list)
    #: (engine, accelerator) pairs the engine does not run on: no candidates
    apart: frozenset[tuple[str, str]] = frozenset()

    def runs(self, engine: str, label: str) -> bool:
        """Whether ``engine`` runs on the accelerator of a block label (``h200@fp8``)."""
        return (engine, label.split("@")[0]) not in self.apart

    def runnable_items(self) -> np.ndarray:
        """Per engine, per accelerator item: whether the engine runs on it."""
        engine, block = self.axes[0], self.axes[1]
        return np.array([self.runs(str(e), str(label)) for e in engine.values
                         for label in block.values], dtype=bool)

    @property
    def feasible(self) -> int:
        return len(self.rows)

    def sheet_at(self, row: int) -> Sheet:
        """The sheet of a searched row's engine."""
        engine = str(self.choices(row)["engine"])
        return self.sheets[engine] if self.sheets else self._only_sheet()

    def _only_sheet(self) -> Sheet:
        assert self.sheet is not None
        return self.sheet

    def choices(self, row: int) -> dict[str, str | float]:
        """The axes' values at a searched row: engine, hardware and precision, then each
        cell."""
        where = grid.indices(self.axes, row, row + 1)
        out: dict[str, str | float] = {}
        for axis in self.axes:
            item = axis.values[int(where[axis.name][0])]
            if isinstance(axis, grid.Choice):
                out[axis.name] = str(item)
            elif isinstance(axis, grid.Block):
                out["hardware"], out["precision"] = str(item).split("@")
            else:
                out[axis.name] = float(item)
        sheet = self.sheets.get(str(out["engine"])) if self.sheets else self.sheet
        for name in DEFAULT_AXES:  # a --set pins the axis: the sheet's value stands
            if name not in out and sheet is not None:
                out[name] = float(sheet.magnitude(name))
        return out

    def order(self) -> np.ndarray:
        """Feasible rows' positions, best first (ties: fewer GPUs, then faster per user)."""
        cell, larger = OBJECTIVES[self.question.objective]
        key = ranked(self.values[cell], self.question.objective)
        return np.lexsort((-self.values["tokens_per_s_per_user"],
                           self.values["deployment_gpus"], key))


def ranked(column: np.ndarray, objective: str) -> np.ndarray:
    """The objective as a key to minimise: NaN last, and for cost an unpriced (0) plan last."""
    cell, larger = OBJECTIVES[objective]
    key = column * (-1.0 if larger else 1.0)
    if objective == "cost":
        key = np.where(column <= 0, np.inf, key)
    return np.where(np.isnan(key), np.inf, key)


# --------------------------------------------------------------------- the space
def hardware_block(sheet: Sheet, names: Sequence[str], wanted: Sequence[str] | None,
                   price: Mapping[str, float], pinned: Sequence[str],
                   unpriced: list[str] | None = None) -> grid.Block:
    """One row per accelerator and each precision it supports (its [peak_flops] table).
    With ``unpriced`` (a list), an accelerator without a price is left out and named there
    (the cost objective cannot rank it)."""
    table = precisions().data
    labels: list[str] = []
    rows: list[dict[str, float]] = []
    if unpriced is not None:
        unpriced += [n for n in names if n not in price]
        if len(unpriced) == len(names):
            raise InputError(f"--objective cost: no accelerator searched has a price "
                             f"({', '.join(names)}); give them with --prices FILE")
        names = [n for n in names if n in price]
    for name in names:
        entry = load_entry("hardware", name)
        peaks = entry.table("peak_flops")
        base = {cell: _read(sheet, cell, raw) for cell, raw, _ in entry.values()}
        base["gpu_hour_price"] = price.get(name, 0.0)
        for prec in (wanted if wanted is not None else list(table)):
            row = table[prec]
            if row["peak"] not in peaks:
                continue
            labels.append(f"{name}@{prec}")
            rows.append({**base, "peak_flops": _read(sheet, "peak_flops", peaks[row["peak"]]),
                         "weight_bytes": _read(sheet, "weight_bytes", row["weight_bytes"]),
                         "kv_bytes": _read(sheet, "kv_bytes", row["kv_bytes"])})
    if not rows:
        raise InputError("no accelerator in the search supports any precision searched")
    cells = tuple(n for n in rows[0] if n not in pinned)
    return grid.Block("hardware", cells, tuple(labels),
                      tuple(tuple(r.get(c, math.nan) for c in cells) for r in rows))


def _read(sheet: Sheet, cell: str, raw: object) -> float:
    value = interpret(sheet.declaration(cell), raw).value
    assert value is not None, f"{cell}: catalog values are numbers"
    return value


def space(spec: ScenarioSpec, sheet: Sheet, search: Sequence[str],
          price: Mapping[str, float], engine: str | None = None,
          unpriced: list[str] | None = None) -> tuple[grid.AnyAxis, ...]:
    """The engines (default: ``engine``, the scenario's), the block of accelerators ×
    precisions, then TP, PP, aggregated/disaggregated and the batch; each ``--search NAME=…``
    replaces the default axis of that name or adds one. With ``unpriced`` (a list), the
    accelerators without a price are left out and named there."""
    cells: dict[str, sweep.Axis] = {n: sweep.Axis(n, v) for n, v in DEFAULT_AXES.items()}
    hardware = [spec.hardware] if spec.hardware else catalog_names("hardware")
    precs = [spec.precision.lower()] if spec.precision else None
    engines = [engine or spec.engine or DEFAULT_ENGINE]
    for text in search:
        name = text.partition("=")[0].strip()
        if name in ("hardware", "precision", "engine"):
            values = [str(v) for v in sweep.parse_axis(text, None).values]
            if name == "hardware":
                hardware = values
            elif name == "engine":
                engines = list(dict.fromkeys(values))
            else:
                precs = [v.lower() for v in values]
        elif name in ("model", "workload"):
            raise InputError(f"--search {name}=…: plan answers for one {name}; give it "
                             f"with --{name}", name=name)
        elif name not in sheet.names:
            raise UnknownNameError(f"--search: no cell named {name!r}"
                                   f"{_near(name, [*sheet.names, 'hardware', 'precision'])}",
                                   name=name)
        else:
            cells[name] = sweep.parse_axis(text, sheet)
    pinned = [n for n, _ in spec.sets]
    kept = runnable_hardware(engines, hardware, "--hardware" if spec.hardware else "--engine")
    block = hardware_block(sheet, kept, precs, price, pinned, unpriced)
    rest = [a for a in cells.values() if a.name not in pinned or a.name in search_names(search)]
    axes: tuple[grid.AnyAxis, ...] = (grid.Choice("engine", tuple(engines)), block, *rest)
    sweep.check_size(grid.size(axes))
    return axes


def search_names(search: Sequence[str]) -> set[str]:
    return {t.partition("=")[0].strip() for t in search}


# --------------------------------------------------------------------- the search
def run(spec: ScenarioSpec, q: Question, search: Sequence[str] = (),
        prices_file: str | None = None, jobs: int | None = None) -> Result:
    """Every candidate of the space, evaluated exactly: the feasible ones kept whole;
    ``jobs`` worker threads (default: the cores, :func:`jobs_default`)."""
    mine = {n for n, _ in spec.sets}  # a --set prefill_queueing=false stands
    asked = replace(spec, sets=(*spec.sets, *(s for s in question_sets(q) if s[0] not in mine
                                               or s[0] != "prefill_queueing")))
    scenario = load(asked)
    unpriced: list[str] | None = [] if q.objective == "cost" else None
    axes = space(spec, scenario.sheet, search, prices(prices_file), scenario.engine, unpriced)
    sheets = {str(e): (scenario if e == scenario.engine
                       else load(replace(asked, engine=str(e)))).sheet for e in axes[0].values}
    units = {n: scenario.sheet.declaration(n).unit for n in (*VALUES, *SERVED.values())}
    hardware = dict.fromkeys(str(label).split("@")[0] for label in axes[1].values)
    result = Result(q, asked, axes, units, sheet=sheets[str(axes[0].values[0])], sheets=sheets,
                    unpriced=unpriced or [],
                    apart=apart_pairs([str(e) for e in axes[0].values], list(hardware)))
    _search(result, scenario.sheet.magnitude, jobs)
    return result


def jobs_default() -> int:
    """Worker threads for a search: the cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _search(result: Result, default: Callable[[str], float], jobs: int | None = None) -> None:
    """Every chunk of every engine's rows, evaluated on ``jobs`` threads (NumPy lets go of
    the GIL inside a column pass); the chunks' parts are joined in row order, so the answer
    is the same, bit for bit, with one worker or many."""
    q = result.question
    limits = {n: q.slos.get(n, default(SLO_CELLS[n])) for n in SLO_CELLS}
    engine, block = result.axes[0], result.axes[1]
    assert isinstance(block, grid.Block)
    inner = grid.size(result.axes) // len(engine.values)
    tasks = [(k, (k * inner + a, k * inner + b)) for k in range(len(engine.values))
             for a, b in grid.box_spans(result.axes[1:], CHUNK_ROWS)]
    shaped = [_ready(result.sheets[str(e)], result.axes[1:]) for e in engine.values]
    runnable = result.runnable_items()

    def work(task: tuple[int, tuple[int, int]]) -> _Part:
        k, (start, stop) = task
        cols = grid.evaluate_box(result.sheets[str(engine.values[k])], result.axes[1:],
                                 start - k * inner, stop - k * inner, _ONLY, shaped[k])
        return _part(result, cols, start, stop, limits, k * len(block.labels), runnable)
    workers = min(jobs or jobs_default(), len(tasks))
    parts = _in_order(work, tasks, workers)
    best = {n: np.full(2 * len(block.labels) * len(engine.values), np.inf) for n in SERVED}
    for part in parts:  # np.fmin is exact: the order cannot change a best
        for name in SERVED:
            np.fmin.at(best[name], part.family_keys, part.family_best[name])
    pieces = {"rows": [p.rows for p in parts], "objective": [p.objective for p in parts],
              "violation": [p.violation for p in parts],
              **{n: [p.kept[n] for p in parts] for n in VALUES}}
    joined = dict(zip(pieces, _in_order(np.concatenate, list(pieces.values()), workers),
                      strict=True))
    # the rows of an engine on an accelerator it does not run on are no candidates
    result.searched = grid.size(result.axes) * int(runnable.sum()) // len(runnable)
    result.rows, result.values = joined["rows"], {n: joined[n] for n in VALUES}
    result.objective_all, result.violation_all = joined["objective"], joined["violation"]
    result.families = [(str(e), str(label), bool(d)) for e in engine.values
                       for d in (0, 1) for label in block.labels]
    result.family_best = best
    result.best_reached = {n: float(best[n].min()) for n in SERVED}


def _in_order(fn: Callable[[_T], _R], items: Sequence[_T], workers: int) -> list[_R]:
    """``[fn(x) for x in items]``, on ``workers`` threads when more than one."""
    if workers <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(fn, items))


_ONLY = (*VALUES, *MASKS, *SERVED.values(), "concurrency", "disaggregated")


@dataclass
class _Part:
    """What one chunk leaves: its feasible rows and their values, every row's objective and
    violation, and the best each family reached in it (``family_keys``: Result.families)."""

    rows: np.ndarray
    kept: dict[str, np.ndarray]
    objective: np.ndarray
    violation: np.ndarray
    family_keys: np.ndarray
    family_best: dict[str, np.ndarray]


def _ready(sheet: Sheet, axes: Sequence[grid.AnyAxis]) -> bool:
    """Fill the sheet's column caches before the threads share it; whether its columns can
    be N-D boxes (:func:`grid.broadcasts`)."""
    if grid.broadcasts(sheet, axes, _ONLY):
        return True
    sheet.evaluate_columns(grid.grid_columns(axes, 0, 1), 1, _ONLY)
    return False


def _part(result: Result, cols: Mapping[str, np.ndarray], start: int, stop: int,
          limits: Mapping[str, float], first_item: int, runnable: np.ndarray) -> _Part:
    """Rows ``start:stop`` of one engine's columns (its accelerator items from
    ``first_item``; ``runnable``: per item, whether the engine runs on it)."""
    n = stop - start
    labels = len(result.axes[1].values)
    inner = grid.size(result.axes[1:]) // labels
    item = np.arange(start, stop) // inner % labels + first_item
    runs = runnable[item]
    idx = np.flatnonzero((np.broadcast_to(cols["plan_feasible"], n) == 1)
                         & (np.broadcast_to(cols["engine_starts"], n) == 1) & runs)
    keys, reached = _family_best(cols, item, labels, runs)
    objective = ranked(cols[OBJECTIVES[result.question.objective][0]], result.question.objective)
    objective = np.where(runs, np.broadcast_to(objective, n), np.inf)  # never "better"
    violation = np.where(runs, np.broadcast_to(_violation(cols, limits), n), np.inf)
    return _Part(idx + start, {n: cols[n][idx] for n in VALUES},
                 objective.astype(np.float32), violation.astype(np.float32), keys, reached)


def _family_best(cols: Mapping[str, np.ndarray], item: np.ndarray, labels: int,
                 runs: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """A chunk's best served latency per run of one family's rows, and each run's family:
    the family of a row is its engine and accelerator item (``item``) and whether it is
    disaggregated; only rows that fit in memory count (a batch KV cannot hold reaches
    nothing, nor does an engine on an accelerator it does not run on: ``runs`` false)."""
    n = len(item)
    fits = runs & (np.broadcast_to(cols["batch_fits"], n) == 1) & \
        (np.broadcast_to(cols["model_fits"], n) == 1) & \
        (np.broadcast_to(cols["engine_starts"], n) == 1)
    disagg = np.broadcast_to(cols["disaggregated"], n) != 0
    # the index in Result.families: engine, then the mode, then the accelerator item
    key = (item // labels) * 2 * labels + disagg * labels + item % labels
    starts = np.flatnonzero(np.diff(key, prepend=-1))  # a family holds runs of rows
    reached = {name: np.fmin.reduceat(np.where(fits, np.broadcast_to(cols[served], n), np.inf),
                                      starts)  # NaN: none
               for name, served in SERVED.items()}
    return key[starts], reached


def constraint_ratios(result: Result, row: int) -> dict[str, float]:
    """Each constraint at a searched row, as used ÷ allowed (above 1: missed): the SLOs
    asked, and the batch over what KV holds; ``fits`` 0 where the model does not fit or the
    engine would not start."""
    cols = result.sheet_at(row).evaluate_columns(
        grid.grid_columns(result.axes, row, row + 1), 1,
        (*SERVED.values(), "concurrency", "max_concurrency", "model_fits", "engine_starts"))
    out = {n: float(cols[SERVED[n]][0]) / v for n, v in result.question.slos.items()}
    out["kv"] = float(cols["concurrency"][0] / cols["max_concurrency"][0])
    out["fits"] = float(cols["model_fits"][0] * cols["engine_starts"][0])
    return out


def _violation(cols: Mapping[str, np.ndarray], limits: Mapping[str, float]) -> np.ndarray:
    """How far a row is from meeting everything: the largest of served ÷ SLO and batch ÷
    what KV holds (≤ 1 where all hold); infinite where the model does not fit or the engine
    would not start."""
    with np.errstate(all="ignore"):
        worst = np.divide(cols["concurrency"], cols["max_concurrency"])
        for n in SERVED:  # np.maximum carries a NaN through: a ratio that failed is infinite
            np.maximum(worst, np.divide(cols[SERVED[n]], limits[n]), out=worst)
    starts = cols.get("engine_starts", np.ones(1))  # a search's columns always carry it
    worst[np.isnan(worst) | (np.broadcast_to(cols["model_fits"], worst.shape) != 1)
          | (np.broadcast_to(starts, worst.shape) != 1)] = np.inf
    return worst
