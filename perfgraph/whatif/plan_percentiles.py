"""Plans held to percentile SLOs: ``plan --slo ttft.p99=… --slo itl.p99=…``.

The analytic search (``plan``) answers with means and steady states; a p99 is the tail of a
queue that only a simulation plays out. So the search runs first, with each percentile SLO's
limit standing for its mean (a mean above a p99's limit cannot meet it: a necessary
condition), and its best candidates, in objective order, are each simulated at the question's
rate and lengths (``perfgraph simulate``: the whole deployment, its replicas behind a
least-outstanding router, or a disaggregated one's prefill and decode pools, each replica's
batch capped at the candidate's concurrency). The answer is the first candidate whose
simulated percentiles meet every SLO: the cheapest the analytic search ranked that the
simulation bears out.

The simulations are independent jobs: a local process pool by default, or a Ray cluster
(``ray_address``; Ray is an optional extra, ``pip install 'perfgraph[ray]'``). Each job
carries only a scenario spec and a simulation setup, and rebuilds its sheet where it runs.

A candidate :func:`hold` is told to pass over (``disaggregated``) is not simulated, and the
answer says how many were.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from perfgraph.engine.sheet import Sheet
from perfgraph.errors import InputError, PerfgraphError
from perfgraph.scenario.loading import DEFAULT_ENGINE, ScenarioSpec, load
from perfgraph.whatif import grid
from perfgraph.whatif.plan_answer import HoldReport, SimulatedCandidate
from perfgraph.whatif.plan_question import parse_slo
from perfgraph.whatif.plan_search import Result
from perfgraph.whatif.simulate import Run, Setup, simulate
from perfgraph.whatif.simulate.cluster import simulate_replicas
from perfgraph.whatif.simulate.disagg import Pools, simulate_disagg
from perfgraph.whatif.simulate.summary import summarise

#: --slo METRIC.STAT=VALUE: the simulation's latency and statistic it limits
_PERCENTILE = re.compile(r"^\s*(?P<metric>ttft|itl|tpot|e2e)\.(?P<stat>p50|p90|p99|p99\.9)\s*=",
                         re.IGNORECASE)
#: the analytic SLO each simulated metric stands in for (its mean bounds the percentile)
ANALYTIC = {"ttft": "ttft", "itl": "itl", "tpot": "itl", "e2e": "e2e"}
DEFAULT_CANDIDATES = 20
DEFAULT_REQUESTS = 2000
#: the router in front of a simulated deployment's replicas
ROUTER = "least-outstanding"


@dataclass(frozen=True)
class PercentileSlo:
    metric: str  # ttft | itl | tpot | e2e (the simulation's latency)
    stat: str  # p50 | p90 | p99 | p99.9
    limit: float  # in UNITS[metric]
    text: str  # as the user gave it

    @property
    def name(self) -> str:
        return f"{self.metric}.{self.stat}"


def split_slos(texts: Sequence[str]) -> tuple[list[str], list[tuple[str, str, str]]]:
    """The ``--slo`` texts the analytic search reads as they are, and the percentile ones as
    (metric, stat, the value's text)."""
    plain, percentile = [], []
    for text in texts:
        found = _PERCENTILE.match(text)
        if found is None:
            plain.append(text)
        else:
            percentile.append((found["metric"].lower(), found["stat"].lower(),
                               text[found.end():].strip()))
    return plain, percentile


def analytic_texts(plain: Sequence[str], percentile: Sequence[tuple[str, str, str]],
                   ) -> list[str]:
    """The SLOs the analytic search holds: the plain ones, and each p90-or-above limit as a
    limit on its mean (a latency's mean lies below its p90; the largest such limit of a
    metric, which every percentile above it allows too). A p50 bounds no mean (a tail pulls
    the mean above the median) and is left to the simulation."""
    named = {t.partition("=")[0].strip().lower() for t in plain}
    loosest: dict[str, tuple[float, str]] = {}
    for metric, stat, value in percentile:
        name = ANALYTIC[metric]
        if name in named or stat == "p50":
            continue
        rank = float(stat[1:])
        if name not in loosest or rank > loosest[name][0]:
            loosest[name] = (rank, value)
    return [*plain, *(f"{name}={value}" for name, (_, value) in loosest.items())]


def percentile_slos(percentile: Sequence[tuple[str, str, str]], sheet: Sheet,
                    ) -> tuple[PercentileSlo, ...]:
    """The percentile SLOs, each limit read as its analytic SLO cell reads it (ms for TTFT
    and ITL, s for E2E: also the simulation summary's units)."""
    out = []
    for metric, stat, value in percentile:
        text = f"{metric}.{stat}={value}"
        try:
            _, limit = parse_slo(f"{ANALYTIC[metric]}={value}", sheet)
        except InputError as exc:
            raise InputError(f"--slo {text}: {exc.message.split(': ', 1)[-1]}",
                             name="--slo") from None
        out.append(PercentileSlo(metric, stat, limit, text))
    return tuple(out)


@dataclass(frozen=True)
class Job:
    """One candidate's simulation: its scenario, the deployment's load, its replicas (or,
    disaggregated, its prefill and decode pools' replicas)."""

    row: int  # the candidate's searched row
    spec: ScenarioSpec
    setup: Setup
    replicas: int
    pools: tuple[int, int] | None = None  # (prefill, decode) replicas: disaggregated
    #: the prefill pool's scenario where it is not ``spec``'s (a mixed-GPU pair)
    prefill: ScenarioSpec | None = None

    def run(self, sheet: Sheet) -> Run:
        """The deployment, simulated on ``sheet``: one engine, replicas behind the router,
        or the two pools (the prefill pool on its own sheet in a mixed pair)."""
        if self.pools is not None:
            prefill = sheet if self.prefill is None else load(self.prefill).sheet
            return simulate_disagg(sheet, prefill, self.setup, Pools(*self.pools, ROUTER))
        if self.replicas > 1:
            return simulate_replicas(sheet, self.setup, self.replicas, ROUTER)
        return simulate(sheet, self.setup)


@dataclass(frozen=True)
class Outcome:
    row: int
    values: dict[str, float] = field(default_factory=dict)  # "ttft.p99" → ms (s for e2e)
    meets: bool = False
    error: str | None = None  # the simulation could not run, or ran partial / overloaded


def simulate_job(job: Job, slos: tuple[PercentileSlo, ...]) -> Outcome:
    """Simulate one candidate and read its percentiles (runs in a worker: no shared state)."""
    try:
        sheet = load(job.spec).sheet
        summary = summarise(job.run(sheet), sheet)
    except PerfgraphError as exc:
        return Outcome(job.row, error=str(exc))
    values: dict[str, float] = {}
    for slo in slos:
        stats = summary.latency.of(slo.metric)
        value = None if stats is None else stats.get(slo.stat)
        values[slo.name] = math.inf if value is None else float(value)
    if summary.partial or summary.overload:
        return Outcome(job.row, values, False, "the simulated deployment falls behind the rate")
    meets = all(values[s.name] <= s.limit for s in slos)
    return Outcome(job.row, values, meets)


def scheduler_for(engine: str | None) -> str:
    """The simulator's scheduler for an engine: its own (its engine file's ``[scheduler]``),
    the default engine's when none is named."""
    return engine or DEFAULT_ENGINE


def jobs_for(rows: Iterable[int], spec_of: Callable[[int], ScenarioSpec],
             replicas_of: Callable[[int], int], rate: float, requests: int,
             budget_of: Callable[[int], int | None] = lambda _: None, seed: int = 0,
             pools_of: Callable[[int], tuple[int, int] | None] = lambda _: None,
             ) -> list[Job]:
    """One job a row: the deployment at the rate (its replicas, or ``pools_of``: a
    disaggregated row's prefill and decode replicas), Poisson arrivals, the engine's
    scheduler, and its token budget (``budget_of``: the sheet's max_num_batched_tokens, what
    the deployment launches with; None: simulate's own rule)."""
    out = []
    for row in rows:
        spec = spec_of(row)
        setup = Setup(rate=rate, requests=requests, seed=seed,
                      scheduler=scheduler_for(spec.engine), token_budget=budget_of(row))
        pools = pools_of(row)
        out.append(Job(row, spec, setup, max(1, replicas_of(row)),
                       None if pools is None else (max(1, pools[0]), max(1, pools[1]))))
    return out


def simulate_line(job: Job) -> str:
    """The ``perfgraph simulate`` options that re-run a job (after its scenario's)."""
    s = job.setup
    budget = f" --token-budget {s.token_budget}" if s.token_budget else ""
    other = job.prefill
    mixed = (f" --prefill-hardware {other.hardware} --prefill-tp "
             f"{dict(other.sets).get('tp', '1')}" if other is not None else "")
    pools = (f" --disagg{mixed} --prefill-replicas {job.pools[0]} --decode-replicas "
             f"{job.pools[1]} --router {ROUTER}" if job.pools is not None else
             f" --replicas {job.replicas} --router {ROUTER}" if job.replicas > 1 else "")
    return (f"--rate '{s.rate:g} request/s' --requests {s.requests} --seed {s.seed} "
            f"--scheduler {s.scheduler}{budget}{pools}")


def run_jobs(jobs: Sequence[Job], slos: tuple[PercentileSlo, ...], workers: int | None = None,
             ray_address: str | None = None) -> list[Outcome]:
    """Every job's outcome, in the jobs' order: on a Ray cluster when given its address, else
    on a local process pool of ``workers`` (default: the cores; 1 runs here)."""
    if ray_address is not None:
        return _on_ray(jobs, slos, ray_address)
    workers = workers or len(os.sched_getaffinity(0))
    if workers <= 1 or len(jobs) <= 1:
        return [simulate_job(j, slos) for j in jobs]
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs))) as pool:
        return list(pool.map(simulate_job, jobs, [slos] * len(jobs)))


def _on_ray(jobs: Sequence[Job], slos: tuple[PercentileSlo, ...], address: str,
            ) -> list[Outcome]:
    try:
        import ray
    except ImportError:
        raise InputError("--ray needs Ray: pip install 'perfgraph[ray]'", name="--ray") from None
    local = address in ("local", "")
    try:
        ray.init(address=None if local else address, include_dashboard=False,
                 ignore_reinit_error=True, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise InputError(f"--ray {address}: cannot connect to the Ray cluster ({exc})",
                         name="--ray") from None
    try:
        remote = ray.remote(simulate_job)
        return list(ray.get([remote.remote(j, slos) for j in jobs]))
    finally:
        ray.shutdown()


@dataclass(frozen=True)
class Held:
    """What the simulations said: the chosen row (None: none met the SLOs), every outcome in
    the order simulated, and the candidates passed over (disaggregated)."""

    chosen: int | None
    outcomes: tuple[Outcome, ...]
    skipped: int
    slos: tuple[PercentileSlo, ...]
    jobs: tuple[Job, ...] = ()  # what was simulated, in the outcomes' order


def hold(rows: Sequence[int], disaggregated: Callable[[int], bool],
         make_jobs: Callable[[Sequence[int]], list[Job]], slos: tuple[PercentileSlo, ...],
         candidates: int = DEFAULT_CANDIDATES, workers: int | None = None,
         ray_address: str | None = None) -> Held:
    """Simulate up to ``candidates`` of ``rows`` (best first) and choose the first that meets
    every percentile SLO."""
    if candidates < 1:
        raise InputError(f"--simulate {candidates}: expected 1 or more candidates",
                         name="--simulate")
    picked: list[int] = []
    skipped = 0
    for r in rows:
        if len(picked) == candidates:
            break
        if disaggregated(r):
            skipped += 1
            continue
        picked.append(r)
    jobs = make_jobs(picked)
    outcomes = run_jobs(jobs, slos, workers, ray_address)
    best = next((o.row for o in outcomes if o.meets), None)
    return Held(best, tuple(outcomes), skipped, slos, tuple(jobs))


def representatives(key: np.ndarray, batch: np.ndarray, limit: int) -> np.ndarray:
    """Of rows in rank order (0 the best), each deployment's (rows of one ``key``) row at its
    largest ``batch`` (the better ranked on a tie), for the ``limit`` deployments whose best
    rows rank first, in that order: positions in the given order.

    The rows of one deployment cost the same, and a larger batch cap is headroom for the
    bursts a p99 sees (the search already held its mean latencies at that batch). Columns,
    not a loop a row: a search keeps millions of feasible rows."""
    n = len(key)
    seen = min(n, 4 * limit)  # a prefix long enough to hold ``limit`` deployments
    while True:
        firsts = np.sort(np.unique(key[:seen], return_index=True)[1])
        if len(firsts) >= limit or seen == n:
            break
        seen = min(n, 4 * seen)
    firsts = firsts[:limit]
    chosen = np.sort(key[firsts])
    at = np.minimum(np.searchsorted(chosen, key), len(chosen) - 1)
    members = np.flatnonzero(chosen[at] == key)  # in rank order
    by_key = members[np.lexsort((-batch[members], key[members]))]  # stable: rank on ties
    ordered = key[by_key]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    best = np.minimum.reduceat(by_key, starts) if len(starts) else starts
    return by_key[starts][np.argsort(best, kind="stable")]


def hold_plan(result: Result, slos: tuple[PercentileSlo, ...],
              spec_of: Callable[[int], ScenarioSpec], requests: int = DEFAULT_REQUESTS,
              candidates: int = DEFAULT_CANDIDATES, workers: int | None = None,
              ray_address: str | None = None) -> Held:
    """The analytic plan's best deployments simulated (:func:`hold`), each a feasible row of
    ``result`` (its position, best first), ``spec_of`` giving a row's scenario: at the
    question's rate, with its replicas (or a disaggregated row's two pools) and its engine's
    token budget, once per deployment at its largest batch."""
    values = result.values

    def choice(i: int) -> dict[str, str | float]:
        return result.choices(int(result.rows[i]))

    def replicas_of(i: int) -> int:
        return int(values["deployment_replicas"][i])

    def pools_of(i: int) -> tuple[int, int] | None:
        if not choice(i).get("disaggregated", 0.0):
            return None
        return int(values["prefill_pool_replicas"][i]), int(values["decode_replicas_at_batch"][i])

    def budget_of(i: int) -> int:
        sheet = result.sheet_at(int(result.rows[i]))
        return max(1, int(sheet.magnitude("max_num_batched_tokens", "token")))

    order = result.order()
    key, batch = _deployments(result)
    picked = order[representatives(key[order], batch[order], candidates)]
    return hold([int(i) for i in picked], lambda _: False,  # both kinds run
                lambda rows: jobs_for(rows, spec_of, replicas_of, result.question.rate,
                                      requests, budget_of, pools_of=pools_of),
                slos, candidates, workers, ray_address)


def hold_report(held: Held, result: Result) -> HoldReport:
    """What the simulations said, as the answer gives it: each candidate in words, best
    first, and which was chosen."""
    rank = next((i + 1 for i, o in enumerate(held.outcomes) if o.row == held.chosen), None)
    return HoldReport({s.name: s.limit for s in held.slos},
                      tuple(SimulatedCandidate(_describe(result, o.row), o.meets, o.error,
                                               dict(o.values)) for o in held.outcomes),
                      rank, held.skipped)


def _describe(result: Result, row: int) -> str:
    c = result.choices(int(result.rows[row]))
    return (f"{c['engine']} {c['hardware']} {c['precision']} TP{c.get('tp', 1):g} "
            f"PP{c.get('pp', 1):g} batch {c.get('concurrency', 0):g} × "
            f"{int(result.values['deployment_replicas'][row])} replicas")


def _deployments(result: Result) -> tuple[np.ndarray, np.ndarray]:
    """Per feasible row: a number naming its deployment (its grid row with the batch axis at
    its first item, and its replicas) and its batch (``concurrency``)."""
    rows = np.asarray(result.rows, dtype=np.int64)
    replicas = np.asarray(result.values["deployment_replicas"]).astype(np.int64)
    axis = next((a for a in result.axes if a.name == "concurrency"), None)
    if axis is None:  # a pinned batch: each row is its own deployment
        return rows, np.zeros(len(rows))
    stride = grid.axis_stride(result.axes, "concurrency")
    item = (rows // stride) % len(axis.values)
    span = int(replicas.max(initial=0)) + 1
    return (rows - item * stride) * span + replicas, np.asarray(axis.values, dtype=float)[item]
