"""``compare --plan`` as text and as JSON: SLO by SLO met or missed, and each prediction's
error (:mod:`perfgraph.measured.plan_check`)."""

from __future__ import annotations

from typing import Any

from perfgraph.engine.numbers import number
from perfgraph.measured.plan_check import Miss, PlanCheck, Promise, SloCheck


def _value(x: float | None, unit: str) -> str:
    return "not in the file" if x is None else f"{number(x, 4)} {unit}"


def _verdict(s: SloCheck) -> str:
    if s.measured is None:
        return "not measured (the file has no such statistic)"
    share = f"{number(100 * s.measured / s.limit, 3)}% of the limit"
    if s.met:
        return f"met ({share})"
    return f"MISSED by {number(s.measured - s.limit, 4)} ms ({share})"


def _error(m: Miss) -> str:
    e = m.error
    return "—" if e is None else f"{100 * e:+.1f}%"


def _rows(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head) - 1)]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1]
            for r in [head, *rows]]


def table(promise: Promise, checks: list[PlanCheck]) -> str:
    q = [f"at {number(promise.rate, 4)} request/s"]
    q += [f"ISL {promise.isl:g}, OSL {promise.osl:g}"] if promise.isl and promise.osl else []
    out = [f"plan ({promise.source}): {promise.summary}; {', '.join(q)}"]
    for c in checks:
        run = c.run
        out += ["", f"run {run.label} ({run.format}): "
                    f"{c.run.completed or '?'} requests, mean ISL {_g(run.isl)}, "
                    f"OSL {_g(run.osl)}"]
        out += [f"  note: {x}: the predictions are for the plan's question" for x in c.caveats]
        out += _rows(("SLO", "promised", "measured", "verdict"),
                     [(s.name, f"≤ {number(s.limit, 4)} ms", f"{s.reads} "
                       f"{_value(s.measured, 'ms')}", _verdict(s)) for s in c.slos])
        out += _rows(("prediction", "predicted", "measured", "error (measured ÷ predicted − 1)"),
                     [(m.label, _value(m.predicted, m.unit), _value(m.measured, m.unit),
                       _error(m)) for m in c.misses])
    met = all(c.all_met for c in checks)
    out += ["", "every SLO met" if met else "at least one SLO missed (exit 1)"]
    return "\n".join(out) + "\n"


def _g(x: float | None) -> str:
    return "?" if x is None else f"{x:g}"


def as_json(promise: Promise, checks: list[PlanCheck]) -> dict[str, Any]:
    return {"plan": {"source": promise.source, "summary": promise.summary,
                     "request_rate": promise.rate, "isl": promise.isl, "osl": promise.osl},
            "runs": [{"source": c.run.source, "label": c.run.label, "all_met": c.all_met,
                      "slos": [{"slo": s.name, "reads": s.reads, "limit_ms": s.limit,
                                "measured_ms": s.measured, "met": s.met} for s in c.slos],
                      "predictions": [{"metric": m.metric, "unit": m.unit,
                                       "predicted": m.predicted, "measured": m.measured,
                                       "error": m.error} for m in c.misses],
                      "caveats": list(c.caveats)} for c in checks],
            "all_met": all(c.all_met for c in checks)}
