"""``perfgraph simulate``: a request-level serving simulation timed by the sheet.

:func:`simulate` fuses the step sheet once (``step_sheet``: every step's time is the
sheet's ``sim_step_time``), the scheduler's policy (``scheduler``), the KV block pool (``kv``:
the sheet's ``sim_kv_blocks`` blocks of ``block_size``), lengths and arrivals (``lengths``,
``arrivals``), runs the engine loop (``engine``), with requests and tokens passing through
the API server's loop (``frontend``), and summarises it (``summary``: a frozen
:class:`~.sim_summary.SimSummary`, which :mod:`perfgraph.output.simulate_report` renders).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from perfgraph.engine.sheet import Sheet
from perfgraph.errors import InputError
from perfgraph.whatif.simulate import arrivals as arr
from perfgraph.whatif.simulate import lengths as lens
from perfgraph.whatif.simulate.engine import Engine
from perfgraph.whatif.simulate.frontend import Frontend
from perfgraph.whatif.simulate.kv import BlockPool
from perfgraph.whatif.simulate.requests import Requests
from perfgraph.whatif.simulate.scheduler import policy
from perfgraph.whatif.simulate.sim_summary import ReplicaLoad
from perfgraph.whatif.simulate.speculation import Speculation
from perfgraph.whatif.simulate.step_sheet import StepSheet


@dataclass(frozen=True)
class Setup:
    rate: float | None = None  # request/s (open loop)
    cv: float = 1.0
    users: int | None = None  # closed loop
    requests: int | None = None
    lengths: str = "fixed"
    seed: int = 0
    warmup: int | None = None
    scheduler: str = "vllm"
    token_budget: int | None = None
    max_seqs: int | None = None
    #: per-request lengths (and rate) already read, in place of ``lengths`` (``compare``
    #: replays a measured run's own requests this way)
    given: lens.Lengths | None = field(default=None, compare=False, repr=False)
    #: keep the step sheet's inputs of this step (from 0), for ``--explain-step``
    explain_step: int | None = None
    #: multi-turn sessions the requests belong to (a pool of replicas: :mod:`.cluster`)
    sessions: int | None = None


@dataclass
class Run:
    engine: Engine
    setup: Setup
    lengths: lens.Lengths
    model: StepSheet
    complete: bool
    warmup: int
    rate: float | None  # the open loop's arrival rate (None: closed loop)
    notes: list[str]
    #: a pool of replicas (:mod:`.cluster`): each one's load; empty for one engine
    replicas: list[ReplicaLoad] = field(default_factory=list)


#: The most requests one run may simulate: about 200 bytes each in memory, and a minute or
#: so of simulation per million; beyond it, a run would exhaust memory before it answered.
MAX_REQUESTS = 10_000_000


def check(setup: Setup) -> None:
    """Refuse a setup that cannot run, before any work: counts out of range, or neither a
    rate nor users where the lengths bring no arrivals of their own."""
    if setup.users is not None and setup.users < 1:
        raise InputError(f"--users {setup.users}: need at least one user", name="--users")
    if setup.requests is not None and setup.requests < 1:
        raise InputError(f"--requests {setup.requests}: need at least one", name="--requests")
    if setup.rate is None and not setup.users and setup.given is None and \
            setup.lengths in ("fixed", "workload"):
        raise InputError(f"give --rate (open loop, e.g. '8 request/s') or --users (closed "
                         f"loop): --lengths {setup.lengths} brings no arrivals of its own",
                         name="--rate")
    for flag, n in (("--requests", setup.requests), ("--users", setup.users)):
        if n is not None and n > MAX_REQUESTS:
            raise InputError(f"{n:,} is more than one run can simulate ({MAX_REQUESTS:,} at "
                             "most)", name=flag)


def simulate(sheet: Sheet, setup: Setup,
             progress: Callable[[int], None] | None = None) -> Run:
    check(setup)
    rng = np.random.default_rng(setup.seed)
    model = StepSheet.from_sheet(sheet)
    length, arrive, rate = requests_of(sheet, setup, rng)
    n = len(length.isl)
    reqs = Requests(length.isl, length.osl, arrive)
    engine = make_engine(sheet, model, setup, reqs, whole_hits(sheet, n, rng), rng)
    frontend = engine.frontend
    first = n if not setup.users else min(setup.users, n)  # a closed loop's later requests
    for i in range(first):  # are sent as earlier ones end
        frontend.send(float(arrive[i]), i)
    engine.submitted = first
    engine.watch = -1 if setup.explain_step is None else setup.explain_step
    complete = engine.run(progress)
    warm = setup.warmup if setup.warmup is not None else (
        min(setup.users, n // 2) if setup.users else 0)
    return Run(engine, setup, length, model, complete, min(warm, n - 1), rate, [])


def requests_of(sheet: Sheet, setup: Setup, rng: np.random.Generator,
                ) -> tuple[lens.Lengths, np.ndarray, float | None]:
    """The run's lengths, each request's arrival (s) and the open loop's rate."""
    length = _lengths(sheet, setup, rng)
    arrive, rate = _arrivals(sheet, setup, length, len(length.isl), rng)
    return length, arrive, rate


def make_engine(sheet: Sheet, model: StepSheet, setup: Setup, reqs: Requests,
                cached: list[bool] | None = None,
                rng: np.random.Generator | None = None) -> Engine:
    """One engine replica on ``sheet``: its scheduler's policy, its KV pool and its API
    server's loop, the step timed by ``model`` (that sheet's fused step); with speculation
    (spec_k > 0), its acceptance draws from ``rng`` (default: one seeded by the setup's)."""
    pol = policy(setup.scheduler, sheet, setup.token_budget,
                 setup.max_seqs if setup.max_seqs is not None else setup.users)
    frontend = Frontend(sheet.magnitude("frontend_request_time", "s"),
                        sheet.magnitude("frontend_token_time", "s/token"),
                        bool(sheet.magnitude("frontend_coalesce")))
    k = round(sheet.magnitude("spec_k"))
    spec = Speculation(k, sheet.magnitude("spec_alpha"),
                       rng if rng is not None else np.random.default_rng(setup.seed)) \
        if k > 0 else None
    return Engine(model, pol, reqs, _pool(sheet, k + 1), frontend, users=setup.users or 0,
                  prefix_hit=sheet.magnitude("prefix_hit_rate"), cached=cached, spec=spec)


def _lengths(sheet: Sheet, setup: Setup, rng: np.random.Generator) -> lens.Lengths:
    if setup.given is not None:
        return setup.given
    if setup.lengths in ("fixed", "workload"):
        n = setup.requests or 5000
        return lens.from_sheet(setup.lengths, sheet, n, rng)
    found = lens.read_file(setup.lengths)
    if setup.requests is not None and setup.requests != len(found.isl):  # repeat or cut
        take = np.resize(np.arange(len(found.isl)), setup.requests)
        found = lens.Lengths(found.isl[take], found.osl[take],
                             None if found.arrivals is None else None, found.rate, found.cv,
                             found.source)
    return found


def _arrivals(sheet: Sheet, setup: Setup, length: lens.Lengths, n: int,
              rng: np.random.Generator) -> tuple[np.ndarray, float | None]:
    if setup.users:  # closed loop: the first users start spread over one request's life
        span = sheet.magnitude("e2e_latency", "s")
        first = np.zeros(n)  # the later ones are set when a user's request ends
        k = min(setup.users, n)
        first[:k] = np.sort(rng.uniform(0, span, size=k))
        return first, None
    if setup.rate is not None:
        return arr.open_loop(n, setup.rate, setup.cv, rng), setup.rate
    if length.arrivals is not None:
        span = float(length.arrivals[-1])
        return length.arrivals, (n - 1) / span if span > 0 else math.inf
    if length.rate is not None:
        if math.isinf(length.rate):
            return np.zeros(n), math.inf
        return arr.open_loop(n, length.rate, length.cv, rng), length.rate
    raise InputError("give --rate (open loop) or --users (closed loop)", name="--rate")


def whole_hits(sheet: Sheet, n: int, rng: np.random.Generator) -> list[bool] | None:
    """``prefix_hit_whole``: which requests find their whole prompt cached (each with
    probability ``prefix_hit_rate``); None when hits are a share of every prompt."""
    hit = sheet.magnitude("prefix_hit_rate")
    if not sheet.magnitude("prefix_hit_whole") or not hit:
        return None
    return [bool(u < hit) for u in rng.random(n)]


def _pool(sheet: Sheet, rate: int = 1) -> BlockPool:
    bs = max(1, round(sheet.magnitude("block_size", "token")))
    total = int(sheet.magnitude("sim_kv_blocks"))
    if total < 1:
        raise InputError("no KV memory is left after the weights (kv_memory = 0): the "
                         "model does not fit", name="kv_memory")
    return BlockPool(total=total, block_size=bs, rate=rate)
