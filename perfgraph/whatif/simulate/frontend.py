"""The API server's event loop: one FIFO server between the clients and the engine.

An OpenAI-compatible server parses every request and streams every token on one asyncio
event loop (uvicorn runs one per process). vLLM V1's engine core (under AsyncLLM) and V0's
MQLLMEngine run in a process of their own, so the GPU never waits on the loop. V0 with
pipeline parallelism is the exception, not modelled here: MQLLMEngineClient refuses it
(``is_unsupported_config``), so AsyncLLMEngine runs on the server's own loop. Two kinds of
work queue on the loop, in the order they become ready:

- a request's ingress, ready when the client sends it, costing ``t_req``
  (``frontend_request_time``): the engine sees the request when it is done;
- a step's output, ready when the step ends, costing ``t_tok`` for each stream the step
  gave a token (``frontend_token_time``: output processing, the SSE chunk, the write); the
  step's tokens reach their clients while it is served, on average half-way through.

A request that arrives while a step's output is queued waits behind it, and a step's
tokens wait behind the requests and steps ahead of them: a burst comes out as a stream and
a busy loop stretches TTFT and TPOT as the client sees them. With both costs 0 the loop is
transparent: the engine sees each request when it is sent and each token reaches its
client when its step ends.

With ``coalesce`` (``frontend_coalesce``; vLLM V1 since PR #12298, "Coalesce bunched
RequestOutputs"), a step's output that finds the previous step's still waiting joins it:
each stream's unread tokens go out as one chunk, so the waiting item costs a chunk a
stream (the larger of the two), not one per token, and every token in it arrives when
the item is served (half-way through it, on average). A lagging loop then sends several
tokens a chunk and keeps up with the engine's token rate, at a lag; without it (V0's
per-request queues), every token is its own chunk and a loop slower than the engine falls
further behind each step.

The engine feeds the loop its steps in time order (a decode run as one array); the loop
takes each request whose send time falls before a step ahead of that step, as FIFO does.
"""

from __future__ import annotations

import heapq
import math

import numpy as np


class Frontend:
    def __init__(self, t_req: float = 0.0, t_tok: float = 0.0,
                 coalesce: bool = False) -> None:
        if t_req < 0 or t_tok < 0:
            raise ValueError("front-end times must be nonnegative")
        self.t_req, self.t_tok, self.coalesce = t_req, t_tok, coalesce
        self.active = t_req > 0 or t_tok > 0
        self.free = -math.inf  # when the loop finishes the item it is serving (or queued)
        self.wait: float | None = None  # coalescing: the waiting step output's cost
        self.busy = 0.0  # seconds of work the loop has been given
        self.sent: list[tuple[float, int]] = []  # (send time, request): not yet parsed
        self.ready: list[tuple[float, int]] = []  # (time the engine sees it, request)

    # ------------------------------------------------------------------ requests
    def send(self, t: float, rid: int) -> None:
        heapq.heappush(self.sent if self.active else self.ready, (t, rid))

    def through(self, t: float) -> None:
        """Parse every request sent by ``t`` (all steps ending before ``t`` are fed)."""
        while self.sent and self.sent[0][0] <= t:
            self._parse()

    def _parse(self) -> None:
        a, rid = heapq.heappop(self.sent)
        self._close()  # a request behind a waiting output: nothing joins that output now
        self.free = max(self.free, a) + self.t_req
        self.busy += self.t_req
        heapq.heappush(self.ready, (self.free, rid))

    def waiting(self) -> bool:
        return bool(self.ready or self.sent)

    def next_seen(self, ends: np.ndarray | None = None, tokens: float = 0.0) -> float:
        """When the engine next sees a request, if the steps it is about to run end at
        ``ends`` with ``tokens`` tokens each (nothing is committed); inf if none is sent."""
        if self.ready:
            return self.ready[0][0]
        if not self.sent:
            return math.inf
        a = self.sent[0][0]
        free, wait, busy = self.free, self.wait, self.busy
        if ends is not None and ends.size:
            before = ends[: int(np.searchsorted(ends, a, side="left"))]
            if before.size and self.coalesce:
                for e in before:
                    self._output(float(e), tokens * self.t_tok)
                self._close()
                free_then = self.free
                self.free, self.wait, self.busy = free, wait, busy
                return max(free_then, a) + self.t_req
            if before.size:
                free = float(_scan(free, before, tokens * self.t_tok)[-1])
        return max(free + (wait or 0.0), a) + self.t_req

    def admit_next(self) -> float:
        """Nothing is running: parse the next request sent; when the engine sees it."""
        if not self.ready and self.sent:
            self._parse()
        return self.ready[0][0] if self.ready else math.inf

    def pop_seen(self, now: float) -> list[int]:
        """The requests the engine sees by ``now``, in that order."""
        self.through(now)
        out = []
        while self.ready and self.ready[0][0] <= now:
            out.append(heapq.heappop(self.ready)[1])
        return out

    # ------------------------------------------------------------------ steps
    def step(self, end: float, tokens: int) -> float:
        """One step's output: when its tokens reach their clients."""
        if not self.active:
            return end
        self.through(end)  # requests sent by the step's end go ahead of its output
        if self.coalesce:
            return self._output(end, tokens * self.t_tok)
        start = max(self.free, end)
        self.free = start + tokens * self.t_tok
        self.busy += tokens * self.t_tok
        return start + tokens * self.t_tok / 2

    def run(self, ends: np.ndarray, tokens: int) -> np.ndarray:
        """A run of steps of ``tokens`` tokens each: when each one's tokens reach clients."""
        if not self.active:
            return ends
        out = np.empty(ends.size)
        lo, cost = 0, tokens * self.t_tok
        while lo < ends.size:
            # the steps that end before the next request sent go ahead of it
            a = self.sent[0][0] if self.sent else math.inf
            hi = int(np.searchsorted(ends, a, side="left")) if a <= ends[-1] else ends.size
            if hi > lo and self.coalesce:
                out[lo:hi] = [self._output(float(e), cost) for e in ends[lo:hi]]
                lo = hi
            elif hi > lo:
                free = _scan(self.free, ends[lo:hi], cost)
                out[lo:hi] = free - cost / 2
                self.free = float(free[-1])
                self.busy += cost * (hi - lo)
                lo = hi
            if lo < ends.size:
                self._parse()
        return out

    # ------------------------------------------------------------------ coalescing
    def _output(self, end: float, cost: float) -> float:
        """A step's output, coalescing: served now if the loop is free; else it waits for
        the item being served, joining the output already waiting there if there is one."""
        if self.wait is not None and self.free <= end:
            self._close()  # the waiting output started at ``free``: it is being served
        if self.free <= end:
            self.free = end + cost
            self.busy += cost
            return end + cost / 2
        joined = 0.0 if self.wait is None else self.wait
        self.busy += max(0.0, cost - joined)
        self.wait = max(joined, cost)
        # a stream's tokens go out in order: a joiner's ride in the same chunks as those
        # already waiting, so they arrive with them, not before
        return self.free + self.wait / 2

    def _close(self) -> None:
        """The waiting output takes its turn: nothing more joins it."""
        if self.wait is not None:
            self.free += self.wait
            self.wait = None


def _scan(free: float, ends: np.ndarray, cost: float) -> np.ndarray:
    """``free_j = max(free_{j-1}, end_j) + cost`` for each step, as one max-plus scan:
    ``free_j = (j+1)·cost + max(free, max_{m≤j}(end_m − m·cost))``."""
    k = np.arange(ends.size, dtype=float)
    lead = np.maximum.accumulate(ends - k * cost)
    return (k + 1) * cost + np.maximum(lead, free)
