"""Which configuration to evaluate the model at for a measured run, and where each part came from.

The file wins where it says something; the scenario options (``--model``, ``--hardware``,
``--precision``, ``--set tp=…``, a scenario file or ``--workload``) fill in only what the file
does not say, and an option the file overrules is named in a "not used" note.  Model, hardware
and TP that neither gives are refused with the option to pass, never guessed; the precision
(the file's, else one named in the model id) falls back to the scenario's (fp8 by default)
with a note.

Concurrency, in order: the file's configured concurrency, unless the file's own numbers show
fewer requests in flight (``MeasuredRun.concurrency_measured``, Little's law: request
throughput × mean E2EL, the cell ``measured_in_flight`` that ``perfgraph.measured.derived``
evaluates, below ``IN_FLIGHT_BELOW`` × the configured) — then that, as the batch
the server saw; an explicit ``--set concurrency=N`` wins over any such estimate, never over a
configured concurrency the file's numbers bear out.  A rate-driven run (no configured
concurrency) is evaluated at ``--set concurrency`` if given, else at Little's law's estimate; a
maximum-load run (every request at once: ``request_rate`` infinite) whose request count the
file gives is a burst (``perfgraph.measured.run_arrivals``), and one with neither count nor
estimate, at the sheet's ``capacity_batch``, which compare reads once the run's sheet is loaded
(``CAPACITY``; a burst of fewer requests, at their count).
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

from perfgraph.engine.numbers import number
from perfgraph.errors import PerfgraphError
from perfgraph.measured.adapters import MeasuredRun
from perfgraph.measured.baseline import (  # noqa: F401 (the records, re-exported)
    _CELL_FOR,
    BURST,
    CAPACITY,
    CONFIG_CELLS,
    CONFIGURED,
    DEPLOYMENT_CELLS,
    EXPECTED,
    IN_FLIGHT_BELOW,
    MEASURED,
    OPTIONS,
    PACED,
    Baseline,
    RunSetup,
)
from perfgraph.measured.run_arrivals import arrivals_of, burst_spread, is_burst
from perfgraph.measured.run_arrivals import at_capacity as at_capacity
from perfgraph.measured.run_arrivals import config_columns as config_columns
from perfgraph.measured.run_speculation import speculative_sets
from perfgraph.scenario.catalog import catalog_names, hardware_aliases, load_entry
from perfgraph.scenario.loading import engine_entry, engine_names, precisions

_PRECISION_HINTS = (  # first match wins: a precision named in a model id (…-FP8, …-NVFP4)
    (r"(nv|mx)?fp4", "fp4"),
    (r"fp8", "fp8"),
    (r"int8|w8a8", "int8"),
    (r"bf16|fp16", "bf16"),
)


def model_slug(text: str | None) -> str | None:
    """The model catalog's name for a model id a file gives (``meta-llama/Llama-3.3-70B-Instruct``
    → ``llama-3.3-70b``), the longest catalog name it contains; None when none fits."""
    if not text:
        return None
    last = re.sub(r"[\s_]+", "-", str(text).strip().lower().rstrip("/")).rsplit("/", 1)[-1]
    found = [slug for slug in catalog_names("model")
             if re.search(rf"(?<![a-z0-9.]){re.escape(slug)}(?![0-9a-z])", last)]
    return max(found, key=len) if found else None


def _normal(name: str) -> str:
    """A GPU name compared loosely: case, '_' for ' ', and a leading '4x' count ignored."""
    text = re.sub(r"[\s_]+", " ", name.strip().lower())
    return re.sub(r"^\d+\s*x\s*", "", text)


@lru_cache(maxsize=1)
def _alias_table() -> dict[str, str]:
    table: dict[str, str] = {}
    for slug, aliases in hardware_aliases().items():
        for name in (slug, *aliases):
            table.setdefault(_normal(name), slug)
    return table


def hardware_slug(name: str | None, notes: list[str] | None = None) -> str | None:
    """The hardware catalog's name for a GPU name a file prints (its ``aliases``), None when
    the file names none; a name no alias matches is refused with the names to use."""
    if name is None:
        return None
    slug = _alias_table().get(_normal(name))
    if slug is None:
        raise _Refused(f"the file's GPU {name!r} matches no hardware alias in the catalog; "
                       f"pass --hardware (known: {', '.join(catalog_names('hardware'))}) or add "
                       "the name to that hardware file's aliases")
    if notes is not None and slug != name:
        notes.append(f"GPU {name!r} is hardware {slug} (its catalog aliases)")
    return slug


def _run_hardware(run: MeasuredRun, base: Baseline, notes: list[str]) -> str | None:
    """The run's GPU as a catalog slug; a name no alias matches gives way to an explicit
    ``--hardware`` (with a note), else refuses the run."""
    try:
        return hardware_slug(run.hardware, notes)
    except _Refused:
        if "hardware" not in base.explicit:
            raise
        notes.append(f"the file's GPU {run.hardware!r} matches no hardware alias; compared as "
                     f"{base.shown('hardware')} (from the scenario options)")
        return None


def precision_hint(text: str | None) -> str | None:
    if not text:
        return None
    lowered = str(text).lower()
    return next((p for pattern, p in _PRECISION_HINTS if re.search(pattern, lowered)), None)


def setup_run(run: MeasuredRun, base: Baseline) -> RunSetup:
    notes: list[str] = []
    try:
        model = _model(run, base, notes)
        hardware = _choice("hardware", _run_hardware(run, base, notes), base, notes)
        precision = _precision(run, base, notes, hardware)
        tp = _number("tp", run.tp, base, notes, "--set tp=N")
        isl = _number("isl", run.isl, base, notes, "--set isl=N")
        osl = _number("osl", run.osl, base, notes, "--set osl=N")
        concurrency, conc_source = _concurrency(run, base, notes)
        engine = _engine(run, base, notes)
    except _Refused as exc:
        return RunSetup(None, None, None, None, None, None, None, tuple(notes), str(exc))
    if base.spec.calibration:
        notes.append(f"calibrated by {base.spec.calibration}: % of possible is against the "
                     "roofline, 'vs predicted' against the calibrated model")
    osl_source = _source(run.osl_measured, run.osl_expected, run.osl_configured)
    arrivals = arrivals_of(run, conc_source)
    deployment = _deployment(run, base, notes) + _kv_cache(engine, precision, base, notes) + \
        speculative_sets(run, base, notes) + \
        burst_spread(run, osl, arrivals.get("arrivals"), base, notes)
    e2el_osl = _e2el_osl(run, osl, osl_source, notes)
    return RunSetup(model, hardware, precision, tp, concurrency, isl, osl, tuple(notes),
                    isl_source=_source(run.isl_measured, run.isl_expected, run.isl_configured),
                    osl_source=osl_source, e2el_osl=e2el_osl,
                    concurrency_source=conc_source, engine=engine, deployment=deployment,
                    **arrivals)


def _source(measured: float | None, expected: float | None, configured: float | None) -> str:
    if measured is not None:
        return MEASURED
    return EXPECTED if expected is not None else CONFIGURED if configured is not None \
        else OPTIONS


def _engine(run: MeasuredRun, base: Baseline, notes: list[str]) -> str | None:
    """The run's engine wins, like its precision (the file's name for it mapped by the engine
    files' ``aliases``); one without an engine file is modelled with the scenario's engine,
    and says so."""
    if run.engine is None:
        return None
    engine = _engine_aliases().get(run.engine.strip().lower())
    if engine is None:
        notes.append(f"the file's engine {run.engine!r} has no engine file (known: "
                     f"{', '.join(engine_names())}); modelled with {base.engine}'s memory rule")
        return None
    if "engine" in base.explicit and base.engine != engine:
        notes.append(f"--engine {base.engine} not used: the file says {run.engine}")
    return engine


@lru_cache(maxsize=1)
def _engine_aliases() -> dict[str, str]:
    table: dict[str, str] = {}
    for name in engine_names():
        for alias in (name, *engine_entry(name).doc.data.get("aliases", ())):
            table.setdefault(str(alias).strip().lower(), name)
    return table


def _kv_cache(engine: str | None, precision: str, base: Baseline,
              notes: list[str]) -> tuple[tuple[str, str], ...]:
    """The engine's KV-cache dtype rule (``kv_cache_dtype`` in engines/*.toml) for the run's
    engine, or an explicit ``--engine``: "activations" (vLLM, SGLang: ``--kv-cache-dtype
    auto``) stores KV in the activations' dtype whatever the weights' precision, as
    ``kv_bytes = activation_bytes``; "checkpoint" (TensorRT-LLM) keeps the precision's
    kv_bytes. A ``--set kv_bytes`` (a run that used an FP8 KV cache) wins."""
    name = engine or (base.engine if "engine" in base.explicit else None)
    if name is None or "kv_bytes" in base.set_cells:
        return ()
    entry = engine_entry(name)
    table = precisions().data
    kv = table.get(precision, {}).get("kv_bytes")
    if entry.doc.data.get("kv_cache_dtype") != "activations" or kv == table["bf16"]["kv_bytes"]:
        return ()
    notes.append(f"KV cache in the activations' dtype (kv_bytes = activation_bytes), not "
                 f"{precision}'s {kv}: {entry.doc.data.get('name', name)}'s KV-cache dtype "
                 f"defaults to auto, the model's dtype (engines/{name}.toml); pass --set "
                 "kv_bytes=1 for a run served with an FP8 KV cache")
    return (("kv_bytes", "activation_bytes"),)


def _deployment(run: MeasuredRun, base: Baseline, notes: list[str]) -> tuple[tuple[str, str], ...]:
    """The run's deployment beyond TP as --set pairs, for the cells the sheet has; the others
    are named once, as carried but not modelled."""
    sets, unused = [], []
    for field in DEPLOYMENT_CELLS:
        value, cell = getattr(run, field), _CELL_FOR.get(field, field)
        if value is None or (field == "pp" and value == 1 and cell not in base.cells):
            continue
        if cell == "tp":  # already the run's TP (the decode workers'); a differing one is said
            if value != run.tp:
                unused.append(f"{field} {value} (the model runs TP {run.tp})")
            continue
        if field == "disaggregated" and not value:
            continue
        if cell in base.cells:
            sets.append((cell, str(value).lower() if isinstance(value, bool) else str(value)))
        else:
            unused.append(f"{field} {value}")
    if unused:
        notes.append(f"the file's {', '.join(unused)} not modelled (no such cell in the sheet "
                     "yet)")
    pinned = [(c, v) for c, v in run.engine_settings
              if c in base.cells and c not in base.set_cells]
    if pinned:
        notes.append("the engine as its benchmark tool sized it: "
                     + ", ".join(f"{c} = {v}" for c, v in pinned))
    return (*sets, *pinned)


def _e2el_osl(run: MeasuredRun, osl: float, source: str, notes: list[str]) -> float:
    implied = run.osl_implied
    if source == MEASURED or implied is None or abs(implied / osl - 1) <= 0.01:
        return osl
    notes.append(f"E2EL modelled at the run's implied mean OSL {number(implied, 4)} (worked "
                 f"out from the file's own numbers, see its notes), not the {source} "
                 f"{number(osl, 4)}: a request's E2EL is its OSL decode steps, so it is "
                 "compared at the OSL it ran")
    return implied


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


def _precision(run: MeasuredRun, base: Baseline, notes: list[str], hardware: str) -> str:
    """The file's precision, else one the model id names, else the scenario's (with a note).
    A precision the chip has no compute for (FP4 on Hopper) gives way to an explicit
    ``--precision``, or refuses the run with the options that model it as weight-only."""
    chosen = base.choices["precision"]
    for given, where in ((run.precision, "the file says"), (run.model, "the model id names")):
        hint = precision_hint(given)
        if given and hint is None and where == "the file says":
            notes.append(f"the file's precision {given!r} is none the model knows "
                         "(bf16, fp8, int8, fp4); not used")
        if hint is None:
            continue
        if not _has_peak(hardware, hint):
            return _weight_only(hint, f"{where} {given}", hardware, base, notes)
        if "precision" in base.explicit and chosen != hint:
            notes.append(f"--precision {chosen} not used: {where} {given}")
        return hint
    if "precision" not in base.explicit and not _has_peak(hardware, chosen):
        has = [k for k in precisions().data if _has_peak(hardware, k)]
        raise _Refused(f"the file does not say its precision, and the default {chosen} has no "
                       f"dense compute on {hardware}: pass --precision ({' or '.join(has)})")
    how = "from the scenario options" if "precision" in base.explicit else \
        "is the default; pass --precision if the run used another"
    notes.append(f"precision {chosen} {how} (the file does not say)")
    return chosen


def _has_peak(hardware: str, precision: str) -> bool:
    """Whether the hardware has dense compute for the precision (True when it cannot tell:
    loading the model then says what is wrong)."""
    try:
        peak = precisions().data[precision]["peak"]
        return peak in load_entry("hardware", hardware).table("peak_flops")
    except (PerfgraphError, KeyError, TypeError):
        return True


def _weight_only(hint: str, said: str, hardware: str, base: Baseline, notes: list[str]) -> str:
    chosen = base.choices["precision"]
    why = f"{said}, but {hardware} has no dense {hint} compute"
    if "precision" in base.explicit and chosen != hint:
        notes.append(f"{why}: modelled at --precision {chosen} as given (weights in {hint} "
                     "are dequantised to it; --set weight_bytes to count them at their size)")
        return chosen
    size = precisions().data[hint]["weight_bytes"]
    raise _Refused(f"{why}; a weight-only {hint} model runs its matmuls at a wider precision: "
                   f"pass --precision bf16 (or fp8) with --set weight_bytes=\"{size}\"")


def _number(name: str, given: float | None, base: Baseline, notes: list[str],
            option: str) -> float:
    if given is not None:
        if name in base.explicit and name in base.values and base.values[name] != given:
            notes.append(f"{option.split('=')[0]}={number(base.values[name])} not used: the "
                         f"file says {name} {number(given, 4)}")
        return float(given)
    if name not in base.explicit or name not in base.values:
        raise _Refused(f"the file does not say its {name}; pass {option}")
    notes.append(f"{name} {number(base.values[name])} from the scenario options "
                 "(the file does not say)")
    return base.values[name]


def _concurrency(run: MeasuredRun, base: Baseline, notes: list[str]) -> tuple[float, str]:
    """The batch to model the run at, and where it came from (see the module docstring)."""
    explicit = base.values.get("concurrency") if "concurrency" in base.explicit else None
    configured, inflight = run.concurrency, run.concurrency_measured
    if configured is not None:
        if inflight is None or inflight >= IN_FLIGHT_BELOW * configured:
            if explicit is not None and explicit != configured:
                notes.append(f"--set concurrency={number(explicit)} not used: the file says "
                             f"concurrency {number(configured)}")
            return float(configured), "configured"
        shown = (f"the file's numbers show {number(inflight, 3)} requests in flight on average "
                 f"(Little's law: request throughput × mean E2EL), below its configured "
                 f"concurrency {number(configured)}")
        if explicit is not None:
            notes.append(f"concurrency {number(explicit)} from --set concurrency; {shown}")
            return float(explicit), "options"
        notes.append(f"concurrency {number(inflight, 3)} in flight used, not the configured "
                     f"{number(configured)}: {shown}; the server batched what was in flight")
        return float(inflight), "in flight"
    estimate = run.concurrency_measured
    if explicit is None and is_burst(run):
        little = f"; Little's law's {number(estimate, 3)} in flight (queued requests counted) " \
            "not used" if estimate is not None else ""
        notes.append(f"a maximum-load run of {run.completed} requests sent at once: a burst, "
                     "served capacity_batch at a time (the largest batch the engine holds: "
                     "min(max_num_seqs, what the KV memory holds)) in ⌈R / capacity_batch⌉ "
                     f"waves, each waiting for the one before (burst_ttft, burst_throughput)"
                     f"{little}")
        return float(base.values.get("concurrency", 1.0)), CAPACITY
    if explicit is not None:
        if estimate is not None:
            notes.append(f"concurrency {number(explicit)} from --set concurrency; the "
                         f"Little's-law estimate {number(estimate, 3)} (request throughput × "
                         "mean E2EL) not used")
        return float(explicit), "options"
    if estimate is not None:
        rate, e2el = run.metrics["request_throughput"], run.metrics["e2el"]
        paced = "the run was paced by request rate" if run.request_rate is not None else \
            "the file gives no concurrency"
        notes.append(f"concurrency {number(estimate)} estimated by Little's law: request "
                     f"throughput {number(rate.value)}/s × mean E2EL {number(e2el.value)} ms "
                     f"({paced}; the estimate counts queued requests too)")
        return float(estimate), "little"
    if run.request_rate is not None and math.isinf(run.request_rate):
        notes.append("a maximum-load run (every request at once, no concurrency in the file): "
                     "modelled at capacity_batch, the largest batch the engine holds "
                     "(min(max_num_seqs, what the KV memory holds)); the file does not say "
                     "how many requests it sent, so not as a burst of waves")
        return float(base.values.get("concurrency", 1.0)), CAPACITY
    return _number("concurrency", None, base, notes, "--set concurrency=N"), "options"
