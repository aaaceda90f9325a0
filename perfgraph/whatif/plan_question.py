"""``perfgraph plan``'s question: the SLOs, the request rate and the objective, each read
in its cell's declared unit (a number without a unit, or one at or below 0, is refused)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from perfgraph.engine.assign import interpret
from perfgraph.engine.sheet import Sheet
from perfgraph.errors import InputError, PerfgraphError
from perfgraph.scenario.loading import ScenarioSpec, load

SLO_CELLS = {"ttft": "ttft_slo", "itl": "itl_slo", "e2e": "e2e_slo"}
#: objective → (cell, larger is better)
OBJECTIVES = {"gpus": ("deployment_gpus", False), "cost": ("cost_per_mtok_output", False),
              "energy": ("energy_per_token", False),
              "throughput_per_gpu": ("served_throughput_per_gpu", True)}
_HAS_UNIT = re.compile(r"^\s*[+-]?(?:\d[\d_]*\.?[\d_]*|\.\d+)(?:[eE][+-]?\d+)?\s*(?P<unit>\S.*)?$")


@dataclass(frozen=True)
class Question:
    """What the user asks: SLOs (declared units), a request rate (request/s), an objective."""

    slos: Mapping[str, float]
    slo_texts: Mapping[str, str]
    rate: float
    rate_text: str
    objective: str = "gpus"


def parse_slo(text: str, sheet: Sheet) -> tuple[str, float]:
    name, sep, raw = text.partition("=")
    name = name.strip().lower()
    if not sep or name not in SLO_CELLS:
        raise InputError(f"--slo expects ttft=…, itl=… or e2e=… with units (itl=50ms), "
                         f"got {text!r}")
    value = read_quantity(sheet, SLO_CELLS[name], raw.strip(), f"--slo {text}")
    return name, value


def parse_rate(text: str, sheet: Sheet) -> float:
    return read_quantity(sheet, "request_rate", text.strip(), f"--rate {text!r}")


def read_quantity(sheet: Sheet, cell: str, raw: str, what: str) -> float:
    """``raw`` read in ``cell``'s declared unit, above 0; refused naming ``what`` (the option,
    or the dashboard's field, the text came from)."""
    match = _HAS_UNIT.match(raw)
    if match is None or not match["unit"]:
        unit = sheet.declaration(cell).unit
        raise InputError(f"{what}: expected a number with a unit (like '20 {unit}')",
                         name=cell)
    decl = sheet.declaration(cell)
    try:
        value = interpret(decl, raw).value
    except PerfgraphError as exc:
        raise InputError(f"{what}: {exc.message}", name=cell) from None
    if value is None or not math.isfinite(value) or value <= 0:
        raise InputError(f"{what}: must be above 0", name=cell)
    return value


def question(spec: ScenarioSpec, slo_texts: Sequence[str], rate_text: str,
             objective: str = "gpus") -> Question:
    sheet = load(spec).sheet
    slos: dict[str, float] = {}
    texts: dict[str, str] = {}
    for text in slo_texts:
        name, value = parse_slo(text, sheet)
        if name in slos:
            raise InputError(f"--slo {name} given twice", name=SLO_CELLS[name])
        slos[name], texts[name] = value, text.partition("=")[2].strip()
    if objective not in OBJECTIVES:
        raise InputError(f"unknown objective {objective!r}; known: {', '.join(OBJECTIVES)}")
    return Question(slos, texts, parse_rate(rate_text, sheet), rate_text.strip(), objective)


def question_sets(q: Question) -> tuple[tuple[str, str], ...]:
    """The question as --set pairs, so that a plain ``perfgraph eval`` re-asks it: the rate
    (and with it the prefill queue it makes), then the SLOs."""
    sets = [("request_rate", q.rate_text), ("prefill_queueing", "true")]
    sets += [(SLO_CELLS[n], q.slo_texts[n]) for n in q.slos]
    return tuple(sets)
