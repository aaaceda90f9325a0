"""Read measured benchmark runs (vLLM, SGLang, AIPerf, InferenceMAX, ...) into MeasuredRun.

    result = read_runs("results/run.jsonl", overrides={"model": "...", "tp": 4})
    for run in result.runs: ...            # MeasuredRun, metrics in ms / token/s / request/s
    for problem in result.problems: ...    # RunProblem: a run refused, with the reason

The format is detected from the file's CONTENT, never its name.  ``overrides`` (and a sidecar
``<file>.meta.toml`` or ``perfgraph.meta.toml`` beside the file) may give model, hardware, tp,
concurrency, isl and osl for files that lack them; overrides win over the sidecars, the
file-specific sidecar over the directory one.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

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
    Statistic,
    UnknownFormatError,
    hardware_slug,
)
from .gpu_conc import GpuConcAdapter
from .inferencemax import InferenceMaxAggAdapter, InferenceMaxRowsAdapter
from .sglang import SGLangAdapter
from .vllm import VllmAdapter, VllmLegacyAdapter

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
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
)
FORMATS: Mapping[str, str] = MappingProxyType({a.format: a.reads for a in ADAPTERS})
"""format name -> what that adapter reads, in detection order."""

_KEYS = {"model": str, "hardware": str, "tp": int, "concurrency": float, "isl": float, "osl": float}


def detect_format(path: str | Path) -> str:
    return _adapter(load_document(Path(path))).format


def read_runs(path: str | Path, overrides: Mapping[str, Any] | None = None) -> ReadResult:
    path = Path(path)
    doc = load_document(path)
    adapter = _adapter(doc)
    runs, problems = adapter.read(doc, _context(path, overrides))
    return ReadResult(source=doc.source, format=adapter.format, runs=runs, problems=problems)


def _adapter(doc) -> Adapter:
    for adapter in ADAPTERS:
        if adapter.detect(doc):
            return adapter
    known = "\n".join(f"  {name}: {reads}" for name, reads in FORMATS.items())
    raise UnknownFormatError(
        f"{doc.source}: the {doc.kind.upper()} content matches no known measured-run format. "
        f"Known formats:\n{known}"
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
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not a valid meta.toml ({exc})") from None


def _merge(values: dict, origins: dict, given: Mapping[str, Any], origin: str) -> None:
    unknown = set(given) - set(_KEYS)
    if unknown:
        raise ValueError(f"{origin}: unknown keys {sorted(unknown)}; allowed: {sorted(_KEYS)}")
    for key, value in given.items():
        if value is None:
            continue
        kind = _KEYS[key]
        if kind is not str and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ValueError(f"{origin}: '{key}' must be a number, got {value!r}")
        if kind is int and int(value) != value:
            raise ValueError(f"{origin}: '{key}' must be a whole number, got {value!r}")
        value = kind(value)
        if key == "hardware":
            value = hardware_slug(value) or value
        values[key], origins[key] = value, origin


def load_document(path: Path) -> Document:
    source = str(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise MeasuredFileError(source, f"not UTF-8 text ({exc.reason})") from None
    stripped = text.strip()
    if not stripped:
        raise MeasuredFileError(source, "file is empty")
    if stripped[0] not in "[{":
        return Document(source, "csv", list(csv.reader(io.StringIO(text))), path.parent)
    try:
        return Document(source, "json", json.loads(text), path.parent)
    except json.JSONDecodeError as whole:
        lines = _json_lines(text)
        if lines is None:
            raise MeasuredFileError(
                source, f"not valid JSON: {whole.msg}", whole.lineno, whole.colno
            ) from None
        return Document(source, "jsonl", lines, path.parent)


def _json_lines(text: str) -> list[tuple[int, Any]] | None:
    """Parse JSON Lines; None unless it really looks like JSONL (2+ '{' lines, one parses)."""
    numbered = [(n, s.strip()) for n, s in enumerate(text.splitlines(), 1) if s.strip()]
    if len(numbered) < 2 or not all(s.startswith("{") for _, s in numbered):
        return None
    out: list[tuple[int, Any]] = []
    for n, s in numbered:
        try:
            out.append((n, json.loads(s)))
        except json.JSONDecodeError as exc:
            out.append((n, BadLine(n, f"{exc.msg} (column {exc.colno})")))
    return out if any(isinstance(v, dict) for _, v in out) else None
