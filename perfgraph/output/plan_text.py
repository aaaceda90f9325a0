"""``perfgraph plan``'s answer as text: the table (``--format table``) and Markdown
(``--format markdown``) of the best plan, runners-up, reasons and frontier; the no-plan lines
(which SLO is out of reach, then each family's best); and what the simulations of percentile
SLOs said. Every number is a field of :mod:`perfgraph.whatif.plan_answer`."""

from __future__ import annotations

import math

from perfgraph.engine.numbers import number
from perfgraph.whatif.plan_answer import (
    DisaggregatedPools,
    FamilyReach,
    HoldReport,
    NoPlan,
    PlanCandidate,
    PlanFound,
    SimulatedCandidate,
)
from perfgraph.whatif.plan_report import NAMES, percent
from perfgraph.whatif.plan_search import SERVED

NO_QUEUE_NOTE = "TTFT without a prefill queue (prefill_queueing set off)"
QUEUE_NOTE = ("TTFT includes the prefill queue wait at the rate (M/D/1 per prefill server: "
              "prefill_queue_wait, in ttft_at_rate)")
HEAD = ("", "engine", "hardware", "prec", "tp", "pp", "mode", "batch", "replicas", "GPUs",
        "TTFT ms", "ITL ms", "E2E s", "tok/s/GPU", "tok/s/user", "$/Mtok in", "$/Mtok out",
        "$/Mtok all", "J/tok")
#: served cell → its name in a family's line
LABELS = {cell: NAMES[n] for n, cell in SERVED.items()}
#: a percentile SLO's metric → the unit of its limit
UNITS = {"ttft": "ms", "itl": "ms", "tpot": "ms", "e2e": "s"}


def queue_note(ans: PlanFound) -> str:
    return QUEUE_NOTE if ans.question.ttft_includes_prefill_queue else NO_QUEUE_NOTE


def skipped_line(unpriced: tuple[str, ...]) -> list[str]:
    """The accelerators a cost search left out, in one line (none: no line)."""
    if not unpriced:
        return []
    return [f"skipped for --objective cost, no price (prices.toml or --prices FILE): "
            f"{', '.join(unpriced)}"]


def table(ans: PlanFound) -> str:
    lines = [f"searched {ans.searched:,} candidates; {ans.feasible:,} meet the SLOs",
             *skipped_line(ans.skipped_unpriced), queue_note(ans), "", _row_header()]
    lines += [_row(r, k == 0) for k, r in enumerate((ans.best, *ans.runners_up))]
    lines += ["", "why the best plan:"] + [f"  {r}" for r in ans.reasons]
    lines += ["", f"Pareto frontier (tok/s per user vs tok/s per GPU), {len(ans.frontier)} "
              "plans:", _row_header()] + [_row(r, False) for r in ans.frontier]
    return "\n".join(lines)


def markdown(ans: PlanFound) -> str:
    out = [f"Searched {ans.searched:,} candidates; {ans.feasible:,} meet the SLOs.",
           *[f"{s}." for s in skipped_line(ans.skipped_unpriced)], f"{queue_note(ans)}.", "",
           "| " + " | ".join(h or "rank" for h in HEAD) + " |",
           "|" + "---|" * len(HEAD)]
    out += ["| " + " | ".join(_row(r, k == 0).split()) + " |"
            for k, r in enumerate((ans.best, *ans.runners_up))]
    out += ["", *[f"- {r}" for r in ans.reasons]]
    return "\n".join(out)


def _row_header() -> str:
    return "  ".join(f"{h:>9}" for h in HEAD)


def replicas_text(plan: PlanCandidate) -> str:
    """``3`` replicas, or a disaggregated plan's pools as ``1P3D``."""
    pools = plan.pools
    if isinstance(pools, DisaggregatedPools):
        return f"{pools.prefill.replicas}P{pools.decode.replicas}D"
    return str(pools.replicas)


def _row(p: PlanCandidate, best: bool) -> str:
    cost_in, cost_out, cost_all = p.cost
    cells = ("best" if best else "", p.engine, p.hardware, p.precision, int(p.tp), int(p.pp),
             "disagg" if p.disaggregated else "agg", int(p.batch), replicas_text(p),
             int(p.gpus), number(p.ttft, 4), number(p.itl, 4), number(p.e2e / 1000, 4),
             number(p.per_gpu, 4), number(p.per_user, 4), number(cost_in, 3),
             number(cost_out, 3), number(cost_all, 3), number(p.energy_per_token, 3))
    return "  ".join(f"{x!s:>9}" for x in cells)


# ------------------------------------------------------------------------- no plan
def no_plan(ans: NoPlan) -> str:
    """Exit 1: the SLO out of reach, each family's best, the accelerators left unpriced."""
    return "\n".join([ans.unreachable, *family_lines(ans.families),
                      *skipped_line(ans.skipped_unpriced)])


def family_lines(families: tuple[FamilyReach, ...]) -> list[str]:
    """One line per family: its best ITL/TTFT/E2E against each SLO asked (the engine named
    when several were searched)."""
    engines = len({f.engine for f in families}) > 1
    lines = []
    for f in families:
        name = (f"{f.engine} · " if engines else "") + \
            f"{f.hardware} {f.precision} {'disagg' if f.disaggregated else 'agg'}"
        if not f.fits:
            lines.append(f"  {name}: holds no searched batch in memory (or its engine "
                         "would not start)")
            continue
        parts = [f"best {LABELS[b.cell]} {number(b.reached.value * _scale(b.slo.unit), 4)} "
                 f"{b.slo.unit} (SLO {number(b.slo.value, 4)} {b.slo.unit}, "
                 f"{percent(b.ratio)})" for b in f.best]
        lines.append(f"  {name}: " + "; ".join(parts))
    return lines


def _scale(unit: str) -> float:
    return 1e-3 if unit == "s" else 1.0


# ------------------------------------------------------------------ percentile SLOs
def hold_lines(rep: HoldReport) -> str:
    """The percentile SLOs, then each simulated candidate (→ marks the one chosen)."""
    out = [_hold_header(rep)]
    out += [_outcome_line(rep, c, i + 1) for i, c in enumerate(rep.candidates)]
    return "\n".join(out)


def hold_none_met(rep: HoldReport) -> str:
    return "\n".join([f"no simulated candidate meets the percentile SLOs "
                      f"({len(rep.candidates)} simulated; --simulate N tries more)",
                      hold_lines(rep)])


def _hold_header(rep: HoldReport) -> str:
    slos = ", ".join(f"{name} ≤ {number(limit, 4)} {UNITS[name.split('.', 1)[0]]}"
                     for name, limit in rep.slos.items())
    skipped = f"; {rep.skipped_disaggregated} disaggregated passed over (not simulated)" \
        if rep.skipped_disaggregated else ""
    return (f"held to percentile SLOs ({slos}): simulated {len(rep.candidates)} candidates, "
            f"best first, each the whole deployment at the rate (its replicas behind a "
            f"least-outstanding router; disaggregated, its two pools){skipped}")


def _outcome_line(rep: HoldReport, c: SimulatedCandidate, rank: int) -> str:
    said = ", ".join(f"{name} {_value(c, name)} (≤ {number(limit, 4)})"
                     for name, limit in rep.slos.items())
    verdict = "meets" if c.meets else (c.error or "misses")
    mark = "→" if rank == rep.chosen_rank else " "
    return f" {mark} #{rank} {c.plan}: {said}: {verdict}"


def _value(c: SimulatedCandidate, name: str) -> str:
    v = c.percentiles.get(name)
    return "—" if v is None else "∞" if math.isinf(v) else number(v, 4)
