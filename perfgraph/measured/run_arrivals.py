"""How a measured run's requests arrived, as its setup says it and as columns of the sheet.

A closed loop of N users (a configured concurrency, or one estimated); paced at a request rate
λ with no concurrency (an open loop: ``RunSetup.request_rate``); or a maximum-load run whose
R requests the file counts (request rate infinite: a burst, ``RunSetup.burst_requests``),
modelled at ``capacity_batch`` (R itself when fewer). ``perfgraph.measured.open_loop`` holds
each against the sheet's cells of its kind.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from perfgraph.engine.numbers import number
from perfgraph.engine.sheet import Sheet
from perfgraph.measured.adapters import MeasuredRun
from perfgraph.measured.adapters.serving import kept_up
from perfgraph.measured.baseline import BURST, CAPACITY, CONFIG_CELLS, PACED, Baseline, RunSetup


def burst_spread(run: MeasuredRun, osl: float, arrivals: str | None, base: Baseline,
                 notes: list[str]) -> tuple[tuple[str, str], ...]:
    """A burst whose per-request record shows its outputs' lengths: ``osl_spread`` = its
    longest output ÷ the mean OSL modelled, since a wave lasts until its longest request
    ends (an explicit ``--set osl_spread`` wins)."""
    record = run.per_request
    if arrivals != BURST or record is None or not record.osl or osl <= 0 or \
            "osl_spread" in base.set_cells:
        return ()
    spread = max(1.0, max(record.osl) / osl)
    if spread == 1.0:
        return ()
    notes.append(f"osl_spread {number(spread, 4)}: the burst's longest output "
                 f"({max(record.osl)} tokens, its per-request record) ÷ the mean OSL "
                 f"{number(osl, 4)}; a wave lasts until its longest request ends")
    return (("osl_spread", repr(round(spread, 6))),)


def is_burst(run: MeasuredRun) -> bool:
    """A maximum-load run (request rate infinite, no concurrency) whose request count is known."""
    return run.concurrency is None and run.request_rate is not None and \
        math.isinf(run.request_rate) and bool(run.completed)


def arrivals_of(run: MeasuredRun, source: str) -> dict:
    """How the run's requests arrived, as RunSetup's ``arrivals``, ``request_rate`` and
    ``burst_requests``: a burst where it is modelled at capacity with its count known, paced
    where the file gives a finite rate and no concurrency and the server kept up with it,
    else a closed loop. A paced run whose server fell behind (it completed under KEPT_UP of
    the rate: its queue grew) ran at the batch its queue gave it, not at capacity_batch: it is
    held as the closed loop of its requests in flight (Little's law), whose throughput is
    that batch ÷ its E2EL."""
    if source == CAPACITY and is_burst(run):
        return {"arrivals": BURST, "burst_requests": float(run.completed or 0)}
    rate = run.request_rate
    achieved = run.metrics.get("request_throughput")
    if run.concurrency is None and rate is not None and math.isfinite(rate) \
            and kept_up(rate, achieved.value if achieved is not None else None):
        return {"arrivals": PACED, "request_rate": float(rate)}
    return {}


def config_columns(setups: Sequence[RunSetup]) -> dict[str, np.ndarray]:
    """The setups' serving inputs as columns of the sheet; ``request_rate`` (NaN for a run
    not paced) and ``open_arrivals`` only where some run is paced, ``burst_requests`` only
    where some run is a burst."""
    columns = {name: np.array([getattr(s, name) for s in setups], dtype=float)
               for name in CONFIG_CELLS}
    if any(s.arrivals == PACED for s in setups):
        columns["request_rate"] = np.array([s.request_rate if s.arrivals == PACED else math.nan
                                            for s in setups], dtype=float)
        columns["open_arrivals"] = np.array([s.arrivals == PACED for s in setups], dtype=float)
    if any(s.arrivals == BURST for s in setups):
        columns["burst_requests"] = np.array([s.burst_requests for s in setups], dtype=float)
    return columns


def set_setup(sheet: Sheet, setup: RunSetup) -> None:
    """Set one run's serving inputs (``config_columns``) on ``sheet``, a fork; raises the
    sheet's PerfgraphError for a value it refuses."""
    for name, column in config_columns([setup]).items():
        sheet.set(name, float(column[0]))


def at_capacity(sheet: Sheet, setups: Sequence[RunSetup]) -> list[RunSetup]:
    """The setups, each maximum-load run's concurrency the sheet's ``capacity_batch`` at its
    own TP and lengths (the largest batch its engine holds; NaN where nothing fits)."""
    setups = list(setups)
    if not any(s.concurrency_source == CAPACITY for s in setups):
        return setups
    batch = sheet.evaluate_columns(config_columns(setups), len(setups),
                                   only=["capacity_batch"])["capacity_batch"]
    return [dataclasses.replace(s, concurrency=_held(s, float(b)))
            if s.concurrency_source == CAPACITY else s
            for s, b in zip(setups, np.asarray(batch, dtype=float), strict=True)]


def _held(setup: RunSetup, batch: float) -> float:
    """What a maximum-load run holds in flight: capacity_batch, or a smaller burst whole."""
    if batch < 1:
        return math.nan
    return min(batch, setup.burst_requests) if setup.arrivals == BURST else batch
