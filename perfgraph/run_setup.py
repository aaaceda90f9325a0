"""Which configuration to evaluate the model at for a measured run, and where each part came from.

The file wins where it says something; the scenario options (``--model``, ``--hardware``,
``--precision``, ``--set tp=…``, a scenario file or ``--workload``) fill in only what the file
does not say.  Model, hardware and TP that neither gives are refused with the option to pass,
never guessed; the precision falls back to the scenario's (fp8 by default) with a note.  A
rate-driven run (no fixed concurrency) is evaluated at Little's law's concurrency: request
throughput × mean end-to-end latency.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from perfgraph.adapters import MeasuredRun
from perfgraph.catalog import catalog_names
from perfgraph.display import number
from perfgraph.scenario import Scenario, ScenarioSpec, load

#: The serving inputs set per run, as columns of the sheet.
CONFIG_CELLS = ("tp", "concurrency", "isl", "osl")

_PRECISION_HINTS = (  # first match wins: a precision named in a model id (…-FP8, …-NVFP4)
    (r"(nv|mx)?fp4", "fp4"),
    (r"fp8", "fp8"),
    (r"int8|w8a8", "int8"),
    (r"bf16|fp16", "bf16"),
)


@dataclass(frozen=True)
class Setup:
    """The model's configuration for one run: catalog names, serving inputs, and notes saying
    where each came from. ``error`` says why the run cannot be modelled (then the rest may be
    None)."""

    model: str | None
    hardware: str | None
    precision: str | None
    tp: float | None
    concurrency: float | None
    isl: float | None
    osl: float | None
    notes: tuple[str, ...] = ()
    error: str | None = None

    @property
    def group(self) -> tuple[str | None, str | None, str | None]:
        """Runs with the same group share one loaded scenario."""
        return self.model, self.hardware, self.precision

    def spec(self, base: ScenarioSpec) -> ScenarioSpec:
        return ScenarioSpec(file=base.file, model=self.model, hardware=self.hardware,
                            workload=base.workload, precision=self.precision, sets=base.sets,
                            calibration=base.calibration)


@dataclass(frozen=True)
class Baseline:
    """What the scenario options say, and which of it the user gave on purpose."""

    spec: ScenarioSpec
    choices: Mapping[str, str]  # model / hardware / precision: catalog name or path
    values: Mapping[str, float]  # tp / concurrency / isl / osl
    explicit: frozenset[str]

    @classmethod
    def from_spec(cls, spec: ScenarioSpec) -> Baseline:
        """Load the scenario once (bad options fail here, as PerfgraphError) and note which
        parts the user chose rather than the built-in defaults."""
        scenario = load(spec)
        choices = {"model": spec.model or scenario.model.path,
                   "hardware": spec.hardware or scenario.hardware.path,
                   "precision": scenario.precision}
        values = {name: scenario.sheet.magnitude(name) for name in CONFIG_CELLS
                  if scenario.sheet.error(name) is None}
        return cls(spec, choices, values, frozenset(_explicit(spec, scenario)))

    @property
    def reference(self) -> str:
        """What the runs are held against: the roofline, or a calibrated model."""
        return "calibrated model" if self.spec.calibration else "roofline"

    def shown(self, kind: str) -> str:
        """A choice as a user reads it: the catalog slug for a catalog file."""
        text = self.choices[kind]
        return text.rsplit("/", 1)[-1].removesuffix(".toml") if kind != "precision" else text


def _explicit(spec: ScenarioSpec, scenario: Scenario) -> set[str]:
    file_data = scenario.file.doc.data if scenario.file is not None else {}
    file_values = file_data.get("values", {}) if isinstance(file_data, dict) else {}
    chosen = {kind for kind in ("model", "hardware", "precision")
              if getattr(spec, kind) is not None or kind in file_data}
    set_names = {name for name, _ in spec.sets}
    for name in CONFIG_CELLS:
        if name in set_names or name in file_values or spec.workload is not None:
            chosen.add(name)
    return chosen


def model_slug(text: str | None) -> str | None:
    """The model catalog's name for a model id a file gives (``meta-llama/Llama-3.3-70B-Instruct``
    → ``llama-3.3-70b``), the longest catalog name it contains; None when none fits."""
    if not text:
        return None
    last = re.sub(r"[\s_]+", "-", str(text).strip().lower().rstrip("/")).rsplit("/", 1)[-1]
    found = [slug for slug in catalog_names("model")
             if re.search(rf"(?<![a-z0-9.]){re.escape(slug)}(?![0-9a-z])", last)]
    return max(found, key=len) if found else None


def precision_hint(text: str | None) -> str | None:
    if not text:
        return None
    lowered = str(text).lower()
    return next((p for pattern, p in _PRECISION_HINTS if re.search(pattern, lowered)), None)


def setup_run(run: MeasuredRun, base: Baseline) -> Setup:
    notes: list[str] = []
    try:
        model = _model(run, base, notes)
        hardware = _choice("hardware", run.hardware, base, notes)
        precision = _precision(run, base, notes)
        tp = _number("tp", run.tp, base, notes, "--set tp=N")
        isl = _number("isl", run.isl, base, notes, "--set isl=N")
        osl = _number("osl", run.osl, base, notes, "--set osl=N")
        concurrency = _concurrency(run, base, notes)
    except _Refused as exc:
        return Setup(None, None, None, None, None, None, None, tuple(notes), str(exc))
    if base.spec.calibration:
        notes.append(f"the model is calibrated by {base.spec.calibration}: % of possible is "
                     "measured against it, not against the roofline")
    return Setup(model, hardware, precision, tp, concurrency, isl, osl, tuple(notes))


class _Refused(Exception):
    pass


def _model(run: MeasuredRun, base: Baseline, notes: list[str]) -> str:
    slug = model_slug(run.model)
    if slug is not None:
        if "model" in base.explicit and base.shown("model") != slug:
            notes.append(f"--model {base.shown('model')} not used: the file names {run.model}")
        return slug
    if run.model and "model" in base.explicit:
        notes.append(f"the file's model {run.model!r} is not in the catalog; compared as "
                     f"{base.shown('model')} (from the scenario options)")
        return base.choices["model"]
    if run.model:
        raise _Refused(f"the file's model {run.model!r} is not in the model catalog (known: "
                       f"{', '.join(catalog_names('model'))}); pass --model NAME or a TOML path "
                       "to compare it against one")
    return _choice("model", None, base, notes)


def _choice(kind: str, given: str | None, base: Baseline, notes: list[str]) -> str:
    if given is not None:
        if kind in base.explicit and base.shown(kind) != given:
            notes.append(f"--{kind} {base.shown(kind)} not used: the file says {given}")
        return given
    if kind not in base.explicit:
        known = ", ".join(catalog_names(kind))
        raise _Refused(f"the file does not say which {kind} ran it; pass --{kind} "
                       f"(known: {known})")
    notes.append(f"{kind} {base.shown(kind)} from the scenario options (the file does not say)")
    return base.choices[kind]


def _precision(run: MeasuredRun, base: Baseline, notes: list[str]) -> str:
    hint = precision_hint(run.model)
    if hint is not None:
        return hint
    how = "from the scenario options" if "precision" in base.explicit else \
        "is the default; pass --precision if the run used another"
    notes.append(f"precision {base.choices['precision']} {how} (the file does not say)")
    return base.choices["precision"]


def _number(name: str, given: float | None, base: Baseline, notes: list[str],
            option: str) -> float:
    if given is not None:
        return float(given)
    if name not in base.explicit or name not in base.values:
        raise _Refused(f"the file does not say its {name}; pass {option}")
    notes.append(f"{name} {number(base.values[name])} from the scenario options "
                 "(the file does not say)")
    return base.values[name]


def _concurrency(run: MeasuredRun, base: Baseline, notes: list[str]) -> float:
    if run.concurrency is not None:
        return float(run.concurrency)
    rate, e2el = run.metrics.get("request_throughput"), run.metrics.get("e2el")
    if rate is not None and e2el is not None and rate.value > 0 and e2el.value > 0:
        estimate = rate.value * e2el.value / 1000.0
        notes.append(f"concurrency {number(estimate)} estimated by Little's law: request "
                     f"throughput {number(rate.value)}/s × mean E2EL {number(e2el.value)} ms "
                     "(the run was paced by request rate; the estimate counts queued requests too)")
        return estimate
    return _number("concurrency", None, base, notes, "--set concurrency=N")
