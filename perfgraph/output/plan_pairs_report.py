"""The mixed-GPU prefill/decode pairs ``plan`` lists beside its answer
(:class:`~perfgraph.whatif.plan_pairs_answer.MixedPairs`), as ``plan --format json`` gives
them and as the text answer shows them."""

from __future__ import annotations

import math

from perfgraph.whatif.plan_pairs_answer import LATENCY_CELL, MixedPair, MixedPairs, PairPool


def as_json(ans: MixedPairs) -> dict[str, object]:
    """The pairs as ``plan --format json`` gives them (with percentile SLOs, each one's
    simulated percentiles), with the best searched plan's cost and GPUs beside them
    (``deployment_cost_rate`` $/h, ``deployment_gpus``)."""
    best = ans.best_plan
    return {"pairs": [_pair_json(p) for p in ans.pairs],
            "best_plan": None if best is None else {"deployment_cost_rate": best.cost_rate,
                                                    "deployment_gpus": best.gpus}}


def _pair_json(p: MixedPair) -> dict[str, object]:
    doc: dict[str, object] = {
        "engine": p.engine, "gpus": p.gpus, "cost_rate": {"value": p.cost_rate, "unit": "1/h"},
        "prefill": _pool_json(p.prefill, "prefill"), "decode": _pool_json(p.decode, "decode")}
    if p.simulated is not None:
        s = p.simulated
        doc["simulated"] = {"percentiles": dict(s.percentiles), "meets": s.meets,
                            "error": s.error}
    return doc


def _pool_json(pool: PairPool, role: str) -> dict[str, object]:
    return {"hardware": pool.hardware, "precision": pool.precision, "tp": pool.tp,
            "pp": pool.pp, "concurrency": pool.concurrency, "replicas": pool.replicas,
            "gpus": pool.gpus, "cost_rate": {"value": pool.cost_rate, "unit": "1/h"},
            LATENCY_CELL[role]: {"value": pool.latency, "unit": "ms"}}


def lines(ans: MixedPairs, objective: str | None) -> str:
    """The pairs for the text answer (with their simulated percentiles), and how the best
    compares with the best plan (by cost for the cost ``objective``, else by GPUs)."""
    out = ["mixed-GPU pairs (prefill pool → decode pool), best first:"]
    for p in ans.pairs:
        a, b = p.prefill, p.decode
        batch = math.nan if b.concurrency is None else b.concurrency
        out.append(f"  prefill {a.replicas} × {a.hardware} TP{a.tp:g} PP{a.pp:g} → decode "
                   f"{b.replicas} × {b.hardware} TP{b.tp:g} PP{b.pp:g} batch {batch:g} "
                   f"({a.precision}, {p.engine}): {p.gpus} GPUs, ${p.cost_rate:.2f}/h, "
                   f"TTFT {a.latency:.1f} ms, ITL {b.latency:.1f} ms")
        if p.simulated is not None:
            o = p.simulated
            got = ", ".join(f"{n} {v:.1f}" for n, v in o.percentiles.items())
            out.append(f"    simulated: {got}: {'meets' if o.meets else 'misses'} the SLOs"
                       f"{f' ({o.error})' if o.error else ''}")
    if ans.best_plan is not None and ans.pairs:
        cost = objective == "cost"
        mine = ans.best_plan.cost_rate if cost else ans.best_plan.gpus
        theirs = ans.pairs[0].cost_rate if cost else ans.pairs[0].gpus
        what = (f"${mine:.2f}/h against the best pair's ${theirs:.2f}/h" if cost else
                f"{mine:g} GPUs against the best pair's {theirs:g}")
        out.append(f"  the best plan above: {what}"
                   f"{' (the pair is better)' if theirs < mine else ''}")
    return "\n".join(out)
