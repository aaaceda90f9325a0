"""Measured runs held against the model: per metric, measured vs the roofline, and why.

    base = Baseline.from_spec(ScenarioSpec(hardware="h100-sxm"))
    for c in compare_runs(read_runs(path).runs, base):
        c.metric("throughput").possible          # measured ÷ roofline, as a fraction

The model is evaluated at each run's own configuration (``perfgraph.measured.setup``). Each metric
compares like with like and says what it compared:

* TTFT: the measured median (else mean) vs the roofline prefill of one prompt (no queueing).
  The sheet's TTFT is a steady-state request's; a benchmark's mean also holds its ramp (a
  closed-loop client such as InferenceX's starts all N users at once: the first N of its
  10 × N requests, 10%, queue behind each other's prefills) and its outliers (a first-batch
  kernel compile, a retraction), which the median leaves out;
* TPOT: time per output token excluding the first (ITL per streamed chunk only when the file
  has no TPOT) vs the roofline decode step at the run's batch;
* E2EL vs the roofline end-to-end latency of one request, at the run's OSL (its implied mean
  OSL where the file gives only a configured one and its latencies imply another);
* throughput: output tokens/s vs the model's ``throughput`` (one replica); or, where the file
  gives only total (input + output) tokens/s, vs throughput × (isl + osl)/osl, divided by
  ``n_gpus`` when the file divides by its GPUs. A run paced at a request rate is an open
  loop, held against ``open_loop_throughput`` (λ × OSL up to the replica's capacity), and a
  maximum-load run of known count a burst, held against ``burst_throughput`` and
  ``burst_ttft`` (``perfgraph.measured.open_loop``).

"% of possible" = measured ÷ roofline for throughput, roofline ÷ measured for latencies: 100%
means the run reached the roofline. MFU, MBU and the run's place on the roofline come from the
measured numbers through the graph: each run's throughput pins the sheet's cell of the same
definition (``measured_output_throughput``, ``measured_total_throughput`` or
``measured_throughput_total_per_gpu``) and its TPOT pins ``measured_tpot``; the cells of
``sheets/achieved.toml`` derive the rest (``perfgraph explain achieved_mfu``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from perfgraph.engine.sheet import Sheet
from perfgraph.errors import PerfgraphError
from perfgraph.measured.achieved import achieved_by
from perfgraph.measured.achieved import in_unit as in_unit
from perfgraph.measured.adapters import MeasuredRun
from perfgraph.measured.baseline import BURST, PACED
from perfgraph.measured.derived import derive_runs
from perfgraph.measured.findings import STEP_TERMS, Finding, findings
from perfgraph.measured.metrics import MetricComparison
from perfgraph.measured.open_loop import (  # noqa: F401 (MODEL_CELL re-exported)
    LATENCIES,
    MODEL_CELL,
    evaluate_runs,
    latency_cell,
    like_for_like,
    saturated_note,
    throughput_cell,
)
from perfgraph.measured.percentiles import Percentiles, Sheets, percentiles_for
from perfgraph.measured.run_arrivals import set_setup
from perfgraph.measured.setup import Baseline, RunSetup, setup_run
from perfgraph.measured.setup import at_capacity as at_capacity
from perfgraph.measured.setup import config_columns as config_columns
from perfgraph.scenario.loading import Scenario, ScenarioSpec, load

METRICS = ("ttft", "tpot", "e2el", "throughput")
_SAYS = {
    "ttft": "TTFT: measured {stat} vs the roofline prefill of one ISL-token prompt "
            "(a minimum: no queueing, no scheduling)",
    "tpot": "TPOT: measured {stat} time per output token, first token excluded, vs the "
            "roofline decode step at the run's batch",
    "itl": "TPOT vs ITL: the file has no TPOT, so its {stat} ITL (gap between streamed chunks) "
           "stands in; it equals TPOT only when each chunk carries one token",
    "e2el": "E2EL: measured {stat} request latency vs the roofline TTFT + OSL × ITL, at {osl}",
    "output_throughput": "throughput: output tokens/s of the whole run (one TP group) vs the "
                         "model's throughput (output tokens/s of one replica)",
    "total_throughput": "throughput: total (input + output) tokens/s vs the model's total = "
                        "throughput × (isl + osl)/osl",
    "throughput_per_gpu": "throughput: per GPU here is {what}; the model's = throughput × "
                          "(isl + osl)/osl ÷ n_gpus",
}
#: What a paced run's or a burst's comparison adds to its definition line
_ARRIVALS_SAY = {
    PACED: "; a paced run (an open loop) is held against open_loop_throughput: what it is "
           "offered, λ × OSL, up to what the replica serves at capacity_batch",
    BURST: "; a burst (every request at once) is held against burst_throughput: its R requests "
           "× OSL over ⌈R / capacity_batch⌉ waves",
    "burst_ttft": "; a burst's TTFT holds its wait behind the prompts and waves before it "
                  "(burst_ttft)",
}
_THROUGHPUTS = ("output_throughput", "throughput_per_gpu", "total_throughput")


@dataclass(frozen=True)
class Comparison:
    run: MeasuredRun
    setup: RunSetup
    metrics: tuple[MetricComparison, ...]
    mfu: float | None  # from the measured throughput, as a fraction
    mbu: float | None  # from the measured TPOT, as a fraction
    headroom: float | None  # decode could go at most this much faster: 1 / MBU
    measured_output: float | None  # output tokens/s of the whole run (see run_points)
    findings: tuple[Finding, ...]
    error: str | None = None  # the run could not be modelled at all
    #: p50/p99 TTFT and TPOT measured vs a simulation of the run's own requests (runs with a
    #: per-request record, when ``compare_runs`` is asked for them; see measured/percentiles)
    percentiles: Percentiles | None = None
    measured_output_per_gpu: float | None = None  # measured_output ÷ the run's GPUs
    #: FLOP/s one GPU achieved: over the run (MFU × peak), and in decode (MBU × HBM
    #: bandwidth × decode intensity, its place on the roofline)
    achieved_flops: float | None = None
    achieved_decode_flops: float | None = None

    def metric(self, name: str) -> MetricComparison | None:
        return next((m for m in self.metrics if m.metric == name), None)

    @property
    def possible(self) -> float | None:
        """The run's "% of possible": its throughput's (the seed's headline figure)."""
        m = self.metric("throughput")
        return m.possible if m is not None else None


@dataclass(frozen=True)
class _Measured:
    """The run's numbers in the model's terms (NaN where the run has none)."""

    latencies: Mapping[str, tuple[float, str, str] | None]  # metric → (value ms, stat, key)
    throughput_key: str | None
    throughput: float  # in the file's definition
    definition: str  # the file's definition of it

    @property
    def tpot_ms(self) -> float:
        return self.latencies["tpot"][0] if self.latencies["tpot"] else math.nan


def compare_runs(runs: Iterable[MeasuredRun], base: Baseline, levers: bool = True,
                 percentiles: bool = False) -> tuple[Comparison, ...]:
    """Compare each run with the model at its configuration; never raises for a bad run.
    ``percentiles``: also simulate each run that keeps a per-request record."""
    runs = derive_runs(base.sheet, runs)
    setups = [setup_run(run, base) for run in runs]
    results: list[Comparison | None] = [None] * len(runs)
    groups: dict[tuple, list[int]] = {}
    for i, setup in enumerate(setups):
        if setup.error is not None:
            results[i] = _failed(runs[i], setup, setup.error)
        else:
            groups.setdefault(setup.group, []).append(i)
    for members in groups.values():
        chosen = [runs[i] for i in members]
        for i, c in zip(members, _compare_group(chosen, [setups[i] for i in members], base,
                                                levers), strict=True):
            results[i] = c
    done = tuple(c for c in results if c is not None)
    return with_percentiles(done, base) if percentiles else done


def with_percentiles(comparisons: Iterable[Comparison], base: Baseline,
                     ) -> tuple[Comparison, ...]:
    """The comparisons, each run with a per-request record given its percentiles."""
    sheets = Sheets(base)
    return tuple(dataclasses.replace(c, percentiles=percentiles_for(c.run, c.setup, sheets))
                 if c.error is None and c.run.per_request is not None else c
                 for c in comparisons)


def _failed(run: MeasuredRun, setup: RunSetup, why: str) -> Comparison:
    return Comparison(run, setup, (), None, None, None, None, (), error=why)


def _roofline_only(setup: RunSetup, spec: ScenarioSpec) -> RunSetup:
    """The notes of a run ``--calibration auto`` found no shipped profile for: the roofline
    alone, and no word of a calibrated model."""
    notes = [n for n in setup.notes if not n.startswith("calibrated by ")]
    notes.append(f"--calibration {spec.calibration}: no shipped profile for {setup.hardware} "
                 f"with {spec.engine or 'the default engine'}; the roofline only")
    return dataclasses.replace(setup, notes=tuple(notes))


def reference(comparisons: Sequence[Comparison], base: Baseline) -> str:
    """What the runs were held against: the calibrated model where at least one run got a
    calibrated prediction, else the roofline (``--calibration auto`` with no profile)."""
    predicted = any(m.predicted is not None for c in comparisons for m in c.metrics)
    return base.reference if predicted else "roofline"


def _compare_group(runs: Sequence[MeasuredRun], setups: Sequence[RunSetup], base: Baseline,
                   levers: bool) -> list[Comparison]:
    try:
        spec = setups[0].spec(base.spec)
        sheet = load(dataclasses.replace(spec, calibration=None)).sheet
        scenario = load(spec) if spec.calibration else None
    except PerfgraphError as exc:
        return [_failed(r, s, f"the model cannot be loaded: {exc}") for r, s in zip(
            runs, setups, strict=True)]
    calibrated, setups = _profiled(scenario, spec, setups)
    n = len(runs)
    with np.errstate(all="ignore"):  # a bad configuration shows as NaN, explained per metric
        setups = at_capacity(sheet, setups)
        cols = config_columns(setups)
        model = evaluate_runs(sheet, cols, n)
        measured = [_measured(run) for run in runs]
        achieved = achieved_by(sheet, cols, [(m.throughput_key, m.throughput) for m in measured],
                               [m.tpot_ms for m in measured])
        keys, arrivals = [m.throughput_key for m in measured], [s.arrivals for s in setups]
        like = like_for_like(sheet, model, keys, arrivals)
        like["e2el"] = _e2el_at_run_osl(sheet, cols, setups, like["e2el"])
        predicted, terms, values = None, {}, model
        if calibrated is not None:
            values = evaluate_runs(calibrated, cols, n)
            predicted = like_for_like(calibrated, values, keys, arrivals)
            terms = {c: in_unit(calibrated, values, c, "ms") for c in STEP_TERMS
                     if c in calibrated.names and (c != "step_attention_time"
                                                   or calibrated.magnitude("kernel_roofline"))}
            predicted["e2el"] = _e2el_at_run_osl(calibrated, cols, setups, predicted["e2el"])
    out = []
    for i, (run, setup) in enumerate(zip(runs, setups, strict=True)):
        setup = _saturated(setup, values, i)
        metrics = _metrics(sheet, like, i, setup, measured[i])
        if predicted is not None:
            metrics = tuple(dataclasses.replace(m, predicted=_finite(predicted[m.metric][i]))
                            if m.metric in predicted else m for m in metrics)
        got = {field: _finite(col[i]) for field, col in achieved.items()}
        found = findings(run, setup, metrics, got["mbu"], got["headroom"],
                         sheet if levers else None,
                         {c: float(v[i]) for c, v in terms.items() if math.isfinite(v[i])})
        out.append(Comparison(
            run, setup, metrics, got["mfu"], got["mbu"], got["headroom"], got["measured_output"],
            found, measured_output_per_gpu=got["measured_output_per_gpu"],
            achieved_flops=got["achieved_flops"],
            achieved_decode_flops=got["achieved_decode_flops"]))
    return out


def _profiled(scenario: Scenario | None, spec: ScenarioSpec, setups: Sequence[RunSetup],
              ) -> tuple[Sheet | None, list[RunSetup]]:
    """The calibrated sheet (None: the roofline only), and the setups noting which profile
    predicts them (``--calibration auto`` picks per hardware; with no profile, says so)."""
    if scenario is not None and scenario.calibration is None:  # auto, and no profile fits
        return None, [_roofline_only(s, spec) for s in setups]
    if scenario is None:
        return None, list(setups)
    return scenario.sheet, [dataclasses.replace(
        s, notes=(*s.notes, f"predicted by {scenario.prediction}")) for s in setups]


def _saturated(setup: RunSetup, values: Mapping[str, np.ndarray], i: int) -> RunSetup:
    """A paced run offered more than the model's replica serves, with a note saying so."""
    said = saturated_note(values, i) if setup.arrivals == PACED else None
    return dataclasses.replace(setup, notes=(*setup.notes, said)) if said else setup


def _e2el_at_run_osl(sheet: Sheet, cols: Mapping[str, np.ndarray], setups: Sequence[RunSetup],
                     e2el: np.ndarray) -> np.ndarray:
    """The model's E2EL (ms) at each run's ``e2el_osl`` where that differs from its ``osl``."""
    osl = np.array([s.e2el_osl if s.e2el_osl is not None else s.osl for s in setups],
                   dtype=float)
    if np.array_equal(osl, cols["osl"]):
        return e2el
    values = evaluate_runs(sheet, {**cols, "osl": osl}, len(setups))
    return like_for_like(sheet, values, [None] * len(setups),
                         [s.arrivals for s in setups])["e2el"]


def _osl_said(setup: RunSetup) -> str:
    """Which OSL the E2EL comparison used, for its definition line."""
    if setup.e2el_osl is not None and setup.e2el_osl != setup.osl:
        return "the run's implied mean OSL (worked out from its own numbers), not the " \
            "configured one"
    return {"measured": "the measured mean OSL",
            "expected": "the expected mean OSL of the configured random range (the file "
            "records no measured mean)",
            "configured": "the configured OSL (the file "
            "records no measured mean)"}.get(setup.osl_source or "",
                                              "the OSL from the scenario options")


def _measured(run: MeasuredRun) -> _Measured:
    latencies = {}
    for metric, (_, _, keys) in LATENCIES.items():
        key = next((k for k in keys if k in run.metrics), None)
        latencies[metric] = (run.metrics[key].value, run.metrics[key].statistic, key) \
            if key else None
    key = next((k for k in _THROUGHPUTS if k in run.metrics), None)
    if key is None:
        return _Measured(latencies, None, math.nan, "")
    return _Measured(latencies, key, run.metrics[key].value, run.metrics[key].definition)


def _metrics(sheet: Sheet, like: Mapping[str, np.ndarray], i: int, setup: RunSetup,
             measured: _Measured) -> tuple[MetricComparison, ...]:
    out = []
    for metric, (_, unit_text, _) in LATENCIES.items():
        got, cell = measured.latencies[metric], latency_cell(metric, setup.arrivals)
        value = _finite(like[metric][i])
        if got is None:
            out.append(MetricComparison(metric, unit_text, None, None, None, value, cell,
                                        _SAYS[metric].format(stat="—", osl=_osl_said(setup)),
                                        error="the file has no such measurement"))
            continue
        said = _SAYS["itl" if got[2].startswith("itl") else metric].format(
            stat=got[1], osl=_osl_said(setup)) + _ARRIVALS_SAY.get(cell, "")
        out.append(MetricComparison(metric, unit_text, got[0], got[1], got[2], value, cell,
                                    said, error=None if value is not None else _why(
                                        sheet, setup, cell)))
    key = measured.throughput_key
    cell = throughput_cell("output_throughput", setup.arrivals)
    if key is None:
        out.append(MetricComparison("throughput", "token/s", None, None, None, None,
                                    cell, _SAYS["output_throughput"],
                                    error="the file has no throughput"))
        return tuple(out)
    modelled = _finite(like["throughput"][i])
    out.append(MetricComparison("throughput", "token/s", measured.throughput, "mean", key,
                                modelled, cell, _SAYS[key].format(what=measured.definition)
                                + _ARRIVALS_SAY.get(setup.arrivals, ""),
                                error=None if modelled is not None else _why(
                                    sheet, setup, throughput_cell(key, setup.arrivals))))
    return tuple(out)


def _finite(x: float) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def _why(sheet: Sheet, setup: RunSetup, cell: str) -> str:
    """Why the model has no value for ``cell`` at this run's configuration."""
    fork = sheet.fork()
    try:
        set_setup(fork, setup)
    except PerfgraphError as exc:
        return f"the model refuses this configuration: {exc}"
    error = fork.error(cell)
    return f"the model's {cell} failed: {error}" if error else \
        f"the model's {cell} is not a finite number"


# --------------------------------------------------------------------------- for the dashboard


def model_curve(sheet: Sheet, concurrencies: Sequence[float] | np.ndarray,
                config: Mapping[str, float] | None = None) -> dict[str, np.ndarray]:
    """The roofline over concurrency, for plotting runs against: ``concurrency``,
    ``throughput`` (output tokens/s of one replica), ``throughput_per_gpu``, ``itl`` and
    ``ttft`` (ms), each formula evaluated once over the whole column. ``config`` sets
    other inputs (a run's ``tp``, ``isl``, ``osl``) for every point."""
    c = np.asarray(concurrencies, dtype=float)
    given = {name: np.full(len(c), float(v)) for name, v in (config or {}).items()}
    cols = sheet.evaluate_columns({**given, "concurrency": c}, len(c))
    return {"concurrency": c,
            "throughput": in_unit(sheet, cols, "throughput", "token/s"),
            "throughput_per_gpu": in_unit(sheet, cols, "throughput_per_gpu", "token/s"),
            "itl": in_unit(sheet, cols, "itl", "ms"),
            "ttft": in_unit(sheet, cols, "ttft", "ms")}


def run_points(comparisons: Iterable[Comparison]) -> dict[str, np.ndarray]:
    """The runs as points in the model curve's terms: ``concurrency``, ``throughput`` (output
    tokens/s of the whole run — a total-tokens figure converted with the run's ISL/OSL),
    ``itl`` (measured TPOT, ms), and ``label``; NaN where a run lacks the number."""
    rows = [c for c in comparisons if c.error is None]
    tpot = [c.metric("tpot") for c in rows]
    return {"concurrency": np.array([_nan(c.setup.concurrency) for c in rows]),
            "throughput": np.array([_nan(c.measured_output) for c in rows]),
            "itl": np.array([_nan(m.measured if m else None) for m in tpot]),
            "label": np.array([c.run.label for c in rows], dtype=object)}


def _nan(x: float | None) -> float:
    return math.nan if x is None else float(x)


def median_possible(comparisons: Iterable[Comparison], metric: str = "throughput",
                    ) -> float | None:
    values = [m.possible for c in comparisons if (m := c.metric(metric)) is not None
              and m.possible is not None]
    return float(np.median(values)) if values else None
