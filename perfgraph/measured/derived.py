"""What a run's own readings imply, through the sheet's cells (``sheets/achieved.toml``).

The adapters keep what a file says; what follows from it is a cell, so ``perfgraph explain``
shows the derivation: the requests in flight (``measured_in_flight``, Little's law), and where a
file leaves them out (``MeasuredRun.derive``) its request throughput
(``measured_request_throughput``: output tokens/s ÷ OSL), its mean E2EL (``measured_e2el``:
TTFT + (OSL − 1) × TPOT), its total tokens/s (``measured_total_throughput``: per GPU ×
GPUs; ``measured_token_rate``: token totals ÷ duration) or per-GPU tokens/s
(``measured_total_per_gpu``: total ÷ GPUs; ``measured_rates_total``: input + output
tokens/s), its input tokens/s (``measured_input_rate``), its requests/s
(``measured_completion_rate``: completed ÷ duration), its mean ISL and OSL
(``measured_mean_isl``/``measured_mean_osl``: token totals ÷ completed) or, where it records
none, the expected means of its configured random range (``measured_expected_isl``/
``measured_expected_osl``: configured × (1 + range ratio) ÷ 2), either of which becomes the
run's ``isl``/``osl``, and its implied mean OSL: what its latencies imply
(``measured_implied_osl``) or its output per request (``measured_output_per_request``).
Each reading the file lacks is pinned as NaN, so no derivation falls back to the model's own
figure. A run's ``derive_notes`` are note templates the derived values fill in
(``{in_flight:.1f}``), each put where among the run's notes the reader said it; its
``late_caveats`` are the reader's checks that need a derived value (``CAVEAT_CHECKS``), run on
the derived run.
"""

from __future__ import annotations

import dataclasses
import math
import string
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from types import MappingProxyType
from typing import Any

import numpy as np

from perfgraph.engine.sheet import Sheet
from perfgraph.measured.achieved import in_unit, to_declared
from perfgraph.measured.adapters import CAVEAT_CHECKS, MeasuredRun
from perfgraph.measured.adapters.records import Metric
from perfgraph.scenario.loading import ScenarioSpec, load

#: A reading → (its metric key in the run, the cell it pins, the unit the run keeps it in).
READINGS = {"request_throughput": ("request_throughput", "measured_request_throughput",
                                   "request/s"),
            "e2el": ("e2el", "measured_e2el", "ms"),
            "ttft": ("ttft", "measured_ttft", "ms"),
            "tpot": ("tpot", "measured_tpot", "ms"),
            "output_throughput": ("output_throughput", "measured_output_throughput", "token/s"),
            "throughput_per_gpu": ("throughput_per_gpu", "measured_throughput_total_per_gpu",
                                   "token/s"),
            "total_throughput": ("total_throughput", "measured_total_throughput", "token/s"),
            "input_throughput": ("input_throughput", "measured_input_throughput", "token/s")}
#: A derived quantity → (the cell that derives it, the unit the run keeps it in).
DERIVED = {"in_flight": ("measured_in_flight", ""),
           "osl_implied": ("measured_implied_osl", "token"),
           "output_per_request": ("measured_output_per_request", "token"),
           "request_throughput": ("measured_request_throughput", "request/s"),
           "e2el": ("measured_e2el", "ms"),
           "throughput_per_gpu": ("measured_total_per_gpu", "token/s"),
           "total_throughput": ("measured_total_throughput", "token/s"),
           "total_over_duration": ("measured_token_rate", "token/s"),
           "input_over_duration": ("measured_input_rate", "token/s"),
           "per_gpu_over_duration": ("measured_token_rate_per_gpu", "token/s"),
           "requests_over_duration": ("measured_completion_rate", "request/s"),
           "total_of_rates": ("measured_rates_total", "token/s"),
           "isl_measured": ("measured_mean_isl", "token"),
           "osl_measured": ("measured_mean_osl", "token"),
           "isl_expected": ("measured_expected_isl", "token"),
           "osl_expected": ("measured_expected_osl", "token")}
#: The derived quantities that stand in for a reading the file lacks (or for the run's OSL):
#: worked out first, then pinned in its place, so the cells that read it follow (Little's
#: law reads the request rate, the per-GPU figure the total, an E2EL the OSL).
_STANDS_IN = {"requests_over_duration": "measured_request_throughput",
              "total_of_rates": "measured_total_throughput", "osl_measured": "osl",
              "osl_expected": "osl"}
#: A run's own field → (the cell it pins, the unit the run keeps it in).
FIELDS = {"duration_s": ("measured_duration", "s"), "tokens_in": ("measured_input_tokens", "token"),
          "tokens_out": ("measured_output_tokens", "token"),
          "completed": ("measured_completed", "request"),
          "isl_configured": ("measured_configured_isl", "token"),
          "osl_configured": ("measured_configured_osl", "token"),
          "range_ratio": ("measured_range_ratio", "")}
#: The derived quantities either of which, where a run's ``derive`` names it, is its
#: ``osl_implied`` (its latencies' OSL, or its output per request)
_IMPLIED_OSL = ("osl_implied", "output_per_request")
#: The derived quantities a run keeps as metrics (a file that lacks them: ``derive``): the
#: metric's key, its statistic, unit and definition.
_METRICS = {"request_throughput": ("request_throughput", "mean", "request/s",
                                   "completed requests / s ({how})"),
            "e2el": ("e2el", "mean", "ms", "{how}"),
            "throughput_per_gpu": ("throughput_per_gpu", "mean", "token/s", "{how}"),
            "total_throughput": ("total_throughput", "mean", "token/s", "{how}"),
            "total_over_duration": ("total_throughput", "mean", "token/s", "{how}"),
            "input_over_duration": ("input_throughput", "mean", "token/s", "{how}"),
            "per_gpu_over_duration": ("throughput_per_gpu", "mean", "token/s", "{how}"),
            "requests_over_duration": ("request_throughput", "mean", "request/s", "{how}"),
            "total_of_rates": ("total_throughput", "mean", "token/s", "{how}")}


def derive_runs(sheet: Sheet | None, runs: Iterable[MeasuredRun]) -> list[MeasuredRun]:
    """Each run with what its readings imply: ``concurrency_measured`` (Little's law) where it
    has a request throughput and a mean E2EL, the quantities its ``derive`` names (metrics,
    ``osl_implied``, the mean lengths), its late caveats checked and its ``derive_notes``
    filled in (once: a derived run keeps none); every path that models read runs derives
    them first, since a benchmark_serving run's ``isl``/``osl`` are set here;
    one evaluation per ``derive``. ``sheet``: the scenario's (None: the default scenario's;
    with every reading pinned the derivations do not depend on the scenario)."""
    sheet = sheet if sheet is not None else _default_sheet()
    runs = list(runs)
    out = list(runs)
    for key in dict.fromkeys(r.derive for r in runs):
        rows = [i for i, r in enumerate(runs) if r.derive == key]
        values = derived_values(sheet, [runs[i] for i in rows], tuple(k for k, _ in key))
        for j, i in enumerate(rows):
            out[i] = _with(runs[i], {name: column[j] for name, column in values.items()})
    return out


def derived_values(sheet: Sheet, runs: Sequence[MeasuredRun],
                   derive: tuple[str, ...] = ()) -> dict[str, list[float | None]]:
    """Per :data:`DERIVED` quantity, its value for each run (None where its readings do not
    give it); the quantities in ``derive`` are worked out, not read (those that stand in for a
    reading first, :data:`_STANDS_IN`)."""
    columns = _pinned(sheet, runs, derive)
    first = [name for name in derive if name in _STANDS_IN]
    if first:
        got = sheet.evaluate_columns(columns, len(runs), only=[DERIVED[n][0] for n in first])
        for name in first:
            target = _STANDS_IN[name]
            columns[target] = in_unit(sheet, got, DERIVED[name][0],
                                      sheet.declaration(target).unit)
    got = sheet.evaluate_columns(columns, len(runs), only=[c for c, _ in DERIVED.values()])
    return {name: [_valid(name, float(v)) for v in in_unit(sheet, got, cell, kept)]
            for name, (cell, kept) in DERIVED.items()}


def _pinned(sheet: Sheet, runs: Sequence[MeasuredRun],
            derive: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The runs' readings and fields as columns of the cells they pin (NaN where a run lacks
    one), each in its cell's declared unit."""
    columns: dict[str, np.ndarray] = {}
    for reading, (key, cell, kept) in READINGS.items():
        if reading in derive:
            continue
        given = np.array([_reading(r, key) for r in runs], dtype=float)
        columns[cell] = given * to_declared(sheet, kept, cell)
    for field, (cell, kept) in FIELDS.items():
        given = np.array([_field(r, field) for r in runs], dtype=float)
        columns[cell] = given * to_declared(sheet, kept, cell)
    columns["measured_gpus"] = np.array([math.nan if not (r.gpus or r.tp) else r.gpus or r.tp
                                         for r in runs], dtype=float)
    columns["osl"] = np.array([math.nan if r.osl is None else r.osl for r in runs]) * \
        to_declared(sheet, "token", "osl")
    return columns


def _reading(run: MeasuredRun, key: str) -> float:
    """A metric as the file gives it; a TPOT falls back to the mean ITL (a table that gives
    only the ITL, TensorRT-LLM's)."""
    metric = run.metrics.get(key) or (run.metrics.get("itl") if key == "tpot" else None)
    return math.nan if metric is None else metric.value


def _field(run: MeasuredRun, name: str) -> float:
    value = getattr(run, name)
    return math.nan if value is None else float(value)


def _valid(name: str, value: float) -> float | None:
    """A derived value, None where the readings do not give one (NaN, not positive, an
    implied OSL under one token)."""
    if not math.isfinite(value) or value <= 0 or (name in _IMPLIED_OSL and value < 1):
        return None
    return value


def _with(run: MeasuredRun, values: Mapping[str, float | None]) -> MeasuredRun:
    derive = dict(run.derive)
    metrics = dict(run.metrics)
    for name, (key, statistic, kept, definition) in _METRICS.items():
        if name in derive and values[name] is not None:
            metrics[key] = Metric(float(values[name]), kept, statistic,  # type: ignore[arg-type]
                                   definition.format(how=derive[name]))
    derived = dataclasses.replace(
        _with_lengths(run, values), metrics=MappingProxyType(metrics),
        concurrency_measured=values["in_flight"],
        osl_implied=next((values[k] for k in _IMPLIED_OSL if k in derive), run.osl_implied))
    notes, caveats = _checked_caveats(derived)
    for at, template in run.derive_notes:  # in order: each position counts the ones before
        filled = _filled(template, values)
        if filled is not None:
            notes.insert(at, filled)
    return dataclasses.replace(derived, derive_notes=(), late_caveats=(), notes=tuple(notes),
                               caveats=tuple(caveats))


def _with_lengths(run: MeasuredRun, values: Mapping[str, float | None]) -> MeasuredRun:
    """The run with the mean lengths its ``derive`` names (measured, or the expected means of
    a configured random range), each also the ISL/OSL it is modelled at."""
    lengths: dict[str, Any] = {}  # float | None, each a field of the run
    for kind in ("isl", "osl"):
        for name in (f"{kind}_measured", f"{kind}_expected"):
            if name in dict(run.derive):
                lengths[name] = lengths[kind] = values[name]
    return dataclasses.replace(run, **lengths)


def _checked_caveats(run: MeasuredRun) -> tuple[list[str], list[str]]:
    """The run's notes and caveats with its late caveats checked (``CAVEAT_CHECKS``) and each
    one found put where the reader placed its check."""
    notes, caveats = list(run.notes), list(run.caveats)
    found = 0
    for late in run.late_caveats:
        text = CAVEAT_CHECKS[late.check](run, *late.args)
        if text:
            notes.insert(late.note_at + found, text)
            caveats.insert(late.caveat_at + found, text)
            found += 1
    return notes, caveats


@lru_cache(maxsize=1)
def _default_sheet() -> Sheet:
    return load(ScenarioSpec()).sheet


def _filled(template: str, values: Mapping[str, float | None]) -> str | None:
    """A note template with the derived values put in; None when one it names has none."""
    names = [f for _, f, _, _ in string.Formatter().parse(template) if f]
    if any(values.get(n) is None for n in names):
        return None
    return template.format(**values)
