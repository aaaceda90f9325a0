"""Read measured benchmark runs (vLLM, SGLang, AIPerf, InferenceMAX, ...) into MeasuredRun.

    result = read_runs("results/run.jsonl", overrides={"model": "...", "tp": 4})
    for run in result.runs: ...            # MeasuredRun, metrics in ms / token/s / request/s
    for problem in result.problems: ...    # RunProblem: a run refused, with the reason

The format is detected from the file's CONTENT, never its name.  ``overrides`` (and a sidecar
``<file>.meta.toml`` or ``perfgraph.meta.toml`` beside the file) may give model, hardware,
precision, tp, concurrency, isl and osl for files that lack them; overrides win over the
sidecars, the file-specific sidecar over the directory one.
"""

from __future__ import annotations

import csv
import io
import json
import stat
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from perfgraph.errors import MetaFileError

from . import inferencemax, inferencex, serving
from .aiperf import AiperfCsvAdapter, AiperfJsonAdapter
from .base import (
    Adapter,
    BadLine,
    Context,
    Document,
    MeasuredFileError,
    MeasuredRun,
    Metric,
    ReadResult,
    RunProblem,
    RunRefused,
    Statistic,
    UnknownFormatError,
    concurrency_of,
    tp_of,
    unexpected,
)
from .commands import SummaryTableAdapter
from .gpu_conc import GpuConcAdapter
from .inferencemax import InferenceMaxAggAdapter, InferenceMaxRowsAdapter
from .inferencex import InferenceXRowsAdapter
from .records import markdown_tables
from .sglang import SGLangAdapter
from .trtllm_docs import TrtllmOnlineAdapter, TrtllmThroughputAdapter
from .vllm import VllmAdapter, VllmLegacyAdapter

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "CAVEAT_CHECKS",
    "FORMATS",
    "MeasuredFileError",
    "MeasuredRun",
    "Metric",
    "ReadResult",
    "RunProblem",
    "Statistic",
    "UnknownFormatError",
    "detect_format",
    "read_runs",
]

ADAPTERS: tuple[Adapter, ...] = (
    VllmLegacyAdapter(),
    VllmAdapter(),
    GpuConcAdapter(),
    SGLangAdapter(),
    AiperfJsonAdapter(),
    AiperfCsvAdapter(),
    InferenceMaxRowsAdapter(),
    InferenceMaxAggAdapter(),
    InferenceXRowsAdapter(),
    SummaryTableAdapter(),
    TrtllmThroughputAdapter(),
    TrtllmOnlineAdapter(),
)
FORMATS: Mapping[str, str] = MappingProxyType({a.format: a.reads for a in ADAPTERS})
"""format name -> what that adapter reads, in detection order."""
#: Every reader's late caveat checks (:class:`~.records.LateCaveat`) by name, each on the
#: derived run (``perfgraph.measured.derived``).
CAVEAT_CHECKS: Mapping[str, Callable[..., str | None]] = MappingProxyType(
    {**serving.LATE_CHECKS, **inferencemax.LATE_CHECKS, **inferencex.LATE_CHECKS})

_KEYS = {"model": str, "hardware": str, "precision": str, "tp": int, "concurrency": float,
         "isl": float, "osl": float}


def detect_format(path: str | Path) -> str:
    return _adapter(load_document(Path(path))).format


def read_runs(path: str | Path, overrides: Mapping[str, Any] | None = None) -> ReadResult:
    """The runs of one file. Raises MeasuredFileError (unreadable: not a regular file, not
    text, not JSON/CSV, or no run can be read at all), UnknownFormatError, MetaFileError (a
    bad sidecar or override) — all PerfgraphErrors — or OSError; a bad RUN is a RunProblem
    in the result."""
    path = Path(path)
    doc = load_document(path)
    adapter = _adapter(doc)
    context = _context(path, overrides)
    try:
        runs, problems = adapter.read(doc, context)
    except MeasuredFileError:
        raise
    except Exception as exc:  # noqa: BLE001 - defence in depth: one message, never a traceback
        raise MeasuredFileError(doc.source, f"could not be read as {adapter.format}: "
                                f"{unexpected(exc)}") from None
    return ReadResult(source=doc.source, format=adapter.format, runs=runs, problems=problems)


def read_format(path: str | Path) -> str | None:
    """The format detected for a file, or None when it cannot be told (for messages about a
    file refused whole)."""
    try:
        return _adapter(load_document(Path(path))).format
    except (ValueError, OSError):
        return None


def _adapter(doc) -> Adapter:
    for adapter in ADAPTERS:
        try:
            if adapter.detect(doc):
                return adapter
        except Exception:  # noqa: BLE001, S112 - odd content: this format does not match
            continue
    raise UnknownFormatError(
        f"{doc.source}: the {doc.kind.upper()} content matches no known measured-run format "
        f"(known formats: {', '.join(FORMATS)})"
    )


def _context(path: Path, overrides: Mapping[str, Any] | None) -> Context:
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    sidecars = (
        path.parent / "perfgraph.meta.toml",
        path.parent / f"{path.name}.meta.toml",
        path.with_suffix(".meta.toml"),
    )
    for sidecar in dict.fromkeys(sidecars):  # later ones win
        if sidecar.is_file():
            _merge(values, origins, _read_toml(sidecar), sidecar.name)
    _merge(values, origins, dict(overrides or {}), "overrides")
    return Context(
        source=str(path), values=MappingProxyType(values), origins=MappingProxyType(origins)
    )


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise MetaFileError(f"{path}: not a valid meta.toml ({exc})") from None


def _merge(values: dict, origins: dict, given: Mapping[str, Any], origin: str) -> None:
    unknown = set(given) - set(_KEYS)
    if unknown:
        raise MetaFileError(f"{origin}: unknown keys {sorted(unknown)}; allowed: {sorted(_KEYS)}")
    for key, value in given.items():
        if value is None:
            continue
        kind = _KEYS[key]
        if kind is str and not isinstance(value, str):
            raise MetaFileError(f"{origin}: '{key}' must be a string, got {value!r}")
        if kind is not str and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise MetaFileError(f"{origin}: '{key}' must be a number, got {value!r}")
        try:
            if key == "tp":
                value = tp_of(value, key)
            elif key == "concurrency":
                value = concurrency_of(value, key)
            elif kind is float and not (0 < value < float("inf")):
                raise RunRefused(f"'{key}' is {value}: it must be a positive number")
        except RunRefused as exc:
            raise MetaFileError(f"{origin}: {exc}") from None
        value = kind(value)
        if key == "precision":
            value = value.strip().lower()
        values[key], origins[key] = value, origin


#: Larger files are refused, from their size alone, before a byte is read: the largest real
#: export shipped (a vLLM per-request file, tests/data and /work/shared/measured) is 1.1 MB,
#: and reading 200 MB of JSON whole takes tens of seconds and gigabytes.
MAX_BYTES = 64 * 1024 * 1024


def load_document(path: Path) -> Document:
    source = str(path)
    info = path.stat()  # FileNotFoundError for a missing file
    if not stat.S_ISREG(info.st_mode):
        what = "a folder" if stat.S_ISDIR(info.st_mode) else \
            "a pipe (FIFO)" if stat.S_ISFIFO(info.st_mode) else "not a regular file"
        raise MeasuredFileError(source, f"{what}, not a file of measured runs; give a regular "
                                "file (or a folder of them)")
    if info.st_size > MAX_BYTES:
        raise MeasuredFileError(source, f"{info.st_size / 2**20:.0f} MiB is larger than any "
                                f"benchmark result ({MAX_BYTES // 2**20} MiB at most)")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise MeasuredFileError(source, f"not UTF-8 text ({exc.reason})") from None
    stripped = text.strip()
    if not stripped:
        raise MeasuredFileError(source, "file is empty")
    if stripped[0] not in "[{":
        tables = markdown_tables(text)
        if tables is not None:
            return Document(source, "markdown", tables, path.parent)
        try:
            return Document(source, "csv", list(csv.reader(io.StringIO(text))), path.parent)
        except csv.Error as exc:
            raise MeasuredFileError(source, f"not valid CSV: {exc}") from None
    try:
        return Document(source, "json", json.loads(text), path.parent)
    except RecursionError:
        raise MeasuredFileError(source, "not readable JSON: nested too deeply") from None
    except ValueError as whole:  # JSONDecodeError, or an integer of over 4300 digits
        if not isinstance(whole, json.JSONDecodeError):
            raise MeasuredFileError(source, f"not readable JSON: {whole}") from None
        lines = _json_lines(text)
        if lines is None:
            raise MeasuredFileError(
                source, f"not valid JSON: {whole.msg}", whole.lineno, whole.colno
            ) from None
        return Document(source, "jsonl", lines, path.parent)


def _json_lines(text: str) -> list[tuple[int, Any]] | None:
    """Parse JSON Lines; None unless it really looks like JSONL: 2+ lines, each starting with
    '{' or '[', one of them a whole JSON object.  A line that is not an object (``[1, 2]``) or
    not valid JSON is kept, to be refused on its own."""
    numbered = [(n, s.strip()) for n, s in enumerate(text.splitlines(), 1) if s.strip()]
    if len(numbered) < 2 or not all(s.startswith(("{", "[")) for _, s in numbered):
        return None
    out: list[tuple[int, Any]] = []
    for n, s in numbered:
        try:
            out.append((n, json.loads(s)))
        except (ValueError, RecursionError) as exc:
            error = f"{exc.msg} (column {exc.colno})" if isinstance(
                exc, json.JSONDecodeError) else " ".join(str(exc).split())[:120]
            out.append((n, BadLine(n, error)))
    return out if any(isinstance(v, dict) for _, v in out) else None
