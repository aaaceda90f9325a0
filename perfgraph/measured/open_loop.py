"""The model's figures for measured runs as their requests arrived: a closed loop of N users,
paced at a request rate (an open loop), or all at once (a burst).

    values = evaluate_runs(sheet, config_columns(setups), len(setups))
    like = like_for_like(sheet, values, throughput_keys, [s.arrivals for s in setups])

A closed-loop run is held against the sheet's ``throughput`` (N ÷ the model's E2EL); a paced
run against ``open_loop_throughput``, min(λ × OSL, ``saturated_throughput``): it serves what it
is offered while it can, so a latency error is not charged to its throughput a second time; a
burst against ``burst_ttft`` and ``burst_throughput`` (its R requests in waves of
``capacity_batch``). ``saturated_throughput`` is the sheet's own ``throughput`` at
``capacity_batch``: ``evaluate_runs`` evaluates the paced rows there first and sets it, so the
open-loop cells read the replica's capacity under the same inputs (a calibration's too).
Latencies of a paced run stay at its in-flight count (``perfgraph.measured.setup``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from perfgraph.engine.sheet import Sheet
from perfgraph.measured.achieved import in_unit
from perfgraph.measured.baseline import BURST, CLOSED, PACED

#: metric → (the model's cell, unit compared in, the measured keys to try, best first);
#: TTFT's median first (a steady-state request's), the others' mean (TPOT's mean is the run's
#: throughput per user)
LATENCIES = {
    "ttft": ("ttft", "ms", ("ttft_median", "ttft_p50", "ttft")),
    "tpot": ("itl", "ms", ("tpot", "tpot_median", "tpot_p50", "itl", "itl_median", "itl_p50")),
    "e2el": ("e2e_latency", "ms", ("e2el", "e2el_median", "e2el_p50")),
}
#: A run's arrivals → the latency cells that differ from the closed loop's
LATENCY_CELL = {BURST: {"ttft": "burst_ttft", "e2el": "burst_e2e_latency"}}
#: A run's arrivals → a file's throughput definition → the model's cell in the same definition
MODEL_CELL = {
    CLOSED: {"output_throughput": "throughput", "total_throughput": "throughput_total",
             "throughput_per_gpu": "throughput_total_per_gpu"},
    PACED: {"output_throughput": "open_loop_throughput",
            "total_throughput": "open_loop_throughput_total",
            "throughput_per_gpu": "open_loop_throughput_total_per_gpu"},
    BURST: {"output_throughput": "burst_throughput", "total_throughput": "burst_throughput_total",
            "throughput_per_gpu": "burst_throughput_total_per_gpu"},
}


def latency_cell(metric: str, arrivals: str = CLOSED) -> str:
    """The model's cell a run's latency ``metric`` is held against."""
    return LATENCY_CELL.get(arrivals, {}).get(metric, LATENCIES[metric][0])


def throughput_cell(key: str, arrivals: str = CLOSED) -> str:
    """The model's cell a run's throughput (the file's definition ``key``) is held against."""
    return MODEL_CELL.get(arrivals, MODEL_CELL[CLOSED])[key]


def evaluate_runs(sheet: Sheet, columns: Mapping[str, np.ndarray], n: int,
                  ) -> dict[str, np.ndarray]:
    """``sheet.evaluate_columns`` over the runs, each paced run's ``saturated_throughput`` its
    throughput at ``capacity_batch`` (rows whose ``request_rate`` column is finite)."""
    rate = columns.get("request_rate")
    if rate is not None and "saturated_throughput" not in columns:
        paced = np.isfinite(np.asarray(rate, dtype=float))
        if paced.any():
            columns = {**columns, "saturated_throughput": _saturated(sheet, columns, n, paced)}
    return sheet.evaluate_columns(columns, n)


def _saturated(sheet: Sheet, columns: Mapping[str, np.ndarray], n: int,
               paced: np.ndarray) -> np.ndarray:
    """The sheet's throughput (output tokens/s) of the paced rows at their capacity_batch, the
    largest batch the replica runs with requests always waiting (NaN elsewhere, and where no
    request fits): its capacity. Its running batch is then what the scheduler admits
    (realistic.toml admitted_batch: max_num_seqs and what the step's token budget sustains),
    the rest queue."""
    rows = {name: np.broadcast_to(np.asarray(v, dtype=float), (n,))[paced]
            for name, v in columns.items()}
    m = int(paced.sum())
    batch = np.asarray(sheet.evaluate_columns(rows, m, only=["capacity_batch"])
                       ["capacity_batch"], dtype=float)
    rows["concurrency"] = np.where(batch >= 1, batch, math.nan)
    values = sheet.evaluate_columns(rows, m, only=["throughput"])
    out = np.full(n, math.nan)
    out[paced] = in_unit(sheet, values, "throughput", "token/s")
    return out


def like_for_like(sheet: Sheet, values: Mapping[str, np.ndarray],
                  throughput_keys: Sequence[str | None],
                  arrivals: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """The model's TTFT, TPOT and E2EL (ms), and its throughput (token/s) in each run's own
    definition — output, total, or total per GPU — each from the cells of the run's
    ``arrivals`` (closed loop when None), from ``evaluate_runs`` output."""
    kinds = list(arrivals) if arrivals is not None else [CLOSED] * len(throughput_keys)
    out = {metric: _per_run(sheet, values, [latency_cell(metric, a) for a in kinds], u)
           for metric, (_, u, _) in LATENCIES.items()}
    out["throughput"] = _per_run(sheet, values, [throughput_cell(k, a) if k else None
                                                 for k, a in zip(throughput_keys, kinds,
                                                                 strict=True)], "token/s")
    return out


def _per_run(sheet: Sheet, values: Mapping[str, np.ndarray], cells: Sequence[str | None],
             unit: str) -> np.ndarray:
    """Row i of cell ``cells[i]`` (in ``unit``; NaN where None), each cell converted once."""
    columns = {c: in_unit(sheet, values, c, unit) for c in set(cells) if c is not None}
    return np.array([columns[c][i] if c is not None else math.nan
                     for i, c in enumerate(cells)], dtype=float)


def arrival_slack(arrivals: str, requests: int | None) -> float:
    """How far above the offered λ × OSL a paced run's measured throughput may lie by its
    Poisson draw alone: R requests arrive in a span whose relative spread is 1/√R, so
    2/√R (two standard deviations) above it is the draw, not a run beating the model; 0 for
    a run not paced or of unknown count."""
    return 2 / math.sqrt(requests) if arrivals == PACED and requests else 0.0


def saturated_note(values: Mapping[str, np.ndarray], i: int) -> str | None:
    """The note of paced row ``i`` offered more than the replica serves, else None."""
    flag = values.get("open_loop_saturated")
    if flag is None or not np.asarray(flag)[i] > 0:
        return None
    offered = float(np.asarray(values["served_output_rate"])[i])
    capacity = float(np.asarray(values["saturated_throughput"])[i])
    return (f"saturated: the offered λ × OSL = {offered:.4g} tok/s exceeds the {capacity:.4g} "
            "tok/s the replica serves at capacity (saturated_throughput: capacity_batch "
            "held, admitted_batch of them running), so its throughput is held against that "
            "capacity, and its queue grows for as long as the run lasts")
