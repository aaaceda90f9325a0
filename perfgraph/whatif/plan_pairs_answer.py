"""The mixed-GPU prefill/decode pairs ``plan`` lists beside its answer, as frozen data
(:class:`MixedPairs`): each pair's engine, GPUs and cost, its two pools (hardware, precision,
TP, PP, batch, replicas, GPUs, cost and latency), what simulating it said, and the best
searched plan's cost and GPUs to hold them against.

:func:`perfgraph.whatif.plan_pairs.answer` builds it from the search;
``output/plan_pairs_report.py`` renders it (JSON and text); :func:`from_json` reads the
``mixed_pairs`` part of a saved ``plan --format json`` answer back. Costs are $/h, latencies
and percentiles ms (s for E2E), as the cells give them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: each pool's latency cell: the prefill pool's TTFT at the rate, the decode pool's worst ITL
LATENCY_CELL = {"prefill": "ttft_at_rate", "decode": "itl_worst"}


@dataclass(frozen=True)
class PairPool:
    """One pool of a pair, at its searched row: its accelerator and choices, its size and
    cost rate ($/h), and its latency (ms; prefill ``ttft_at_rate``, decode ``itl_worst``)."""

    hardware: str
    precision: str
    tp: float
    pp: float
    concurrency: float | None  # the row's batch (None: not searched)
    replicas: int
    gpus: int
    cost_rate: float
    latency: float


@dataclass(frozen=True)
class PairSimulated:
    """A pair simulated against the percentile SLOs: each SLO's value (inf: the queue grew
    without bound), whether it met them all, and the error that stopped it, if one did."""

    percentiles: Mapping[str, float]
    meets: bool
    error: str | None


@dataclass(frozen=True)
class MixedPair:
    """A prefill pool on one accelerator and a decode pool on another, at one engine: its GPUs
    and cost rate ($/h) in all, and (with percentile SLOs) what simulating it said."""

    engine: str
    gpus: int
    cost_rate: float
    prefill: PairPool
    decode: PairPool
    simulated: PairSimulated | None = None


@dataclass(frozen=True)
class BestPlanCost:
    """The best searched plan's ``deployment_cost_rate`` ($/h) and ``deployment_gpus``."""

    cost_rate: float
    gpus: float


@dataclass(frozen=True)
class MixedPairs:
    """The best pairs, best first, and the best plan's cost (None: no plan met the SLOs)."""

    pairs: tuple[MixedPair, ...]
    best_plan: BestPlanCost | None


def from_json(doc: Mapping[str, Any]) -> MixedPairs:
    """A saved answer's ``mixed_pairs`` read back (KeyError, TypeError or ValueError on a
    document that is not one)."""
    best = doc.get("best_plan")
    return MixedPairs(tuple(_pair(p) for p in doc["pairs"]), None if best is None else
                      BestPlanCost(float(best["deployment_cost_rate"]),
                                   float(best["deployment_gpus"])))


def _pair(doc: Mapping[str, Any]) -> MixedPair:
    sim = doc.get("simulated")
    return MixedPair(str(doc["engine"]), int(doc["gpus"]), float(doc["cost_rate"]["value"]),
                     _pool(doc["prefill"], "prefill"), _pool(doc["decode"], "decode"),
                     None if sim is None else PairSimulated(
                         {k: float(v) for k, v in sim["percentiles"].items()},
                         bool(sim["meets"]), sim.get("error")))


def _pool(doc: Mapping[str, Any], role: str) -> PairPool:
    batch = doc.get("concurrency")
    return PairPool(str(doc["hardware"]), str(doc["precision"]), float(doc["tp"]),
                    float(doc["pp"]), None if batch is None else float(batch),
                    int(doc["replicas"]), int(doc["gpus"]), float(doc["cost_rate"]["value"]),
                    float(doc[LATENCY_CELL[role]]["value"]))
