"""Preemption by recompute, as vLLM v1 does it: when the KV pool cannot hold the decoders'
next tokens, the newest request (decoding or prefilling) gives its blocks back and queues
again at the front, to prefill its prompt and what it had generated."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perfgraph.whatif.simulate.kv import blocks

if TYPE_CHECKING:
    from perfgraph.whatif.simulate.engine import Engine


def make_room(e: Engine) -> None:
    """The pool may be full: count exactly, and preempt the newest (recompute) until the
    decoders' next tokens fit, as vLLM v1 does."""
    e._recount()
    need = sum(next_blocks(e, i) for i in e.decoding)
    while need > e.pool.total - e.pool.used_bound(e.G) and len(e.order) > 1:
        victim = e.order[-1]
        if victim in e.decoding:
            need -= next_blocks(e, victim)
            _preempt_decoder(e, victim)
        else:
            _preempt_prefill(e, victim)
    e._recount()


def next_blocks(e: Engine, i: int) -> int:
    """Blocks decoder ``i``'s next step adds: its KV grows a token (its tokens gained
    under speculation) past the last one written."""
    bs, ctx = e.pool.block_size, e.reqs.isl[i] + e._gen(i) - 1
    gain = 1 if e.spec is None else e.spec.next(i, e.G)
    return blocks(ctx + gain, bs) - blocks(ctx, bs)


def _preempt_decoder(e: Engine, i: int) -> None:
    r = e.reqs
    gen = e._leave(i)
    # its last token: the last decode step's, or its own prefill's if none ran since
    r.gen[i], r.t_last[i] = gen, max(r.t_last[i], e.log.last_out)
    _requeue(e, i, r.isl[i] + gen)


def _preempt_prefill(e: Engine, i: int) -> None:
    r = e.reqs
    e.prefilling.remove(i)
    e.order.remove(i)
    e.pool.prefill -= r.held[i]
    _requeue(e, i, r.plen[i])


def _requeue(e: Engine, i: int, plen: int) -> None:
    r = e.reqs
    r.plen[i], r.done[i], r.held[i] = plen, 0, 0
    r.epoch[i] += 1
    r.preempted[i] += 1
    e.preemptions += 1
    e.waiting.appendleft(i)
