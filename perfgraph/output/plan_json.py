"""``perfgraph plan --format json``: the answer's dataclasses
(:mod:`perfgraph.whatif.plan_answer`) as the JSON documents ``plan`` prints and
``compare --plan`` and the dashboard read back (``plan_answer.from_json``). Keys keep their
order; a float is written as it is (an unreached latency: ``Infinity``), a simulated
percentile that grew without bound as ``null``."""

from __future__ import annotations

import json
import math
from typing import Any

from perfgraph.output import plan_pairs_report
from perfgraph.whatif.plan_answer import (
    AskedQuestion,
    FamilyReach,
    HoldReport,
    NoPlan,
    PlanBenchmark,
    PlanCandidate,
    PlanFound,
    UnitValue,
)

#: what the answer says when no simulated candidate meets the percentile SLOs
HOLD_UNMET = "no simulated candidate meets the percentile SLOs"


def dumps(doc: dict[str, Any]) -> str:
    """A document as ``plan`` prints it."""
    return json.dumps(doc, indent=2)


def found_json(ans: PlanFound) -> dict[str, Any]:
    """The answer with a plan; ``simulated``, ``prediction`` and ``benchmark`` where set."""
    doc: dict[str, Any] = {
        "question": question_json(ans.question), "searched": ans.searched,
        "feasible": ans.feasible, "skipped_unpriced": list(ans.skipped_unpriced),
        "best": candidate_json(ans.best), "reasons": list(ans.reasons),
        "frontier": [candidate_json(p) for p in ans.frontier],
        "runners_up": [candidate_json(p) for p in ans.runners_up]}
    if ans.mixed_pairs is not None:
        doc["mixed_pairs"] = plan_pairs_report.as_json(ans.mixed_pairs)
    if ans.simulated is not None:
        doc["simulated"] = hold_json(ans.simulated)
    if ans.prediction is not None:
        doc["prediction"] = ans.prediction
    if ans.benchmark is not None:
        doc["benchmark"] = benchmark_json(ans.benchmark)
    return doc


def no_plan_json(ans: NoPlan) -> dict[str, Any]:
    """Exit 1 as JSON: the question, the counts, the one line, and the families."""
    return {"question": question_json(ans.question, full=False), "searched": ans.searched,
            "feasible": 0,
            "unreachable": ans.unreachable, "skipped_unpriced": list(ans.skipped_unpriced),
            "best_reached": {k: unit_value(v) for k, v in ans.best_reached.items()},
            "families": [family_json(f) for f in ans.families]}


def hold_unmet_json(rep: HoldReport) -> dict[str, Any]:
    """Exit 1 as JSON: no simulated candidate met the percentile SLOs."""
    return {"unreachable": HOLD_UNMET, "simulated": hold_json(rep)}


def unit_value(v: UnitValue) -> dict[str, Any]:
    return {"value": v.value, "unit": v.unit}


def question_json(q: AskedQuestion, full: bool = True) -> dict[str, Any]:
    """The question as the answer repeats it; the no-plan answer (not ``full``) leaves out
    the objective, the model and the workload."""
    doc: dict[str, Any] = {"slos": {k: unit_value(v) for k, v in q.slos.items()},
                           "request_rate": unit_value(q.request_rate)}
    if full:
        doc.update(objective=q.objective, model=q.model, workload=q.workload)
    if q.ttft_includes_prefill_queue is not None:
        doc["ttft_includes_prefill_queue"] = q.ttft_includes_prefill_queue
    return doc


def candidate_json(p: PlanCandidate) -> dict[str, Any]:
    return {"choices": dict(p.choices), "values": {k: unit_value(v) for k, v in p.values.items()}}


def family_json(f: FamilyReach) -> dict[str, Any]:
    best = {b.cell: {**unit_value(b.reached), "slo": unit_value(b.slo)} for b in f.best}
    return {"engine": f.engine, "hardware": f.hardware, "precision": f.precision,
            "disaggregated": f.disaggregated, "fits": f.fits, "best": best}


def hold_json(rep: HoldReport) -> dict[str, Any]:
    return {"slos": dict(rep.slos), "simulated": len(rep.candidates),
            "skipped_disaggregated": rep.skipped_disaggregated, "chosen_rank": rep.chosen_rank,
            "candidates": [{"plan": c.plan, "meets": c.meets, "error": c.error,
                            "percentiles": {k: (None if math.isinf(v) else v)
                                            for k, v in c.percentiles.items()}}
                           for c in rep.candidates]}


def benchmark_json(b: PlanBenchmark) -> dict[str, Any]:
    rate = None if b.request_rate is None else unit_value(b.request_rate)
    return {"model": b.model, "url": b.url, "isl": b.isl, "osl": b.osl, "request_rate": rate,
            "requests": b.requests, "tool": b.tool, "command": b.command, "result": b.result}
