"""What ``plan`` says of the candidates it simulated for percentile SLOs: as lines, as JSON."""

from __future__ import annotations

import math
from typing import Any

from perfgraph.engine.numbers import number
from perfgraph.whatif.plan_percentiles import Held, Outcome
from perfgraph.whatif.plan_search import Result


def _describe(result: Result, row: int) -> str:
    c = result.choices(int(result.rows[row]))
    return (f"{c['engine']} {c['hardware']} {c['precision']} TP{c.get('tp', 1):g} "
            f"PP{c.get('pp', 1):g} batch {c.get('concurrency', 0):g} × "
            f"{int(result.values['deployment_replicas'][row])} replicas")


def _value(o: Outcome, name: str) -> str:
    v = o.values.get(name)
    return "—" if v is None else "∞" if math.isinf(v) else number(v, 4)


def _outcome_line(held: Held, result: Result, o: Outcome, rank: int) -> str:
    said = ", ".join(f"{s.name} {_value(o, s.name)} (≤ {number(s.limit, 4)})"
                     for s in held.slos)
    verdict = "meets" if o.meets else (o.error or "misses")
    mark = "→" if o.row == held.chosen else " "
    return f" {mark} #{rank} {_describe(result, o.row)}: {said}: {verdict}"


def _header(held: Held) -> str:
    units = {"ttft": "ms", "itl": "ms", "tpot": "ms", "e2e": "s"}
    slos = ", ".join(f"{s.name} ≤ {number(s.limit, 4)} {units[s.metric]}" for s in held.slos)
    skipped = f"; {held.skipped} disaggregated passed over (not simulated)" \
        if held.skipped else ""
    return (f"held to percentile SLOs ({slos}): simulated {len(held.outcomes)} candidates, "
            f"best first, each the whole deployment at the rate (its replicas behind a "
            f"least-outstanding router; disaggregated, its two pools){skipped}")


def lines(held: Held, result: Result) -> str:
    out = [_header(held)]
    out += [_outcome_line(held, result, o, i + 1) for i, o in enumerate(held.outcomes)]
    return "\n".join(out)


def none_met(held: Held, result: Result) -> str:
    return "\n".join([f"no simulated candidate meets the percentile SLOs "
                      f"({len(held.outcomes)} simulated; --simulate N tries more)",
                      lines(held, result)])


def as_json(held: Held, result: Result) -> dict[str, Any]:
    return {"slos": {s.name: s.limit for s in held.slos},
            "simulated": len(held.outcomes), "skipped_disaggregated": held.skipped,
            "chosen_rank": next((i + 1 for i, o in enumerate(held.outcomes)
                                 if o.row == held.chosen), None),
            "candidates": [{"plan": _describe(result, o.row), "meets": o.meets,
                            "error": o.error,
                            "percentiles": {k: (None if math.isinf(v) else v)
                                            for k, v in o.values.items()}}
                           for o in held.outcomes]}
