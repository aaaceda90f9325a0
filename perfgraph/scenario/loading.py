"""A scenario: which model, hardware, workload and precision, plus the user's own settings.

Layers apply in order, each overriding the last: the formula sheets' defaults, the hardware,
the model, the workload, the precision (weight_bytes, kv_bytes, peak_flops), a calibration
overlay (``--calibration``, written by ``perfgraph calibrate``), the scenario file's
``[values]``/``[cells]``, then each ``--set``. Every value remembers where it came
from, so an error in any layer names its file and line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from perfgraph._infra import tomlfile
from perfgraph._infra.inputfile import file_problem
from perfgraph.engine.assign import interpret
from perfgraph.engine.declarations import Declaration, Origin
from perfgraph.engine.sheet import Sheet
from perfgraph.errors import (
    CatalogError,
    DeclarationError,
    InputError,
    PerfgraphError,
    UnknownNameError,
    raise_all,
)
from perfgraph.errors import did_you_mean as _near
from perfgraph.scenario import domain, engine_files, profiles
from perfgraph.scenario.catalog import (
    Entry,
    cell_declaration,
    check_keys,
    key_problems,
    load_entry,
    load_sheets,
)

DEFAULTS = {"model": "llama-3.1-70b", "hardware": "h100-sxm", "workload": "chat-1k1k",
            "precision": "fp8"}
SCENARIO_KEYS = ("name", "doc", "model", "hardware", "workload", "precision", "engine",
                 "values", "cells")
#: The serving engine whose memory rule and scheduling defaults apply (``--engine``).
DEFAULT_ENGINE = "vllm"
CALIBRATION_KEYS = ("name", "doc", "values", "cells", "profile")
PRECISIONS_FILE = Path(__file__).resolve().parent / "precisions.toml"


@dataclass(frozen=True)
class ScenarioSpec:
    """What the user asked for; ``None`` means 'the scenario file's, else the default'."""

    file: str | None = None
    model: str | None = None
    hardware: str | None = None
    workload: str | None = None
    precision: str | None = None
    sets: tuple[tuple[str, str], ...] = ()
    calibration: str | None = None  # a calibration overlay (TOML with [values]/[cells])
    engine: str | None = None  # vllm | sglang | trtllm (None: the scenario file's, else vllm)


@dataclass
class Scenario:
    """A loaded scenario: the live sheet and what it was built from."""

    spec: ScenarioSpec
    sheet: Sheet
    model: Entry
    hardware: Entry
    workload: Entry
    precision: str
    file: Entry | None = None
    notes: list[str] = field(default_factory=list)
    calibration: Entry | None = None
    engine: str = DEFAULT_ENGINE

    @property
    def engine_not_on_hardware(self) -> str | None:
        """Why the engine does not run on the hardware (the engine file's ``vendors``
        against the hardware file's ``vendor``), in one sentence; None where it does."""
        vendor = self.hardware.doc.data.get("vendor")
        return engine_files.engine(self.engine).not_on(
            self.hardware.slug, None if vendor is None else str(vendor))

    def choice(self, kind: str) -> str:
        return {"model": self.model, "hardware": self.hardware,
                "workload": self.workload}[kind].doc.path if kind != "precision" \
            else self.precision

    @property
    def assessment(self) -> profiles.Assessment:
        """What the numbers are (:func:`profiles.assess`): roofline, or calibrated inside the
        profile's domain or extrapolated from it, with the band that applies."""
        if self.calibration is None:
            return profiles.assess(None)
        point = domain.point_of(self.sheet, self.model.slug, self.precision, self.engine,
                                self.hardware.slug)
        fitted = profiles.fitted_models(self.calibration.doc)
        point = replace(point, twins=domain.twins(self.sheet, self.model, fitted))
        return profiles.assess(self.calibration.doc, point)

    @property
    def prediction(self) -> str:
        """The label every output carries: ``roofline``, or ``calibrated: …`` with its
        domain verdict, error and band."""
        return self.assessment.text

    @property
    def title(self) -> str:
        """``model · precision · hardware · workload``, and the scenario file, which may
        change any of them (a workload file given as the scenario sets its ISL and OSL)."""
        text = (f"{self.model.title} · {self.precision} · {self.hardware.title} · "
                f"{self.workload.title}")
        if self.file is not None:
            name = self.file.doc.data.get("name")
            text += f" · scenario {name if isinstance(name, str) else Path(self.file.path).name}"
        return text


@lru_cache(maxsize=1)
def _sheet_declarations() -> dict[str, Declaration]:
    return load_sheets()


@lru_cache(maxsize=1)
def precisions() -> tomlfile.TomlDoc:
    return tomlfile.read(PRECISIONS_FILE)


def parse_set(text: str) -> tuple[str, str]:
    """``NAME=VALUE`` → (NAME, VALUE); InputError if there is no '='."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip() or not value.strip():
        raise InputError(f"--set expects NAME=VALUE or NAME=FORMULA, got {text!r}")
    return name.strip(), value.strip()


def load(spec: ScenarioSpec | None = None) -> Scenario:
    """Build the sheet for ``spec`` (the default scenario when None)."""
    spec = spec or ScenarioSpec()
    file_entry = _scenario_file(spec.file) if spec.file else None
    chosen = {kind: getattr(spec, kind) or _from_file(file_entry, kind) or DEFAULTS[kind]
              for kind in DEFAULTS}
    chosen["precision"] = str(chosen["precision"]).lower()  # FP8 is fp8
    entries = {kind: _catalog_entry(file_entry, kind, chosen[kind])
               for kind in ("hardware", "model", "workload")}
    decls = dict(_sheet_declarations())
    for kind in ("hardware", "model", "workload"):
        _apply(decls, entries[kind])
    try:
        _apply_precision(decls, entries["hardware"], chosen["precision"])
    except CatalogError as exc:
        if file_entry is not None and spec.precision is None and _from_file(
                file_entry, "precision"):
            raise exc.located(file=file_entry.path, line=file_entry.doc.line("precision")) \
                from None
        raise
    _apply_group_precisions(decls, entries["model"])
    engine = _engine_name(spec, file_entry)
    _apply(decls, engine_entry(engine, file_entry if spec.engine is None else None))
    calibration = _calibration(spec.calibration, entries["hardware"], engine)
    if calibration is not None:
        _apply(decls, calibration)
    if file_entry is not None:
        _apply(decls, file_entry, key_problems(file_entry, SCENARIO_KEYS))
    for name, raw in spec.sets:
        _assign(decls, name, raw, Origin("--set"))
    _check_complete(decls, entries, file_entry)
    _check_ep(decls)
    _check_active_params(decls)
    sheet = Sheet(decls.values())
    return Scenario(spec=spec, sheet=sheet, model=entries["model"],
                    hardware=entries["hardware"], workload=entries["workload"],
                    precision=chosen["precision"], file=file_entry, calibration=calibration,
                    engine=engine)


def engine_names() -> list[str]:
    """The engines the folder holds (:mod:`perfgraph.scenario.engine_files`)."""
    return engine_files.names()


def _engine_name(spec: ScenarioSpec, file_entry: Entry | None) -> str:
    return str(spec.engine or _from_file(file_entry, "engine") or DEFAULT_ENGINE).strip().lower()


def engine_entry(name: str, file_entry: Entry | None = None) -> Entry:
    """The engine file for ``name``; an unknown name is one message listing the engines (and
    the scenario file's line when the name came from there)."""
    try:
        doc = engine_files.doc(name)
    except CatalogError as exc:
        if file_entry is not None:
            raise exc.located(file=file_entry.path, line=file_entry.doc.line("engine")) \
                from None
        raise
    engine_files.engine(name)  # every table of the file checked
    return engine_files.EngineEntry("engine", doc)


def _check_complete(decls: dict[str, Declaration], entries: dict[str, Entry],
                    file_entry: Entry | None) -> None:
    """Every input holds a value once all layers apply: a catalog file that leaves one out
    (a model without n_kv_heads) is refused here, naming the file, not left as #ERR."""
    missing = [d for d in decls.values() if d.is_input and d.value is None]
    if not missing:
        return
    kind = missing[0].group if missing[0].group in entries else None
    names = ", ".join(d.name for d in missing if kind is None or d.group == kind)
    if kind is None:
        raise DeclarationError(f"no value for {names}: set it in the scenario or with --set",
                               file=file_entry.path if file_entry else None)
    raise DeclarationError(f"does not set {names}: a {kind} file must give each of its "
                           "inputs a value (or --set it)", file=entries[kind].path)


def _catalog_entry(file_entry: Entry | None, kind: str, name: str) -> Entry:
    """Load a catalog entry; an unknown one named in a scenario file points at its line."""
    try:
        return load_entry(kind, _relative(file_entry, name))
    except CatalogError as exc:
        if file_entry is not None and _from_file(file_entry, kind) == name:
            raise exc.located(file=file_entry.path, line=file_entry.doc.line(kind)) from None
        raise


def _scenario_file(path: str) -> Entry:
    problem = file_problem(path, "scenario")
    if problem is not None:
        raise CatalogError(problem, file=path)
    return Entry("scenario", tomlfile.read(path))  # its keys are checked with its values


def _calibration(given: str | None, hardware: Entry, engine: str | None = None) -> Entry | None:
    """The overlay named, or with ``auto`` the shipped profile for the hardware and engine
    (none: the roofline, and :attr:`Scenario.prediction` says so)."""
    if not given:
        return None
    if given.strip().lower() == "auto":
        found = profiles.find_profile(hardware.slug, engine)
        return _overlay_file(str(found)) if found else None
    return _overlay_file(given)


def _overlay_file(path: str) -> Entry:
    problem = file_problem(path, "calibration")
    if problem is not None:
        raise CatalogError(problem, file=path)
    entry = Entry("calibration", tomlfile.read(path))
    check_keys(entry, CALIBRATION_KEYS)
    profiles.check_profile(entry.doc)
    return entry


def _from_file(entry: Entry | None, kind: str) -> str | None:
    if entry is None or kind not in entry.doc.data:
        return None
    value = entry.doc.data[kind]
    if not isinstance(value, str):
        raise entry.doc.error(f"{kind} must be a catalog name or a path (a string)", kind)
    return value


def _relative(entry: Entry | None, name: str) -> str:
    """A path in a scenario file is relative to that file; catalog slugs stay as they are."""
    if entry is not None and name.endswith(".toml") and not Path(name).is_absolute():
        return str(Path(entry.path).parent / name)
    return name


def _apply(decls: dict[str, Declaration], entry: Entry,
           problems: Sequence[PerfgraphError] = ()) -> None:
    """The entry's cells and values onto ``decls``; every problem in it is reported at once
    (``problems``: those already found in the file, such as unknown keys)."""
    found = list(problems)
    for name, table in entry.cells():
        try:
            decls[name] = cell_declaration(entry.doc, ("cells", name), table,
                                           group=entry.kind, base=decls.get(name))
        except PerfgraphError as exc:
            found.append(exc)
    for name, raw, origin in entry.values():
        try:
            _assign(decls, name, raw, origin)
        except PerfgraphError as exc:
            found.append(exc)
    raise_all(found)


def _assign(decls: dict[str, Declaration], name: str, raw: Any, origin: Origin) -> None:
    if name not in decls:
        raise UnknownNameError(f"no cell named {name!r}{_near(name, decls)}",
                               file=origin.file, line=origin.line, name=name)
    try:
        a = interpret(decls[name], raw)
    except PerfgraphError as exc:
        raise exc.located(file=origin.file, line=origin.line) from None
    decl = decls[name]
    if a.formula is not None:
        decls[name] = replace(decl, value=None, formula=a.formula, origin=origin)
    else:
        decls[name] = replace(decl, value=a.value, formula=None, origin=origin,
                              flag=decl.flag or a.flag)


def _apply_precision(decls: dict[str, Declaration], hardware: Entry, precision: str) -> None:
    table = precisions().data
    if precision not in table:
        known = ", ".join(table)
        raise CatalogError(f"unknown precision {precision!r}{_near(precision, table)}; "
                           f"known: {known}", name="precision")
    row = table[precision]
    origin = Origin(str(PRECISIONS_FILE), precisions().line(precision))
    _assign(decls, "weight_bytes", row["weight_bytes"], origin)
    _assign(decls, "kv_bytes", row["kv_bytes"], origin)
    peaks = hardware.table("peak_flops")
    if row["peak"] not in peaks:
        raise CatalogError(
            f"{hardware.title} has no dense {row['peak']} figure; it has: "
            f"{', '.join(peaks) or 'none'}", file=hardware.path,
            line=hardware.doc.line("peak_flops"), name="precision")
    _assign(decls, "peak_flops", peaks[row["peak"]],
            Origin(hardware.path, hardware.doc.line("peak_flops", row["peak"])))


#: A model file's [weight_precision] keys → the cell each sets.
WEIGHT_GROUPS = {"dense": "weight_bytes_dense", "shared_experts": "weight_bytes_shared_experts",
                 "routed_experts": "weight_bytes_experts", "embedding": "weight_bytes_embedding"}


def _apply_group_precisions(decls: dict[str, Declaration], model: Entry) -> None:
    """A model's shipped group precisions (gpt-oss: routed experts in mxfp4) beat --precision."""
    table, known = model.table("weight_precision"), precisions().data
    for group, name in table.items():
        line = model.doc.line("weight_precision", group)
        where: dict[str, Any] = {"file": model.path, "line": line,
                                 "name": f"weight_precision.{group}"}
        if group not in WEIGHT_GROUPS:
            raise CatalogError(f"unknown tensor group {group!r}{_near(group, WEIGHT_GROUPS)}; "
                               f"expected one of: {', '.join(WEIGHT_GROUPS)}", **where)
        if not isinstance(name, str) or name.lower() not in known:
            raise CatalogError(f"tensor group {group!r} has no precision ({name!r}); expected "
                               f"one of: {', '.join(known)}", **where)
        _assign(decls, WEIGHT_GROUPS[group], known[name.lower()]["weight_bytes"],
                Origin(model.path, line))


def _check_active_params(decls: dict[str, Declaration]) -> None:
    """A model without routed experts runs every parameter for every token: n_active_params
    below (or above) n_params there names no routing to read the weights by, so it is refused
    rather than read one way in decode and another in prefill."""
    if "n_routed_experts" not in decls:  # sheets without experts
        return
    active, total, experts = (decls[n] for n in ("n_active_params", "n_params",
                                                  "n_routed_experts"))
    if active.value is None or total.value is None or experts.value != 0 \
            or active.value == total.value:
        return
    where, also = active.origin, total.origin
    said = "" if also is None or where is None or also.file == where.file \
        else f" (from {also.file})"
    raise InputError(f"is {active.value:,.0f}, not n_params = {total.value:,.0f}{said}, but "
                     "the model declares no routed experts (n_routed_experts = "
                     "0), so nothing says which parameters a token skips; declare its experts "
                     "(params_routed_experts, n_routed_experts, n_experts_per_tok) or set "
                     "n_active_params equal to n_params",
                     file=where.file if where else None, line=where.line if where else None,
                     name="n_active_params")


def _check_ep(decls: dict[str, Declaration]) -> None:
    """EP shards whole expert slots: ep must divide the routed experts and their redundant
    copies (EPLB's n_redundant_experts), E + R."""
    if "ep" not in decls or "n_routed_experts" not in decls:  # sheets without EP
        return
    ep, experts = decls["ep"], decls["n_routed_experts"]
    extra = decls.get("n_redundant_experts")
    if ep.value is None or experts.value is None or experts.value == 0 or (
            extra is not None and extra.value is None):
        return
    redundant = extra.value if extra is not None and extra.value is not None else 0
    slots = experts.value + redundant
    if slots % ep.value:
        where = ep.origin
        held = f"{experts.value:g} routed experts (set in " \
            f"{experts.origin.file if experts.origin else '?'})"
        if redundant:
            held += f" and {redundant:g} redundant copies"
        fits = ep.value * math.ceil(slots / ep.value) - experts.value
        raise InputError(f"ep = {ep.value:g} does not divide the {held}: expected a divisor of "
                         f"{slots:g}, or n_redundant_experts = {fits:g} to hold "
                         f"{math.ceil(slots / ep.value):g} slots a GPU",
                         file=where.file if where else None,
                         line=where.line if where else None, name="ep")
