"""Per-request state, as plain lists (the loop reads and writes single items)."""

from __future__ import annotations

import numpy as np


class Requests:
    """Each request's lengths, its progress and its timestamps (NaN until they happen)."""

    def __init__(self, isl: np.ndarray, osl: np.ndarray, arrival: np.ndarray) -> None:
        n = len(isl)
        self.n = n
        self.isl: list[int] = [int(x) for x in isl]
        self.osl: list[int] = [int(x) for x in osl]
        self.arrival: list[float] = [float(x) for x in arrival]
        self.plen: list[int] = list(self.isl)  # tokens to prefill (prompt + output if recomputed)
        self.done = [0] * n  # tokens of plen prefilled
        self.held = [0] * n  # KV blocks held while prefilling
        self.gen = [0] * n  # tokens out
        self.g_join = [0] * n
        self.gen_join = [0] * n
        self.epoch = [0] * n
        self.preempted = [0] * n
        self.dropped = [False] * n
        nan = float("nan")
        self.t_first = [nan] * n
        self.t_end = [nan] * n
        self.t_last = [nan] * n

    def table(self) -> dict[str, np.ndarray]:
        """One row per request: times in s, lengths in tokens."""
        arrival = np.asarray(self.arrival)
        first, end = np.asarray(self.t_first), np.asarray(self.t_end)
        osl = np.asarray(self.osl, dtype=np.int64)
        with np.errstate(invalid="ignore", divide="ignore"):
            tpot = np.where(osl > 1, (end - first) / (osl - 1), np.nan)
        return {"arrival": arrival, "first_token": first, "end": end,
                "isl": np.asarray(self.isl, dtype=np.int64), "osl": osl,
                "ttft": first - arrival, "tpot": tpot, "e2e": end - arrival,
                "preempted": np.asarray(self.preempted, dtype=np.int64)}
