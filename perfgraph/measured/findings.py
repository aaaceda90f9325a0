"""What a measured run's numbers show, and the levers for it (seed: llm-inference-performance
§ Measuring and § Levers by symptom).

Symptoms read off a comparison: TTFT far above the roofline prefill (requests queued), a p99
ITL far above the median (head-of-line blocking), MBU under the seed's healthy 60%, and a run
that beats the roofline (the definitions or the inputs differ).  The symptoms and levers of
:mod:`perfgraph.whatif.lever_advice` for the run's configuration (with the measured MBU pinned) are
added, each lever's effect computed by that module on a fork of the sheet; where that advice
covers a symptom found here too (``SAME_SYMPTOM``: MBU under 60%), only the levers module's
advice is kept, so that each symptom is said once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from perfgraph.engine.numbers import number, quantity
from perfgraph.engine.sheet import Sheet
from perfgraph.engine.units import unit
from perfgraph.errors import PerfgraphError
from perfgraph.measured.adapters import MeasuredRun
from perfgraph.measured.open_loop import arrival_slack
from perfgraph.measured.run_arrivals import set_setup
from perfgraph.whatif import lever_advice as levers

if TYPE_CHECKING:
    from perfgraph.measured.metrics import MetricComparison
    from perfgraph.measured.setup import RunSetup

#: TTFT above this many times the roofline prefill, and in the seconds (over this floor, in
#: ms): the request waited before its prefill. Under the floor, fixed per-request costs (HTTP,
#: tokenisation, scheduling) can explain a large ratio on a short prompt.
QUEUED_TTFT_FACTOR = 10.0
QUEUED_TTFT_FLOOR_MS = 500.0
#: p99 ITL/TPOT above this many times the median (or mean): some steps stalled.
HOL_P99_FACTOR = 3.0
#: MBU below this: decode leaves bandwidth unused (seed: 60–80% is healthy).
MBU_HEALTHY = 0.60

LEVERS = {
    "queued": "hold fewer requests in flight (max concurrency, admission control) or add "
              "prefill capacity: more replicas, or a disaggregated prefill pool",
    "head-of-line": "chunked prefill with smaller chunks caps the stall a long prompt causes; "
                    "disaggregating prefill from decode removes it",
    "low-mbu": "look for time between kernels (nsys timeline; CUDA Graphs), TP collectives "
               "that do not overlap (fewer TP ranks), or run a larger batch",
    "beats-roofline": "check the run's TP, precision and ISL/OSL, and whether prefix caching "
                      "skipped prefill work the model counts",
    "slower-than-predicted": "see the term named: it is where the calibrated model puts the "
                             "most time beyond the roofline at this configuration",
}
#: TPOT this far above the calibrated prediction is a finding (the held-out median is ~5%).
PREDICTED_TPOT_FACTOR = 1.15
#: The parts of a predicted decode step beyond the weights' GEMMs (cells of realistic.toml
#: and achievable.toml), each with what to try when a run is slow there.
STEP_TERMS = {
    "tp_comm_step_time": ("TP communication", "fewer TP ranks per replica (more replicas), "
                          "or fused / custom all-reduce kernels"),
    "seq_overhead_step_time": ("per-sequence overhead (sampling, detokenisation, scheduling)",
                               "asynchronous scheduling, fewer sequences per replica"),
    "step_overhead": ("fixed per-step overhead (launches, scheduling)",
                      "CUDA Graphs for every batch size run, asynchronous scheduling"),
    "step_attention_time": ("attention over the KV cache", "an FP8 KV cache, prefix caching"),
}


TITLES = {
    "queued": f"requests queued (TTFT ≥ {QUEUED_TTFT_FACTOR:g}× the roofline prefill and "
              f"≥ {QUEUED_TTFT_FLOOR_MS:g} ms)",
    "head-of-line": f"head-of-line blocking (p99 TPOT or ITL ≥ {HOL_P99_FACTOR:g}× the median)",
    "low-mbu": f"MBU under {MBU_HEALTHY:.0%}, the seed's healthy floor",
    "beats-roofline": "faster than the model (the roofline, unless calibrated)",
    "slower-than-predicted": f"TPOT ≥ {PREDICTED_TPOT_FACTOR:g}× the calibrated prediction",
}


#: Our finding → the levers module's symptom id that says the same thing.
SAME_SYMPTOM = {"low-mbu": "mbu_low"}


@dataclass(frozen=True)
class Finding:
    id: str
    title: str  # the symptom (the same for every run with this finding)
    text: str  # what this run's numbers show
    lever: str  # what to do about it (the same for every run with this finding)
    effect: str = ""  # what the lever would do to the model at this run's configuration
    symptom: str | None = None  # the levers module's symptom id, for its advice


def findings(run: MeasuredRun, setup: RunSetup, metrics: Sequence[MetricComparison],
             mbu: float | None, headroom: float | None,
             sheet: Sheet | None = None,
             terms: dict[str, float] | None = None) -> tuple[Finding, ...]:
    """What the run's numbers show; ``terms`` are the calibrated model's step terms (ms) at
    the run's configuration, when a calibration was given."""
    by_name = {m.metric: m for m in metrics}
    found = [_queued(by_name.get("ttft"), setup), _head_of_line(run),
             _low_mbu(mbu, headroom), _beats(metrics, run, setup),
             _slower_than_predicted(by_name.get("tpot"), setup, terms or {})]
    out = [f for f in found if f is not None]
    if sheet is not None:
        advice = model_levers(sheet, setup, mbu)
        covered = {f.symptom for f in advice}
        out = [f for f in out if SAME_SYMPTOM.get(f.id) not in covered] + advice
    return tuple(out)


def _queued(m: MetricComparison | None, setup: RunSetup) -> Finding | None:
    # ratio is None whenever measured or modelled is; the explicit checks narrow for mypy
    if m is None or m.measured is None or m.modelled is None or m.ratio is None \
            or m.ratio < QUEUED_TTFT_FACTOR or m.measured < QUEUED_TTFT_FLOOR_MS:
        return None
    return _finding("queued", f"TTFT {quantity(m.measured, 'ms')} is {m.ratio:.0f}× the "
                    f"roofline prefill ({quantity(m.modelled, 'ms')}) at concurrency "
                    f"{number(setup.concurrency or 0)}: requests queued before their prefill")


def _slower_than_predicted(m: MetricComparison | None, setup: RunSetup,
                           terms: dict[str, float]) -> Finding | None:
    """TPOT well above the calibrated prediction: name the largest part of the predicted step
    beyond the weights' GEMMs, the likeliest place the run lost more than the model says."""
    if m is None or m.vs_predicted is None or m.predicted is None \
            or 1 + m.vs_predicted < PREDICTED_TPOT_FACTOR or not terms:
        return None
    cell, ms = max(terms.items(), key=lambda kv: kv[1])
    what, lever = STEP_TERMS[cell]
    return Finding("slower-than-predicted", TITLES["slower-than-predicted"],
                   f"TPOT {quantity(m.measured or 0, 'ms')} is {100 * m.vs_predicted:.0f}% "
                   f"above the calibrated {quantity(m.predicted, 'ms')} at TP"
                   f"{number(setup.tp or 0)}, batch {number(setup.concurrency or 0)}; of "
                   f"the predicted step's parts beyond the weights' GEMMs the largest is {what} "
                   f"({quantity(ms, 'ms')})", lever)


def _head_of_line(run: MeasuredRun) -> Finding | None:
    for base in ("tpot", "itl"):
        tail = run.metrics.get(f"{base}_p99")
        middle = run.metrics.get(f"{base}_median") or run.metrics.get(f"{base}_p50") \
            or run.metrics.get(base)
        if tail is None or middle is None or middle.value <= 0:
            continue
        ratio = tail.value / middle.value
        if ratio < HOL_P99_FACTOR:
            return None
        return _finding("head-of-line", f"p99 {base.upper()} {quantity(tail.value, 'ms')} "
                        f"is {ratio:.1f}× the {middle.statistic} "
                        f"({quantity(middle.value, 'ms')}): some decode steps stall behind "
                        "prefills")
    return None


def _low_mbu(mbu: float | None, headroom: float | None) -> Finding | None:
    if mbu is None or mbu >= MBU_HEALTHY:
        return None
    more = f"; decode could go up to {headroom:.1f}× faster" if headroom else ""
    return _finding("low-mbu", f"MBU {_pct(mbu)}{more}")


def _beats(metrics: Sequence[MetricComparison], run: MeasuredRun,
           setup: RunSetup) -> Finding | None:
    """Metrics over 100% of possible; a paced run's throughput only beyond its Poisson draw
    (``arrival_slack``: it is held against the λ × OSL it was offered on average)."""
    slack = arrival_slack(setup.arrivals, run.completed)
    over = [m for m in metrics if m.possible is not None
            and m.possible > 1.0 + (slack if m.metric == "throughput" else 0.0)]
    if not over:
        return None
    names = ", ".join(f"{m.metric} {_pct(m.possible)} of possible" for m in over)
    return _finding("beats-roofline", f"the run beats the model ({names}): the model's "
                    "inputs or the metric's definition differ from the run's")


def _finding(kind: str, text: str) -> Finding:
    return Finding(kind, TITLES[kind], text, LEVERS[kind])


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{number(100 * x, 3)}%"


def model_levers(sheet: Sheet, setup: RunSetup, mbu: float | None) -> list[Finding]:
    """``perfgraph.whatif.lever_advice``' advice for the run's configuration (``set_setup``:
    a paced run's rate and a burst's count too), its MBU pinned."""
    fork = sheet.fork()
    try:
        set_setup(fork, setup)
        if mbu is not None:
            fork.set("mbu", mbu / unit(fork.declaration("mbu").unit).factor)
        advice = levers.diagnose(fork)
    except PerfgraphError:
        return []
    return [Finding(f"lever:{a.lever.id}", a.symptom.title, a.symptom.title,
                    f"{a.lever.title} (trade-off: {a.lever.tradeoff})", _effects(a.effects),
                    symptom=getattr(a.symptom, "id", None))
            for a in advice if a.error is None]


def _effects(effects) -> str:
    return ", ".join(f"{e.cell} {quantity(e.before, e.unit)} → {quantity(e.after, e.unit)}"
                     for e in effects if e.before is not None and e.after is not None)
