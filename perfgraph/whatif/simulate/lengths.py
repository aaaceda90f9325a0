"""Request lengths (and, from a measured run, arrivals).

- ``fixed``: every request the scenario's ``isl`` in and ``osl`` out.
- ``workload``: the scenario's mean lengths with its ``osl_spread`` (longest ÷ mean output):
  outputs uniform on [(2 − s) × osl, s × osl] (s capped at 2), prompts ``isl``.
- FILE: a measured run's per-request lengths. A vLLM ``benchmark_serving.py --save-result``
  JSON (``input_lens``, ``output_lens``; arrivals redrawn at its ``request_rate`` with its
  ``burstiness``, all at t = 0 for ``inf``), or a CSV with columns ``arrival_s,isl,osl``.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from perfgraph._infra.atomic import INPUTS
from perfgraph._infra.inputfile import file_problem
from perfgraph.engine.sheet import Sheet
from perfgraph.errors import InputError

LENGTHS = ("fixed", "workload", "FILE")
#: The most tokens one request's prompt or output may have (ten times the longest context
#: of any model in the catalog): past it a number is a typo.
MAX_TOKENS = 100_000_000


@dataclass
class Lengths:
    """Per-request prompt and output tokens, and arrivals when the source has them."""

    isl: np.ndarray
    osl: np.ndarray
    arrivals: np.ndarray | None = None  # seconds, from a CSV
    rate: float | None = None  # request/s a measured run used (inf: all at once)
    cv: float = 1.0  # its gaps' coefficient of variation
    source: str = "fixed"
    #: what the measured run reported, {metric: {stat: ms}} (vLLM's mean/median/p99)
    measured: dict[str, dict[str, float]] = field(default_factory=dict)


def from_sheet(kind: str, sheet: Sheet, n: int, rng: np.random.Generator) -> Lengths:
    isl = max(1, round(sheet.magnitude("isl", "token")))
    osl = max(1, round(sheet.magnitude("osl", "token")))
    isls = np.full(n, isl, dtype=np.int64)
    if kind == "fixed":
        return Lengths(isls, np.full(n, osl, dtype=np.int64))
    spread = min(sheet.magnitude("osl_spread"), 2.0)
    outs = rng.uniform((2 - spread) * osl, spread * osl, size=n)
    return Lengths(isls, np.maximum(1, np.rint(outs)).astype(np.int64), source="workload")


def read_file(path: str) -> Lengths:
    p = Path(path)
    problem = file_problem(p, "lengths")
    if problem is not None:
        raise InputError(f"{problem} (expected fixed, workload or a FILE)", file=path)
    INPUTS.note(p)
    if p.suffix.lower() == ".csv":
        return _read_csv(p)
    try:
        data = json.loads(p.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read it as JSON or CSV ({exc})", file=path) from None
    return _read_vllm(data, path)


def _read_vllm(data: object, path: str) -> Lengths:
    if not isinstance(data, dict) or "input_lens" not in data or "output_lens" not in data:
        raise InputError("no per-request data: expected a vLLM --save-result JSON with "
                         "input_lens and output_lens, or a CSV arrival_s,isl,osl", file=path)
    isl = _column(data["input_lens"], "input_lens", path)
    osl = _column(data["output_lens"], "output_lens", path)
    if len(isl) != len(osl):
        raise InputError(f"input_lens has {len(isl)} requests, output_lens {len(osl)}",
                         file=path)
    keep = osl > 0  # a failed request (no output) is not replayed
    rate = data.get("request_rate")
    rate = math.inf if rate in (None, "inf") else float(rate)
    burst = float(data.get("burstiness") or 1.0)
    return Lengths(np.maximum(isl[keep], 1), osl[keep], rate=rate, cv=1 / math.sqrt(burst),
                   source=Path(path).name, measured=_measured(data))


def _measured(data: dict) -> dict[str, dict[str, float]]:
    """vLLM's own summary of the run: mean, median (p50) and p99 of TTFT, TPOT, ITL in ms."""
    out: dict[str, dict[str, float]] = {}
    for metric in ("ttft", "tpot", "itl"):
        for stat, key in (("mean", "mean"), ("p50", "median"), ("p99", "p99")):
            value = data.get(f"{key}_{metric}_ms")
            if isinstance(value, (int, float)) and math.isfinite(value):
                out.setdefault(metric, {})[stat] = float(value)
    return out


def _column(values: object, name: str, path: str) -> np.ndarray:
    if not isinstance(values, list) or not values:
        raise InputError(f"{name} is not a list of token counts", file=path, name=name)
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{name} holds something other than numbers", file=path,
                         name=name) from None
    if array.ndim != 1 or not np.isfinite(array).all() or (array < 0).any():
        raise InputError(f"{name} must be non-negative token counts", file=path, name=name)
    _bounded(array, name, path)
    return array.astype(np.int64)


def _bounded(tokens: np.ndarray, name: str, path: str, first_line: int | None = None) -> None:
    """A request longer than :data:`MAX_TOKENS` is a typo, not a workload."""
    over = np.flatnonzero(tokens > MAX_TOKENS)
    if over.size:
        i = int(over[0])
        raise InputError(f"{tokens[i]:.0f} tokens in one request: more than any model's "
                         f"context ({MAX_TOKENS:,} at most)", file=path, name=name,
                         line=None if first_line is None else first_line + i)


def _read_csv(p: Path) -> Lengths:
    path = str(p)
    try:
        with p.open(newline="", encoding="utf-8-sig") as f:  # Excel writes a byte order mark
            reader = csv.DictReader(f)
            rows = list(reader)
            header = {name.strip() for name in reader.fieldnames or ()}
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"cannot read the CSV ({exc})", file=path) from None
    if not header:
        raise InputError("the CSV is empty (expected a header arrival_s,isl,osl and a row "
                         "per request)", file=path)
    for col in ("arrival_s", "isl", "osl"):
        if col not in header:
            raise InputError(f"missing column {col!r} (expected arrival_s,isl,osl)",
                             file=path, name=col)
    if not rows:
        raise InputError("the CSV has a header but no rows: give a row arrival_s,isl,osl "
                         "per request", file=path)
    rows = [{(k or "").strip(): v for k, v in row.items()} for row in rows]
    cols = {}
    for col in ("arrival_s", "isl", "osl"):
        cols[col] = _csv_values(rows, col, path)
    for col in ("isl", "osl"):
        _bounded(cols[col], col, path, first_line=2)
    if (cols["osl"] < 1).any() or (cols["isl"] < 1).any():
        raise InputError("isl and osl must be at least 1 token", file=path)
    order = np.argsort(cols["arrival_s"], kind="stable")
    return Lengths(cols["isl"][order].astype(np.int64), cols["osl"][order].astype(np.int64),
                   arrivals=cols["arrival_s"][order] - cols["arrival_s"].min(),
                   source=p.name)


def _csv_values(rows: list[dict[str, str]], col: str, path: str) -> np.ndarray:
    out = np.empty(len(rows))
    for i, row in enumerate(rows):
        try:
            out[i] = float(row[col])
        except (TypeError, ValueError):
            raise InputError(f"column {col!r}: {row[col]!r} is not a number", file=path,
                             line=i + 2, name=col) from None
        if out[i] < 0 or not math.isfinite(out[i]):
            raise InputError(f"column {col!r}: {row[col]!r} is negative or not finite",
                             file=path, line=i + 2, name=col)
    return out
