"""Prefix-cache hit rates of repeated benchmark runs, from an engine's own counter or its
cache layout.

vLLM V0 logs ``Prefix cache hit rate: GPU: X%`` (``metrics.py``), a lifetime ratio of the
full blocks its prefix-caching allocator found cached to those it looked up: the first
virtual engine's alone (``LLMEngine._get_stats`` reads ``scheduler[0]``, "we always use the
cache hit rate of the first virtual engine"). A client
that sends the same prompts in every run, one run after another on one server, queries the
same number of blocks per run; the lifetime ratio read at the end of runs 1 … k then gives
each run's own hit rate: run k hit ``k·H_k − (k−1)·H_(k−1)`` of its blocks.

Under pipeline parallelism V0 runs one scheduler per virtual engine, each with its own
block manager (``num_gpu_blocks // pipeline_parallel_size``, so its own prefix cache), and
puts a new request on the scheduler with the fewest unfinished requests; a resent prompt
hits only where it was served before. Landing on either of ``v`` engines evenly, a prompt
sent for the k-th time is cached with probability ``1 − (1 − 1/v)^(k−1)``.

The server's own hit rate in a run then has two parts: the first engine's, which its counter
measured on the ~1/v of the requests it served, and the other engines', which nothing logged
and which the placement gives in expectation (``server_hit_rate``). With two engines and a
200-request run the counter samples ~100 prompts of very unequal length; the two PP repeats
of the A100 set read 94% and 82% on their fourth sending, where the placement gives 87.5%.
"""

from __future__ import annotations

from collections.abc import Sequence

from perfgraph.errors import InputError


def run_hit_rates(lifetime: Sequence[float]) -> list[float]:
    """Each run's hit rate from the lifetime hit rate read at the end of runs 1 … k (runs
    of equal block lookups), clipped to [0, 1]."""
    out, before = [], 0.0
    for k, h in enumerate(lifetime, start=1):
        _share(h, "a lifetime hit rate")
        out.append(min(1.0, max(0.0, k * h - before)))
        before = k * h
    return out


def virtual_engine_hit(send: int, engines: int) -> float:
    """Probability that a prompt on its ``send``-th sending (1 = first) lands on one of
    ``engines`` independent caches that already holds it, each sending landing evenly."""
    if send < 1 or engines < 1:
        raise InputError(f"send {send}, engines {engines}: both must be at least 1",
                         name="virtual engines")
    return 1 - (1 - 1 / engines) ** (send - 1)


def server_hit_rate(logged: float, send: int, engines: int) -> float:
    """A run's hit rate over every virtual engine: ``logged`` (the first engine's, from its
    counter) for its 1/``engines`` of the requests, the placement's expectation
    (``virtual_engine_hit``) for the rest, which no counter logged."""
    _share(logged, "a hit rate")
    unlogged = virtual_engine_hit(send, engines)
    return (logged + (engines - 1) * unlogged) / engines


def _share(h: float, what: str) -> None:
    if not 0 <= h <= 1:
        raise InputError(f"{what} of {h}: expected a share in [0, 1]",
                         name="prefix cache hit rate")
