"""The records the measured-run adapters produce, and the documents they read.

Canonical units: latencies (ttft, tpot, itl, e2el) in ms; token throughputs in token/s;
request throughput in request/s.  Metric keys: ``ttft``/``tpot``/``itl``/``e2el`` hold the
MEAN; other statistics are ``<key>_<statistic>`` (``ttft_median``, ``itl_p99`` ...).

``MeasuredRun.index``: the 1-based line number for JSONL files, the 0-based position for a
JSON array or a results list, 0 for a file that holds a single run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Statistic = Literal["mean", "median", "p50", "p90", "p95", "p99", "min", "max", "std"]


@dataclass(frozen=True)
class Metric:
    value: float  # in the canonical unit
    unit: str  # "ms" | "token/s" | "request/s"
    statistic: str  # mean | median | p99 ... (files may carry other percentiles: p75, p99.9)
    definition: str  # one phrase of what it means


@dataclass(frozen=True)
class PerRequest:
    """A run's per-request record (vLLM ``--save-result``: ``input_lens``, ``output_lens``,
    ``ttfts``, ``itls``): the successful requests that returned output, in the file's order.
    ``decode_ms`` is each request's time from its first token to its last (the sum of its
    inter-token gaps), so its TPOT is ``decode_ms / (osl − 1)`` as vLLM computes it."""

    isl: tuple[int, ...]
    osl: tuple[int, ...]
    ttft_ms: tuple[float, ...]
    decode_ms: tuple[float, ...]
    burstiness: float = 1.0  # the client's gamma shape for its gaps (1: Poisson)


@dataclass(frozen=True)
class LateCaveat:
    """A caveat that needs a derived value (the achieved request rate, the measured or
    expected mean lengths): the reader names its check (``adapters.CAVEAT_CHECKS``) and
    gives the file's side of it (``args``); ``perfgraph.measured.derived`` runs the check on
    the derived run and puts a caveat it returns where the reader put the check among its
    caveats (``caveat_at``) and notes (``note_at``: both count the caveats kept before it,
    not the late ones; ``build_run`` sets them)."""

    check: str
    args: tuple[Any, ...] = ()
    note_at: int = 0
    caveat_at: int = 0


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
    #: mean E2EL, the cell ``measured_in_flight``), when the file has them; may be below the
    #: configured ``concurrency``. Set by ``perfgraph.measured.derived``, never by a reader
    concurrency_measured: float | None = None
    #: the measured mean lengths alone (``isl``/``osl`` fall back to the configured ones)
    isl_measured: float | None = None
    osl_measured: float | None = None
    #: a mean OSL implied by the file's numbers where it records no lengths (InferenceMAX: its
    #: latencies, through the cell ``measured_implied_osl``; gpu-conc: output per request)
    osl_implied: float | None = None
    #: the notes that change how the numbers read (zero-length outputs, recomputed metrics, ITL
    #: per chunk, measured vs configured lengths …); also in ``notes``. Shown by every output.
    caveats: tuple[str, ...] = ()
    #: the mean lengths a configured random range implies where the file records no measured
    #: ones (InferenceX draws each length uniformly in [0.8, 1.0] × nominal: mean 0.9 × nominal),
    #: the cells ``measured_expected_isl``/``_osl``; set by ``perfgraph.measured.derived``
    #: where ``derive`` names them, never by a reader
    isl_expected: float | None = None
    osl_expected: float | None = None
    #: the low end of the uniform range the run's client draws each length from, as a share
    #: of the configured length (``--random-range-ratio``; the cell ``measured_range_ratio``)
    range_ratio: float | None = None
    #: the serving engine as the file names it, normalised (vllm, sglang, trtllm, atom …)
    engine: str | None = None
    #: the engine build the run served with, as the file names it (InferenceX: the container
    #: image, ``lmsysorg/sglang:v0.5.12-cu130``); rows of one engine span builds
    engine_build: str | None = None
    #: the deployment beyond TP, as the file gives it (None where it does not say); the model
    #: may not use every field yet, the run carries them (``compare --format json``)
    pp: int | None = None
    gpus: int | None = None  # GPUs the run's per-GPU figures divide by
    ep: int | None = None
    dp_attention: bool | None = None
    disaggregated: bool | None = None
    prefill_gpus: int | None = None
    decode_gpus: int | None = None
    prefill_tp: int | None = None
    decode_tp: int | None = None
    prefill_ep: int | None = None
    decode_ep: int | None = None
    spec_decoding: str | None = None  # "none", "mtp", "eagle" …
    #: the per-request record, where the file keeps one (``compare``'s percentiles)
    per_request: PerRequest | None = field(default=None, repr=False)
    #: what the file leaves to the sheet's cells (``perfgraph.measured.derived``): (quantity,
    #: how the file leads to it) for ``request_throughput``, ``e2el``, ``osl_implied``,
    #: ``output_per_request``, the rates of its totals, ``isl_measured``/``osl_measured``
    #: (its token totals ÷ ``completed``) and ``isl_expected``/``osl_expected`` (the mean of its
    #: configured random range): ``isl``/``osl`` are set from them once derived
    derive: tuple[tuple[str, str], ...] = ()
    #: notes stating derived values: (where among ``notes`` it goes, a template such as
    #: ``"… = {in_flight:.1f} …"``) that ``perfgraph.measured.derived`` fills in and puts there
    derive_notes: tuple[tuple[int, str], ...] = ()
    #: the file's input and output token totals over the run (benchmark_serving lines): the
    #: cells derive its token rates from them and ``duration_s``
    tokens_in: float | None = None
    tokens_out: float | None = None
    #: the caveats that need a derived value, checked once the run is derived (a derived
    #: run keeps none)
    late_caveats: tuple[LateCaveat, ...] = ()
    #: the engine settings the run's tool sized, as (cell, value or formula) for the setup to
    #: pin (trtllm-bench's KV share, and its max_batch_size and max_num_tokens heuristic)
    engine_settings: tuple[tuple[str, str], ...] = ()


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
    kind: Literal["json", "jsonl", "csv", "markdown"]
    #: json: the parsed value; jsonl: list of (line, dict | BadLine); csv: list of rows;
    #: markdown: a MarkdownTables (its tables' rows and the comment lines above them)
    data: Any
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
@dataclass(frozen=True)
class Context:
    """What the caller (overrides) or a sidecar meta.toml says about the file's runs."""

    source: str
    #: model / hardware / precision / tp / concurrency / isl / osl
    values: Mapping[str, Any] = field(default_factory=dict)
    origins: Mapping[str, str] = field(default_factory=dict)  # key -> "overrides" / sidecar name


@dataclass(frozen=True)
class MarkdownTables:
    """A Markdown file of pipe tables, as published benchmark pages print them: each table a
    tuple of rows (each row its cells, stripped, with ``**bold**`` marks removed; the
    ``|---|`` rule rows left out) and the file's ``#`` comment lines (where a copy says
    what it is an excerpt of)."""

    tables: tuple[tuple[tuple[str, ...], ...], ...]
    comments: tuple[str, ...]


_RULE = re.compile(r"^\|?[\s:|-]*-[\s:|-]*$")


def markdown_tables(text: str) -> MarkdownTables | None:
    """The pipe tables of ``text``; None unless the file is nothing but tables, ``#`` comment
    lines and blank lines, with at least two table rows."""
    tables: list[list[tuple[str, ...]]] = []
    comments: list[str] = []
    current: list[tuple[str, ...]] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line.startswith("|"):
            if line and not line.startswith("#"):
                return None
            if line:
                comments.append(line.lstrip("#").strip())
            current = None
            continue
        if current is None:
            current = []
            tables.append(current)
        if not _RULE.match(line):
            cells = line[1:-1 if line.endswith("|") and len(line) > 1 else None].split("|")
            current.append(tuple(c.strip().replace("**", "").strip() for c in cells))
    if sum(len(t) for t in tables) < 2:
        return None
    return MarkdownTables(tuple(tuple(t) for t in tables if t), tuple(comments))
