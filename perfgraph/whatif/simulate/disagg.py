"""Disaggregated serving: a prefill pool and a decode pool, each on its own sheet.

Each pool is a :class:`.cluster.ReplicaPool` of replicas, sized and parallelised on its own: its
sheet carries its hardware, TP, PP and precision (prefill on H200 and decode on B200 is two
sheets), its router its own queue of requests. A request goes through three stages:

1. The prefill pool's router sends it to a prefill replica, which runs it as a request of
   one output token (vLLM's disaggregated proxy sends the prefill instance
   ``max_tokens=1``; its token is not streamed): queued there, prefilled in chunks beside
   other prompts, done when its step's output is out.
2. Its prompt's KV crosses to the decode pool: ``kv_hop_exposed`` of the prefill sheet at
   ``isl`` = the prompt's length (``kv_transfer_bytes`` over ``network_bandwidth``, or the
   GPU link with ``disagg_same_node``; with ``kv_hop_overlap`` only what the layer-by-layer
   send lags the prefill by). The link runs at the slower end's bandwidth: the prefill
   sheet's, or the decode sheet's where that is lower. The hand-offs leaving one prefill
   replica share its link (:mod:`.link`: processor sharing, each of ``n`` under way at 1/n
   of the bandwidth): what each needs of the link is the sheet's time, the queueing on it
   the simulation's. With ``kv_hop_overlap`` only the exposed part contends (what the
   layer-by-layer send still has to move when the prefill ends).
3. The decode pool's router sends it to a decode replica, where it arrives holding its
   whole prompt's KV but the last token: that replica computes the last token in its next
   step (its logits give the first token, as vLLM's KV connector leaves the decode side
   one token to compute) and decodes from there, queuing if it has no room (its blocks
   are the decode replica's).

TTFT is from the request's arrival to that first token; the summary's steps, throughput and
ITL are the decode pool's, the per-replica loads both pools'.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from perfgraph.engine.fused import fuse
from perfgraph.engine.sheet import Sheet
from perfgraph.errors import InputError
from perfgraph.whatif.simulate import Run, Setup, link, requests_of
from perfgraph.whatif.simulate.cluster import (
    check_pool,
    pool_of,
    pooled,
    session_notes,
    sessions_of,
)
from perfgraph.whatif.simulate.requests import Requests
from perfgraph.whatif.simulate.step_sheet import StepSheet

HOP = "kv_hop_exposed"
#: the link's bandwidths, each end's: the hop runs at the lower
LINKS = ("network_bandwidth", "link_bandwidth")


@dataclass(frozen=True)
class Pools:
    """The two pools' sizes and their router's policy."""

    prefill: int = 1
    decode: int = 1
    router: str = "least-outstanding"

    def check(self) -> None:
        for flag, n in (("--prefill-replicas", self.prefill),
                        ("--decode-replicas", self.decode)):
            if n < 1:
                raise InputError(f"{n}: need at least one replica", name=flag)


def hop_times(prefill: Sheet, decode: Sheet, isl: np.ndarray) -> np.ndarray:
    """Seconds each prompt's KV hand-off adds to its first token: the prefill sheet's
    ``kv_hop_exposed`` at ``isl`` = its length, over the slower end's link."""
    sheet = prefill.fork()
    for name in LINKS:
        if decode.raw(name) < prefill.raw(name):  # type: ignore[operator]
            sheet.set(name, decode.magnitude(name))
    hop = fuse(sheet, ("isl",), (HOP,), columns=True).call
    out = hop(np.asarray(isl, dtype=np.float64))[0]
    return np.broadcast_to(np.asarray(out, dtype=np.float64), isl.shape).copy()


def handoffs(ready: np.ndarray, placed: np.ndarray, hop: np.ndarray) -> np.ndarray:
    """When each prompt's KV reaches the decode pool: its hand-off, ready at ``ready`` (s;
    NaN: never prefilled), needs ``hop`` s of its prefill replica's link (``placed``), which
    the hand-offs leaving that replica share."""
    out = np.full(len(ready), np.nan)
    for j in np.unique(placed[placed >= 0]):
        mine = np.flatnonzero(placed == j)
        out[mine] = link.shared(ready[mine], hop[mine])
    return out


def simulate_disagg(decode: Sheet, prefill: Sheet, setup: Setup, pools: Pools,
                    progress: Callable[[int], None] | None = None) -> Run:
    """``perfgraph simulate --disagg``: the open loop's requests through the prefill pool
    (on ``prefill``), the KV hand-off, and the decode pool (on ``decode``, the scenario)."""
    check_pool(setup)
    pools.check()
    rng = np.random.default_rng(setup.seed)
    length, arrive, rate = requests_of(decode, setup, rng)
    n = len(length.isl)
    first = Requests(length.isl, np.ones(n, dtype=np.int64), arrive)
    p_pool = pool_of(prefill, StepSheet.from_sheet(prefill), setup, first, pools.prefill,
                     pools.router, sessions_of(setup, n))
    p_pool.name = "prefill"
    complete = p_pool.serve(np.asarray(arrive, dtype=float), progress)
    reqs = Requests(length.isl, length.osl, arrive)  # TTFT and E2E from the arrival
    d_pool = pool_of(decode, StepSheet.from_sheet(decode), setup, reqs, pools.decode,
                     pools.router)
    d_pool.name = "decode"
    given = [max(0, x - 1) for x in reqs.isl]  # all its KV but the last token's
    for e in d_pool.engines:
        e.given = given
    reqs.dropped = list(first.dropped)  # a prompt no prefill replica could hold
    handed = handoffs(np.asarray(first.t_end), p_pool.placed,
                      hop_times(prefill, decode, length.isl))
    if complete:
        complete = d_pool.serve(handed, progress)
    run = pooled([p_pool, d_pool], setup, length, rate, complete, reqs)
    run.notes += session_notes(prefill, setup)
    return run
