"""The mixed-GPU prefill/decode pairs ``plan`` lists beside its answer
(:mod:`perfgraph.whatif.plan_pairs`), as ``plan --format json`` gives them and as the text
answer shows them."""

from __future__ import annotations

import math
from collections.abc import Sequence

from perfgraph.whatif import plan_percentiles as pp
from perfgraph.whatif.plan_pairs import Pair, PoolPick, plan_cost
from perfgraph.whatif.plan_search import Result


def as_json(result: Result, found: list[Pair],
            outcomes: Sequence[pp.Outcome] | None = None) -> dict[str, object]:
    """The pairs as ``plan --format json`` gives them (with percentile SLOs, each one's
    simulated percentiles), with the best searched plan's cost and GPUs beside them
    (``deployment_cost_rate`` $/h, ``deployment_gpus``)."""
    out = [_pair_json(result, p) for p in found]
    for row, o in zip(out, outcomes or (), strict=False):
        row["simulated"] = {"percentiles": o.values, "meets": o.meets, "error": o.error}
    return {"pairs": out, "best_plan": plan_cost(result) if result.feasible else None}


def _pair_json(result: Result, p: Pair) -> dict[str, object]:
    def pool(pick: PoolPick, latency: str) -> dict[str, object]:
        c = result.choices(pick.row)
        return {"hardware": c["hardware"], "precision": c["precision"], "tp": c["tp"],
                "pp": c.get("pp", 1.0), "concurrency": c.get("concurrency"),
                "replicas": pick.replicas, "gpus": pick.gpus,
                "cost_rate": {"value": pick.cost_rate, "unit": "1/h"},
                latency: {"value": pick.latency, "unit": "ms"}}

    return {"engine": p.engine, "gpus": p.gpus,
            "cost_rate": {"value": p.cost_rate, "unit": "1/h"},
            "prefill": pool(p.prefill, "ttft_at_rate"), "decode": pool(p.decode, "itl_worst")}


def lines(result: Result, found: list[Pair],
          outcomes: Sequence[pp.Outcome] | None = None) -> str:
    """The pairs for the text answer (with their simulated percentiles), and how the best
    compares with the best plan."""
    out = ["mixed-GPU pairs (prefill pool → decode pool), best first:"]
    sims = list(outcomes or [])
    for k, p in enumerate(found):
        a, b = result.choices(p.prefill.row), result.choices(p.decode.row)
        out.append(f"  prefill {p.prefill.replicas} × {p.prefill_hardware} TP{a['tp']:g} "
                   f"PP{a.get('pp', 1.0):g} → decode {p.decode.replicas} × "
                   f"{p.decode_hardware} TP{b['tp']:g} PP{b.get('pp', 1.0):g} batch "
                   f"{b.get('concurrency', math.nan):g} ({p.precision}, {p.engine}): "
                   f"{p.gpus} GPUs, ${p.cost_rate:.2f}/h, TTFT {p.prefill.latency:.1f} ms, "
                   f"ITL {p.decode.latency:.1f} ms")
        if k < len(sims):
            o = sims[k]
            got = ", ".join(f"{n} {v:.1f}" for n, v in o.values.items())
            out.append(f"    simulated: {got}: {'meets' if o.meets else 'misses'} the SLOs"
                       f"{f' ({o.error})' if o.error else ''}")
    if result.feasible:
        best = plan_cost(result)
        cost = result.question.objective == "cost"
        mine = best["deployment_cost_rate"] if cost else best["deployment_gpus"]
        theirs = found[0].cost_rate if cost else found[0].gpus
        what = (f"${mine:.2f}/h against the best pair's ${theirs:.2f}/h" if cost else
                f"{mine:g} GPUs against the best pair's {theirs:g}")
        out.append(f"  the best plan above: {what}"
                   f"{' (the pair is better)' if theirs < mine else ''}")
    return "\n".join(out)
