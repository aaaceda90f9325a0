"""Levers by symptom: which symptoms hold for a scenario, and what each lever would do.

Symptoms and levers are data (``perfgraph/whatif/levers.toml``, read by
:mod:`perfgraph.whatif.playbook`).
A symptom holds when its condition, evaluated on the sheet, is true. Each lever it calls for
is applied to a fork of the sheet, and the cells it watches are read before and after: the
advice is what the graph computes, never a number written down.

A lever can also bring a symptom on: the symptoms that hold on the fork but not on the sheet
(a wider TP that fits the weights but not the batch) come with the advice, so its effect is
never read without them.

A pin is a value or formula as ``--set`` takes it. A pin that reads its own cell
(``tp = "tp * 2"``) is evaluated once, on the sheet as it stands, and set as a value; any
other formula pin (``concurrency = "floor(max_concurrency_paged)"``) stays live.
"""

from __future__ import annotations

from dataclasses import dataclass

from perfgraph.engine.assign import interpret
from perfgraph.engine.declarations import Declaration, Origin
from perfgraph.engine.formula import ARITHMETIC, parse
from perfgraph.engine.numbers import number, quantity
from perfgraph.engine.sheet import Sheet
from perfgraph.errors import CellError, EvaluationError, PerfgraphError
from perfgraph.whatif.playbook import STAGES, Lever, Playbook, Symptom, check, load_playbook

__all__ = ["Advice", "Effect", "Lever", "Symptom", "apply", "diagnose", "effect_text",
           "evaluate", "holds", "ratio_text", "symptoms"]


@dataclass(frozen=True)
class Effect:
    """One watched cell, before and after a lever (declared unit; None where it failed)."""

    cell: str
    unit: str
    before: float | None
    after: float | None
    ratio: float | None


@dataclass(frozen=True)
class Advice:
    """A lever for a symptom that holds, with its computed effects (or why it failed)."""

    symptom: Symptom
    lever: Lever
    effects: tuple[Effect, ...]
    error: str | None
    brings: tuple[Symptom, ...] = ()  # symptoms that hold only with the lever applied


def holds(sheet: Sheet, symptom: Symptom) -> bool:
    """True when the symptom's condition is true on ``sheet`` (False if a cell it reads failed)."""
    formula = parse(symptom.condition)
    env = {name: sheet.raw(name) for name in formula.names}
    if any(isinstance(v, CellError) for v in env.values()):
        return False
    try:
        return bool(formula.compile()(env))
    except ARITHMETIC:
        return False


def symptoms(sheet: Sheet, playbook: Playbook | None = None) -> list[Symptom]:
    """The symptoms that hold for ``sheet``, in the playbook's order."""
    book = playbook or load_playbook()
    check(book, sheet)
    return [s for s in book.symptoms if holds(sheet, s)]


def diagnose(sheet: Sheet, playbook: Playbook | None = None) -> list[Advice]:
    """Advice for every symptom that holds: measure → structural → scheduling → cost.

    Within a stage, advice follows the symptoms' order, then each symptom's order of levers.
    A lever listed under several symptoms is advised once, under the first; a lever whose
    pins change none of its watched cells is left out (it is already in effect). ``sheet``
    is not changed: each lever is evaluated on a fork.
    """
    book = playbook or load_playbook()
    ranked: list[tuple[tuple[int, int, int], Advice]] = []
    seen: set[str] = set()
    held = symptoms(sheet, book)
    for s_rank, symptom in enumerate(held):
        for l_rank, lever in enumerate(book.levers_for(symptom)):
            if lever.id in seen:
                continue
            seen.add(lever.id)
            effects, error, fork = _applied(sheet, lever)
            if error is None and lever.pins and all(e.before == e.after for e in effects):
                continue
            brings = () if fork is None else tuple(
                s for s in book.symptoms if not s.regime and s not in held and holds(fork, s))
            advice = Advice(symptom, lever, effects, error, brings)
            ranked.append(((STAGES.index(lever.stage), s_rank, l_rank), advice))
    return [advice for _, advice in sorted(ranked, key=lambda item: item[0])]


def evaluate(sheet: Sheet, lever: Lever) -> tuple[tuple[Effect, ...], str | None]:
    """The lever's effect on its watched cells, computed on a fork of ``sheet``."""
    effects, error, _ = _applied(sheet, lever)
    return effects, error


def _applied(sheet: Sheet, lever: Lever,
             ) -> tuple[tuple[Effect, ...], str | None, Sheet | None]:
    """The lever's effects, why it could not be applied, and the fork it was applied to."""
    fork = sheet.fork()
    try:
        apply(fork, lever)
    except PerfgraphError as exc:
        return tuple(_effect(sheet, None, c) for c in lever.watch), str(exc), None
    return tuple(_effect(sheet, fork, c) for c in lever.watch), None, fork


def apply(sheet: Sheet, lever: Lever) -> list[Declaration]:
    """Apply the lever's pins to ``sheet``; returns what they replaced, for undo.

    Undo with ``sheet.restore(d)`` for each returned declaration, in the order given (the
    last pin first). If a pin fails, the pins already applied are undone and the error
    raised.
    """
    origin = Origin(f"lever {lever.id}")
    replaced: list[Declaration] = []
    for name, raw in lever.pins:
        try:
            previous = sheet.declaration(name)
            sheet.set(name, _pin_value(sheet, name, raw), origin)
        except PerfgraphError as exc:
            for decl in reversed(replaced):
                sheet.restore(decl)
            raise type(exc)(f"pin {name} = {raw!r}: {exc.message}",
                            name=f"lever {lever.id}") from None
        replaced.append(previous)
    return replaced[::-1]


def _pin_value(sheet: Sheet, name: str, raw: str) -> object:
    """What ``Sheet.set`` gets: a pin that reads its own cell is evaluated now."""
    decl = sheet.declaration(name)
    formula = interpret(decl, raw).formula
    if formula is None or name not in formula.names:
        return raw
    env = {}
    for src in formula.names:
        value = sheet.raw(src)
        if isinstance(value, CellError):
            raise EvaluationError(f"pin {name} = {raw!r} reads {src}, which failed: "
                                  f"{value.message}", name=name)
        env[src] = value
    try:
        canonical = formula.value(env)
    except EvaluationError as exc:
        raise EvaluationError(f"pin {name} = {raw!r} cannot be evaluated: {exc.message}",
                              name=name) from None
    return canonical / decl.parsed_unit.factor


def _effect(before: Sheet, after: Sheet | None, cell: str) -> Effect:
    old = _value(before, cell)
    new = _value(after, cell) if after is not None else None
    ratio = new / old if old is not None and new is not None and old != 0 else None
    return Effect(cell, before.declaration(cell).unit, old, new, ratio)


def _value(sheet: Sheet, cell: str) -> float | None:
    return None if sheet.error(cell) else sheet.magnitude(cell)


def effect_text(sheet: Sheet, e: Effect) -> str:
    """``single_stream_ceiling 208.6 tok/s → 417.2 tok/s (×2.0)``; an on/off cell as on/off."""
    flag = sheet.declaration(e.cell).flag

    def shown(v: float | None) -> str:
        return "#ERR" if v is None else quantity(v, e.unit, flag=flag)

    ratio = f" (×{ratio_text(e.ratio)})" if e.ratio is not None and not flag else ""
    return f"{e.cell} {shown(e.before)} → {shown(e.after)}{ratio}"


def ratio_text(ratio: float) -> str:
    """``2.0``, ``13.7``, ``0.084``: three significant digits, never a bare integer."""
    text = number(ratio, 3)
    return text if "." in text or "e" in text else f"{text}.0"
