"""A measured run held against the plan it was meant to check (``compare --plan plans.json``).

The plan (``plan --format json``) promised SLOs and predicted what the deployment would do at
its request rate. For each run this says, SLO by SLO, whether the deployment met what the plan
promised (the statistic the SLO bounds: the mean for a plain SLO, the percentile for a
``ttft.p99``-style one), and by how much each prediction missed:

* TTFT: the plan's ``ttft_at_rate`` (prefill plus the queue wait at the rate) vs the measured
  mean TTFT;
* ITL: the plan's ``itl_worst`` vs the measured mean TPOT (time per output token after the
  first; the mean ITL per streamed chunk where the file has no TPOT);
* E2E: the plan's ``e2e_served`` vs the measured mean end-to-end latency;
* throughput: the deployment's output tokens/s (``served_output_rate``), vs the measured
  output tokens/s of the run (a plan saved before the plan kept that cell: its
  ``served_throughput_per_gpu`` × ``deployment_gpus``, said in a caveat);
* a percentile SLO's statistic (``ttft.p99`` …): the chosen candidate's simulated value vs
  the file's percentile.

error = measured ÷ predicted − 1: +20% is a latency 20% longer, or a throughput 20% higher,
than predicted. Where the run's lengths or arrivals differ from the plan's question, the check
says so: its predictions are for the plan's question.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from perfgraph._infra.atomic import INPUTS
from perfgraph.errors import InputError
from perfgraph.measured.adapters import MeasuredRun
from perfgraph.whatif.plan_answer import (
    DisaggregatedPools,
    HoldReport,
    PlanCandidate,
    PlanFound,
    UnitValue,
    from_json,
)

#: plain SLO cell → (metric, measured keys best first, what it reads)
SLO_METRICS = {"ttft_slo": ("ttft", ("ttft",), "mean TTFT"),
               "itl_slo": ("itl", ("tpot", "itl"), "mean TPOT"),
               "e2e_slo": ("e2e", ("e2el",), "mean E2E latency")}
#: metric → (the plan's predicted cell, measured keys best first, label)
PREDICTIONS = {"ttft": ("ttft_at_rate", ("ttft",), "TTFT (mean)"),
               "itl": ("itl_worst", ("tpot", "itl"), "ITL (mean TPOT)"),
               "e2e": ("e2e_served", ("e2el",), "E2E (mean)")}
PERCENTILE_KEYS = {"ttft": "ttft", "itl": "itl", "tpot": "tpot", "e2e": "e2el"}
#: the plain SLO a percentile one stands in for in the analytic search (plan_percentiles)
ANALYTIC = {"tpot": "itl"}
LENGTH_TOLERANCE = 0.05  # a run's mean ISL/OSL this far from the plan's is said


@dataclass(frozen=True)
class Promise:
    """What the plan said: its deployment in words, SLOs (ms) and predictions."""

    source: str
    summary: str
    slos: tuple[tuple[str, str, float], ...]  # (name, statistic, limit ms)
    #: ttft/itl/e2e in ms, throughput in token/s; simulated percentiles (ttft.p99 …) in ms
    predicted: dict[str, float]
    rate: float
    isl: float | None
    osl: float | None
    notes: tuple[str, ...] = ()  # how the plan was read (an older plan file)


@dataclass(frozen=True)
class SloCheck:
    name: str  # ttft, itl.p99 …
    reads: str  # what the measurement is (mean TTFT, p99 ITL …)
    limit: float  # ms
    measured: float | None  # ms; None: the file has no such statistic

    @property
    def met(self) -> bool | None:
        return None if self.measured is None else self.measured <= self.limit


@dataclass(frozen=True)
class Miss:
    metric: str
    label: str
    unit: str
    predicted: float
    measured: float | None

    @property
    def error(self) -> float | None:
        if self.measured is None or not self.predicted:
            return None
        return self.measured / self.predicted - 1.0


@dataclass(frozen=True)
class PlanCheck:
    run: MeasuredRun
    slos: tuple[SloCheck, ...]
    misses: tuple[Miss, ...]
    caveats: tuple[str, ...]

    @property
    def all_met(self) -> bool:
        return all(s.met for s in self.slos)


def read_plan(path: str) -> Promise:
    """The plan in ``path`` (``plan --format json`` output); one clear error otherwise."""
    INPUTS.note(Path(path))  # --out never writes over it
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"--plan {path}: no such file", name="--plan") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"--plan {path}: not the JSON plan --format json writes ({exc})",
                         name="--plan") from None
    if not isinstance(data, dict) or "best" not in data:
        said = data.get("unreachable") if isinstance(data, dict) else None
        raise InputError(f"--plan {path}: holds no plan" + (f" ({said})" if said else
                         " (expected plan --format json output with 'best')"), name="--plan")
    try:
        ans = from_json(data)
        if not isinstance(ans, PlanFound):
            raise ValueError("'best'")
        return _promise(path, ans)
    except (LookupError, TypeError, ValueError) as exc:  # a key, or a chosen_rank, missing
        raise InputError(f"--plan {path}: a plan JSON without {exc}", name="--plan") from None


def _promise(path: str, ans: PlanFound) -> Promise:
    best, q, sim = ans.best, ans.question, ans.simulated
    tails = [(name, name.split(".", 1)[1], limit * (1000.0 if name.startswith("e2e.") else 1))
             for name, limit in (sim.slos if sim else {}).items()]
    stand_ins = {(ANALYTIC.get(n.split(".", 1)[0], n.split(".", 1)[0]), limit)
                 for n, _, limit in tails}
    slos = [(SLO_METRICS[cell][0], "mean", _ms(s)) for cell, s in q.slos.items()
            if cell in SLO_METRICS]
    # a percentile SLO's limit stands for the mean in the analytic search: not the user's SLO
    slos = [s for s in slos if (s[0], s[2]) not in stand_ins] + tails
    predicted = {"ttft": best.ttft, "itl": best.itl, "e2e": best.e2e}  # PREDICTIONS' cells
    predicted.update(_simulated(sim))
    predicted["throughput"], notes = _served(best)
    pools = best.pools
    held = (f"{pools.prefill.replicas:g}P{pools.decode.replicas:g}D"
            if isinstance(pools, DisaggregatedPools) else f"{pools.replicas:g} replica(s)")
    summary = (f"{best.engine} {best.hardware} {best.precision} tp={best.tp:g} "
               f"pp={best.pp:g} {'disaggregated' if best.disaggregated else 'aggregated'}, "
               f"batch {best.batch:g}, {held}, {best.gpus:g} GPUs")
    bench = ans.benchmark
    return Promise(path, summary, tuple(slos), predicted, q.request_rate.value,
                   None if bench is None else bench.isl, None if bench is None else bench.osl,
                   notes)


def _served(best: PlanCandidate) -> tuple[float, tuple[str, ...]]:
    """The deployment's output tokens/s, the sheet's ``served_output_rate``; a plan saved
    before the plan kept it gives it back from the per-GPU figure, and says so."""
    if best.served_output_rate is not None:
        return best.served_output_rate, ()
    return best.per_gpu * best.gpus, (
        "the plan predates served_output_rate: its throughput is served_throughput_per_gpu "
        "× deployment_gpus (run plan again to read the cell)",)


def _simulated(sim: HoldReport | None) -> dict[str, float]:
    """The chosen candidate's simulated percentiles (``ttft.p99`` …), in ms."""
    if sim is None or not sim.chosen_rank:
        return {}
    values = sim.candidates[sim.chosen_rank - 1].percentiles
    return {name: x * (1000.0 if name.startswith("e2e.") else 1.0)
            for name, x in values.items() if not math.isinf(x)}


def _ms(slo: UnitValue) -> float:
    return slo.value * {"ms": 1.0, "s": 1000.0}[slo.unit]


def _measured(run: MeasuredRun, keys: tuple[str, ...]) -> tuple[float | None, str | None]:
    for key in keys:
        m = run.metrics.get(key)
        if m is not None and math.isfinite(m.value):
            return m.value, key
    return None, None


def check(promise: Promise, run: MeasuredRun) -> PlanCheck:
    """The run held against what the plan promised and predicted."""
    slos = []
    for name, stat, limit in promise.slos:
        metric = name.split(".", 1)[0]
        if stat == "mean":
            value, key = _measured(run, SLO_METRICS[f"{metric}_slo"][1])
            reads = f"mean {'TPOT' if key == 'tpot' else (key or metric).upper()}"
        else:
            value, key = _measured(run, (f"{PERCENTILE_KEYS[metric]}_{stat}",))
            reads = f"{stat} {PERCENTILE_KEYS[metric].upper()}"
        slos.append(SloCheck(name, reads, limit, value))
    misses = [Miss(m, label, "ms", promise.predicted[m], _measured(run, keys)[0])
              for m, (_, keys, label) in PREDICTIONS.items()]
    for name, value in promise.predicted.items():
        if "." in name:
            metric, stat = name.split(".", 1)
            key = f"{PERCENTILE_KEYS[metric]}_{stat}"
            misses.append(Miss(name, f"{stat} {PERCENTILE_KEYS[metric].upper()} (simulated)",
                               "ms", value, _measured(run, (key,))[0]))
    out = run.metrics.get("output_throughput")
    misses.append(Miss("throughput", "output throughput", "token/s",
                       promise.predicted["throughput"], out.value if out else None))
    return PlanCheck(run, tuple(slos), tuple(misses), tuple(caveats(promise, run)))


def caveats(promise: Promise, run: MeasuredRun) -> list[str]:
    """Where the run did not ask the plan's question."""
    out = list(promise.notes)
    for name, planned, got in (("ISL", promise.isl, run.isl), ("OSL", promise.osl, run.osl)):
        if planned and got and abs(got / planned - 1) > LENGTH_TOLERANCE:
            out.append(f"the run's mean {name} {got:g} is {abs(got / planned - 1):.0%} from "
                       f"the plan's {planned:g}")
    if run.request_rate is None:
        load = f", at most {run.concurrency:g} in flight" if run.concurrency else ""
        out.append(f"the run sent its requests as fast as it could{load}, not Poisson "
                   f"arrivals at the plan's {promise.rate:g} request/s")
    elif abs(run.request_rate / promise.rate - 1) > LENGTH_TOLERANCE:
        out.append(f"the run's request rate {run.request_rate:g}/s is not the plan's "
                   f"{promise.rate:g}/s")
    return out
