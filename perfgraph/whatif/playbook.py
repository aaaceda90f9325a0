"""The playbook: symptoms and levers declared in TOML (``perfgraph/whatif/levers.toml``), checked.

Loading checks the file's shape (known keys, stages, lever references, conditions that
parse); :func:`check` then checks it against a sheet (every cell a condition, pin or watch
list names exists, dimensions agree). Every error names the file and line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from perfgraph._infra import tomlfile
from perfgraph._infra.tomlfile import TomlDoc
from perfgraph.engine.assign import interpret
from perfgraph.engine.formula import check_names, parse
from perfgraph.engine.sheet import Sheet
from perfgraph.engine.units import Dims
from perfgraph.errors import DeclarationError, DimensionError, PerfgraphError, did_you_mean

#: The order the seed gives the work: measure, free structural wins, scheduling, cost.
STAGES = ("measure", "structural", "scheduling", "cost")
PLAYBOOK_FILE = Path(__file__).resolve().parent / "levers.toml"
_SYMPTOM_KEYS = ("title", "doc", "condition", "levers", "regime")
_LEVER_KEYS = ("title", "stage", "tradeoff", "pins", "watch")


@dataclass(frozen=True)
class Symptom:
    """A condition over cells (formula language) that, when true, calls for levers."""

    id: str
    title: str
    doc: str
    condition: str
    #: A regime or an opportunity (decode memory-bound), not a fault: a lever that makes it
    #: hold is not flagged as bringing it on.
    regime: bool = False


@dataclass(frozen=True)
class Lever:
    """Pins to apply (``(name, raw)`` as ``--set`` takes them) and what they cost."""

    id: str
    title: str
    stage: str
    tradeoff: str
    pins: tuple[tuple[str, str], ...]
    watch: tuple[str, ...]


@dataclass(frozen=True)
class Playbook:
    """Every symptom and lever of one file; ``cures`` maps a symptom id to its lever ids."""

    path: str
    symptoms: tuple[Symptom, ...]
    levers: tuple[Lever, ...]
    cures: tuple[tuple[str, tuple[str, ...]], ...]
    doc: TomlDoc = field(compare=False, repr=False)

    def lever(self, lever_id: str) -> Lever:
        return next(lv for lv in self.levers if lv.id == lever_id)

    def levers_for(self, symptom: Symptom) -> tuple[Lever, ...]:
        ids = dict(self.cures).get(symptom.id, ())
        return tuple(self.lever(i) for i in ids)

    def line(self, *key: str) -> int | None:
        return self.doc.line(*key)


def load_playbook(path: str | Path | None = None) -> Playbook:
    """The playbook in ``path`` (default: the one shipped with perfgraph), shape-checked."""
    if path is None:
        return _shipped()
    return _load(str(path))


@lru_cache(maxsize=1)
def _shipped() -> Playbook:
    return _load(str(PLAYBOOK_FILE))


def _load(path: str) -> Playbook:
    if not Path(path).is_file():
        raise DeclarationError("no such levers file", file=path)
    doc = tomlfile.read(path)
    for key in doc.data:
        if key not in ("symptoms", "levers"):
            line = min((n for k, n in doc.lines.items() if k[0] == key), default=None)
            raise DeclarationError(
                f"unknown table {key!r}{did_you_mean(key, ('symptoms', 'levers'))}; expected "
                "[symptoms.ID] and [levers.ID]", file=path, line=line, name=key)
    levers = tuple(_lever(doc, i, t) for i, t in _tables(doc, "levers"))
    known = [lv.id for lv in levers]
    symptoms, cures = [], []
    for sid, table in _tables(doc, "symptoms"):
        _keys(doc, ("symptoms", sid), table, _SYMPTOM_KEYS, ("title", "condition", "levers"))
        condition = _text(doc, ("symptoms", sid, "condition"), table["condition"])
        _located(doc, ("symptoms", sid, "condition"), lambda c=condition: parse(c))
        ids = _names(doc, ("symptoms", sid, "levers"), table["levers"])
        for lid in ids:
            if lid not in known:
                raise doc.error(f"unknown lever {lid!r}{did_you_mean(lid, known)}",
                                "symptoms", sid, "levers")
        regime = table.get("regime", False)
        if not isinstance(regime, bool):
            raise doc.error(f"regime must be true or false, not {regime!r}",
                            "symptoms", sid, "regime")
        symptoms.append(Symptom(sid, _text(doc, ("symptoms", sid, "title"), table["title"]),
                                str(table.get("doc", "")), condition, regime))
        cures.append((sid, ids))
    return Playbook(path, tuple(symptoms), levers, tuple(cures), doc)


def _tables(doc: TomlDoc, kind: str) -> list[tuple[str, dict[str, Any]]]:
    section = doc.data.get(kind, {})
    if not isinstance(section, dict):
        raise doc.error(f"{kind!r} must hold tables: [{kind}.ID]", kind)
    out = []
    for ident, table in section.items():
        if not isinstance(table, dict):
            raise doc.error(f"[{kind}.{ident}] must be a table", kind, ident)
        if not ident.isidentifier():
            raise doc.error(f"an id must be a plain identifier, not {ident!r}", kind, ident)
        out.append((ident, table))
    return out


def _lever(doc: TomlDoc, lid: str, table: dict[str, Any]) -> Lever:
    key = ("levers", lid)
    _keys(doc, key, table, _LEVER_KEYS, _LEVER_KEYS)
    stage = table["stage"]
    if stage not in STAGES:
        raise doc.error(f"unknown stage {stage!r}{did_you_mean(str(stage), STAGES)}; "
                        f"expected one of: {', '.join(STAGES)}", *key, "stage")
    pins = table["pins"]
    if not isinstance(pins, dict):
        raise doc.error("pins must be a table: { NAME = VALUE or \"FORMULA\", … }", *key, "pins")
    watch = _names(doc, (*key, "watch"), table["watch"])
    if not watch:
        raise doc.error("watch must name at least one cell", *key, "watch")
    return Lever(lid, _text(doc, (*key, "title"), table["title"]), stage,
                 _text(doc, (*key, "tradeoff"), table["tradeoff"]),
                 tuple((name, _raw(doc, (*key, "pins", name), v)) for name, v in pins.items()),
                 watch)


def _keys(doc: TomlDoc, key: tuple[str, ...], table: dict[str, Any],
          allowed: tuple[str, ...], required: tuple[str, ...]) -> None:
    for k in table:
        if k not in allowed:
            raise doc.error(f"unknown key {k!r}{did_you_mean(k, allowed)}; expected: "
                            f"{', '.join(allowed)}", *key, k)
    for k in required:
        if k not in table:
            raise doc.error(f"missing key {k!r}", *key)


def _text(doc: TomlDoc, key: tuple[str, ...], value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise doc.error(f"{key[-1]} must be non-empty text", *key)
    return value


def _names(doc: TomlDoc, key: tuple[str, ...], value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise doc.error(f"{key[-1]} must be a list of names", *key)
    return tuple(value)


def _raw(doc: TomlDoc, key: tuple[str, ...], value: object) -> str:
    """A pin's TOML value as ``--set`` text: true/false, a number, or a string as written."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return value
    raise doc.error("a pin is a number, true/false, or a quantity or formula in quotes", *key)


def _located(doc: TomlDoc, key: tuple[str, ...], action: Any) -> Any:
    try:
        return action()
    except PerfgraphError as exc:
        raise exc.located(file=doc.path, line=doc.line(*key), name=key[1]) from None


def check(playbook: Playbook, sheet: Sheet) -> None:
    """Every condition, pin and watched cell makes sense on ``sheet``; else a located error."""
    names = set(sheet.names)

    def dims_of(name: str) -> Dims:
        return sheet.declaration(name).parsed_unit.dims

    for s in playbook.symptoms:
        key: tuple[str, ...] = ("symptoms", s.id, "condition")
        formula = _located(playbook.doc, key, lambda c=s.condition: parse(c))
        _located(playbook.doc, key, lambda f=formula: check_names(f, names))
        got = _located(playbook.doc, key, lambda f=formula: f.dims(dims_of))
        if not got.dimensionless:
            raise _located_error(playbook, key, DimensionError(
                f"a condition must be true or false (a comparison), but {s.condition!r} "
                f"is {got}"))
    for lever in playbook.levers:
        for name, raw in lever.pins:
            key = ("levers", lever.id, "pins", name)
            _located(playbook.doc, key, lambda n=name, r=raw: _check_pin(sheet, n, r, names))
        for name in lever.watch:
            _located(playbook.doc, ("levers", lever.id, "watch"),
                     lambda n=name: sheet.declaration(n))


def _check_pin(sheet: Sheet, name: str, raw: str, names: set[str]) -> None:
    decl = sheet.declaration(name)
    assignment = interpret(decl, raw)
    if assignment.formula is None:
        return
    check_names(assignment.formula, names)
    got = assignment.formula.dims(lambda n: sheet.declaration(n).parsed_unit.dims)
    if got != decl.parsed_unit.dims:
        raise DimensionError(f"pin {name} = {raw!r} gives {got}, but {name} is declared in "
                             f"{decl.unit or 'dimensionless'}", name=name)


def _located_error(playbook: Playbook, key: tuple[str, ...],
                   exc: PerfgraphError) -> PerfgraphError:
    return exc.located(file=playbook.path, line=playbook.line(*key), name=key[1])
