"""NVIDIA's published TensorRT-LLM performance tables (``docs/source/performance/perf-overview.md``
of NVIDIA/TensorRT-LLM), copied as Markdown pipe tables.

Two tables, told apart by their header rows:

* **Throughput** ("Throughput (tokens / sec)"): ``trtllm-bench throughput`` at maximum load (every
  request sent at once), output tokens/s of the whole TP group. A row is a model, a TP size and
  "ISL, OSL"; a column is a GPU, with its precision in the row below the header; blank cells
  repeat the row above (model, TP). Each filled cell is one run, at the largest batch the engine
  holds (``MeasuredRun.request_rate`` infinite, no concurrency: ``perfgraph.measured.setup``
  models it at capacity), the engine as trtllm-bench sized it (``BENCH_SETTINGS``, each run's
  ``engine_settings``).
* **Online** ("Model", "GPU", "TP", "QPS", "Mean TTFT(ms)", "Mean ITL(ms)" …): the Triton
  tensorrtllm_backend at Poisson request rates (QPS ``INF``: all at once); mean TTFT and ITL,
  total and output tokens/s. ``Tput(req/s)`` is printed as a whole number, so the request rate
  is left to the sheet's ``measured_request_throughput`` (output tokens/s ÷ OSL), and the mean
  E2EL (the table has none) to ``measured_e2el`` (TTFT + (OSL − 1) × ITL), both said in each
  run's notes (``perfgraph.measured.derived`` works them out).

The engine version, the request count and the precision of the online table come from the
excerpt's comment lines, which quote the doc ("generated using version 0.17", "with 500
requests and BF16 precision").
"""

from __future__ import annotations

import math
import re
from typing import Any

from .base import (
    Adapter,
    Context,
    Document,
    MeasuredRun,
    RunRefused,
    build_run,
    check_number,
    gpu_name,
    put,
    put_rate,
    tp_of,
)
from .records import MarkdownTables

_THROUGHPUT_HEAD = "throughput (tokens / sec)"
_ONLINE_HEAD = ("model", "gpu", "tp", "input length", "output length", "qps", "tput(req/s)",
                "mean ttft(ms)", "mean itl(ms)", "total token tput (tok/s)",
                "output tput (tok/s)")
ENGINE = "TensorRT-LLM"
#: How trtllm-bench sized each throughput run's engine (the perf-overview's "Reproducing
#: Benchmarked Results"): ``trtllm-bench build --dataset`` takes max_batch_size and
#: max_num_tokens from its tuning heuristic (the sheet's bench_* cells), and the benchmark ran
#: with ``--kv_cache_free_gpu_mem_fraction 0.95`` "in majority of cases".
BENCH_SETTINGS = (("kv_memory_fraction", "0.95"), ("max_num_seqs", "bench_max_batch_size"),
                  ("max_num_batched_tokens", "bench_max_num_tokens"))
#: What the online table leaves to the sheet's cells (perfgraph.measured.derived): its request
#: throughput (``measured_request_throughput``) and mean E2EL (``measured_e2el``)
ONLINE_DERIVED = (
    ("request_throughput", "derived here: output tokens/s ÷ OSL; the table prints req/s as a "
                           "whole number"),
    ("e2el", "derived here: mean TTFT + (OSL − 1) × mean ITL; the table gives no E2EL"))


def model_name(text: str) -> str:
    """The table's model name in the catalog's spelling: 'LLaMA v3.1 8B' → 'llama-3.1-8b'."""
    lowered = re.sub(r"\bv(?=\d)", "", text.strip().lower())
    return re.sub(r"\s+", "-", lowered)


def _version(tables: MarkdownTables) -> str | None:
    found = re.search(r"version\s+(\d+(?:\.\d+)+)", " ".join(tables.comments))
    return f"{ENGINE} {found.group(1)}" if found else None


def _tables(doc: Document) -> MarkdownTables | None:
    return doc.data if doc.kind == "markdown" and isinstance(doc.data, MarkdownTables) else None


def _number(text: str, what: str) -> float:
    return check_number(text.replace(",", ""), what)


class TrtllmThroughputAdapter(Adapter):
    format = "trtllm-perf-throughput"
    reads = ("TensorRT-LLM perf-overview throughput table (Markdown: 'Throughput (tokens / sec)', "
             "a column per GPU, rows model × TP × 'ISL, OSL')")

    def detect(self, doc: Document) -> bool:
        tables = _tables(doc)
        return tables is not None and any(
            t and t[0] and t[0][0].lower() == _THROUGHPUT_HEAD for t in tables.tables)

    def prepare(self, doc: Document, ctx: Context) -> str | None:
        return _version(doc.data)

    def records(self, doc: Document) -> list[tuple[int, Any]]:
        """One record a filled cell: model, TP, ISL, OSL, GPU, precision, throughput."""
        table = next(t for t in doc.data.tables if t[0] and t[0][0].lower() == _THROUGHPUT_HEAD)
        if len(table) < 4:
            raise RunRefused("the throughput table has no rows under its three header rows")
        gpus, precisions = table[0][3:], table[1][3:]
        out: list[tuple[int, Any]] = []
        model = tp = ""
        for row in table[3:]:
            model, tp = row[0] or model, (row[1] if len(row) > 1 else "") or tp
            lengths = row[2] if len(row) > 2 else ""
            for column, value in enumerate(row[3:]):
                if not value:
                    continue
                out.append((len(out), {
                    "model": model, "tp": tp, "lengths": lengths, "throughput": value,
                    "gpu": gpus[column] if column < len(gpus) else "",
                    "precision": precisions[column] if column < len(precisions) else ""}))
        return out

    def read_record(self, record: dict, index: int, ctx: Context, shared: str | None
                    ) -> MeasuredRun:
        lengths = [s for s in re.split(r"[,\s]+", record["lengths"]) if s]
        if len(lengths) != 2:
            raise RunRefused(f"lengths {record['lengths']!r}: expected 'ISL, OSL'")
        isl, osl = (_number(s, k) for s, k in zip(lengths, ("isl", "osl"), strict=True))
        metrics: dict = {}
        put_rate(metrics, "output_throughput", _number(record["throughput"], "throughput"))
        return build_run(
            ctx, self.format, index, metrics=metrics, label_prefix="trtllm-bench",
            notes=[f"{record['model']} on {record['gpu']}, TP {record['tp']}, "
                   f"{record['precision']}: trtllm-bench throughput at maximum load (every "
                   "request at once); the table gives output tokens/s alone"],
            caveats=["a maximum-load run: modelled at the largest batch the engine holds"],
            model=model_name(record["model"]), hardware=gpu_name(record["gpu"]),
            precision=record["precision"] or None, tp=tp_of(record["tp"]),
            request_rate=math.inf, isl_configured=isl, osl_configured=osl,
            engine="trtllm", engine_build=shared, engine_settings=BENCH_SETTINGS)


class TrtllmOnlineAdapter(Adapter):
    format = "trtllm-perf-online"
    reads = ("TensorRT-LLM perf-overview online-serving table (Markdown: Model, GPU, TP, "
             "lengths, QPS, mean TTFT and ITL, tokens/s)")

    def detect(self, doc: Document) -> bool:
        tables = _tables(doc)
        return tables is not None and any(_online_header(t) is not None for t in tables.tables)

    def prepare(self, doc: Document, ctx: Context) -> dict[str, Any]:
        text = " ".join(doc.data.comments)
        requests = re.search(r"with\s+(\d+)\s+requests", text)
        precision = re.search(r"\b(BF16|FP16|FP8|FP4)\s+precision", text, re.IGNORECASE)
        return {"build": _version(doc.data),
                "requests": int(requests.group(1)) if requests else None,
                "precision": precision.group(1) if precision else None}

    def records(self, doc: Document) -> list[tuple[int, Any]]:
        """One record a row, blank leading cells repeating the row above."""
        table = next(t for t in doc.data.tables if _online_header(t) is not None)
        start = _online_header(table)
        assert start is not None
        out: list[tuple[int, Any]] = []
        last = [""] * len(_ONLINE_HEAD)
        for row in table[start + 1:]:
            cells = [c if c else last[i] if i < 5 else "" for i, c in
                     enumerate((*row, *[""] * len(_ONLINE_HEAD))[:len(_ONLINE_HEAD)])]
            last = cells
            out.append((len(out), dict(zip(_ONLINE_HEAD, cells, strict=True))))
        return out

    def read_record(self, record: dict, index: int, ctx: Context, shared: dict
                    ) -> MeasuredRun:
        isl, osl = _number(record["input length"], "isl"), _number(record["output length"],
                                                                    "osl")
        qps = record["qps"].strip().lower()
        rate = math.inf if qps == "inf" else _number(qps, "qps")
        metrics: dict = {}
        ttft, itl = (_number(record[k], k) for k in ("mean ttft(ms)", "mean itl(ms)"))
        put(metrics, "ttft", "mean", ttft, "ms", "mean time to first token")
        put(metrics, "itl", "mean", itl, "ms", "mean inter-token latency")
        put_rate(metrics, "output_throughput", _number(record["output tput (tok/s)"],
                                                       "output tput"))
        put_rate(metrics, "total_throughput", _number(record["total token tput (tok/s)"],
                                                      "total token tput"))
        return build_run(
            ctx, self.format, index, metrics=metrics, label_prefix="trtllm online",
            derive=ONLINE_DERIVED,
            derive_notes=((0, f"request rate {record['qps']} QPS (Poisson); the table's "
                              f"{record['tput(req/s)']} req/s is rounded, so request "
                              "throughput is output tokens/s ÷ OSL ({request_throughput:.3g}/s)"),
                          (1, "mean E2EL derived as TTFT + (OSL − 1) × ITL (the table gives "
                              "none)")),
            model=model_name(record["model"]), hardware=gpu_name(record["gpu"]),
            precision=shared["precision"], tp=tp_of(record["tp"]), request_rate=rate,
            isl_configured=isl, osl_configured=osl, completed=shared["requests"],
            engine="trtllm", engine_build=shared["build"])


def _online_header(table: tuple[tuple[str, ...], ...]) -> int | None:
    """The index of the online table's header row, None when it has none."""
    for i, row in enumerate(table[:3]):
        if tuple(c.lower() for c in row[:len(_ONLINE_HEAD)]) == _ONLINE_HEAD:
            return i
    return None
