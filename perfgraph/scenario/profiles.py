"""Calibration profiles: overlays fitted by ``perfgraph calibrate`` on public runs, shipped
in ``profiles/`` (one file per hardware × engine), and what a prediction is labelled.

A profile is a calibration overlay with a ``[profile]`` table saying what it was fitted on::

    [profile]
    hardware = "h100-sxm"          # the catalog slug it applies to
    engine = "vllm"                # the serving engine whose runs it was fitted on
    engine_version = "vLLM 0.10 (InferenceMAX, Oct 2025)"
    runs = 30                      # runs fitted
    held_out = { ttft = 0.306, tpot = 0.047, throughput = 0.073 }   # median |error|

    [profile.domain]               # what the fit saw (perfgraph.scenario.domain)
    [profile.bands]                # measured / model over held-out runs: an 80% band per
    in_domain = { tpot = [0.9, 1.1], ... }   # kind of prediction and metric
    [profile.errors]               # median held-out |error| per kind of extrapolation
    model = { tpot = 0.4, ... }

``--calibration auto`` picks the shipped profile for the scenario's hardware and engine.
Every output that shows a prediction labels it through :func:`assess`: "roofline", or
"calibrated: <profile>, N runs, in domain (…), held-out error …; 80% band …", or, for a
scenario outside the profile's domain, "…; dense model; profile fitted on MoE/MLA (…):
extrapolated; leave-one-model-out error …" — the error measured for that kind of
extrapolation, never the in-domain one (an overlay without ``[profile]``: its ``name``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from perfgraph._infra import tomlfile
from perfgraph.errors import DeclarationError
from perfgraph.scenario import domain

PROFILES_DIR = Path(__file__).resolve().parent / "profiles"
PROFILE_KEYS = ("hardware", "engine", "engine_version", "runs", "held_out", "fitted_on",
                "workloads", "domain", "bands", "errors", "evidence", "widen")
DEFAULT_ENGINE = "vllm"


def find_profile(hardware: str, engine: str | None = None) -> Path | None:
    """The shipped profile for a hardware slug and engine (vLLM when none is named)."""
    want = (hardware, engine or DEFAULT_ENGINE)
    for path in sorted(PROFILES_DIR.glob("*.toml")):
        table = tomlfile.read(path).data.get("profile", {})
        if (table.get("hardware"), table.get("engine")) == want:
            return path
    return None


def check_profile(doc: tomlfile.TomlDoc) -> None:
    """A ``[profile]`` table holds only known keys, of the right types."""
    table = doc.data.get("profile")
    if table is None:
        return
    if not isinstance(table, dict):
        raise doc.error("[profile] must be a table", "profile")
    for key, value in table.items():
        if key not in PROFILE_KEYS:
            raise DeclarationError(f"unknown key {key!r} in [profile]; expected one of: "
                                   f"{', '.join(PROFILE_KEYS)}", file=doc.path,
                                   line=doc.line("profile", key), name=key)
        if key == "runs" and (not isinstance(value, int) or value < 1):
            raise doc.error("runs must be a whole number of at least 1", "profile", key)
        if key == "held_out" and not (isinstance(value, dict) and all(
                isinstance(v, (int, float)) and v >= 0 for v in value.values())):
            raise doc.error("held_out must be a table of metric = fraction (≥ 0)",
                            "profile", key)


        if key == "domain" and (why := domain.check_table(value)) is not None:
            raise doc.error(why, "profile", key)
        if key in ("bands", "errors", "evidence", "widen") and \
                (why := _check_kinds(key, value)) is not None:
            raise doc.error(why, "profile", key)


def _check_kinds(key: str, table: object) -> str | None:
    """``[profile.bands]`` holds kind = {metric = [low, high]}; ``[profile.errors]`` kind =
    {metric = fraction}; ``[profile.evidence]`` kind = {splits, runs, own = counts};
    ``[profile.widen]`` kind = {metric = factor ≥ 1} and ``on_bound``, the cells it is for."""
    if not isinstance(table, dict):
        return f"[profile.{key}] must be a table"
    for kind, metrics in table.items():
        if key == "widen" and kind == "on_bound":
            if not (isinstance(metrics, list) and all(isinstance(c, str) for c in metrics)):
                return "[profile.widen] on_bound must be a list of cell names"
            continue
        if kind not in BAND_KINDS:
            return f"[profile.{key}] {kind!r}: expected one of {', '.join(BAND_KINDS)}"
        if not isinstance(metrics, dict):
            return f"[profile.{key}] {kind} must be a table of metric = value"
        for metric, v in metrics.items():
            good, expected = _good(key, v)
            if not good:
                return f"[profile.{key}] {kind}.{metric}: expected {expected}"
    return None


def _good(key: str, v: object) -> tuple[bool, str]:
    if key == "bands":
        return (isinstance(v, list) and len(v) == 2 and all(
            isinstance(x, (int, float)) and x > 0 for x in v) and v[0] <= v[1],
            "[low, high], ratios > 0, low ≤ high")
    if key == "evidence":
        return isinstance(v, int) and v >= 0, "a count ≥ 0"
    if key == "widen":
        return isinstance(v, (int, float)) and v >= 1, "a factor ≥ 1"
    return isinstance(v, (int, float)) and v >= 0, "a fraction ≥ 0"


# --------------------------------------------------------------------------- the label


#: the held-out kinds a band or an error is measured for: in_domain (workload splits: same
#: GPU and engine, another ISL/OSL), gpu (fit on one GPU, hold another), model
#: (leave-one-model-out), build (leave-one-engine-build-out), precision (fit FP8, hold FP4)
BAND_KINDS = ("in_domain", "gpu", "model", "build", "precision")
#: which measured kind stands for each kind of extrapolation (None: never measured)
MEASURED_AS = {"model": "model", "hardware": "gpu", "precision": "precision",
               "workload": "in_domain",
               "engine": None, "parallelism": None}
SPLIT_NAMES = {"in_domain": "held-out error", "gpu": "leave-one-GPU-out error",
               "model": "leave-one-model-out error",
               "build": "leave-one-build-out error", "precision": "fit-FP8-hold-FP4 error"}
#: the cells each fitted metric is shown in (a band goes beside their values)
BAND_CELLS = {"ttft": ("ttft",), "tpot": ("itl",),
              "throughput": ("throughput", "throughput_per_gpu", "throughput_total_per_gpu")}
#: the columns a band's ends take in a file of one column per cell: ``itl_p10``, ``itl_p90``
BAND_ENDS = ("p10", "p90")


def band_columns(cell: str) -> tuple[str, str]:
    """The two columns that hold a cell's 80% band beside it (``itl`` → ``itl_p10``,
    ``itl_p90``)."""
    return f"{cell}_{BAND_ENDS[0]}", f"{cell}_{BAND_ENDS[1]}"


def banded(cells: Iterable[str]) -> list[str]:
    """Those of ``cells`` that can carry a band (a fitted metric's cells), in order."""
    every = {c for cs in BAND_CELLS.values() for c in cs}
    return [c for c in cells if c in every]


@dataclass(frozen=True)
class Assessment:
    """What a prediction is: its label, whether it lies in the profile's domain, and the
    80% band of measured / model (low, high ratios) per metric that applies to it."""

    text: str
    calibrated: bool = False
    in_domain: bool | None = None  # None: roofline, or a profile that records no domain
    extrapolations: tuple[domain.Extrapolation, ...] = ()
    bands: Mapping[str, tuple[float, float]] | None = None  # None: no measured band

    def band(self, cell: str, value: float | None) -> tuple[float, float] | None:
        """The 80% band of a calibrated cell's value, or None (not a fitted metric's cell,
        no value, or no band measured for this kind of prediction)."""
        if value is None or self.bands is None:
            return None
        metric = next((m for m, cells in BAND_CELLS.items() if cell in cells), None)
        if metric is None or metric not in self.bands:
            return None
        lo, hi = self.bands[metric]
        return value * lo, value * hi

    def as_dict(self) -> dict[str, object]:
        """For JSON outputs: the label, the domain verdict and each extrapolation."""
        return {"label": self.text, "calibrated": self.calibrated,
                "in_domain": self.in_domain,
                "extrapolated": [{"kind": e.kind, "why": e.text} for e in self.extrapolations],
                "bands": {m: list(b) for m, b in (self.bands or {}).items()}}


def assess(doc: tomlfile.TomlDoc | None, point: domain.Point | None = None) -> Assessment:
    """The one place a prediction's label is built: ``roofline``, or ``calibrated: NAME, N
    runs``, then, when the profile records its domain and a scenario point is given, whether
    the point is inside it and the error and 80% band measured for predictions like it."""
    if doc is None:
        return Assessment("roofline")
    table = doc.data.get("profile", {})
    name = Path(doc.path).stem if table else (doc.data.get("name") or Path(doc.path).name)
    head = f"calibrated: {name}" + (f", {table['runs']} runs"
                                    if isinstance(table.get("runs"), int) else "")
    if "domain" not in table:
        return Assessment(f"{head}, {_errors_said('in_domain', table.get('held_out'))}; "
                          "domain not recorded", calibrated=True)
    fitted = domain.from_table(table["domain"])
    if point is None:  # runs taken together: each is judged apart ("predicted by …")
        return Assessment(f"{head}, fitted on {domain.fitted_on(fitted)}, in-domain "
                          f"{_errors_said('in_domain', table.get('held_out'))}",
                          calibrated=True)
    out = domain.extrapolations(fitted, point)
    if not out:
        bands = _kind_bands(table, "in_domain")
        twin = next((t for t in point.twins if t in fitted.models), None)
        same = f"; {point.model} has the architecture of {twin}" if twin else ""
        return Assessment(f"{head}, in domain: {domain.fitted_on(fitted)}{same}, "
                          f"{_errors_said('in_domain', table.get('held_out'))}"
                          f"{_bands_said(bands)}{_widened_said(table, ['in_domain'])}",
                          True, True, (), _bands(bands))
    kinds = list(dict.fromkeys(MEASURED_AS[e.kind] for e in out))
    said = "; ".join(e.text for e in out)
    errors = [_errors_said(k, table.get("held_out") if k == "in_domain"
                           else table.get("errors", {}).get(k))
              + _evidence_said(table.get("evidence", {}).get(k), name) if k else
              f"error not measured for this extrapolation "
              f"({', '.join(e.kind for e in out if MEASURED_AS[e.kind] is None)})"
              for k in kinds]
    got = None if None in kinds else _widest([_kind_bands(table, k) for k in kinds if k])
    return Assessment(f"{head}; {said}: extrapolated; {'; '.join(errors)}"
                      f"{_bands_said(got) if got else '; no band'}"
                      f"{_widened_said(table, kinds) if got else ''}", True, False, out,
                      _bands(got))


def fitted_models(doc: tomlfile.TomlDoc) -> tuple[str, ...]:
    """The models a profile's domain names (none when it records no domain)."""
    table = doc.data.get("profile", {}).get("domain")
    return tuple(str(m) for m in table.get("models", ())) if isinstance(table, dict) else ()


def label(doc: tomlfile.TomlDoc | None, point: domain.Point | None = None) -> str:
    """The label alone (:func:`assess`)."""
    return assess(doc, point).text


def _errors_said(kind: str, errors: object) -> str:
    if not (isinstance(errors, dict) and errors):
        return f"{SPLIT_NAMES[kind]} not stated"
    return f"{SPLIT_NAMES[kind]} " + ", ".join(
        f"{metric} {100 * float(v):.0f}%" for metric, v in errors.items())


def _evidence_said(evidence: object, name: str) -> str:
    """`` (3 splits, 17 held-out runs, none on h200.trtllm)``: how much a kind's error rests
    on, and whether any of it is of this profile's hardware × engine."""
    if not isinstance(evidence, dict) or "splits" not in evidence:
        return ""
    own = evidence.get("own", 0)
    return (f" ({evidence['splits']} splits, {evidence.get('runs', '?')} held-out runs, "
            f"{own or 'none'} on {name})")


def widen(interval: tuple[float, float], factor: float) -> tuple[float, float]:
    """``interval`` with its half-width in log space times ``factor`` about its centre
    (geometric mean): [c (lo / c)^f, c (hi / c)^f], c = √(lo hi)."""
    lo, hi = interval
    centre = (lo * hi) ** 0.5
    return centre * (lo / centre) ** factor, centre * (hi / centre) ** factor


def _kind_bands(table: Mapping, kind: str) -> dict[str, tuple[float, float]] | None:
    """The bands a profile measured for ``kind``, each widened by its ``[profile.widen]``
    factor (fitted values on a bound: :func:`widen`)."""
    bands = _bands(table.get("bands", {}).get(kind))
    factors = table.get("widen", {}).get(kind, {})
    return None if bands is None else {m: widen(b, float(factors.get(m, 1.0)))
                                       for m, b in bands.items()}


def _widened_said(table: Mapping, kinds: list[str | None]) -> str:
    """``; band widened ×1.3 (tpot) for compute_efficiency (lower) on its bound``, or
    nothing when no factor above 1 applies."""
    widened = table.get("widen", {})
    factors = {m: f for k in kinds if k for m, f in widened.get(k, {}).items() if f > 1}
    if not factors:
        return ""
    worst = max(factors.values())
    cells = ", ".join(widened.get("on_bound", ())) or "fitted values"
    return (f"; band widened up to ×{worst:.2f} in log width "
            f"({', '.join(sorted(factors))}): {cells} fitted on a bound")


def _bands(table: object) -> dict[str, tuple[float, float]] | None:
    if not (isinstance(table, dict) and table):
        return None
    return {m: (float(v[0]), float(v[1])) for m, v in table.items()}


def _widest(tables: list[object]) -> dict[str, list[float]] | None:
    """Per metric the widest of several bands (every table must hold one)."""
    got = [_bands(t) for t in tables]
    if not got or any(b is None for b in got):
        return None
    metrics = set.intersection(*(set(b) for b in got if b is not None))
    return {m: [min(b[m][0] for b in got if b), max(b[m][1] for b in got if b)]
            for m in sorted(metrics, key=list(BAND_CELLS).index)}


def _bands_said(table: object) -> str:
    bands = _bands(table)
    if bands is None:
        return "; no band"
    return "; 80% band (measured / model) " + ", ".join(
        f"{m} ×{lo:.2f}–{hi:.2f}" for m, (lo, hi) in bands.items())
