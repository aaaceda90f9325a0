"""The plan view's data, without a widget: a question asked of ``perfgraph plan``'s search
core (:mod:`perfgraph.whatif.plan_search`) and its answer as rows the view draws.

The view asks for the scenario's model and workload over every catalog accelerator, with the
plan's default axes except the batch, searched at :data:`BATCHES` (a sixth of the default's
1024 values: about 60,000 candidates, answered in well under a second, where the full space
of ~3 million takes several seconds). The answer is ``perfgraph plan``'s own
(:class:`~perfgraph.whatif.plan_answer.PlanFound`); a saved ``--format json`` answer, read back
with ``plan_answer.from_json``, renders the same (the snapshots use one).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from perfgraph.engine.sheet import Sheet
from perfgraph.scenario.loading import ScenarioSpec, load
from perfgraph.whatif.plan_answer import PlanCandidate, PlanFound, from_json
from perfgraph.whatif.plan_question import SLO_CELLS, read_quantity

#: The batch sizes the view searches (``concurrency``), about √2 apart.
BATCHES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
SEARCH = (f"concurrency={','.join(str(b) for b in BATCHES)}",)
#: Runners-up shown under the best plan.
TOP = 5
#: The SLO names the view asks for, in its order (e2e optional).
SLOS = ("ttft", "itl", "e2e")
#: Each field of the question as the view labels it.
FIELDS = {"ttft": "TTFT ≤", "itl": "ITL ≤", "e2e": "E2E ≤", "rate": "rate"}


@dataclass(frozen=True)
class PlanRow:
    """One plan as the view lists it: its rank and the plan (what it chooses, its values)."""

    rank: str  # "best", "2" …, or "front" for a frontier point
    plan: PlanCandidate

    @property
    def choices(self) -> Mapping[str, str | float]:
        return self.plan.choices

    def cells(self) -> tuple[tuple[str, str], ...]:
        """The plan's cell choices as ``--set`` pairs (hardware, precision and the engine are
        catalog choices, not cells)."""
        return tuple((k, _text(v)) for k, v in self.plan.cells)


@dataclass(frozen=True)
class PlanAnswer:
    """The search's answer: counts, the best plan and runners-up, the frontier, or a message
    (nothing met the SLOs, or the question was bad)."""

    searched: int = 0
    feasible: int = 0
    rows: tuple[PlanRow, ...] = ()
    frontier: tuple[PlanRow, ...] = ()
    question: tuple[tuple[str, str], ...] = ()  # the question as --set pairs (rate, SLOs)
    prices: Mapping[str, float] = field(default_factory=dict)
    message: str | None = None
    seconds: float = 0.0

    @classmethod
    def of(cls, ans: PlanFound, question: Sequence[tuple[str, str]],
           prices: Mapping[str, float], seconds: float = 0.0) -> PlanAnswer:
        """The view's rows from ``plan``'s answer."""
        rows = [PlanRow("best", ans.best)]
        rows += [PlanRow(str(k), r) for k, r in enumerate(ans.runners_up, 2)]
        return cls(ans.searched, ans.feasible, tuple(rows),
                   tuple(PlanRow("front", r) for r in ans.frontier),
                   tuple(question), dict(prices), None, seconds)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], question: Sequence[tuple[str, str]],
                  prices: Mapping[str, float], seconds: float = 0.0) -> PlanAnswer:
        """From a saved ``perfgraph plan --format json`` answer with a plan."""
        ans = from_json(doc)
        if not isinstance(ans, PlanFound):
            raise ValueError("the saved answer holds no plan")
        return cls.of(ans, question, prices, seconds)

    def sets(self, row: PlanRow) -> tuple[tuple[str, str], ...]:
        """What applying ``row`` sets in the sheet: the question, the choices, the price."""
        price = self.prices.get(row.plan.hardware, 0.0)
        return (*self.question, *row.cells(), ("gpu_hour_price", _text(price)))


def search_spec(spec: ScenarioSpec) -> ScenarioSpec:
    """The scenario as loaded, open to every catalog accelerator and precision."""
    return replace(spec, hardware=None, precision=None)


def search(spec: ScenarioSpec, slos: Mapping[str, str], rate: str,
           space: Sequence[str] = SEARCH) -> PlanAnswer:
    """Ask the plan search: SLOs by name (``{"ttft": "500 ms"}``; empty text: not asked)
    at ``rate``. Raises PerfgraphError on a bad question (the message names it)."""
    from perfgraph.whatif import plan_report  # the search's modules: when first asked
    from perfgraph.whatif import plan_search as plan

    start = time.perf_counter()
    asked = search_spec(spec)
    check_fields(load(asked).sheet, slos, rate)
    texts = [f"{n}={t.strip()}" for n, t in slos.items() if t.strip()]
    q = plan.question(asked, texts, rate)
    result = plan.run(asked, q, space)
    seconds = time.perf_counter() - start
    question = plan.question_sets(q)
    if result.feasible == 0:
        return PlanAnswer(result.searched, 0, question=question,
                          message=plan_report.unreachable(result), seconds=seconds)
    return PlanAnswer.of(plan_report.answer(result, TOP), question, plan.prices(),
                         time.perf_counter() - start)


def check_fields(sheet: Sheet, slos: Mapping[str, str], rate: str) -> None:
    """Refuse a malformed field of the question, naming it as the view labels it (the
    search's own messages name the command line's options)."""
    fields = [(name, SLO_CELLS[name], text) for name, text in slos.items() if text.strip()]
    for name, cell, text in (*fields, ("rate", "request_rate", rate)):
        read_quantity(sheet, cell, text.strip(),
                      f"malformed {'SLO' if name in SLOS else 'rate'} in the plan's "
                      f"'{FIELDS[name]}' field ({text.strip()!r})")


def _text(x: object) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)
