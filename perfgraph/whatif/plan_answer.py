"""What ``perfgraph plan`` answers, as frozen data: the question it was asked, the best plan
and the runners-up and the Pareto frontier (:class:`PlanFound`), or, when nothing meets the
SLOs, the one line that says why and the best each family reached (:class:`NoPlan`), and
what simulating the best candidates against percentile SLOs said (:class:`HoldReport`).

:mod:`perfgraph.whatif.plan_report` and :mod:`perfgraph.whatif.plan_percentiles` build these
from the search's :class:`~perfgraph.whatif.plan_search.Result`; ``output/plan_text.py`` and
``output/plan_json.py`` render them; the CLI and the dashboard read their fields.
:func:`from_json` reads a saved ``plan --format json`` answer back (older answers lack some
keys: those fields are then ``None`` or empty).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from perfgraph.whatif import plan_pairs_answer
from perfgraph.whatif.plan_pairs_answer import MixedPairs


@dataclass(frozen=True)
class UnitValue:
    """A number in its cell's declared unit."""

    value: float
    unit: str


@dataclass(frozen=True)
class GpuPool:
    """``replicas`` copies of the plan's serving engine, each on the plan's GPUs per replica
    of kind ``hardware``."""

    replicas: int
    hardware: str


@dataclass(frozen=True)
class DisaggregatedPools:
    """A disaggregated plan's two pools: prefill replicas and decode replicas, each with its
    GPU kind."""

    prefill: GpuPool
    decode: GpuPool


#: A plan's choices that switch the scenario (a catalog entry, an engine) rather than set a cell.
CATALOG_AXES = ("hardware", "precision", "engine")
#: Where a plan's replicas run: aggregated, one pool whose replicas each serve both phases;
#: disaggregated, a prefill pool and a decode pool.
PlanPools = GpuPool | DisaggregatedPools


@dataclass(frozen=True)
class PlanCandidate:
    """One searched candidate: its ``choices`` (the searched axes, in the search's order:
    engine, hardware, precision, then each cell) and ``values`` (each cell the search
    returned, in its order), with its pools and the numbers its readers use as fields."""

    choices: Mapping[str, str | float]
    values: Mapping[str, UnitValue]
    pools: PlanPools

    @classmethod
    def of(cls, choices: Mapping[str, str | float],
           values: Mapping[str, UnitValue]) -> PlanCandidate:
        """The candidate, its pools read from its replica cells."""
        return cls(dict(choices), dict(values), _pools(choices, values))

    @property
    def engine(self) -> str | None:
        """The serving engine (None in an answer saved before the engine was an axis)."""
        e = self.choices.get("engine")
        return None if e is None else str(e)

    @property
    def hardware(self) -> str:
        return str(self.choices["hardware"])

    @property
    def precision(self) -> str:
        return str(self.choices["precision"])

    @property
    def catalog(self) -> dict[str, str]:
        """The catalog choices it makes (hardware, precision, and the engine where the answer
        names it), which switch the scenario rather than set a cell."""
        return {k: str(self.choices[k]) for k in CATALOG_AXES if k in self.choices}

    @property
    def cells(self) -> tuple[tuple[str, float], ...]:
        """The searched cells' values (every axis but the catalog choices: engine, hardware,
        precision), in the search's order: what applying the plan sets."""
        return tuple((k, float(v)) for k, v in self.choices.items() if k not in CATALOG_AXES)

    @property
    def tp(self) -> float:
        return float(self.choices["tp"])

    @property
    def pp(self) -> float:
        return float(self.choices["pp"])

    @property
    def disaggregated(self) -> bool:
        return bool(self.choices.get("disaggregated", 0.0))

    @property
    def batch(self) -> float:
        """The batch: each replica's concurrent sequences (``concurrency``)."""
        return float(self.choices["concurrency"])

    @property
    def gpus(self) -> float:
        """GPUs in all (``deployment_gpus``)."""
        return self.values["deployment_gpus"].value

    @property
    def gpus_per_replica(self) -> float:
        return self.values["n_gpus"].value

    @property
    def ttft(self) -> float:
        """The TTFT its SLO holds (ms): at the rate, the prefill queue included
        (``ttft_at_rate``; an answer saved before the queue was modelled: ``ttft_served``)."""
        v = self.values.get("ttft_at_rate") or self.values["ttft_served"]
        return v.value

    @property
    def itl(self) -> float:
        """ITL at the worst point of the decode (``itl_worst``, ms)."""
        return self.values["itl_worst"].value

    @property
    def e2e(self) -> float:
        """End-to-end latency as served (``e2e_served``, ms)."""
        return self.values["e2e_served"].value

    @property
    def per_gpu(self) -> float:
        """Output tokens/s per GPU as served (``served_throughput_per_gpu``)."""
        return self.values["served_throughput_per_gpu"].value

    @property
    def served_output_rate(self) -> float | None:
        """Output tokens/s the whole deployment produces at the rate (``served_output_rate``);
        None for an answer saved before the plan kept it."""
        v = self.values.get("served_output_rate")
        return None if v is None else v.value

    @property
    def per_user(self) -> float:
        """Output tokens/s each user sees (``tokens_per_s_per_user``)."""
        return self.values["tokens_per_s_per_user"].value

    @property
    def cost(self) -> tuple[float, float, float]:
        """$ per million tokens: input, output, all (the ``cost_per_mtok_*`` cells)."""
        v = self.values
        return (v["cost_per_mtok_input"].value, v["cost_per_mtok_output"].value,
                v["cost_per_mtok_total"].value)

    @property
    def energy_per_token(self) -> float:
        return self.values["energy_per_token"].value


def _pools(choices: Mapping[str, str | float], values: Mapping[str, UnitValue]) -> PlanPools:
    """Aggregated: ``deployment_replicas``. Disaggregated: the prefill pool
    (``prefill_pool_replicas``; an answer saved before the pool was sized for the queue:
    ``prefill_replicas``) and the decode pool (``decode_replicas_at_batch``)."""
    hardware = str(choices["hardware"])
    if not choices.get("disaggregated", 0.0):
        return GpuPool(int(values["deployment_replicas"].value), hardware)
    prefill = values.get("prefill_pool_replicas") or values["prefill_replicas"]
    return DisaggregatedPools(GpuPool(int(prefill.value), hardware),
                              GpuPool(int(values["decode_replicas_at_batch"].value), hardware))


@dataclass(frozen=True)
class AskedQuestion:
    """The question as the answer repeats it: each SLO cell's limit, the request rate, and
    (an answer with a plan; None in the no-plan answer, which does not repeat them) the
    objective, model and workload. ``ttft_includes_prefill_queue``: whether TTFT counts the
    prefill queue wait at the rate (None: an answer saved before it was said)."""

    slos: Mapping[str, UnitValue]
    request_rate: UnitValue
    ttft_includes_prefill_queue: bool | None = None
    objective: str | None = None
    model: str | None = None
    workload: str | None = None


@dataclass(frozen=True)
class SimulatedCandidate:
    """One candidate simulated for percentile SLOs: the deployment in words, whether it
    met every SLO (or the error that stopped its simulation), and each percentile SLO's
    simulated value (ms; s for E2E; inf: the queue grew without bound)."""

    plan: str
    meets: bool
    error: str | None
    percentiles: Mapping[str, float]


@dataclass(frozen=True)
class HoldReport:
    """What simulating the best candidates said: the percentile SLOs (name → limit, ms; s for
    E2E), the candidates best first, which was chosen (1-based; None: none met), and how
    many disaggregated candidates were passed over."""

    slos: Mapping[str, float]
    candidates: tuple[SimulatedCandidate, ...]
    chosen_rank: int | None
    skipped_disaggregated: int = 0


@dataclass(frozen=True)
class PlanBenchmark:
    """The benchmark that measures the plan's question (``plan --format json``'s
    ``benchmark``): what ``compare --plan`` holds a measured run against. A hand-written
    answer may give only the lengths; the rest is then empty."""

    isl: int
    osl: int
    model: str = ""  # Hugging Face id
    url: str = ""
    request_rate: UnitValue | None = None
    requests: int = 0
    tool: str = ""
    command: str = ""
    result: str = ""  # the file the benchmark writes


@dataclass(frozen=True)
class PlanFound:
    """An answer with a plan: the counts, the best plan and why, the frontier and the
    runners-up (the best of each other family); and where the CLI adds them, what the
    simulations said, the label of the best plan's numbers and its benchmark."""

    question: AskedQuestion
    searched: int
    feasible: int
    skipped_unpriced: tuple[str, ...]
    best: PlanCandidate
    reasons: tuple[str, ...]
    frontier: tuple[PlanCandidate, ...]
    runners_up: tuple[PlanCandidate, ...]
    simulated: HoldReport | None = None
    prediction: str | None = None  # roofline or calibrated
    benchmark: PlanBenchmark | None = None
    #: mixed-GPU prefill/decode pairs listed beside the plan (:mod:`.plan_pairs`)
    mixed_pairs: MixedPairs | None = None


@dataclass(frozen=True)
class SloReach:
    """The best a family reached of one served latency (``reached``, ms), with its SLO."""

    cell: str  # ttft_at_rate, itl_worst or e2e_served
    reached: UnitValue
    slo: UnitValue

    @property
    def ratio(self) -> float:
        """Reached ÷ the SLO (the SLO in s for E2E, the value in ms)."""
        scale = 1e-3 if self.slo.unit == "s" else 1.0
        return self.reached.value * scale / self.slo.value


@dataclass(frozen=True)
class FamilyReach:
    """A family (engine, accelerator × precision, aggregated or disaggregated): whether any
    of its rows fits in memory, and the best each asked SLO's served value reached there."""

    engine: str
    hardware: str
    precision: str
    disaggregated: bool
    fits: bool
    best: tuple[SloReach, ...]


@dataclass(frozen=True)
class NoPlan:
    """No candidate meets the SLOs: the one line that says which is out of reach, the best
    any candidate reached of each served latency, and each family's best."""

    question: AskedQuestion
    searched: int
    unreachable: str
    skipped_unpriced: tuple[str, ...]
    best_reached: Mapping[str, UnitValue] = field(default_factory=dict)
    families: tuple[FamilyReach, ...] = ()


# ------------------------------------------------------------------------- from JSON
def from_json(doc: Mapping[str, Any]) -> PlanFound | NoPlan:
    """A saved ``plan --format json`` answer as the dataclasses it was written from.
    Raises KeyError, TypeError or ValueError on a document that is not one."""
    if "best" not in doc:
        return NoPlan(_question(doc["question"]), int(doc["searched"]), str(doc["unreachable"]),
                      tuple(doc.get("skipped_unpriced", ())),
                      {k: _unit_value(v) for k, v in doc.get("best_reached", {}).items()},
                      tuple(_family(f) for f in doc.get("families", ())))
    sim, bench, pairs = doc.get("simulated"), doc.get("benchmark"), doc.get("mixed_pairs")
    return PlanFound(_question(doc["question"]), int(doc.get("searched", 0)),
                     int(doc.get("feasible", 0)), tuple(doc.get("skipped_unpriced", ())),
                     candidate_json(doc["best"]), tuple(doc.get("reasons", ())),
                     tuple(candidate_json(p) for p in doc.get("frontier", ())),
                     tuple(candidate_json(p) for p in doc.get("runners_up", ())),
                     None if sim is None else hold_from_json(sim), doc.get("prediction"),
                     None if bench is None else _benchmark(bench),
                     None if pairs is None else plan_pairs_answer.from_json(pairs))


def candidate_json(doc: Mapping[str, Any]) -> PlanCandidate:
    """One plan (``{"choices", "values"}``) read back."""
    return PlanCandidate.of(dict(doc["choices"]),
                            {k: _unit_value(v) for k, v in doc["values"].items()})


def hold_from_json(doc: Mapping[str, Any]) -> HoldReport:
    """The ``simulated`` part of a saved answer (a percentile's null: inf)."""
    cands = tuple(SimulatedCandidate(
        str(c.get("plan", "")), bool(c.get("meets", False)), c.get("error"),
        {k: math.inf if v is None else float(v) for k, v in c.get("percentiles", {}).items()})
        for c in doc.get("candidates", ()))
    rank = doc.get("chosen_rank")
    return HoldReport({k: float(v) for k, v in doc.get("slos", {}).items()}, cands,
                      None if rank is None else int(rank),
                      int(doc.get("skipped_disaggregated", 0)))


def _unit_value(doc: Mapping[str, Any]) -> UnitValue:
    return UnitValue(float(doc["value"]), str(doc["unit"]))


def _question(doc: Mapping[str, Any]) -> AskedQuestion:
    queueing = doc.get("ttft_includes_prefill_queue")
    return AskedQuestion({k: _unit_value(v) for k, v in doc["slos"].items()},
                         _unit_value(doc["request_rate"]),
                         None if queueing is None else bool(queueing), doc.get("objective"),
                         doc.get("model"), doc.get("workload"))


def _family(doc: Mapping[str, Any]) -> FamilyReach:
    best = tuple(SloReach(cell, UnitValue(float(b["value"]), str(b["unit"])),
                          _unit_value(b["slo"])) for cell, b in doc["best"].items())
    return FamilyReach(str(doc["engine"]), str(doc["hardware"]), str(doc["precision"]),
                       bool(doc["disaggregated"]), bool(doc["fits"]), best)


def _benchmark(doc: Mapping[str, Any]) -> PlanBenchmark:
    rate = doc.get("request_rate")
    return PlanBenchmark(int(doc["isl"]), int(doc["osl"]), str(doc.get("model", "")),
                         str(doc.get("url", "")), None if rate is None else _unit_value(rate),
                         int(doc.get("requests", 0)), str(doc.get("tool", "")),
                         str(doc.get("command", "")), str(doc.get("result", "")))
