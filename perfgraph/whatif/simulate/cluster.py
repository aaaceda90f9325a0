"""Replicas of a deployment behind a router, run side by side.

Each replica is its own engine (its KV pool, its scheduler, its API server's loop, its step
timed by its own sheet). The pool sends each request, in arrival order, to the replica its
router picks (:mod:`.router`); a router that reads the replicas' loads has every replica
stepped up to the arrival first (:meth:`Engine.advance`), so the loads it reads are those of
that moment.

Requests of a session (``--sessions``: multi-turn chats, each request a turn of one drawn at
random) find the share ``prefix_hit_rate`` of their prompt cached when they land on the
replica that served their session's last turn and it still holds the session's KV there, in
HBM or, evicted, in host memory (:mod:`.offload`: copied back first); nothing anywhere else:
the hit rate follows from the routing and the replicas' memory.

The run's summary is the pool's: every request, every replica's steps (their tokens add up);
and per replica, the load it carried (:func:`loads`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from perfgraph.engine.sheet import Sheet
from perfgraph.errors import InputError
from perfgraph.whatif.simulate import (
    Run,
    Setup,
    check,
    make_engine,
    requests_of,
    whole_hits,
)
from perfgraph.whatif.simulate.engine import Engine, shared_prefix
from perfgraph.whatif.simulate.frontend import Frontend
from perfgraph.whatif.simulate.lengths import Lengths
from perfgraph.whatif.simulate.offload import HOST, Tiers, reload_time
from perfgraph.whatif.simulate.requests import Requests
from perfgraph.whatif.simulate.router import Router, router
from perfgraph.whatif.simulate.sim_summary import ReplicaLoad
from perfgraph.whatif.simulate.step_sheet import StepSheet
from perfgraph.whatif.simulate.steplog import StepLog
from perfgraph.whatif.simulate.summary import step_gaps


@dataclass
class ReplicaPool:
    """Replicas sharing one table of requests (request ``i`` is the same row wherever it
    runs), and the router in front of them."""

    engines: list[Engine]
    router: Router
    reqs: Requests
    sessions: np.ndarray | None = None  # each request's session; None: no sessions
    share: float = 0.0  # prefix_hit_rate: a session's turn reuses this share of its prompt
    placed: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    hits: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    home: dict[int, int] = field(default_factory=dict)  # session → replica of its last turn
    name: str = "replica"  # the pool's name in the loads (prefill, decode)
    #: with sessions: each replica's cached prefixes, and the time to copy n tokens back
    tiers: list[Tiers] = field(default_factory=list)
    reload: Callable[[int], float] | None = None
    reloads: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __post_init__(self) -> None:
        self.placed = np.full(self.reqs.n, -1, dtype=np.int64)
        self.hits = np.zeros(len(self.engines), dtype=np.int64)  # prefixes found, by replica
        self.reloads = np.zeros(len(self.engines), dtype=np.int64)  # … of them from host
        if self.sessions is not None:
            given = [0] * self.reqs.n
            for e in self.engines:
                e.given = given

    def serve(self, times: np.ndarray, progress: Callable[[int], None] | None = None,
              ) -> bool:
        """Send request ``i`` at ``times[i]`` (s; NaN: never) to the replica the router
        picks, in time order, then run every replica to its end; False when interrupted."""
        order = np.argsort(times, kind="stable")
        for k, i in enumerate(order.tolist()):
            t = float(times[i])
            if math.isnan(t):
                break
            looks = self.router.looks or self.sessions is not None  # loads, or free KV
            if looks and not all(e.advance(t) for e in self.engines):
                return False
            self._send(i, t)
            if progress is not None and k % 256 == 255:
                progress(sum(e.completed for e in self.engines))
        return all(e.run() for e in self.engines)

    def _send(self, i: int, t: float) -> None:
        session = None if self.sessions is None else int(self.sessions[i])
        home = None if session is None else self.home.get(session)
        j = self.router.pick([e.submitted - e.completed for e in self.engines], home)
        delay = 0.0 if session is None else self._cache(i, session, j, home == j)
        self.placed[i] = j
        e = self.engines[j]
        e.frontend.send(t + delay, i)
        e.submitted += 1

    def _cache(self, i: int, session: int, j: int, home: bool) -> float:
        """Request ``i`` of ``session`` on replica ``j``: the prefix it finds there (at its
        session's last replica, in HBM or host memory), kept for the next turn; returns the
        seconds its copy back from host memory takes."""
        e, r = self.engines[j], self.reqs
        where = self.tiers[j].find(session, e.kv_free())
        where = where if home else None  # elsewhere: an older turn's, not this prefix
        prefix = shared_prefix(self.share, r.plen[i]) if where else 0
        e.given[i] = prefix  # type: ignore[index]
        self.hits[j] += where is not None
        self.reloads[j] += where == HOST
        self.tiers[j].keep(session, r.isl[i] + r.osl[i])
        self.home[session] = j
        return self.reload(prefix) if where == HOST and self.reload else 0.0


def pool_of(sheet: Sheet, model: StepSheet, setup: Setup, reqs: Requests, replicas: int,
            policy: str, sessions: np.ndarray | None = None,
            cached: list[bool] | None = None) -> ReplicaPool:
    """``replicas`` engines on ``sheet`` (its fused step ``model``) behind ``policy``."""
    engines = [make_engine(sheet, model, setup, reqs, cached,
                           np.random.default_rng([setup.seed, 2, i])) for i in range(replicas)]
    pool = ReplicaPool(engines, router(policy, replicas, sheet), reqs, sessions,
                sheet.magnitude("prefix_hit_rate"))
    if sessions is not None:
        host = sheet.magnitude("host_kv_tokens", "token")
        pool.tiers = [Tiers(host) for _ in engines]
        pool.reload = reload_time(sheet)
    return pool


def simulate_replicas(sheet: Sheet, setup: Setup, replicas: int, policy: str,
                      progress: Callable[[int], None] | None = None) -> Run:
    """``perfgraph simulate --replicas N --router P``: the open loop's requests over N
    replicas of the scenario, summarised over the pool (:attr:`Run.replicas`: each one's
    load)."""
    check_pool(setup)
    rng = np.random.default_rng(setup.seed)
    model = StepSheet.from_sheet(sheet)
    length, arrive, rate = requests_of(sheet, setup, rng)
    reqs = Requests(length.isl, length.osl, arrive)
    pool = pool_of(sheet, model, setup, reqs, replicas, policy,
                   sessions_of(setup, reqs.n), whole_hits(sheet, reqs.n, rng))
    complete = pool.serve(np.asarray(arrive, dtype=float), progress)
    run = pooled([pool], setup, length, rate, complete)
    run.notes += session_notes(sheet, setup)
    return run


def session_notes(sheet: Sheet, setup: Setup) -> list[str]:
    if setup.sessions is not None and not sheet.magnitude("prefix_hit_rate"):
        return ["--sessions with prefix_hit_rate = 0: a turn reuses none of its prompt; "
                "set the share its session's history makes (--set prefix_hit_rate=0.9)"]
    return []


def check_pool(setup: Setup) -> None:
    check(setup)
    if setup.users:
        raise InputError("a pool of replicas is simulated in an open loop: give --rate, "
                         "not --users", name="--users")
    if setup.explain_step is not None:
        raise InputError("explains a step of one engine: not with a pool of replicas",
                         name="--explain-step")
    if setup.sessions is not None and setup.sessions < 1:
        raise InputError(f"{setup.sessions}: need at least one session", name="--sessions")


def sessions_of(setup: Setup, n: int) -> np.ndarray | None:
    """Each request's session, drawn evenly from ``setup.sessions`` (its own stream of the
    seed, so the arrivals and lengths stay those of the same seed without sessions)."""
    if setup.sessions is None:
        return None
    return np.random.default_rng([setup.seed, 1]).integers(0, setup.sessions, size=n)


# ---------------------------------------------------------------------- the pool's summary
def pooled(pools: Sequence[ReplicaPool], setup: Setup, length: Lengths, rate: float | None,
           complete: bool, reqs: Requests | None = None) -> Run:
    """One :class:`Run` over every replica of ``pools``: the requests of ``reqs`` (default:
    the first pool's), the steps of the last pool's replicas in time order (those that give
    the tokens: the decode pool's), each replica's load."""
    engines = [e for p in pools for e in p.engines]
    last = pools[-1].engines
    first = last[0]
    reqs = reqs or pools[0].reqs
    view = Engine(first.model, replace(first.policy, max_seqs=sum(
        e.policy.max_seqs for e in last)), reqs, first.pool,
        _frontends(last), log=_merged_log(last))
    view.now = max(e.now for e in engines)
    view.preemptions = sum(e.preemptions for e in engines)
    view.completed = sum(e.completed for e in pools[-1].engines)
    view.signal = max(e.signal for e in engines)
    n = reqs.n
    run = Run(view, setup, length, first.model, complete,
              min(setup.warmup or 0, n - 1), rate, [])
    run.replicas = [row for p in pools for row in loads(p)]
    return run


def _merged_log(engines: Sequence[Engine]) -> StepLog:
    parts = [e.log.arrays() for e in engines]
    for j, part in enumerate(parts):
        part["itl"] = step_gaps(part)  # each replica's own gaps, before they interleave
        part["replica"] = np.full(part["end"].size, j)
    merged = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    order = np.argsort(merged["end"], kind="stable")
    log = _Merged({k: v[order] for k, v in merged.items()})
    log.gaps = [g for e in engines for g in e.log.gaps]
    log.count = int(order.size)
    return log


class _Merged(StepLog):
    """Every replica's steps, in time order, with each step's gap as its own replica's
    clients saw it (``itl``) and its replica (``replica``)."""

    def __init__(self, columns: dict[str, np.ndarray]) -> None:
        super().__init__()
        self.columns = columns

    def arrays(self) -> dict[str, np.ndarray]:
        return self.columns


def _frontends(engines: Sequence[Engine]) -> Frontend:
    """The replicas' API server loops as one: their costs, and the mean work each did (so
    that the busy share is the replicas' mean)."""
    f = engines[0].frontend
    out = Frontend(f.t_req, f.t_tok, f.coalesce)
    out.busy = sum(e.frontend.busy for e in engines) / len(engines)
    out.free = max(e.frontend.free for e in engines)
    return out


def loads(pool: ReplicaPool) -> list[ReplicaLoad]:
    """Per replica: its requests (and their share), its steps' share of the run's time
    (busy), its mean batch and KV use over its busy time, its TTFT p50 and p99 (ms)."""
    t = pool.reqs.table()
    span = max(e.now for e in pool.engines)
    rows = []
    for j, e in enumerate(pool.engines):
        st, mine = e.log.arrays(), pool.placed == j
        ttft = t["ttft"][mine & np.isfinite(t["ttft"])]
        dur = st["dur"]
        busy = float(dur.sum())
        rows.append(ReplicaLoad(
            pool=pool.name, replica=j, requests=int(mine.sum()),
            share=float(mine.sum() / max(len(mine), 1)),
            busy=busy / span if span > 0 else math.nan,
            batch=float(np.average(st["decodes"], weights=dur)) if busy > 0 else math.nan,
            kv_use=float(np.average(st["kv"], weights=dur)) if busy > 0 else math.nan,
            ttft_p50=float(np.percentile(ttft, 50)) * 1e3 if ttft.size else math.nan,
            ttft_p99=float(np.percentile(ttft, 99)) * 1e3 if ttft.size else math.nan,
            hit_rate=(float(pool.hits[j] / max(mine.sum(), 1))
                      if pool.sessions is not None else None),
            reload_rate=(float(pool.reloads[j] / max(mine.sum(), 1))
                         if pool.sessions is not None else None),
        ))
    return rows
