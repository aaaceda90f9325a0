"""Where a replica keeps its sessions' prefixes: HBM, then host memory (a second KV tier).

A session's KV stays cached on the replica that served its last turn, most recently used
last. In HBM the cached prefixes live in the KV pool's free blocks: when a turn arrives,
the least recently used are evicted until what is cached fits the blocks free then (the
running requests' blocks come first). An evicted prefix goes to host memory, where
``host_kv_tokens`` hold the most recent (the rest are dropped). A turn whose prefix is in
HBM reuses it; in host memory, it is copied back first, taking ``host_kv_reload_time`` at
its length (the sheet's cell, fused over ``host_kv_reload_tokens``), then reused; nowhere,
it is prefilled whole. A replica's cache holds each session's prompt and output so far.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from perfgraph.engine.fused import fuse
from perfgraph.engine.sheet import Sheet

HBM, HOST = "hbm", "host"


class Tiers:
    """One replica's cached session prefixes, in HBM and in host memory (tokens each)."""

    def __init__(self, host_tokens: float) -> None:
        self.host_tokens = host_tokens
        self.hbm: OrderedDict[int, int] = OrderedDict()
        self.host: OrderedDict[int, int] = OrderedDict()
        self.cached = 0  # tokens cached in HBM
        self.held = 0  # tokens in host memory

    def find(self, session: int, room: float) -> str | None:
        """Where ``session``'s prefix is (HBM, HOST or None), once HBM's cached prefixes
        are cut down to ``room`` tokens (its free blocks now)."""
        while self.hbm and self.cached > room:
            victim, tokens = self.hbm.popitem(last=False)
            self.cached -= tokens
            self._offload(victim, tokens)
        if session in self.hbm:
            return HBM
        return HOST if session in self.host else None

    def keep(self, session: int, tokens: int) -> None:
        """``session``'s KV after this turn (``tokens``), in HBM, the most recent."""
        self.cached -= self.hbm.pop(session, 0)
        self.held -= self.host.pop(session, 0)
        self.hbm[session] = tokens
        self.cached += tokens

    def _offload(self, session: int, tokens: int) -> None:
        if tokens > self.host_tokens:
            return
        self.host[session] = tokens
        self.held += tokens
        while self.held > self.host_tokens:
            _, gone = self.host.popitem(last=False)
            self.held -= gone


def reload_time(sheet: Sheet) -> Callable[[int], float]:
    """Seconds to copy a prefix of n tokens back from host memory: the sheet's
    ``host_kv_reload_time`` at ``host_kv_reload_tokens`` = n."""
    fused = fuse(sheet, ("host_kv_reload_tokens",), ("host_kv_reload_time",)).call

    def time(tokens: int) -> float:
        return float(fused(float(tokens))[0])

    return time
