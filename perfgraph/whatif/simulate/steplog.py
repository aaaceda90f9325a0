"""What every step did: its end, duration, decodes, prefill tokens, tokens out, KV in use,
and when its tokens reached their clients (``out``: its end, unless the API server's loop
was busy; :mod:`.frontend`).

Kept as arrays of a few numbers per step (runs of decode steps arrive as whole arrays), for
ITL percentiles (each decode token's gap is its step's duration), the time series and the
trace. Gaps that are not one step (a preempted request's next token) are kept apart, as
its client sees them: from its last token's delivery to the resumed one's. Under
speculative decoding each step also keeps how many decoders gained 1, …, k + 1 tokens
(``accepted``), and ``tokens`` counts every token out, not one a decode.
"""

from __future__ import annotations

import numpy as np

FIELDS = ("end", "dur", "decodes", "prefill", "tokens", "kv", "out")


class StepLog:
    def __init__(self) -> None:
        self._chunks: list[tuple[np.ndarray, ...]] = []
        self._rows: list[tuple[float, float, int, int, int, float, float]] = []
        self.gaps: list[float] = []
        self.last_out = 0.0  # when the last decode step's tokens reached their clients
        self.count = 0  # steps so far
        self._accepted: list[np.ndarray] = []  # under speculation: (steps, k + 1) counts
        self._accepted_rows: list[np.ndarray] = []  # the single steps' since the last flush

    def step(self, end: float, dur: float, decodes: int, prefill: int, tokens: int,
             kv: float, out: float, accepted: np.ndarray | None = None) -> None:
        self._rows.append((end, dur, decodes, prefill, tokens, kv, out))
        self.count += 1
        if accepted is not None:
            self._accepted_rows.append(accepted)

    def run(self, ends: np.ndarray, durs: np.ndarray, decodes: int, kv: float,
            kv_step: float, out: np.ndarray, tokens: np.ndarray | None = None,
            accepted: np.ndarray | None = None) -> None:
        """A run of decode steps: KV use starts at ``kv`` and grows ``kv_step`` a step; each
        step gives ``tokens`` (``decodes`` when None)."""
        self._flush()
        k = len(ends)
        self.count += k
        full = np.full(k, float(decodes))
        use = np.minimum(1.0, kv + kv_step * np.arange(1, k + 1))
        self._chunks.append((ends, durs, full, np.zeros(k), full if tokens is None else
                             tokens.astype(np.float64), use, out))
        self.last_out = float(out[-1])
        if accepted is not None:
            self._accepted.append(accepted)

    def gap(self, seconds: float) -> None:
        self.gaps.append(seconds)

    def _flush(self) -> None:
        if self._rows:
            a = np.asarray(self._rows, dtype=np.float64)
            self._chunks.append(tuple(a[:, j] for j in range(a.shape[1])))
            self._rows = []
        if self._accepted_rows:
            self._accepted.append(np.array(self._accepted_rows))
            self._accepted_rows = []

    def accepted(self) -> np.ndarray | None:
        """Per step, the decoders that gained 1, …, k + 1 tokens (None without speculation)."""
        self._flush()
        return np.concatenate(self._accepted) if self._accepted else None

    def arrays(self) -> dict[str, np.ndarray]:
        self._flush()
        if not self._chunks:
            return {f: np.zeros(0) for f in FIELDS}
        return {f: np.concatenate([c[j] for c in self._chunks]) for j, f in enumerate(FIELDS)}
