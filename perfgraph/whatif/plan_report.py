"""What ``perfgraph plan`` answers, built from the search's result as the dataclasses of
:mod:`perfgraph.whatif.plan_answer`: the best plan, runners-up, the Pareto frontier, the
reasons the winner wins (the prefill queue at the rate among them), and when nothing meets
the SLOs the one line that says which is out of reach, then the best each family reached.
Rendering them is ``output/plan_text.py``'s and ``output/plan_json.py``'s."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from perfgraph.engine.numbers import number
from perfgraph.whatif import grid
from perfgraph.whatif.plan_answer import (
    AskedQuestion,
    FamilyReach,
    NoPlan,
    PlanCandidate,
    PlanFound,
    SloReach,
    UnitValue,
)
from perfgraph.whatif.plan_search import (
    OBJECTIVES,
    SERVED,
    SLO_CELLS,
    Result,
    constraint_ratios,
    ranked,
)

FAMILY = ("engine", "hardware", "precision", "tp", "pp", "disaggregated")
#: The cells a queueing reason quotes, in the order it quotes them.
QUEUE = ("prefill_servers", "prefill_service_time", "prefill_utilisation",
         "prefill_queue_wait", "ttft_served", "ttft_at_rate", "prefill_replicas",
         "prefill_pool_replicas")
#: The cells a "would not start" reason quotes.
START = ("model_fits", "engine_starts", "kv_memory", "kv_start_memory", "memory_headroom",
         "startup_outside_budget", "max_context", "max_context_held")
def queueing(result: Result) -> bool:
    """Whether TTFT counts the prefill queue: ``plan`` turns it on unless ``--set`` says."""
    return bool(result.sheet is not None and result.sheet.magnitude("prefill_queueing"))


def frontier(result: Result) -> list[int]:
    """Positions of the feasible rows on the Pareto frontier of tokens/s per user against
    tokens/s per GPU (both larger is better): no other feasible row is as good on both and
    better on one. Fastest per user first."""
    user, gpu = result.values["tokens_per_s_per_user"], result.values["served_throughput_per_gpu"]
    order = np.lexsort((-gpu, -user))
    out: list[int] = []
    best_gpu = -math.inf
    for i in order:
        if gpu[i] > best_gpu:
            out.append(int(i))
            best_gpu = float(gpu[i])
    return out


def runners_up(result: Result, order: np.ndarray, top: int) -> list[int]:
    """The best row of each other family (accelerator, precision, TP, PP, disaggregation)."""
    seen: set[tuple[Any, ...]] = set()
    out: list[int] = []
    for i in order:
        choice = result.choices(int(result.rows[i]))
        key = tuple(choice[k] for k in FAMILY)
        if key in seen:
            continue
        seen.add(key)
        out.append(int(i))
        if len(out) > top:
            break
    return out[1:]


def candidate(result: Result, i: int) -> PlanCandidate:
    """Feasible row ``i`` (a position in ``result.rows``) as a plan."""
    values = {n: UnitValue(float(result.values[n][i]), result.units[n]) for n in result.values}
    return PlanCandidate.of(result.choices(int(result.rows[i])), values)


def asked(result: Result, full: bool = True) -> AskedQuestion:
    """The question as the answer repeats it (``full``: with the objective, model and
    workload, which the no-plan answer leaves out)."""
    q = result.question
    slos = {SLO_CELLS[n]: UnitValue(v, _slo_unit(result, n)) for n, v in q.slos.items()}
    rate = UnitValue(q.rate, "request/s")
    if not full:
        return AskedQuestion(slos, rate, queueing(result))
    return AskedQuestion(slos, rate, queueing(result), q.objective, result.spec.model,
                         result.spec.workload)


def answer(result: Result, top: int, best: int | None = None) -> PlanFound:
    """The plan: ``best`` (a feasible row's position; default the objective's first), the
    frontier and the runners-up."""
    order = result.order()
    best = int(order[0]) if best is None else best
    return PlanFound(asked(result), result.searched, result.feasible, tuple(result.unpriced),
                     candidate(result, best), tuple(reasons(result, best)),
                     tuple(candidate(result, i) for i in frontier(result)),
                     tuple(candidate(result, i) for i in runners_up(result, order, top)))


def _slo_unit(result: Result, name: str) -> str:
    return {"ttft": "ms", "itl": "ms", "e2e": "s"}[name]


NAMES = {"ttft": "TTFT", "itl": "ITL", "e2e": "E2E", "kv": "KV memory (batch ÷ what KV holds)"}
BETTER = {"gpus": "fewer GPUs", "cost": "a lower $/Mtok", "energy": "fewer J/token",
          "throughput_per_gpu": "more tok/s per GPU"}


def reasons(result: Result, i: int) -> list[str]:
    """What sets the winner: the replicas the rate needs, each constraint's headroom, and
    what the nearest candidate with a better objective missed by."""
    q, v = result.question, result.values
    row = int(result.rows[i])
    used = {k: x for k, x in constraint_ratios(result, row).items() if k != "fits"}
    c = result.choices(row)
    tight = max(used, key=lambda k: used[k])
    gpus, reps = int(v["deployment_gpus"][i]), int(v["deployment_replicas"][i])
    out = [f"{q.rate_text} needs {reps} replica(s) of {int(v['n_gpus'][i])} GPU(s) "
           f"(tp={_fmt(c['tp'])}, pp={_fmt(c['pp'])}): {gpus} GPUs in all",
           f"tightest constraint: {NAMES[tight]} at {number(100 * used[tight], 3)}% of its "
           f"limit at batch {_fmt(c['concurrency'])}"]
    out += [f"{NAMES[k]}: {number(100 * u, 3)}% of its limit" for k, u in used.items()
            if k != tight]
    if tight == "ttft" or c["disaggregated"]:
        out += queue_reason(result, row, q.rate_text, binding=tight == "ttft")
    mine = float(ranked(v[OBJECTIVES[q.objective][0]][i:i + 1], q.objective)[0])
    better = np.flatnonzero(result.objective_all < np.float32(mine) - 1e-6 * abs(mine))
    if not better.size:
        return [*out, f"no searched candidate has {BETTER[q.objective]}"]
    j = int(better[np.argmin(result.violation_all[better])])
    text = ", ".join(f"{k}={_fmt(x)}" for k, x in result.choices(j).items())
    ratios = constraint_ratios(result, j)
    if not ratios.pop("fits"):
        why = start_reason(row_numbers(result, j, START))
        return [*out, f"no candidate with {BETTER[q.objective]} can hold the model" if not why
                else f"nearest candidate with {BETTER[q.objective]} ({text}) would not start: "
                f"{why}"]
    missed = "; ".join(f"{NAMES[k]} at {percent(r)} of its limit"
                       for k, r in sorted(ratios.items(), key=lambda kv: -kv[1]) if r > 1)
    out.append(f"nearest candidate with {BETTER[q.objective]} ({text}) misses: {missed}")
    if ratios.get("ttft", 0.0) > 1:
        out += queue_reason(result, j, q.rate_text, binding=True, missed=True)
    return out


def queue_numbers(result: Result, row: int) -> dict[str, float]:
    """The prefill queue cells at a searched row (its engine's sheet)."""
    return row_numbers(result, row, QUEUE)


def row_numbers(result: Result, row: int, cells: tuple[str, ...]) -> dict[str, float]:
    """``cells`` at a searched row, from its engine's sheet."""
    cols = result.sheet_at(row).evaluate_columns(
        grid.grid_columns(result.axes, row, row + 1), 1, cells)
    return {n: float(cols[n][0]) for n in cells}


def start_reason(v: dict[str, float]) -> str:
    """Why the engine would refuse to start a candidate whose weights fit (the START cells'
    values), in the engine's terms; empty where it starts or the weights do not fit."""
    if v["engine_starts"] or not v["model_fits"]:
        return ""
    if v["kv_memory"] <= 0:
        return ("the weights and the engine's start-up reserve leave no memory for the KV "
                "cache")
    if v["kv_memory"] < v["kv_start_memory"]:
        return (f"its KV budget, {number(v['kv_memory'], 3)} GB, is less than the "
                f"{number(v['kv_start_memory'], 3)} GB the engine needs at start-up (one "
                f"{int(v['max_context'])}-token sequence where it checks max_context; the "
                f"budget holds {int(v['max_context_held'])} tokens)")
    return (f"what it allocates after sizing the KV (CUDA graphs, activations: "
            f"{number(v['startup_outside_budget'], 3)} GB per GPU) exceeds the "
            f"{number(v['memory_headroom'], 3)} GB each GPU has left")


def queue_reason(result: Result, row: int, rate: str, binding: bool,
                 missed: bool = False) -> list[str]:
    """What the prefill queue at the rate does to a row's TTFT, in the graph's numbers:
    prompts arriving at ``rate`` share the prefill servers, each ρ busy; the M/D/1 wait
    grows as ρ → 1. Said when TTFT binds (or is what a candidate missed) and the queue is
    part of it, and for a disaggregated pool enlarged to keep the wait within the SLO."""
    v = queue_numbers(result, row)
    slo = result.question.slos.get("ttft")
    out: list[str] = []
    rho, wait = v["prefill_utilisation"], v["prefill_queue_wait"]
    if binding and wait > 0:
        who = "it" if missed else "the winner"
        limit = f" of the {result.question.slo_texts['ttft']} SLO" if slo else ""
        share = (f"; without the queue TTFT would be {number(v['ttft_served'], 4)} ms, within "
                 "the SLO" if missed and slo and v["ttft_served"] <= slo else "")
        rho_text = "≥ 100% (the queue grows without bound)" if rho >= 1 else percent(rho)
        out.append(f"TTFT from prefill queueing: at {rate} the prompts share "
                   f"{int(v['prefill_servers'])} prefill server(s) of "
                   f"{number(v['prefill_service_time'], 4)} ms per prompt, each busy "
                   f"ρ = {rho_text}; the M/D/1 wait ρ·S/(2(1−ρ)) adds "
                   f"{number(wait, 4)} ms, so {who} reaches TTFT "
                   f"{number(v['ttft_at_rate'], 4)} ms{limit}{share}")
    disagg = bool(result.choices(row)["disaggregated"])
    if disagg and v["prefill_pool_replicas"] > v["prefill_replicas"] and not missed:
        out.append(f"prefill pool sized for the queue: {int(v['prefill_pool_replicas'])} "
                   f"replicas, not the {int(v['prefill_replicas'])} that carry the prompt "
                   f"tokens/s, keep the wait at {number(wait, 4)} ms (ρ = {percent(rho)})")
    return out


def percent(ratio: float) -> str:
    return f"{number(100 * ratio, 3)}%" if math.isfinite(ratio) else "unbounded"


def _fmt(x: object) -> str:
    return number(x, 4) if isinstance(x, float) else str(x)


def unreachable(result: Result) -> str:
    """One line: which SLO no candidate (that fits in memory) meets, and the best reached."""
    q = result.question
    units = {"ttft": "ms", "itl": "ms", "e2e": "s"}
    scale = {"ttft": 1.0, "itl": 1.0, "e2e": 1e-3}
    for name in ("itl", "ttft", "e2e"):
        if name in q.slos and result.best_reached[name] * scale[name] > q.slos[name]:
            best = result.best_reached[name] * scale[name]
            return (f"no plan: {name}={q.slo_texts[name]} is out of reach; the best "
                    f"{name.upper()} any of {result.searched:,} candidates reached is "
                    f"{number(best, 4)} {units[name]}")
    return (f"no plan: no one of {result.searched:,} candidates meets every SLO at "
            f"{q.rate_text} together (each alone is reachable)")


def families(result: Result) -> tuple[FamilyReach, ...]:
    """Each family (engine, accelerator × precision, aggregated or disaggregated): the best
    each asked SLO's served value reached there (rows that fit in memory; each best at its
    own candidate) with the SLO, closest to the SLOs first; one that never fits, last."""
    q = result.question
    out: list[FamilyReach] = []
    for k, (engine, label, disagg) in enumerate(result.families):
        if not result.runs(engine, label):  # no candidate: the engine does not run there
            continue
        hardware, precision = label.split("@")
        best = tuple(SloReach(SERVED[n], UnitValue(float(result.family_best[n][k]), "ms"),
                              UnitValue(v, _slo_unit(result, n))) for n, v in q.slos.items())
        out.append(FamilyReach(engine, hardware, precision, disagg,
                               bool(np.isfinite(result.family_best["itl"][k])), best))
    return tuple(sorted(out, key=lambda f: (not f.fits, max(
        [b.ratio for b in f.best], default=0.0))))


def no_plan(result: Result) -> NoPlan:
    """Exit 1: the question, the counts, the one line, and the families."""
    return NoPlan(asked(result, full=False), result.searched, unreachable(result),
                  tuple(result.unpriced),
                  {SERVED[n]: UnitValue(v, "ms") for n, v in result.best_reached.items()},
                  families(result))
