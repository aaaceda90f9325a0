"""The custom async-OpenAI client of github.com/sariekr/gpu_conc (``concurrency.py``).

Two shapes: ``benchmark_concurrency_N.json`` (one run) and ``benchmark_summary_*.json``
(``test_info`` + a ``results`` list of the same records).  Units are ms.  What the client
measures (read from its source): "output tokens" are streamed chunks with non-empty
``delta.content``; ``system_output_throughput`` is those chunks of the successful requests
÷ the measured phase; the per-query output speed is chunks ÷ (end − first chunk), i.e. it
excludes the TTFT.  The file records no token totals, so ISL/OSL are the client's targets.
"""

from __future__ import annotations

from .base import (
    Adapter,
    Context,
    Document,
    MeasuredRun,
    build_run,
    check_number,
    completed_count,
    concurrency_of,
    first_record,
    gpu_name,
    number,
    positive,
    put,
)

#: The output each request produced, left to the sheet's ``measured_output_per_request``
#: (perfgraph.measured.derived): output tokens/s ÷ requests/s, the file's requests_per_second
#: being its successful requests ÷ the measured duration.
OUTPUT_PER_REQUEST = (("output_per_request", "output_throughput × duration ÷ successful"),)
_LATENCIES = (  # file key, metric base, statistic
    ("average_ttft", "ttft", "mean"),
    ("median_ttft", "ttft", "median"),
    ("p95_ttft", "ttft", "p95"),
    ("p99_ttft", "ttft", "p99"),
    ("average_latency_per_request", "e2el", "mean"),
    ("median_end_to_end_latency", "e2el", "median"),
    ("p95_end_to_end_latency", "e2el", "p95"),
    ("p99_end_to_end_latency", "e2el", "p99"),
)
_SPEEDS = (("average_output_speed_per_query", "mean"), ("median_output_speed_per_query", "median"))
DEFINITIONS = {
    "ttft": "time to first non-empty content chunk, client side (streaming chat completion)",
    "e2el": "end-to-end request latency: request start → end of stream (successful requests)",
}


class GpuConcAdapter(Adapter):
    format = "gpu-conc"
    reads = (
        "sariekr/gpu_conc client JSON: benchmark_concurrency_N.json or "
        "benchmark_summary_*.json (system_output_throughput, median_ttft, gpu_info)"
    )

    def detect(self, doc: Document) -> bool:
        record = first_record(doc)
        if isinstance(record, dict) and isinstance(record.get("results"), list):
            record = record["results"][0] if record["results"] else None
        return (
            isinstance(record, dict)
            and "system_output_throughput" in record
            and "successful_requests" in record
        )

    def records(self, doc: Document):
        data = doc.data
        if doc.kind == "json" and isinstance(data, dict) and isinstance(data.get("results"), list):
            return list(enumerate(data["results"]))
        return super().records(doc)

    def prepare(self, doc: Document, ctx: Context) -> dict:
        info = doc.data.get("test_info", {}) if isinstance(doc.data, dict) else {}
        info = info if isinstance(info, dict) else {}
        return {"config": _dict(info.get("config")), "gpu_info": _dict(info.get("gpu_info"))}

    def read_record(self, record: dict, index: int, ctx: Context, shared: dict) -> MeasuredRun:
        completed = completed_count(record, "successful_requests")
        duration = positive(record, "test_duration_seconds",
                            what=" s: a run must last longer than 0 s")
        conc = concurrency_of(number(record, "concurrency"), "concurrency")
        metrics = _metrics(record)
        config = _dict(record.get("test_config")) or shared["config"]
        gpu = _dict(record.get("gpu_info")) or shared["gpu_info"]
        notes, caveats = _notes(record, config)
        count = gpu.get("count")
        tp = 1 if count == 1 else None
        if count not in (None, 1):
            notes.append(f"gpu_info counts {count} GPUs; the file does not record the TP")
        return build_run(
            ctx,
            self.format,
            index,
            metrics=metrics,
            notes=notes,
            caveats=caveats,
            model=record.get("model") or shared["config"].get("model"),
            hardware=gpu_name(gpu.get("model")),
            tp=tp,
            concurrency=conc,
            derive_notes=((0, f"Little's law: requests/s × mean e2el = {{in_flight:.1f}} "
                              f"requests in flight on average (successful ones; configured "
                              f"concurrency {conc:g})"),
                          (1, "implied output per successful request: output_throughput × "
                              "duration ÷ successful = {output_per_request:.0f} chunks (target "
                              f"{config.get('output_tokens')})")),
            derive=OUTPUT_PER_REQUEST,
            isl_configured=number(config, "input_tokens", required=False),
            osl_configured=number(config, "output_tokens", required=False),
            completed=completed,
            duration_s=duration,
        )


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _metrics(record: dict) -> dict:
    metrics: dict = {}
    for key, base, stat in _LATENCIES:
        if record.get(key) is not None:
            put(metrics, base, stat, check_number(record[key], key), "ms", DEFINITIONS[base])
    for key, stat in _SPEEDS:
        if record.get(key) is not None:
            put(
                metrics,
                "output_speed_per_user",
                stat,
                check_number(record[key], key),
                "token/s",
                "content chunks (≈ tokens) / s of one request after its first chunk "
                "(excludes TTFT)",
            )
    put(
        metrics,
        "output_throughput",
        "mean",
        number(record, "system_output_throughput"),
        "token/s",
        "content chunks (≈ output tokens) of successful requests / s of the measured "
        "phase, whole system",
    )
    put(
        metrics,
        "request_throughput",
        "mean",
        number(record, "requests_per_second"),
        "request/s",
        "successful requests / s of the measured phase",
    )
    return metrics


def _notes(record, config) -> tuple[list[str], list[str]]:
    """(notes, caveats): what the reader worked out, and what changes how the numbers read."""
    caveats = [
        "output 'tokens' are counted as streamed content chunks (one per token only if "
        "the server streams token by token)"
    ]
    notes: list[str] = []
    failed = number(record, "failed_requests", required=False)
    if failed:
        summary = _dict(record.get("error_summary"))
        caveats.append(
            f"{failed:g} requests failed ({summary.get('timeout_errors')} timeouts, "
            f"request_timeout {config.get('request_timeout')} s) and are excluded from every "
            "statistic"
        )
    return notes, caveats
