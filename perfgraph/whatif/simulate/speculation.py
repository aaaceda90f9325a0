"""Speculative decoding and MTP in the simulation: how many tokens each decode step gives.

Each decode step verifies ``spec_k`` drafted tokens a sequence (the step sheet times the
verify pass, k + 1 tokens a sequence, and the drafts before it, ``spec_draft_time``). The
target accepts the drafts in order, each with probability ``spec_alpha``, until the first
it rejects; the sequence gains the accepted drafts and one token of the target's own (its
correction at the rejection, or the bonus token after all k): ``1 + min(X, k)`` tokens,
with X the leading successes of per-token Bernoulli(α) draws (geometric, P(X = x) =
α^x (1 − α)), whose mean is the sheet's ``spec_tokens_per_pass``, (1 − α^(k+1)) ÷ (1 − α).

A request's draws are made once, when it joins the decode phase, from the run's seeded RNG:
the tokens each of its steps gives (the last one cut at its output length), hence the step
it ends at. So the engine keeps counting decoders in aggregate: per decode step, the tokens
all decoders gain (their KV's growth, the tokens out) and how many of them gain 1, 2, …,
k + 1 (for ITL); per request, its running count. A preempted request's future draws are
taken back.
"""

from __future__ import annotations

import numpy as np


class Speculation:
    def __init__(self, k: int, alpha: float, rng: np.random.Generator) -> None:
        self.k, self.alpha, self.rng = k, alpha, rng
        self.gain = np.zeros(1024)  # tokens all decoders gain at decode step G
        self.hist = np.zeros((1024, k + 1), dtype=np.int64)  # [G, a − 1]: decoders gaining a
        self.draws: dict[int, tuple[int, np.ndarray, np.ndarray]] = {}  # (join, a, Σ a)

    def join(self, i: int, step: int, tokens: int) -> int:
        """Request ``i`` decodes from decode step ``step`` for ``tokens`` more tokens: draw its
        steps' tokens; returns how many steps it takes."""
        a = self._draw(tokens)
        n = a.size
        self._reserve(step + n)
        self.gain[step:step + n] += a
        self.hist[np.arange(step, step + n), a - 1] += 1
        self.draws[i] = (step, a, np.cumsum(a))
        return n

    def gained(self, i: int, step: int) -> int:
        """Tokens request ``i`` has gained in the decode steps before ``step``."""
        if i not in self.draws:  # ended before decoding (its prompt's token was its last)
            return 0
        j, _, cum = self.draws[i]
        return int(cum[step - j - 1]) if step > j else 0

    def next(self, i: int, step: int) -> int:
        """Tokens request ``i`` gains at decode step ``step`` (0 past its end)."""
        j, a, _ = self.draws[i]
        return int(a[step - j]) if step - j < a.size else 0

    def leave(self, i: int, step: int) -> None:
        """Request ``i`` stops decoding at ``step`` (ended or preempted): its later draws go."""
        if i not in self.draws:
            return
        j, a, _ = self.draws.pop(i)
        rest = a[step - j:] if step > j else a
        if rest.size:
            start = j + a.size - rest.size
            self.gain[start:j + a.size] -= rest
            self.hist[np.arange(start, j + a.size), rest - 1] -= 1

    def at(self, step: int) -> tuple[int, np.ndarray]:
        """One decode step's tokens gained by all decoders, and its row of ``accepted``."""
        self._reserve(step + 1)
        return int(self.gain[step]), self.hist[step].copy()

    def tokens(self, step: int, steps: int) -> np.ndarray:
        """Tokens all decoders gain at each of ``steps`` decode steps from ``step``."""
        self._reserve(step + steps)
        return self.gain[step:step + steps].copy()

    def accepted(self, step: int, steps: int) -> np.ndarray:
        """Decoders gaining 1, …, k + 1 tokens at each of ``steps`` decode steps from ``step``."""
        self._reserve(step + steps)
        return self.hist[step:step + steps].copy()

    def _draw(self, tokens: int) -> np.ndarray:
        """Each step's tokens until ``tokens`` are out, the last step's cut to fit."""
        k, alpha = self.k, self.alpha
        if alpha >= 1:
            a = np.full(-(-tokens // (k + 1)), k + 1, dtype=np.int64)
        elif alpha <= 0:
            a = np.ones(tokens, dtype=np.int64)
        else:
            mean = (1 - alpha ** (k + 1)) / (1 - alpha)
            parts, got = [], 0
            while got < tokens:  # leading successes: geometric(1 − α) trials − 1
                more = 1 + np.minimum(self.rng.geometric(1 - alpha,
                                                         int((tokens - got) / mean * 1.1) + 8)
                                      - 1, k)
                parts.append(more)
                got += int(more.sum())
            a = np.concatenate(parts)
        cum = np.cumsum(a)
        n = int(np.searchsorted(cum, tokens)) + 1
        a = a[:n]
        a[-1] -= int(cum[n - 1]) - tokens
        return a

    def _reserve(self, steps: int) -> None:
        size = self.gain.size
        if steps > size:
            grow = max(steps, 2 * size) - size
            self.gain = np.concatenate([self.gain, np.zeros(grow)])
            self.hist = np.concatenate([self.hist, np.zeros((grow, self.k + 1),
                                                            dtype=np.int64)])
