"""SGLang ``python -m sglang.bench_serving --output-file`` JSON Lines (one run per line).

Old (v0.3/0.4) lines carry only medians for TTFT/ITL and the mean/median E2E latency;
newer lines add mean/std/p99 of ttft, tpot, itl and e2e latency.  No line names the model,
the TP or the GPU: those come from overrides or a sidecar meta.toml.
"""

from __future__ import annotations

from collections.abc import Mapping

from .base import (
    THROUGHPUTS,
    Adapter,
    Context,
    Document,
    MeasuredRun,
    first_record,
    fmt_num,
    number,
    put_rate,
)
from .serving import ServingRecord, definitions, has_totals

_NAMES = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2e_latency": "e2el"}
DEFINITIONS = definitions()


def looks_like_sglang(record: Mapping | None) -> bool:
    return has_totals(record) and (
        "total_output_tokens_retokenized" in record
        or any(k.endswith("_e2e_latency_ms") for k in record)
    )


class SGLangAdapter(Adapter):
    format = "sglang"
    reads = (
        "SGLang bench_serving --output-file JSONL (one run per line; *_e2e_latency_ms, "
        "median_ttft_ms, total_output_tokens_retokenized)"
    )

    def detect(self, doc: Document) -> bool:
        return looks_like_sglang(first_record(doc))

    def read_record(self, record: dict, index: int, ctx: Context, shared) -> MeasuredRun:
        run = ServingRecord.read(record, _NAMES, DEFINITIONS)
        if "ttft" not in run.metrics and "ttft_median" in run.metrics:
            run.caveats.append(
                "the file gives only the MEDIAN TTFT and ITL (old SGLang schema); "
                "no mean TTFT/ITL/TPOT exists for this run"
            )
        _throughputs(record, run)
        isl_cfg, osl_cfg, prefix = _configured(record, run.notes)
        run.check_lengths(isl_cfg, osl_cfg, _range_why(record))
        run.check_load()
        if not {"model", "tp", "hardware"} <= set(ctx.values):
            run.notes.append(
                "SGLang bench_serving lines record no model, TP or GPU; give them with "
                "overrides or a perfgraph.meta.toml sidecar"
            )
        return run.build(ctx, self.format, index, label_prefix=prefix,
                         model=record.get("model_id") or record.get("model"))


def _throughputs(record: dict, run: ServingRecord) -> None:
    """The line's rates; what it leaves to the cells (its ``derive``): the total tokens/s
    (``measured_token_rate``: token totals ÷ duration), and where it gives none its requests/s
    (``measured_completion_rate``: completed ÷ duration) and input tokens/s
    (``measured_input_rate``)."""
    put_rate(run.metrics, "output_throughput", number(record, "output_throughput"))
    run.derive.append(("total_over_duration", _derived_rate("total_throughput", "token totals")))
    given = number(record, "request_throughput", required=False)
    if given is None:
        run.derive.append(("requests_over_duration",
                           _derived_rate("request_throughput", "completed")))
        run.notes.append(
            "total_throughput and request_throughput derived from the token totals, "
            "completed and duration (the line does not carry them)"
        )
    else:
        put_rate(run.metrics, "request_throughput", given)
    given_in = number(record, "input_throughput", required=False)
    if given_in is None:
        run.derive.append(("input_over_duration",
                           _derived_rate("input_throughput", "total_input")))
    else:
        put_rate(run.metrics, "input_throughput", given_in)


def _derived_rate(key: str, over: str) -> str:
    """A rate's definition where the cells derive it from the line's totals."""
    return f"{THROUGHPUTS[key][1]} (derived: {over} / duration)"


def _configured(record: dict, notes: list[str]) -> tuple[float | None, float | None, str]:
    dataset = str(record.get("dataset_name") or "")
    if dataset.startswith("random"):
        isl = number(record, "random_input_len", required=False)
        osl = number(record, "random_output_len", required=False)
        lens = f" {fmt_num(isl)}/{fmt_num(osl)}" if isl is not None and osl is not None else ""
        return isl, osl, f"{dataset}{lens}"
    if dataset and ("random_input_len" in record):
        notes.append(
            f"dataset {dataset}: the random_input_len/random_output_len fields in the "
            "line do not apply and are ignored"
        )
    osl = number(record, "sharegpt_output_len", required=False)
    return None, osl, dataset


def _range_why(record: dict) -> str:
    ratio = record.get("random_range_ratio")
    if not str(record.get("dataset_name") or "").startswith("random") or ratio is None:
        return ""
    return (
        f" (random_range_ratio {ratio}: each length is drawn uniformly from "
        f"[max(1, {ratio}·len), len], so the mean is below the configured length)"
    )
