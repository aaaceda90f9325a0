"""A calibration profile's domain: what its fit saw, and whether a scenario lies inside it.

A fit is trustworthy where it was fitted. Each profile records, in ``[profile.domain]``, the
span of its fitted runs: the models and their architecture class, the parameter range, the
precisions, the engine and its builds, the ISL/OSL range and the kinds of parallelism. A
scenario is a :class:`Point` in the same terms; :func:`extrapolations` names each dimension
along which the point leaves the domain. The architecture class is read from the model's
cells (the catalog's fields, or ``--set``), never from its name:

- ``moe`` when ``n_routed_experts > 0``, else ``dense``;
- ``mla`` when ``kv_lora_rank > 0`` (a compressed KV latent);
- ``linear`` when ``n_linear_layers > 0`` (hybrid / linear attention);
- ``sliding`` when ``n_sliding_layers > 0`` (sliding-window attention).

The parallelism kinds: ``tp`` (TP > 1), ``pp`` (PP > 1), ``ep`` (EP > 1), ``dp-attention``
and ``disaggregated``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from perfgraph.engine.sheet import Sheet
from perfgraph.errors import CatalogError
from perfgraph.scenario.catalog import Entry, load_entry

#: (cell, class) for the attention kinds a model's cells reveal
ATTENTION_CLASSES = (("kv_lora_rank", "mla"), ("n_linear_layers", "linear"),
                     ("n_sliding_layers", "sliding"))
CLASS_NAMES = {"dense": "dense", "moe": "MoE", "mla": "MLA", "linear": "linear attention",
               "sliding": "sliding window"}
#: (cell, kind) for the parallelism a scenario uses; a count cell counts when above 1
PARALLELISM = (("tp", "tp"), ("pp", "pp"), ("ep", "ep"), ("dp_attention", "dp-attention"),
               ("disaggregated", "disaggregated"))
#: the kinds of extrapolation, each the dimension it leaves the domain along
KINDS = ("model", "hardware", "precision", "engine", "workload", "parallelism")


@dataclass(frozen=True)
class Point:
    """A scenario in the terms a domain is written in."""

    model: str
    architecture: tuple[str, ...]  # ("dense" | "moe", then attention kinds)
    n_params: float
    precision: str
    engine: str
    isl: float
    osl: float
    parallelism: tuple[str, ...]
    hardware: str = ""  # the catalog slug ("": not known)
    #: fitted models whose catalog values this model's cells equal: the same architecture
    #: under another name (Llama-3.1-70B is Llama-3.3-70B's), in the domain as they are
    twins: tuple[str, ...] = ()


@dataclass(frozen=True)
class Domain:
    """The span of a fit's runs (``[profile.domain]``)."""

    models: tuple[str, ...]
    architecture: tuple[str, ...]
    params: tuple[float, float]
    precisions: tuple[str, ...]
    engine: str
    engine_builds: tuple[str, ...]
    isl: tuple[float, float]
    osl: tuple[float, float]
    parallelism: tuple[str, ...]
    hardware: tuple[str, ...] = ()  # empty: not recorded (a profile is for one GPU)


@dataclass(frozen=True)
class Extrapolation:
    kind: str  # one of KINDS
    text: str  # what leaves the domain, in words


#: the cells a scenario's point is read from (:func:`point_from`)
POINT_CELLS = ("n_routed_experts", *(c for c, _ in ATTENTION_CLASSES),
               *(c for c, _ in PARALLELISM), "n_params", "isl", "osl")


def point_of(sheet: Sheet, model: str, precision: str, engine: str,
             hardware: str = "") -> Point:
    """The scenario's point: its model's class and size, lengths and parallelism, from the
    cells (so that ``--set`` counts)."""
    values = {c: sheet.magnitude(c) for c in POINT_CELLS
              if c in sheet.names and sheet.error(c) is None}
    return point_from(values, model, precision, engine, hardware)


def point_from(values: Mapping[str, float], model: str, precision: str, engine: str,
               hardware: str = "") -> Point:
    """A point from the values of :data:`POINT_CELLS` (a cell missing or failed: absent),
    one row of a sweep's columns as well as one sheet."""
    def count(cell: str) -> float:
        value = values.get(cell, 0.0)
        return 0.0 if math.isnan(value) else float(value)

    arch = ("moe" if count("n_routed_experts") > 0 else "dense",
            *(c for cell, c in ATTENTION_CLASSES if count(cell) > 0))
    kinds = tuple(kind for cell, kind in PARALLELISM
                  if (count(cell) != 0 if kind in ("dp-attention", "disaggregated")
                      else count(cell) > 1))
    return Point(model, arch, count("n_params"), precision.lower(), engine, count("isl"),
                 count("osl"), kinds, hardware)


def twins(sheet: Sheet, model: Entry, fitted: Iterable[str]) -> tuple[str, ...]:
    """The ``fitted`` catalog models that set the same model cells as ``model`` does, each to
    the value the scenario's sheet holds (so a ``--set`` that changes the architecture
    breaks the match)."""
    own = {name for name, _, _ in model.values()}
    out = []
    for slug in fitted:
        if slug == model.slug:
            continue
        try:
            values = {name: raw for name, raw, _ in load_entry("model", slug).values()}
        except CatalogError:
            continue
        if set(values) == own and all(_holds(sheet, n, raw) for n, raw in values.items()):
            out.append(slug)
    return tuple(out)


def _holds(sheet: Sheet, name: str, raw: object) -> bool:
    if not isinstance(raw, (int, float)) or isinstance(raw, bool):
        return False
    if name not in sheet.names or sheet.error(name) is not None:
        return False
    return math.isclose(sheet.magnitude(name), float(raw), rel_tol=1e-9)


def span(points: Sequence[Point], engine_builds: Iterable[str] = ()) -> Domain:
    """The domain of a fit's points (its runs, each at its configured ISL/OSL)."""
    if not points:
        raise ValueError("a domain needs at least one fitted run")

    def ordered(values: Iterable[str]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(values))

    def bounds(values: Iterable[float]) -> tuple[float, float]:
        got = list(values)
        return min(got), max(got)

    engines = sorted({p.engine for p in points})
    return Domain(ordered(p.model for p in points),
                  ordered(sorted({c for p in points for c in p.architecture},
                                 key=list(CLASS_NAMES).index)),
                  bounds(p.n_params for p in points), ordered(p.precision for p in points),
                  "+".join(engines), ordered(engine_builds), bounds(p.isl for p in points),
                  bounds(p.osl for p in points),
                  ordered(sorted({k for p in points for k in p.parallelism},
                                 key=[k for _, k in PARALLELISM].index)),
                  ordered(p.hardware for p in points if p.hardware))


def classes(architecture: Iterable[str]) -> str:
    """``MoE/MLA``: the classes in words."""
    return "/".join(CLASS_NAMES.get(c, c) for c in architecture)


def fitted_on(domain: Domain) -> str:
    """``MoE/MLA (deepseek-r1-0528)``: the fit's models as the label names them."""
    return f"{classes(domain.architecture)} ({', '.join(domain.models)})"


def _params(n: float) -> str:
    return f"{n / 1e9:.3g}B"


def _range(lo: float, hi: float) -> str:
    return f"{lo:g}" if lo == hi else f"{lo:g}–{hi:g}"


def _within(value: float, lo: float, hi: float) -> bool:
    """In [lo, hi], give or take the sixth significant digit (a profile's TOML may keep
    six)."""
    return lo * (1 - 1e-5) <= value <= hi * (1 + 1e-5)


def extrapolations(domain: Domain, point: Point) -> tuple[Extrapolation, ...]:
    """Each dimension along which ``point`` lies outside ``domain``, in words."""
    out = []
    if point.model not in domain.models and not set(point.twins) & set(domain.models):
        base = point.architecture[0]
        said = (f"{classes([base])} model; profile fitted on {fitted_on(domain)}"
                if base not in domain.architecture else
                f"model {point.model} ({classes(point.architecture)}) not fitted; profile "
                f"fitted on {fitted_on(domain)}")
        extra = [c for c in point.architecture[1:] if c not in domain.architecture]
        if extra and base in domain.architecture:
            said += f"; {classes(extra)} attention never fitted"
        lo, hi = domain.params
        if not _within(point.n_params, lo, hi):
            said += (f"; {_params(point.n_params)} parameters, fitted "
                     f"{_params(lo)}{'' if lo == hi else '–' + _params(hi)}")
        out.append(Extrapolation("model", said))
    if domain.hardware and point.hardware and point.hardware not in domain.hardware:
        out.append(Extrapolation("hardware", f"hardware {point.hardware}; fitted on "
                                 f"{', '.join(domain.hardware)}"))
    if point.precision not in domain.precisions:
        out.append(Extrapolation("precision", f"precision {point.precision}; fitted on "
                                 f"{', '.join(domain.precisions)}"))
    if point.engine not in domain.engine.split("+"):
        out.append(Extrapolation("engine", f"engine {point.engine}; fitted on {domain.engine}"))
    for name, value, (lo, hi) in (("ISL", point.isl, domain.isl),
                                  ("OSL", point.osl, domain.osl)):
        if not _within(value, lo, hi):
            out.append(Extrapolation("workload", f"{name} {value:g}; fitted on "
                                     f"{_range(lo, hi)}"))
    new = [k for k in point.parallelism if k not in domain.parallelism]
    if new:
        out.append(Extrapolation("parallelism", f"{', '.join(new).upper()} never fitted "
                                 f"(fitted: {', '.join(domain.parallelism).upper() or 'TP 1'})"))
    return tuple(out)


# --------------------------------------------------------------------------- TOML


def from_table(table: Mapping[str, object]) -> Domain:
    """A ``[profile.domain]`` table → Domain (the keys :func:`toml_lines` writes)."""
    def pair(key: str) -> tuple[float, float]:
        got: list[float] = list(table[key])  # type: ignore[call-overload]
        return float(got[0]), float(got[1])

    def names(key: str) -> tuple[str, ...]:
        return tuple(str(v) for v in table.get(key, ()))  # type: ignore[attr-defined]

    return Domain(names("models"), names("architecture"), pair("params"),
                  names("precisions"), str(table["engine"]), names("engine_builds"),
                  pair("isl"), pair("osl"), names("parallelism"), names("hardware"))


DOMAIN_KEYS = ("models", "architecture", "params", "precisions", "engine", "engine_builds",
               "isl", "osl", "parallelism", "hardware")
OPTIONAL_KEYS = ("engine_builds", "hardware")


def check_table(table: object) -> str | None:
    """Why a ``[profile.domain]`` table is malformed, or None."""
    if not isinstance(table, dict):
        return "[profile.domain] must be a table"
    missing = [k for k in DOMAIN_KEYS if k not in table and k not in OPTIONAL_KEYS]
    unknown = [k for k in table if k not in DOMAIN_KEYS]
    if missing or unknown:
        return (f"[profile.domain] {'lacks ' + ', '.join(missing) if missing else ''}"
                f"{'; ' if missing and unknown else ''}"
                f"{'has unknown ' + ', '.join(unknown) if unknown else ''}; expected: "
                f"{', '.join(DOMAIN_KEYS)}")
    for key in ("params", "isl", "osl"):
        value = table[key]
        if not (isinstance(value, list) and len(value) == 2
                and all(isinstance(v, (int, float)) for v in value) and value[0] <= value[1]):
            return f"[profile.domain] {key} must be [low, high], numbers, low ≤ high"
    return None


def _strings(values: Iterable[str]) -> str:
    return "[" + ", ".join(f'"{v}"' for v in values) + "]"


def toml_lines(domain: Domain) -> list[str]:
    """The ``[profile.domain]`` table, each key with a comment saying what it holds."""
    rows = [
        ("models", _strings(domain.models), "catalog models of the fitted runs"),
        ("architecture", _strings(domain.architecture),
         "from the model cells: moe, mla, linear, sliding (perfgraph.scenario.domain)"),
        ("params", f"[{domain.params[0]:.12g}, {domain.params[1]:.12g}]",
         "total parameters, smallest and largest"),
        ("precisions", _strings(domain.precisions), "precisions the runs were modelled at"),
        ("engine", f'"{domain.engine}"', "the runs' serving engine"),
        ("engine_builds", _strings(domain.engine_builds),
         "the builds (image tags) the runs name; ? where a run names none"),
        ("isl", f"[{domain.isl[0]:g}, {domain.isl[1]:g}]", "configured ISL, tokens"),
        ("osl", f"[{domain.osl[0]:g}, {domain.osl[1]:g}]", "configured OSL, tokens"),
        ("parallelism", _strings(domain.parallelism),
         "kinds used: tp (> 1), pp (> 1), ep (> 1), dp-attention, disaggregated"),
        ("hardware", _strings(domain.hardware), "the GPUs the runs ran on (catalog slugs)"),
    ]
    width = max(len(f"{k} = {v}") for k, v, _ in rows)
    return ["[profile.domain]  # what the fit saw: a scenario outside it is an extrapolation",
            *(f"{f'{k} = {v}':<{width}}  # {why}" for k, v, why in rows)]
