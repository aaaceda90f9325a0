"""The engine loop: requests arrive, the scheduler fills each step, the step sheet times it.

A run of decode-only steps between events (an arrival that can be admitted, a request
ending, the KV pool filling) is done in closed form: the batch is fixed, each step's KV read
grows by the batch size, so :meth:`StepSheet.decode_run` gives all their durations at once
(the step sheet over columns). A step's inputs are counted here; its time is the sheet's.
Only steps that carry prefill are taken one by one. Per request the loop keeps a few
numbers; per step a few (for ITL percentiles, the trace and the time series); never per
token.

Requests reach the engine, and tokens their clients, through the API server's event loop
(:mod:`.frontend`): the engine sees a request when the loop has parsed it, and a request's
first token and end are when the loop has streamed the step that made them.

Decoders are counted in aggregate: every decoder gains a token per decode step, so a request
that joined the decode phase at decode step ``j`` with ``g`` tokens out has ``g + G − j``
at decode step ``G``, and ends at decode step ``j + osl − g`` (a heap of those). Under
speculative decoding (:mod:`.speculation`) a decoder gains a drawn number of tokens a step,
drawn when it joins: its count and end step are its draws', and the decoders' KV grows by
the tokens all of them gain that step.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from perfgraph.whatif.simulate.frontend import Frontend
from perfgraph.whatif.simulate.kv import BlockPool, blocks
from perfgraph.whatif.simulate.preemption import make_room
from perfgraph.whatif.simulate.requests import Requests
from perfgraph.whatif.simulate.scheduler import Policy
from perfgraph.whatif.simulate.speculation import Speculation
from perfgraph.whatif.simulate.step_sheet import INPUTS, StepFailed, StepSheet
from perfgraph.whatif.simulate.steplog import StepLog

RUN_CAP = 4096  # decode steps at most in one closed-form run (progress, Ctrl-C)


def shared_prefix(share: float, plen: int) -> int:
    """Tokens of a prompt of ``plen`` whose KV a hit of ``share`` finds cached: the last
    token is always computed (its logits give the next token)."""
    return min(int(share * plen), plen - 1)


@dataclass
class Engine:
    model: StepSheet
    policy: Policy
    reqs: Requests
    pool: BlockPool
    frontend: Frontend  # requests sent and not yet seen; the API server's loop
    users: int = 0  # closed loop: a finished request's user sends the next one
    prefix_hit: float = 0.0
    #: per request, whether its prompt's full KV blocks are cached (``prefix_hit_whole``);
    #: None: every prompt reuses the share ``prefix_hit`` instead
    cached: list[bool] | None = None
    #: per request, tokens of its prompt whose KV it brings (a hit the router placed, or a
    #: prefill pool's hand-off); None: ``prefix_hit`` and ``cached`` say
    given: list[int] | None = None
    now: float = 0.0
    out: float = 0.0  # when the last step's tokens reached their clients
    G: int = 0  # decode steps so far
    n_dec: int = 0
    kv_dec: int = 0  # Σ (isl + generated) over decoders: their KV read next step
    decoding: set[int] = field(default_factory=set)
    prefilling: list[int] = field(default_factory=list)
    order: list[int] = field(default_factory=list)  # running, in admission order
    waiting: deque[int] = field(default_factory=deque)
    ends: list[tuple[int, int, int]] = field(default_factory=list)  # (step, request, epoch)
    log: StepLog = field(default_factory=StepLog)
    submitted: int = 0
    completed: int = 0
    preemptions: int = 0
    signal: int = 0  # the signal that stopped the run, 0 if none
    watch: int = -1  # the step (from 0) whose inputs to keep, for --explain-step
    watched: dict[str, float] | None = None  # its step sheet inputs (INPUTS), when it ran
    spec: Speculation | None = None  # speculative decoding: tokens a decoder gains a step
    #: no decode run goes past the step that ends after this time (a router may send the
    #: engine a request then: :meth:`advance`)
    horizon: float = math.inf

    # ------------------------------------------------------------------ the loop
    def run(self, progress: Callable[[int], None] | None = None) -> bool:
        """Run every request to its end; False when interrupted (Ctrl-C), the state partial."""
        return self.advance(math.inf, progress)

    def advance(self, until: float, progress: Callable[[int], None] | None = None) -> bool:
        """Step until the engine's time reaches ``until`` (the step under way then ends) or
        nothing is left to do, so that a router may send it requests at ``until`` (engines
        side by side: :mod:`.cluster`); False when interrupted."""
        total, tick = self.reqs.n, 0
        self.horizon = until
        try:
            while self.completed < total and self.now < until:
                self._arrive()
                if not self.order and not self.waiting:
                    if not self.frontend.waiting():
                        break
                    self.now = max(self.now, self.frontend.admit_next())
                    continue
                if not self.prefilling and not self._can_admit():
                    self._decode_run()
                else:
                    self._step()
                tick += 1
                if progress is not None and tick % 256 == 0:
                    progress(self.completed)
        except StepFailed as exc:
            raise StepFailed(f"step {self.log.count + 1}: {exc.message}", name=exc.name) \
                from None
        except KeyboardInterrupt as exc:  # SIGTERM and SIGHUP too (perfgraph.cli.main)
            self.signal = int(getattr(exc, "signum", 2))
            return False
        return True

    def _arrive(self) -> None:
        self.waiting.extend(self.frontend.pop_seen(self.now))

    def _can_admit(self) -> bool:
        if not self.waiting:
            return False
        if self.policy.static:
            return not self.order
        return len(self.order) < self.policy.max_seqs

    # ------------------------------------------------------------------ decode runs
    def _decode_run(self) -> None:
        d = self.n_dec
        if d == 0:  # waiting requests that cannot be admitted and nothing running
            if self.frontend.waiting():
                self.now = max(self.now, self.frontend.admit_next())
            return
        k = min(RUN_CAP, self.ends[0][0] - self.G)
        k = min(k, self._kv_steps())
        if k <= 0:
            self._step()
            return
        gained = None if self.spec is None else self.spec.tokens(self.G, k)
        durations = self.model.decode_run(d, self.kv_dec, k, gained)
        stops = self.now + np.cumsum(durations)
        if self.frontend.waiting() and not self.policy.static \
                and len(self.order) < self.policy.max_seqs:
            seen = self.frontend.next_seen(stops, d)
            k = min(k, int(np.searchsorted(stops, seen)) + 1)
            durations, stops = durations[:k], stops[:k]
        if self.horizon < stops[-1]:
            k = min(k, int(np.searchsorted(stops, self.horizon)) + 1)
            durations, stops = durations[:k], stops[:k]
        grown = d * k if gained is None else int(gained[:k].sum())
        if 0 <= self.watch - self.log.count < k:
            w = self.watch - self.log.count
            kv = self.kv_dec + (d * w if gained is None else float(gained[:w].sum()))
            self._keep(d, 0, 1, kv, kv, 0.0)
        out = self.frontend.run(stops, d)  # a chunk a stream, however many tokens it holds
        self.log.run(stops, durations, d, self._kv_use(), grown / k / self._kv_capacity(), out,
                     None if gained is None else gained[:k],
                     None if self.spec is None else self.spec.accepted(self.G, k))
        self.now, self.out = float(stops[-1]), float(out[-1])
        self.G += k
        self.kv_dec += grown
        self._finish_due()

    def _kv_steps(self) -> int:
        k = self.pool.safe_steps(self.G)
        if k <= 0:
            self._recount()
            k = self.pool.safe_steps(self.G)
        return k

    def _kv_capacity(self) -> int:
        return self.pool.total * self.pool.block_size

    def _kv_use(self) -> float:
        """Share of the KV tokens held: the decoders' context and the prefills' blocks."""
        held = self.kv_dec + self.pool.prefill * self.pool.block_size
        return min(1.0, held / self._kv_capacity())

    def kv_free(self) -> float:
        """KV tokens not held now (where cached prefixes of finished requests can stay)."""
        return self._kv_capacity() - self.kv_dec - self.pool.prefill * self.pool.block_size

    def _recount(self) -> None:
        bs = self.pool.block_size
        held = sum(blocks(self._kv_tokens(i), bs) for i in self.decoding)
        self.pool.recount(self.G, held, 0 if self.policy.reserve else self.n_dec)

    def _kv_tokens(self, i: int) -> int:
        """Tokens of KV request ``i`` holds blocks for as a decoder: its context so far, or,
        where admission reserves (preemption "none"), its whole request, which never grows."""
        r = self.reqs
        return r.isl[i] + (r.osl[i] if self.policy.reserve else self._gen(i)) - 1

    def _gen(self, i: int) -> int:
        if self.spec is not None:
            return self.reqs.gen_join[i] + self.spec.gained(i, self.G)
        return self.reqs.gen_join[i] + self.G - self.reqs.g_join[i]

    # ------------------------------------------------------------------ one step
    def _step(self) -> None:
        if self.n_dec and self.pool.safe_steps(self.G) < 1:
            make_room(self)
        pol = self.policy
        prefill_only = pol.static or (not pol.mixed and self._prefill_pending())
        d = 0 if prefill_only else self.n_dec
        chunks = self._plan(pol.prefill_budget(d) if not pol.static else pol.alone,
                            pol.chunk_cap(d))
        if not chunks and not d:
            d = self.n_dec  # nothing could be prefilled (no blocks): decode instead
            if not d:
                self._stall()
                return
        p, pairs = 0, 0.0
        kv = self.kv_dec if d else 0
        done, model = self.reqs.done, self.model
        for i, c in chunks:  # a chunk reads its context so far and writes itself
            p += c
            kv += done[i] + c
            pairs += model.chunk_pairs(done[i], c)
        if self.log.count == self.watch:
            self._keep(d, p, len(chunks), kv, self.kv_dec if d else 0, pairs)
        dt = model.time(d, p, kv, self.kv_dec if d else 0, pairs, len(chunks))
        self.now += dt
        # its streams: the decodes' and each prompt finished (a first token, or a resumed
        # request's next one after its re-prefill); a decode's chunk holds its tokens gained
        streams = d + sum(1 for i, c in chunks if done[i] + c >= self.reqs.plen[i])
        gained, accepted = d, None
        if self.spec is not None:  # a step without decodes gains nothing
            gained, accepted = self.spec.at(self.G) if d else (0, self.spec.hist[0] * 0)
        self.out = self.frontend.step(self.now, streams)  # its end when the loop is idle
        if d:  # before the chunks join: a prompt done here decodes from the next step on
            self.G += 1
            self.kv_dec += gained
            self.log.last_out = self.out
        self._apply(chunks, dt)
        self.log.step(self.now, dt, d, p, streams - d + gained, self._kv_use(), self.out,
                      accepted)
        self._finish_due()

    def _keep(self, *inputs: float) -> None:
        """The watched step's inputs, by the step sheet's input names."""
        self.watched = {n: float(v) for n, v in zip(INPUTS, inputs, strict=True)}

    def _prefill_pending(self) -> bool:
        return bool(self.prefilling) or self._can_admit()

    def _stall(self) -> None:
        """Nothing runs and the head of the queue cannot get blocks: it never will."""
        if self.waiting:
            rid = self.waiting.popleft()
        else:
            rid = self.prefilling.pop(0)
            self.order.remove(rid)
            self.pool.prefill -= self.reqs.held[rid]
        self.reqs.dropped[rid] = True
        self._done(rid)

    def _plan(self, budget: int, cap: int) -> list[tuple[int, int]]:
        """Prefill chunks for this step: partial prefills first, then admissions (FCFS),
        none longer than ``cap``."""
        r, chunks = self.reqs, []
        for i in self.prefilling:
            if budget <= 0:
                break
            c = min(r.plen[i] - r.done[i], budget, cap)
            if not self._take(i, r.done[i] + c):
                break
            chunks.append((i, c))
            budget -= c
        while budget > 0 and self.waiting and len(self.order) < self.policy.max_seqs:
            i = self.waiting[0]
            start = self._start_of(i)
            left = r.plen[i] - start
            if not self.policy.chunked and left > budget and chunks:
                break
            c = min(left, budget, cap) if self.policy.chunked else left
            if not self._take(i, start + c, fresh=True):
                break
            self.waiting.popleft()
            r.done[i] = start
            self.prefilling.append(i)
            self.order.append(i)
            chunks.append((i, c))
            budget -= c
        return chunks

    def _start_of(self, i: int) -> int:
        r = self.reqs
        if r.gen[i]:
            return 0
        if self.given is not None:
            return self.given[i]
        if not self.prefix_hit:
            return 0
        if self.cached is not None:  # whole prompts: its full blocks, the last token recomputed
            bs = self.pool.block_size
            return (r.plen[i] - 1) // bs * bs if self.cached[i] else 0
        return shared_prefix(self.prefix_hit, r.plen[i])

    def _take(self, i: int, tokens: int, fresh: bool = False) -> bool:
        """Give request ``i`` the blocks for ``tokens`` tokens of KV, if the pool has them."""
        r, pool = self.reqs, self.pool
        if self.policy.reserve:  # the whole request's, from its first chunk on
            tokens = max(tokens, r.isl[i] + r.osl[i] - 1)
        need = blocks(tokens, pool.block_size) - (0 if fresh else r.held[i])
        if need > pool.free_bound(self.G):
            self._recount()
            if need > pool.free_bound(self.G):
                return False
        pool.prefill += need
        r.held[i] = (0 if fresh else r.held[i]) + need
        return True

    def _apply(self, chunks: list[tuple[int, int]], dt: float) -> None:
        """Advance the chunks; a prompt done gives its (next) token (a first one
        ``ttft_wait_steps`` steps of ``dt`` later, as the engine returns it, where other
        requests are decoding: realistic.toml arrival_finds_batch)."""
        r = self.reqs
        for i, c in chunks:
            r.done[i] += c
            if r.done[i] < r.plen[i]:
                continue
            self.prefilling.remove(i)
            if r.gen[i] == 0:
                r.t_first[i] = self.out + self.model.ttft_overhead \
                    + (self.model.ttft_wait_steps * dt if self.decoding else 0.0)
            else:  # resumed: its client's gap, from delivery to delivery
                self.log.gap(self.out - r.t_last[i])
            r.gen[i] += 1
            self.pool.prefill -= r.held[i]
            self.pool.decode += r.held[i]
            self.pool.grow += not self.policy.reserve  # a reservation does not grow
            self._join(i)

    def _join(self, i: int) -> None:
        r = self.reqs
        r.g_join[i], r.gen_join[i] = self.G, r.gen[i]
        r.t_last[i] = self.out  # its latest token, until a decode step gives another
        self.decoding.add(i)
        self.n_dec += 1
        self.kv_dec += r.isl[i] + r.gen[i]
        if r.gen[i] >= r.osl[i]:
            self._finish(i)
            return
        left = r.osl[i] - r.gen[i]
        steps = left if self.spec is None else self.spec.join(i, self.G, left)
        heapq.heappush(self.ends, (self.G + steps, i, r.epoch[i]))

    # ------------------------------------------------------------------ leaving
    def _finish_due(self) -> None:
        ends, r = self.ends, self.reqs
        while ends and ends[0][0] <= self.G:
            _, i, epoch = heapq.heappop(ends)
            if epoch == r.epoch[i] and i in self.decoding:
                self._finish(i)

    def _leave(self, i: int) -> int:
        """Take decoder ``i`` out of the aggregates; returns its tokens out."""
        r = self.reqs
        gen, held = self._gen(i), blocks(self._kv_tokens(i), self.pool.block_size)
        if self.spec is not None:
            self.spec.leave(i, self.G)
        self.decoding.discard(i)
        self.order.remove(i)
        self.n_dec -= 1
        self.kv_dec -= r.isl[i] + gen
        self.pool.decode -= held
        return gen

    def _finish(self, i: int) -> None:
        r = self.reqs
        r.gen[i] = self._leave(i)
        r.t_end[i] = self.out
        self._done(i)

    def _done(self, i: int) -> None:
        self.completed += 1
        if self.users and self.submitted < self.reqs.n:  # its user sends the next one
            sent = max(self.now, self.out)  # once the last token has reached it
            self.reqs.arrival[self.submitted] = sent
            self.frontend.send(sent, self.submitted)
            self.submitted += 1
