"""NVIDIA AIPerf / GenAI-Perf summary exports: ``profile_export*.json`` and the CSV.

JSON: one run per file; each metric is a block ``{"unit": "ms", "avg": .., "p99": .., ...}``;
``input_config`` holds the model names and the load (concurrency or request rate).
CSV: a stats table (``Metric,avg,min,max,...``) and a ``Metric,Value`` table of scalars;
it is turned into the JSON shape and read by the same code.  The CSV rounds to 2 decimals
and carries no model or concurrency (give them with overrides or a sidecar meta.toml).

AIPerf's ``inter_token_latency`` is (request latency − TTFT)/(output tokens − 1) per
request: it excludes the first token and is what vLLM calls TPOT, so it is stored as
``tpot``; ``inter_chunk_latency`` (gap between streamed chunks) is stored as ``itl``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .base import (
    Adapter,
    Context,
    Document,
    MeasuredRun,
    RunRefused,
    build_run,
    check_number,
    concurrency_of,
    count,
    put,
)

# AIPerf metric tag -> (metric base, canonical unit, definition)
BLOCKS = {
    "time_to_first_token": ("ttft", "ms", "time to first token (first non-empty response)"),
    "inter_token_latency": (
        "tpot",
        "ms",
        "(request latency − TTFT)/(output tokens − 1) per "
        "request: EXCLUDES the first token (AIPerf names it inter_token_latency)",
    ),
    "inter_chunk_latency": (
        "itl",
        "ms",
        "gap between successive streamed chunks, pooled (a chunk "
        "may carry several tokens; excludes the first token)",
    ),
    "request_latency": ("e2el", "ms", "end-to-end request latency"),
    "output_token_throughput_per_user": (
        "output_speed_per_user",
        "token/s",
        "output tokens / s of one request, as AIPerf computes it",
    ),
    "output_token_throughput": ("output_throughput", "token/s", "output tokens / s, whole system"),
    "total_token_throughput": (
        "total_throughput",
        "token/s",
        "input + output tokens / s, whole system",
    ),
    "input_token_throughput": ("input_throughput", "token/s", "input tokens / s, whole system"),
    "request_throughput": ("request_throughput", "request/s", "completed requests / s"),
}
_STAT = re.compile(r"^(avg|min|max|std|p\d+(?:\.\d+)?)$")
_TIME_SCALE = {"ms": 1.0, "s": 1000.0, "sec": 1000.0, "us": 1e-3, "ns": 1e-6}


def _scale(tag: str, unit: Any) -> float:
    if BLOCKS[tag][1] != "ms":
        return 1.0
    unit = str(unit or "ms").lower()
    if unit not in _TIME_SCALE:
        raise RunRefused(f"'{tag}' has unknown time unit {unit!r}")
    return _TIME_SCALE[unit]


def _avg(data: Mapping, tag: str) -> float | None:
    block = data.get(tag)
    if isinstance(block, Mapping) and block.get("avg") is not None:
        return check_number(block["avg"], f"{tag}.avg")
    return None


def _find(tree: Any, key: str) -> Any:
    """First value of `key` anywhere in a nested dict (GenAI-Perf and AIPerf nest differently)."""
    if isinstance(tree, Mapping):
        if tree.get(key) is not None:
            return tree[key]
        for value in tree.values():
            found = _find(value, key)
            if found is not None:
                return found
    return None


def _metrics(data: Mapping) -> dict:
    metrics: dict = {}
    for tag, (base, unit, definition) in BLOCKS.items():
        block = data.get(tag)
        if not isinstance(block, Mapping):
            continue
        scale = _scale(tag, block.get("unit"))
        for stat, value in block.items():
            if _STAT.match(stat) and value is not None:
                statistic = "mean" if stat == "avg" else stat
                value = check_number(value, f"{tag}.{stat}") * scale
                put(metrics, base, statistic, value, unit, definition)
    return metrics


def _notes(data: Mapping) -> list[str]:
    """The notes that change how the run's numbers read (all of them caveats)."""
    notes = [
        "AIPerf inter_token_latency stored as tpot (excludes the first token); "
        "inter_chunk_latency stored as itl"
    ]
    meta: Mapping = data["metadata"] if isinstance(data.get("metadata"), Mapping) else {}
    if meta.get("submission_valid") is False:
        reasons = ", ".join(meta.get("submission_invalid_reasons") or []) or "no reason given"
        notes.append(f"AIPerf marked this run submission_valid=false ({reasons})")
    overflow = _avg(data, "context_overflow_count")
    if overflow:
        notes.append(f"{overflow:g} requests overflowed the model context")
    cache_hit = _avg(data, "theoretical_prefix_cache_hit")
    if cache_hit:
        notes.append(
            f"AIPerf estimates a theoretical prefix-cache hit of {cache_hit:.0f}%: most "
            "input tokens can come from the cache, so input throughput is not prefill work"
        )
    if data.get("error_summary"):
        notes.append(f"AIPerf error_summary is not empty: {data['error_summary']}")
    if data.get("was_cancelled"):
        notes.append("the benchmark was cancelled before its planned end")
    return notes


def read_aiperf(data: Mapping, fmt: str, index: int, ctx: Context, notes: list[str]) -> MeasuredRun:
    requests = _avg(data, "request_count")
    completed = count(requests, "request_count.avg") if requests is not None else None
    config: Mapping = data["input_config"] if isinstance(data.get("input_config"), Mapping) \
        else {}
    models = _find(config, "model_names") or _find(config, "model")
    model = models[0] if isinstance(models, list) and models else models
    conc = _find(config, "concurrency")
    rate = _find(config, "request_rate")
    metrics = _metrics(data)
    if not any(k in metrics for k in ("ttft", "tpot", "itl", "e2el", "output_throughput",
                                      "total_throughput")):
        raise RunRefused("no latency or throughput statistics (time_to_first_token, "
                         "request_latency, output_token_throughput …) in the export")
    return build_run(
        ctx,
        fmt,
        index,
        metrics=metrics,
        notes=notes,
        caveats=_notes(data),
        model=str(model) if model else None,
        concurrency=concurrency_of(conc, "concurrency") if conc is not None else None,
        request_rate=check_number(rate, "request_rate", True) if rate is not None else None,
        isl=_avg(data, "input_sequence_length"),
        osl=_avg(data, "output_sequence_length"),
        completed=completed,
        duration_s=_avg(data, "benchmark_duration"),
    )


class AiperfJsonAdapter(Adapter):
    format = "aiperf-json"
    reads = (
        "NVIDIA AIPerf / GenAI-Perf profile_export*.json (metric blocks with unit/avg/p99..., "
        "input_config)"
    )

    def detect(self, doc: Document) -> bool:
        data = doc.data
        return (
            doc.kind == "json"
            and isinstance(data, dict)
            and any(
                isinstance(data.get(t), dict) and "avg" in data[t] and "unit" in data[t]
                for t in ("time_to_first_token", "request_latency")
            )
        )

    def read_record(self, record: dict, index: int, ctx: Context, shared) -> MeasuredRun:
        return read_aiperf(record, self.format, index, ctx, [])


class AiperfCsvAdapter(Adapter):
    format = "aiperf-csv"
    reads = (
        "NVIDIA AIPerf / GenAI-Perf profile_export*.csv (Metric,avg,...,p99 table + Metric,Value)"
    )

    def detect(self, doc: Document) -> bool:
        rows = doc.data if doc.kind == "csv" else []
        return bool(rows) and rows[0][:2] in (["Metric", "avg"], ["Metric", "Value"])

    def records(self, doc: Document):
        return [(0, {"rows": doc.data})]

    def read_record(self, record: dict, index: int, ctx: Context, shared) -> MeasuredRun:
        notes = ["CSV values are rounded to 2 decimals (the JSON export is exact)"]
        blocks = csv_to_blocks(record["rows"])
        if not blocks:
            raise RunRefused("the CSV has its header row but no data rows: nothing was measured")
        return read_aiperf(blocks, self.format, index, ctx, notes)


_NAME = re.compile(r"^(.*?)\s*\(([^()]*)\)\s*$")


def csv_to_blocks(rows: list[list[str]]) -> dict[str, dict]:
    """'Time to First Token (ms)' rows -> {"time_to_first_token": {"unit": "ms", "avg": ..}}."""
    blocks: dict[str, dict] = {}
    header: list[str] | None = None
    for row in rows:
        if not row or not any(cell.strip() for cell in row):
            header = None
        elif row[0] == "Metric":
            header = ["avg" if h == "Value" else h for h in row]
        elif header is not None:
            m = _NAME.match(row[0])
            name, unit = (m.group(1), m.group(2)) if m else (row[0], "")
            block = {"unit": unit}
            cells = zip(header[1:], row[1:], strict=False)
            block.update({h: cell for h, cell in cells if cell.strip()})
            blocks[name.strip().lower().replace(" ", "_")] = block
    return blocks
