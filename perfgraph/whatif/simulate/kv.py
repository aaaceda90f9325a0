"""Paged KV memory: blocks of ``block_size`` tokens, counted without touching every request
every step.

Prefilling requests hold an exact count (``prefill``). Decoding requests grow a token a
step; the pool keeps their blocks exact as of the last recount (``decode``, at decode
step ``mark``) and a bound on what they grew since: a request whose KV grew by Δ tokens
holds at most ⌈Δ ÷ block_size⌉ more blocks, so ``used ≤ prefill + decode + grow ×
⌈(G − mark) ÷ block_size⌉`` where ``grow`` is the number of decoders counted since the
recount (one that leaves takes its current blocks off ``decode`` but stays in ``grow``, which
keeps the bound an upper bound). Only when the bound says the pool may be full does the
engine recount exactly (and preempt, if it really is). Under speculative decoding a
decoder grows up to ``rate`` (k + 1) tokens a step, and the bound grows as fast.
"""

from __future__ import annotations

from dataclasses import dataclass


def blocks(tokens: int, block_size: int) -> int:
    return -(-tokens // block_size)


@dataclass
class BlockPool:
    total: int
    block_size: int
    prefill: int = 0
    decode: int = 0
    grow: int = 0
    mark: int = 0
    rate: int = 1  # the most tokens a decoder gains a step

    def used_bound(self, step: int) -> int:
        return self.prefill + self.decode + self.grow * blocks(self.rate * (step - self.mark),
                                                               self.block_size)

    def free_bound(self, step: int) -> int:
        """Blocks surely free at decode step ``step``."""
        return self.total - self.used_bound(step)

    def safe_steps(self, step: int) -> int:
        """Decode steps from ``step`` that surely fit (a large number when nothing grows)."""
        room = self.total - self.prefill - self.decode
        if self.grow == 0:
            return 1 << 40 if room >= 0 else 0
        return max(0, (room // self.grow) * self.block_size // self.rate - (step - self.mark))

    def recount(self, step: int, decode_blocks: int, decoders: int) -> None:
        self.decode, self.grow, self.mark = decode_blocks, decoders, step

    def used_fraction(self, step: int) -> float:
        return min(1.0, self.used_bound(step) / self.total) if self.total else 1.0
