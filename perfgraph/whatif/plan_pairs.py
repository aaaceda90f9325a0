"""Mixed-GPU pairs: disaggregated deployments whose prefill and decode pools run on different
accelerators (prefill on H200, decode on B200), which ``plan`` searches beside its rows.

A searched disaggregated row puts both pools on one accelerator. A pair takes the prefill
pool from one accelerator's rows (A) and the decode pool from another's (B), at one engine
and one precision (the KV handed over keeps its format), each pool at its own TP and PP:

- the prefill pool is A's sheet at a disaggregated row: sized (``prefill_pool_gpus``) and
  held to the TTFT SLO (``ttft_slo_met``, the queue at the rate included) with the KV
  hand-off over the network at the slower NIC of the two (``network_bandwidth`` held at
  B's where B's is lower: ``kv_hop_exposed`` is part of ``ttft_served``);
- the decode pool is B's sheet at a disaggregated row and its batch: sized
  (``decode_pool_gpus``), held to the ITL SLO (``itl_slo_met``) and its memory;
- each pool is priced at its own GPU (``prefill_pool_cost_rate`` on A,
  ``decode_pool_cost_rate`` on B): the pair costs their sum, and has their GPUs.

The pools are sized on their own, so the best pair of (A, B) is A's best prefill pool with
B's best decode pool. An E2E SLO couples them (A's TTFT plus B's tokens at its ITL: B's
``e2e_served`` less its ``ttft_at_rate``); a pair whose two best pools miss it together is
left out (a dearer pool on either side might meet it). Pairs rank by cost ($/h, at the one
request rate the same order as $/Mtok) for the cost objective, else by GPUs (at one rate,
fewer GPUs is more throughput per GPU); the energy objective ranks none.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from perfgraph.engine.sheet import Sheet
from perfgraph.scenario.loading import ScenarioSpec
from perfgraph.whatif import grid
from perfgraph.whatif import plan_percentiles as pp
from perfgraph.whatif import sweep_axes as sweep
from perfgraph.whatif.plan_pairs_answer import (
    BestPlanCost,
    MixedPair,
    MixedPairs,
    PairPool,
    PairSimulated,
)
from perfgraph.whatif.plan_search import CHUNK_ROWS, Result
from perfgraph.whatif.simulate import Setup

PREFILL: tuple[str, ...] = ("prefill_pool_gpus", "prefill_pool_cost_rate", "prefill_pool_replicas",
           "ttft_at_rate", "ttft_slo_met", "model_fits", "engine_starts", "disaggregated")
DECODE: tuple[str, ...] = ("decode_pool_gpus", "decode_pool_cost_rate", "decode_replicas_at_batch",
          "itl_worst", "itl_slo_met", "batch_fits", "model_fits", "engine_starts",
          "disaggregated", "e2e_served", "ttft_at_rate", "concurrency")
LINK = "network_bandwidth"
TOP = 5


@dataclass(frozen=True)
class PoolPick:
    """One pool of a pair: the searched row it is read at (``Result.choices``), its size,
    its cost, and its latency (prefill: TTFT at the rate; decode: ITL) in ms."""

    row: int
    replicas: int
    gpus: int
    cost_rate: float  # $/h
    latency: float  # ms
    tail: float = 0.0  # decode: E2E less TTFT at its row (ms): its output tokens' time


@dataclass(frozen=True)
class Pair:
    engine: str
    precision: str
    prefill_hardware: str
    decode_hardware: str
    prefill: PoolPick
    decode: PoolPick

    @property
    def gpus(self) -> int:
        return self.prefill.gpus + self.decode.gpus

    @property
    def cost_rate(self) -> float:
        return self.prefill.cost_rate + self.decode.cost_rate


def asked(result: Result) -> bool:
    """Whether the question allows pairs: disaggregation searched, two or more GPU kinds,
    and an objective a pair can be ranked by."""
    axes = {a.name: a for a in result.axes}
    block = result.axes[1]
    kinds = {str(label).split("@")[0] for label in block.values}
    disagg = axes.get("disaggregated")
    return (len(kinds) > 1 and result.question.objective != "energy"
            and (disagg is None or any(float(v) for v in disagg.values)))


def pairs(result: Result, top: int = TOP) -> list[Pair]:
    """The best ``top`` mixed pairs of the search's space, best first (none when
    :func:`asked` is false)."""
    if not asked(result):
        return []
    block = result.axes[1]
    assert isinstance(block, grid.Block)
    kind = [str(label).split("@") for label in block.labels]
    link = _links(block)
    cost = result.question.objective == "cost"
    found: list[Pair] = []
    for k, engine in enumerate(result.axes[0].values):
        sheet = result.sheets.get(str(engine)) or result._only_sheet()
        e2e = sheet.magnitude("e2e_slo", "ms")
        space = _Space(result, sheet, k, cost)
        decode = space.best(DECODE, range(len(kind)))
        own = space.best(PREFILL, range(len(kind)))
        for cap in sorted({link[b] for b in decode}):  # a faster NIC waits for the slower
            faster = [a for a in own if link[a] > cap]
            capped = {**own, **space.best(PREFILL, faster, cap)} if faster else own
            for b in (b for b in decode if link[b] == cap):
                for a, p in capped.items():
                    if kind[a][0] == kind[b][0] or kind[a][1] != kind[b][1] or \
                            p.latency + decode[b].tail > e2e:
                        continue
                    found.append(Pair(str(engine), kind[a][1], kind[a][0], kind[b][0], p,
                                      decode[b]))
    found.sort(key=lambda x: (x.cost_rate, x.gpus) if cost else (x.gpus, x.cost_rate))
    return found[:top]


def _links(block: grid.Block) -> list[float]:
    """Each accelerator item's network bandwidth (its column's unit), inf where the block
    does not set it (every item then has the scenario's)."""
    if LINK not in block.names:
        return [math.inf] * len(block.labels)
    j = block.names.index(LINK)
    return [float(row[j]) for row in block.rows]


class _Space:
    """One engine's disaggregated rows (the disaggregated axis held at 1: half the work),
    evaluated a box at a time for one pool's cells."""

    def __init__(self, result: Result, sheet: Sheet, engine: int, cost: bool) -> None:
        self.sheet, self.cost = sheet, cost
        full = result.axes[1:]
        self.axes = tuple(sweep.Axis(a.name, (1.0,)) if a.name == "disaggregated" else a
                          for a in full)
        self.inner = grid.size(self.axes[1:])
        #: a row here → its row in the search's grid (``Result.choices``)
        self.where = [(a.name, grid.axis_stride(full, a.name),
                       a.values.index(1.0) if a.name == "disaggregated" else None)
                      for a in full]
        self.base = engine * grid.size(full)
        self.shaped: dict[tuple[str, ...], bool] = {
            c: grid.broadcasts(sheet, self.axes, c) for c in (PREFILL, DECODE)}

    def row(self, local: int) -> int:
        at = grid.indices(self.axes, local, local + 1)
        return self.base + sum(int(at[n][0] if fixed is None else fixed) * stride
                               for n, stride, fixed in self.where)

    def best(self, cells: tuple[str, ...], items: Iterable[int],
             cap: float | None = None) -> dict[int, PoolPick]:
        """Per accelerator item of ``items``: its best pool (PREFILL, its link held at or
        below ``cap``; or DECODE) among rows that meet the pool's SLO and fit."""
        wanted, inner = set(items), self.inner
        best: dict[int, PoolPick] = {}
        for start, stop in grid.box_spans(self.axes, CHUNK_ROWS):
            span = range(start // inner, (stop - 1) // inner + 1)
            if not wanted.intersection(span):
                continue
            cols = grid.evaluate_box(self.sheet, self.axes, start, stop, cells,
                                     self.shaped[cells], {LINK: cap} if cap else None)
            score = np.where(_ok(cols, cells is PREFILL, stop - start),
                             cols[cells[1] if self.cost else cells[0]], np.inf)
            for item in wanted.intersection(span):
                lo, hi = max(start, item * inner) - start, min(stop, (item + 1) * inner) - start
                i = lo + int(np.argmin(score[lo:hi]))
                if math.isfinite(score[i]) and (item not in best or _key(
                        cols, cells, i, self.cost) < _key_of(best[item], self.cost)):
                    best[item] = _pick(cols, cells, i, self.row(start + i), cells is PREFILL)
        return best


def _ok(cols: Mapping[str, np.ndarray], prefill: bool, n: int) -> np.ndarray:
    names = (("ttft_slo_met", "model_fits", "engine_starts") if prefill else
             ("itl_slo_met", "batch_fits", "model_fits", "engine_starts"))
    ok = np.broadcast_to(cols["disaggregated"], n) == 1
    for name in names:
        ok = ok & (np.broadcast_to(cols[name], n) == 1)
    return ok


def _key(cols: Mapping[str, np.ndarray], cells: tuple[str, ...], i: int,
         cost: bool) -> tuple[float, float]:
    gpus, rate = float(cols[cells[0]][i]), float(cols[cells[1]][i])
    return (rate, gpus) if cost else (gpus, rate)


def _key_of(p: PoolPick, cost: bool) -> tuple[float, float]:
    return (p.cost_rate, p.gpus) if cost else (p.gpus, p.cost_rate)


def _pick(cols: Mapping[str, np.ndarray], cells: tuple[str, ...], i: int, row: int,
          prefill: bool) -> PoolPick:
    def at(name: str) -> float:
        return float(np.broadcast_to(cols[name], cols[cells[0]].shape)[i])

    if prefill:
        return PoolPick(row, round(at(cells[2])), round(at(cells[0])), at(cells[1]),
                        at("ttft_at_rate"))
    return PoolPick(row, round(at(cells[2])), round(at(cells[0])), at(cells[1]),
                    at("itl_worst"), at("e2e_served") - at("ttft_at_rate"))


# --------------------------------------------------------------------- percentile SLOs
def jobs(result: Result, found: Sequence[Pair], spec_of: Callable[[int], ScenarioSpec],
         requests: int) -> list[pp.Job]:
    """Each pair's simulation (job ``k`` the pair ``found[k]``): its prefill pool on its
    accelerator's scenario, its decode pool on the decode's (whose sheet gives the token
    budget and, with the slower NIC, the hand-off), at the question's rate."""
    out = []
    for k, p in enumerate(found):
        spec = spec_of(p.decode.row)
        budget = result.sheet_at(p.decode.row).magnitude("max_num_batched_tokens", "token")
        setup = Setup(rate=result.question.rate, requests=requests,
                      scheduler=pp.scheduler_for(spec.engine), token_budget=max(1, int(budget)))
        out.append(pp.Job(k, spec, setup, p.prefill.replicas + p.decode.replicas,
                          (p.prefill.replicas, p.decode.replicas), spec_of(p.prefill.row)))
    return out


def simulated(result: Result, found: Sequence[Pair], slos: tuple[pp.PercentileSlo, ...],
              spec_of: Callable[[int], ScenarioSpec], requests: int = pp.DEFAULT_REQUESTS,
              workers: int | None = None, ray_address: str | None = None,
              ) -> list[pp.Outcome]:
    """Each pair simulated and held to the percentile SLOs, as ``plan`` holds its rows."""
    return pp.run_jobs(jobs(result, found, spec_of, requests), slos, workers, ray_address)


def plan_cost(result: Result) -> dict[str, float]:
    """The best searched plan's cost rate ($/h) and GPUs, to hold the pairs against."""
    row = int(result.rows[int(result.order()[0])])
    cols = result.sheet_at(row).evaluate_columns(
        grid.grid_columns(result.axes, row, row + 1), 1,
        ("deployment_cost_rate", "deployment_gpus"))
    return {k: float(np.asarray(v).reshape(-1)[0]) for k, v in cols.items()}


# ------------------------------------------------------------------------- the answer
def answer(result: Result, found: Sequence[Pair],
           outcomes: Sequence[pp.Outcome] | None = None) -> MixedPairs:
    """The pairs as the answer holds them (each with its simulation, where ``outcomes`` has
    one), with the best searched plan's cost and GPUs (None: no plan met the SLOs)."""
    sims: list[PairSimulated | None] = [
        PairSimulated(dict(o.values), o.meets, o.error) for o in outcomes or ()]
    sims += [None] * (len(found) - len(sims))
    best = plan_cost(result) if result.feasible else None
    return MixedPairs(
        tuple(MixedPair(p.engine, p.gpus, p.cost_rate, _pool(result, p.prefill),
                        _pool(result, p.decode), sim) for p, sim in zip(found, sims, strict=False)),
        None if best is None else
        BestPlanCost(best["deployment_cost_rate"], best["deployment_gpus"]))


def _pool(result: Result, pick: PoolPick) -> PairPool:
    c = result.choices(pick.row)
    batch = c.get("concurrency")
    return PairPool(str(c["hardware"]), str(c["precision"]), float(c["tp"]),
                    float(c.get("pp", 1.0)), None if batch is None else float(batch),
                    pick.replicas, pick.gpus, pick.cost_rate, pick.latency)
