"""The measured-run adapters' shared base: the adapter interface and ``build_run``.

The records live in ``records`` (runs, metrics, documents), the checked numbers and metric
helpers in ``numbers``; both are re-exported here, where every adapter imports them from.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from perfgraph.errors import MeasuredFileError, UnknownFormatError  # noqa: F401 - re-exported

from .records import (  # noqa: F401 - re-exported
    BadLine,
    Context,
    Document,
    LateCaveat,
    MeasuredRun,
    Metric,
    PerRequest,
    ReadResult,
    RunProblem,
    RunRefused,
    Statistic,
    first_record,
    json_records,
)
from .run_numbers import (  # noqa: F401 - re-exported
    MAX_CONCURRENCY,
    MAX_TP,
    THROUGHPUTS,
    check_number,
    collect_stats,
    completed_count,
    concurrency_of,
    count,
    fmt_num,
    metric_key,
    number,
    positive,
    put,
    put_rate,
    tp_of,
)

# --------------------------------------------------------------------------- hardware & text

def gpu_name(text: object) -> str | None:
    """The GPU name as the file prints it, stripped (None when it names none). Which catalog
    hardware it is, run setup decides from the catalog's aliases (perfgraph.measured.setup)."""
    if text is None:
        return None
    name = " ".join(str(text).split())
    return name or None


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


_TARGET = {"isl": "isl_configured", "osl": "osl_configured"}
_FIXED = ("source", "format", "index", "label", "metrics", "notes", "caveats", "late_caveats")
_DERIVED = ("isl_measured", "osl_measured")  # build_run sets them from isl / osl
#: set later, from the cells (perfgraph.measured.derived), never by a reader
_LATER = ("concurrency_measured", "isl_expected", "osl_expected")
_FIELDS = tuple(f.name for f in dataclasses.fields(MeasuredRun)
                if f.name not in _FIXED + _DERIVED + _LATER)
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(MeasuredRun)
             if f.default is not dataclasses.MISSING}


def build_run(
    ctx: Context,
    fmt: str,
    index: int,
    *,
    metrics: Mapping[str, Metric],
    notes: Iterable[str | None] = (),
    caveats: Iterable[str | LateCaveat | None] = (),
    label_prefix: str = "",
    **fields: Any,
) -> MeasuredRun:
    """One run from what an adapter read: the context's values applied (with a note each), the
    lengths, TP and concurrency checked, per-GPU throughput left to the cells where it can be.

    ``caveats`` are the notes that change how the numbers read; they are kept in ``notes``
    too, in order. A :class:`LateCaveat` among them is checked once the run is derived, and
    its caveat goes where the check stood."""
    unknown = set(fields) - set(_FIELDS)
    if unknown:
        raise TypeError(f"unknown run fields {sorted(unknown)}")
    values: dict[str, Any] = {f: fields.get(f, _DEFAULTS.get(f)) for f in _FIELDS}
    notes_: list[str] = [n for n in notes if n]
    kept, late = _late_caveats(caveats, len(notes_))
    notes_ += kept
    _apply_context(ctx, values, notes_)
    _check_config(values)
    measured = {kind: values[kind] for kind in ("isl", "osl")}
    _fill_lengths(values, notes_)
    metrics = dict(metrics)
    _derive_per_gpu(values, metrics, notes_)
    for key, m in metrics.items():
        check_number(m.value, key)
    label = make_label(label_prefix, values)
    metrics = MappingProxyType(metrics)
    return MeasuredRun(ctx.source, fmt, index, label, metrics=metrics, notes=tuple(notes_),
                       caveats=tuple(kept), late_caveats=late, isl_measured=measured["isl"],
                       osl_measured=measured["osl"], **values)


def _late_caveats(caveats: Iterable[str | LateCaveat | None], first_note: int,
                  ) -> tuple[list[str], tuple[LateCaveat, ...]]:
    """The caveats kept now, and the late ones, each placed after the caveats kept before it
    (they follow the ``first_note`` notes)."""
    kept: list[str] = []
    late: list[LateCaveat] = []
    for c in caveats:
        if isinstance(c, LateCaveat):
            late.append(dataclasses.replace(c, note_at=first_note + len(kept),
                                            caveat_at=len(kept)))
        elif c:
            kept.append(c)
    return kept, tuple(late)


def _apply_context(ctx: Context, values: dict, notes: list[str]) -> None:
    """The overrides' and sidecars' values in place of the file's, each with a note."""
    for key, given in ctx.values.items():
        target = _TARGET.get(key, key)
        old, origin = values[target], ctx.origins.get(key, "overrides")
        if old is not None and old != given:
            notes.append(f"{key} {given!r} from {origin} replaces {old!r} in the file")
        elif old is None:
            notes.append(f"{key} {given!r} taken from {origin}")
        values[target] = given


def _fill_lengths(values: dict, notes: list[str]) -> None:
    """ISL and OSL where the file has no measured mean: the configured value (with a note
    saying so); none where the cells derive the mean (``derive`` names ``isl_measured``/
    ``osl_measured``, or ``isl_expected``/``osl_expected``: the expected mean of a configured
    random range, with a note saying so)."""
    derived = dict(values["derive"])
    for kind in ("isl", "osl"):
        if f"{kind}_measured" in derived:
            continue
        if values[kind] is None and f"{kind}_expected" in derived:
            notes.append(f"{kind.upper()} is the expected mean of the configured random "
                         "range; the file records no measured mean")
            continue
        if values[kind] is None and values[f"{kind}_configured"] is not None:
            values[kind] = values[f"{kind}_configured"]
            notes.append(
                f"{kind.upper()} is the configured value; the file records no measured mean"
            )


def _check_config(values: dict) -> None:
    """TP, concurrency and the lengths a run is modelled at, whatever gave them."""
    if values["tp"] is not None:
        values["tp"] = tp_of(values["tp"], "tp")
    if values["concurrency"] is not None:
        values["concurrency"] = concurrency_of(values["concurrency"], "concurrency")
    for key in ("isl", "osl", "isl_configured", "osl_configured", "osl_implied",
                "request_rate", "duration_s"):
        value = values[key]
        if value is not None and (check_number(value, key, allow_inf=key == "request_rate")
                                  <= 0):
            what = {"isl": "mean ISL", "osl": "mean OSL"}.get(key, key)
            raise RunRefused(f"{what} is 0: nothing to hold the model against")


def _derive_per_gpu(values: dict, metrics: Mapping[str, Metric], notes: list[str]) -> None:
    """A file with a whole-system total and no per-GPU figure leaves total ÷ GPUs to the
    cell ``measured_total_per_gpu`` (``measured_token_rate_per_gpu`` where the total is
    itself a cell: token totals ÷ duration; perfgraph.measured.derived). A total the cells
    sum from the input and output rates stands in for the file's, so ÷ GPUs follows it."""
    gpus = values["gpus"] or values["tp"]
    derived = dict(values["derive"])
    of_totals = "total_over_duration" in derived
    if "throughput_per_gpu" in metrics or not gpus or not (
            of_totals or "total_of_rates" in derived or "total_throughput" in metrics):
        return
    how = f"derived here: total (input+output) tokens/s ÷ {gpus} GPUs; the file has no " \
        "per-GPU figure"
    values["derive"] = (*values["derive"],
                        ("per_gpu_over_duration" if of_totals else "throughput_per_gpu", how))
    notes.append(f"throughput_per_gpu derived as total_throughput ÷ {gpus} GPUs")


def total_from_per_gpu(per_gpu: str, gpus: object) -> tuple[str, str]:
    """A ``derive`` entry: the run's whole-system tokens/s is the cell
    ``measured_total_throughput``, the file's per-GPU figure (``per_gpu``) × ``gpus``."""
    return ("total_throughput",
            f"input + output tokens / s, whole system (derived: {per_gpu} × {gpus})")


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
