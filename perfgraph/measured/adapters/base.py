"""Data types, errors and shared helpers of the measured-run adapters.

Canonical units: latencies (ttft, tpot, itl, e2el) in ms; token throughputs in token/s;
request throughput in request/s.  Metric keys: ``ttft``/``tpot``/``itl``/``e2el`` hold the
MEAN; other statistics are ``<key>_<statistic>`` (``ttft_median``, ``itl_p99`` ...).

``MeasuredRun.index``: the 1-based line number for JSONL files, the 0-based position for a
JSON array or a results list, 0 for a file that holds a single run.

Every number a run carries is checked here (``check_number``, ``count``, ``positive``,
``tp_of``, ``concurrency_of``): NaN, infinite, negative, absurdly large, or (for counts and TP)
fractional values refuse the run with a reason, never a traceback.
"""

from __future__ import annotations

import dataclasses
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Literal

from perfgraph.errors import MeasuredFileError, UnknownFormatError  # noqa: F401 - re-exported

Statistic = Literal["mean", "median", "p50", "p90", "p95", "p99", "min", "max", "std"]


@dataclass(frozen=True)
class Metric:
    value: float  # in the canonical unit
    unit: str  # "ms" | "token/s" | "request/s"
    statistic: str  # mean | median | p99 ... (files may carry other percentiles: p75, p99.9)
    definition: str  # one phrase of what it means


@dataclass(frozen=True)
class MeasuredRun:
    source: str
    format: str
    index: int
    label: str
    model: str | None
    hardware: str | None
    tp: int | None
    concurrency: float | None
    request_rate: float | None
    # isl/osl: measured mean tokens per request when the file allows, else configured
    isl: float | None
    osl: float | None
    isl_configured: float | None
    osl_configured: float | None
    completed: int | None
    duration_s: float | None
    metrics: Mapping[str, Metric]
    notes: tuple[str, ...]  # everything the reader did or noticed (`compare --notes`)
    precision: str | None = None  # as the file states it ("FP8", "fp8", "bf16"), else None
    #: mean requests in flight the file's own numbers show (Little's law: request throughput ×
    #: mean E2EL), when the file has them; may be below the configured ``concurrency``
    concurrency_measured: float | None = None
    #: the measured mean lengths alone (``isl``/``osl`` fall back to the configured ones)
    isl_measured: float | None = None
    osl_measured: float | None = None
    #: a mean OSL implied by the file's latencies where it records no lengths (InferenceMAX)
    osl_implied: float | None = None
    #: the notes that change how the numbers read (zero-length outputs, recomputed metrics, ITL
    #: per chunk, measured vs configured lengths …); also in ``notes``. Shown by every output.
    caveats: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunProblem:
    source: str
    index: int | None
    reason: str


@dataclass(frozen=True)
class ReadResult:
    source: str
    format: str
    runs: tuple[MeasuredRun, ...]
    problems: tuple[RunProblem, ...]


class RunRefused(Exception):
    """Raised inside an adapter for one bad run; the read loop turns it into a RunProblem."""


# --------------------------------------------------------------------------- documents


@dataclass(frozen=True)
class BadLine:
    line: int
    error: str


@dataclass(frozen=True)
class Document:
    source: str
    kind: Literal["json", "jsonl", "csv"]
    data: Any  # json: the parsed value; jsonl: list of (line, dict | BadLine); csv: list of rows
    directory: Path


def json_records(doc: Document) -> list[tuple[int, Any]]:
    if doc.kind == "jsonl":
        return list(doc.data)
    if doc.kind == "json" and isinstance(doc.data, list):
        return list(enumerate(doc.data))
    if doc.kind == "json":
        return [(0, doc.data)]
    return []


def first_record(doc: Document) -> dict | None:
    return next((r for _, r in json_records(doc) if isinstance(r, dict)), None)


# --------------------------------------------------------------------------- numbers


#: Bounds a real run stays within; beyond them a number is a typo or a corrupt file.
MAX_TP = 1024  # GPUs in one tensor-parallel group
MAX_CONCURRENCY = 1_000_000  # requests in flight at once


def check_number(value: Any, what: str, allow_inf: bool = False) -> float:
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise RunRefused(f"'{what}' is not a number ({value[:40]!r})") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RunRefused(f"'{what}' is not a number ({str(value)[:40]!r})")
    try:
        value = float(value)
    except OverflowError:  # a JSON integer with hundreds of digits
        raise RunRefused(f"'{what}' is too large (an integer beyond 1e308)") from None
    if math.isnan(value):
        raise RunRefused(f"'{what}' is NaN")
    if math.isinf(value) and not allow_inf:
        raise RunRefused(f"'{what}' is infinite")
    if value < 0:
        raise RunRefused(f"'{what}' is negative ({value})")
    return float(value)


def number(record: Mapping, key: str, required: bool = True, allow_inf: bool = False):
    """record[key] as a checked float; None if absent and not required."""
    if record.get(key) is None:
        if required:
            raise RunRefused(f"required field '{key}' is missing")
        return None
    return check_number(record[key], key, allow_inf)


def positive(record: Mapping, key: str, what: str = "") -> float:
    """record[key], required, as a checked float above 0 (a duration, a token total)."""
    value = number(record, key)
    if value <= 0:
        raise RunRefused(f"'{key}' is 0{what or ': it must be above 0'}")
    return value


def count(value: Any, what: str) -> int:
    """A number of requests: a whole number of at least 1."""
    n = check_number(value, what)
    if n == 0:
        raise RunRefused(f"'{what}' is 0: no request completed, nothing was measured")
    if not n.is_integer():
        raise RunRefused(f"'{what}' is {fmt_num(n)}: a count of requests must be a whole number")
    return int(n)


def completed_count(record: Mapping, key: str) -> int:
    if record.get(key) is None:
        raise RunRefused(f"required field '{key}' is missing")
    return count(record[key], key)


def tp_of(value: Any, what: str = "tp") -> int:
    """A tensor-parallel size: a whole number from 1 to ``MAX_TP``."""
    n = check_number(value, what)
    if not n.is_integer() or not 1 <= n <= MAX_TP:
        raise RunRefused(f"'{what}' is {fmt_num(n)}: TP must be a whole number from 1 to "
                         f"{MAX_TP}")
    return int(n)


def concurrency_of(value: Any, what: str = "concurrency") -> float:
    """A configured concurrency: at least 1 request in flight, at most ``MAX_CONCURRENCY``."""
    n = check_number(value, what)
    if not 1 <= n <= MAX_CONCURRENCY:
        raise RunRefused(f"'{what}' is {fmt_num(n)}: concurrency must be from 1 to "
                         f"{MAX_CONCURRENCY:,} requests in flight")
    return n


def in_flight(metrics: Mapping[str, Metric]) -> float | None:
    """Mean requests in flight by Little's law: request throughput × mean E2EL."""
    rate, e2el = metrics.get("request_throughput"), metrics.get("e2el")
    if rate is None or e2el is None or rate.value <= 0 or e2el.value <= 0:
        return None
    return rate.value * e2el.value / 1000.0


# --------------------------------------------------------------------------- metrics

_STAT = r"(mean|median|std|min|max|p\d+(?:\.\d+)?)"


def metric_key(base: str, statistic: str) -> str:
    return base if statistic == "mean" else f"{base}_{statistic}"


def put(metrics: dict, base: str, statistic: str, value: float, unit: str, definition: str):
    metrics[metric_key(base, statistic)] = Metric(value, unit, statistic, definition)


THROUGHPUTS = {  # the whole-system rates every format names alike: key -> (unit, definition)
    "request_throughput": ("request/s", "completed requests / s"),
    "output_throughput": ("token/s", "output tokens / s, whole system"),
    "input_throughput": ("token/s", "input tokens / s, whole system"),
    "total_throughput": ("token/s", "input + output tokens / s, whole system"),
}


def put_rate(metrics: dict, base: str, value: float, how: str = "") -> float:
    """Store a whole-system throughput; `how` says how it was obtained when not read directly."""
    unit, what = THROUGHPUTS[base]
    put(metrics, base, "mean", value, unit, f"{what} ({how})" if how else what)
    return value


def collect_stats(
    record: Mapping,
    names: Mapping[str, str],
    suffix: str,
    scale: float,
    definitions: Mapping[str, str],
) -> dict[str, Metric]:
    """Latency statistics from flat keys '<stat>_<name><suffix>' (e.g. 'p99_itl_ms')."""
    alternation = "|".join(re.escape(n) for n in names)
    pattern = re.compile(rf"^{_STAT}_({alternation}){re.escape(suffix)}$")
    metrics: dict[str, Metric] = {}
    for key, value in record.items():
        m = pattern.match(key)
        if m and value is not None:
            base = names[m.group(2)]
            value = check_number(value, key) * scale
            put(metrics, base, m.group(1), value, "ms", definitions[base])
    return metrics


# --------------------------------------------------------------------------- hardware & text

_HW_PATTERNS = (  # first match wins; GH200/GB200 are kept apart from H200/B200 on purpose
    (r"gh200|gb200|gb300", None),
    (r"h100.*pcie|pcie.*h100", "h100-pcie"),
    (r"h100.*(sxm|hbm3)", "h100-sxm"),
    (r"h100.*nvl", None),
    (r"h200", "h200"),
    (r"b200", "b200"),
    (r"mi300x", "mi300x"),
    (r"mi325x", "mi325x"),
    (r"mi355x", "mi355x"),
    (r"a100.*80\s*gb", "a100-80gb"),  # the catalog holds only the 80 GB A100
    (r"l40s", "l40s"),
)


def hardware_slug(text: str | None, bare_h100: str | None = None) -> str | None:
    """Catalog slug for a GPU name the file gives, None when not recognisable."""
    if not text:
        return None
    t = str(text).lower()
    for pattern, slug in _HW_PATTERNS:
        if re.search(pattern, t):
            return slug
    return bare_h100 if re.search(r"h100", t) else None


def fmt_num(x: float) -> str:
    if math.isinf(x):
        return "inf"
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


def make_label(prefix: str, run: Mapping[str, Any]) -> str:
    """'H100-SXM TP4 conc 64', 'random 1024/1024 rate 8' ..."""
    parts = [prefix] if prefix else []
    if run["hardware"]:
        parts.append(run["hardware"].upper())
    if run["tp"]:
        parts.append(f"TP{run['tp']}")
    if run["concurrency"] is not None:
        parts.append(f"conc {fmt_num(run['concurrency'])}")
    elif run["request_rate"] is not None:
        parts.append(f"rate {fmt_num(run['request_rate'])}")
    return " ".join(parts) or "run"


# --------------------------------------------------------------------------- building runs


@dataclass(frozen=True)
class Context:
    """What the caller (overrides) or a sidecar meta.toml says about the file's runs."""

    source: str
    #: model / hardware / precision / tp / concurrency / isl / osl
    values: Mapping[str, Any] = field(default_factory=dict)
    origins: Mapping[str, str] = field(default_factory=dict)  # key -> "overrides" / sidecar name


_TARGET = {"isl": "isl_configured", "osl": "osl_configured"}
_FIXED = ("source", "format", "index", "label", "metrics", "notes", "caveats")
_DERIVED = ("isl_measured", "osl_measured")  # build_run sets them from isl / osl
_FIELDS = tuple(f.name for f in dataclasses.fields(MeasuredRun)
                if f.name not in _FIXED + _DERIVED)


def build_run(
    ctx: Context,
    fmt: str,
    index: int,
    *,
    metrics: Mapping[str, Metric],
    notes: Iterable[str | None] = (),
    caveats: Iterable[str | None] = (),
    label_prefix: str = "",
    **fields: Any,
) -> MeasuredRun:
    """One run from what an adapter read: the context's values applied (with a note each), the
    lengths, TP and concurrency checked, per-GPU throughput derived where it can be.

    ``caveats`` are the notes that change how the numbers read; they are kept in ``notes``
    too, in order."""
    unknown = set(fields) - set(_FIELDS)
    if unknown:
        raise TypeError(f"unknown run fields {sorted(unknown)}")
    values = {f: fields.get(f) for f in _FIELDS}
    kept: list[str] = [c for c in caveats if c]
    notes_: list[str] = [n for n in notes if n] + kept
    for key, given in ctx.values.items():
        target = _TARGET.get(key, key)
        old, origin = values[target], ctx.origins.get(key, "overrides")
        if old is not None and old != given:
            notes_.append(f"{key} {given!r} from {origin} replaces {old!r} in the file")
        elif old is None:
            notes_.append(f"{key} {given!r} taken from {origin}")
        values[target] = given
    _check_config(values)
    measured = {kind: values[kind] for kind in ("isl", "osl")}
    for kind in ("isl", "osl"):
        if values[kind] is None and values[f"{kind}_configured"] is not None:
            values[kind] = values[f"{kind}_configured"]
            notes_.append(
                f"{kind.upper()} is the configured value; the file records no measured mean"
            )
    metrics = dict(metrics)
    _derive_per_gpu(metrics, values["tp"], notes_)
    for key, m in metrics.items():
        check_number(m.value, key)
    label = make_label(label_prefix, values)
    metrics = MappingProxyType(metrics)
    return MeasuredRun(ctx.source, fmt, index, label, metrics=metrics, notes=tuple(notes_),
                       caveats=tuple(kept), isl_measured=measured["isl"],
                       osl_measured=measured["osl"], **values)


def _check_config(values: dict) -> None:
    """TP, concurrency and the lengths a run is modelled at, whatever gave them."""
    if values["tp"] is not None:
        values["tp"] = tp_of(values["tp"], "tp")
    if values["concurrency"] is not None:
        values["concurrency"] = concurrency_of(values["concurrency"], "concurrency")
    for key in ("isl", "osl", "isl_configured", "osl_configured", "osl_implied",
                "concurrency_measured", "request_rate", "duration_s"):
        value = values[key]
        if value is not None and (check_number(value, key, allow_inf=key == "request_rate")
                                  <= 0):
            what = {"isl": "mean ISL", "osl": "mean OSL"}.get(key, key)
            raise RunRefused(f"{what} is 0: nothing to hold the model against")


def _derive_per_gpu(metrics: dict, tp: int | None, notes: list[str]) -> None:
    if "throughput_per_gpu" in metrics or "total_throughput" not in metrics or not tp:
        return
    per_gpu = metrics["total_throughput"].value / tp
    what = f"derived here: total (input+output) tokens/s ÷ TP {tp}; the file has no per-GPU figure"
    put(metrics, "throughput_per_gpu", "mean", per_gpu, "token/s", what)
    notes.append(f"throughput_per_gpu derived as total_throughput ÷ TP {tp}")


# --------------------------------------------------------------------------- adapter interface


Runs = tuple[tuple[MeasuredRun, ...], tuple[RunProblem, ...]]


class Adapter(ABC):
    """One file format: recognise it from content, then read each run it holds."""

    format: ClassVar[str]
    reads: ClassVar[str]  # one line: what files this adapter reads

    @abstractmethod
    def detect(self, doc: Document) -> bool: ...

    @abstractmethod
    def read_record(self, record: dict, index: int, ctx: Context, shared: Any) -> MeasuredRun: ...

    def records(self, doc: Document) -> list[tuple[int, Any]]:
        return json_records(doc)

    def prepare(self, doc: Document, ctx: Context) -> Any:
        """File-level information shared by every run of the file (default: none)."""
        return None

    def read(self, doc: Document, ctx: Context) -> Runs:
        """Every run of the file; a run that cannot be read — for any reason, expected or not
        — becomes a RunProblem with the reason, never an exception."""
        try:
            shared = self.prepare(doc, ctx)
            records = self.records(doc)
        except RunRefused as exc:
            raise MeasuredFileError(doc.source, str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - defence in depth: one message, no traceback
            raise MeasuredFileError(doc.source, f"could not be read as {self.format}: "
                                    f"{unexpected(exc)}") from None
        runs: list[MeasuredRun] = []
        problems: list[RunProblem] = []
        for index, record in records:
            try:
                if isinstance(record, BadLine):
                    raise RunRefused(f"line {record.line} is not valid JSON: {record.error}")
                if not isinstance(record, dict):
                    raise RunRefused(f"expected a JSON object, found {_json_kind(record)}")
                runs.append(self.read_record(record, index, ctx, shared))
            except RunRefused as exc:
                problems.append(RunProblem(doc.source, index, str(exc)))
            except Exception as exc:  # noqa: BLE001 - a reader bug must not lose the others
                problems.append(RunProblem(doc.source, index, f"could not be read as "
                                           f"{self.format}: {unexpected(exc)}"))
        return tuple(runs), tuple(problems)


def unexpected(exc: BaseException) -> str:
    """An unexpected exception as one line for a user: its kind and its message."""
    text = " ".join(str(exc).split())[:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _json_kind(value: Any) -> str:
    kinds = {list: "an array", str: "a string", bool: "true/false", type(None): "null"}
    return kinds.get(type(value), "a number" if isinstance(value, (int, float)) else
                     type(value).__name__)
