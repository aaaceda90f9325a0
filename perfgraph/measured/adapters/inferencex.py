"""InferenceX (formerly InferenceMAX) result rows as its public API serves them.

A JSON array of rows, one run each: ``hardware``, ``framework``, ``model``, ``precision``,
``spec_method``, ``disagg``, ``is_multinode``, ``prefill_{tp,ep,dp_attention,num_workers}``,
``decode_{tp,ep,dp_attention,num_workers}``, ``num_prefill_gpu``, ``num_decode_gpu``, ``isl``,
``osl``, ``conc``, ``image``, ``date``, ``run_url`` and ``metrics``. Metric definitions
(InferenceX ``utils/process_result.py``, see tests/data/measured/PROVENANCE.md): latencies in
SECONDS (``mean/median/std/p90/p99/p99.9_{ttft,tpot,itl,e2el}``); ``tput_per_gpu`` = total
(input + output) tokens/s ÷ GPUs; ``output_tput_per_gpu`` = output tokens/s ÷ GPUs (÷ decode
GPUs when disaggregated); ``input_tput_per_gpu`` likewise (÷ prefill GPUs); ``avg_power_w``
(newer rows). Lengths are drawn uniformly in [0.8, 1.0] × the nominal ISL/OSL
(``--random-range-ratio 0.8``): the rows record no measured lengths, so the expected mean,
0.9 × nominal (the cells ``measured_expected_isl``/``_osl``), is what the run is modelled
at, and the caveat (a late one, :data:`LATE_CHECKS`) says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from .base import (
    Adapter,
    Context,
    Document,
    LateCaveat,
    MeasuredRun,
    RunRefused,
    build_run,
    collect_stats,
    concurrency_of,
    first_record,
    fmt_num,
    number,
    put,
    total_from_per_gpu,
    tp_of,
)
from .inferencemax import EXPECTED_LENGTHS, RANGE_RATIO, runner_gpu, spec_caveat

DEFINITIONS = {
    "ttft": "time to first token, per request (InferenceX benchmark_serving)",
    "tpot": "time per output token EXCLUDING the first: (e2el − ttft)/(output tokens − 1) per "
    "request",
    "itl": "inter-token latency: gap between streamed chunks (SGLang streams several tokens a "
    "chunk: ITL ≫ TPOT there)",
    "e2el": "end-to-end request latency",
}
#: framework key → the engine that serves it (dynamo-* and mori-* orchestrate disaggregated
#: pools of the engine they name; ``trt`` is TensorRT-LLM; ``atom`` is AMD's ROCm engine)
ENGINES = {"sglang": "sglang", "trt": "trtllm", "trtllm": "trtllm", "vllm": "vllm",
           "dynamo-trt": "trtllm", "dynamo-sglang": "sglang", "dynamo-vllm": "vllm",
           "mori-sglang": "sglang", "atom": "atom"}
#: InferenceX's model keys → the model they name (its frontend's model table)
MODELS = {"dsr1": "DeepSeek-R1-0528", "llama70b": "Llama-3.3-70B-Instruct",
          "gptoss": "gpt-oss-120b"}


class InferenceXRowsAdapter(Adapter):
    format = "inferencex"
    reads = ("InferenceX API rows: JSON array of {hardware, framework, precision, "
             "prefill_*/decode_* tp/ep/dp_attention, num_*_gpu, isl, osl, conc, metrics}")

    def detect(self, doc: Document) -> bool:
        record = first_record(doc)
        return record is not None and isinstance(record.get("metrics"), dict) and {
            "hardware", "framework", "decode_tp", "conc"} <= set(record)

    def read_record(self, record: dict, index: int, ctx: Context, shared: Any) -> MeasuredRun:
        raw = record["metrics"]
        if not isinstance(raw, dict):
            raise RunRefused("'metrics' is not an object")
        metrics = collect_stats(raw, {k: k for k in DEFINITIONS}, "", 1000.0, DEFINITIONS)
        if "tpot" not in metrics:
            raise RunRefused("no mean_tpot in the row's metrics")
        deploy = _deployment(record)
        notes = ["latencies converted from seconds (InferenceX rows) to ms",
                 f"image {record.get('image') or '?'}, measured {record.get('date') or '?'} by "
                 f"{record.get('run_url') or '?'}"]
        if not deploy["disaggregated"] and record.get("num_decode_gpu") not in (
                None, deploy["gpus"]):
            notes.append(f"num_decode_gpu {record['num_decode_gpu']} on a single-node row is an "
                         f"API-side field; decode_tp {deploy['gpus']} is the GPU count used")
        caveats: list[str | LateCaveat] = (
            [_disagg_caveat(deploy)] if deploy["disaggregated"] else [])
        gpus = deploy["gpus"]
        _throughputs(raw, metrics, deploy)
        power = number(raw, "avg_power_w", required=False)
        if power:
            put(metrics, "power", "mean", power, "W", "mean board power per GPU over the run")
        spec = str(record.get("spec_method") or "none")
        if spec != "none":
            caveats.append(spec_caveat(spec))
        isl, osl = (number(record, k) for k in ("isl", "osl"))
        caveats.append(LateCaveat("random_range", (isl, osl)))
        framework = str(record["framework"])
        model = record.get("model")
        precision = record.get("precision")
        return build_run(
            ctx, self.format, index, metrics=metrics, notes=notes, caveats=caveats,
            label_prefix=f"{framework} {precision or ''}{' ' + spec if spec != 'none' else ''}"
            .strip(),
            model=MODELS.get(str(model), model),
            precision=str(precision) if precision else None,
            hardware=_hardware(record["hardware"], notes),
            tp=deploy["decode_tp"], concurrency=concurrency_of(record["conc"], "conc"),
            isl_configured=isl, osl_configured=osl, range_ratio=RANGE_RATIO,
            engine=ENGINES.get(framework.lower(), framework.lower()),
            engine_build=str(record["image"]) if record.get("image") else None,
            spec_decoding=spec, gpus=gpus,
            derive=(total_from_per_gpu("tput_per_gpu", gpus), *EXPECTED_LENGTHS),
            ep=deploy["decode_ep"], dp_attention=deploy["decode_dp_attention"],
            **{k: deploy[k] for k in ("disaggregated", "prefill_gpus", "decode_gpus",
                                      "prefill_tp", "decode_tp", "prefill_ep", "decode_ep")},
        )


def _hardware(text, notes: list[str]) -> str | None:
    return runner_gpu(text, notes, "InferenceX")



def _deployment(record: dict) -> dict[str, Any]:
    """TP/EP/DP-attention of each pool, the GPU counts, and the GPUs per-GPU figures use.
    A single-node row's GPUs are its TP (some rows with decode_ep 8 say num_decode_gpu 64, an
    API-side field: decode_tp is trusted, PROVENANCE.md)."""
    out: dict[str, Any] = {}
    for pool in ("prefill", "decode"):
        out[f"{pool}_tp"] = tp_of(record.get(f"{pool}_tp"), f"{pool}_tp")
        ep = record.get(f"{pool}_ep")
        out[f"{pool}_ep"] = tp_of(ep, f"{pool}_ep") if ep is not None else None
        out[f"{pool}_dp_attention"] = _flag(record.get(f"{pool}_dp_attention"))
        gpus = record.get(f"num_{pool}_gpu")
        out[f"{pool}_gpus"] = tp_of(gpus, f"num_{pool}_gpu") if gpus is not None else None
    out["disaggregated"] = bool(record.get("disagg"))
    if out["disaggregated"]:
        if out["prefill_gpus"] is None or out["decode_gpus"] is None:
            raise RunRefused("a disaggregated row needs num_prefill_gpu and num_decode_gpu")
        out["gpus"] = out["prefill_gpus"] + out["decode_gpus"]
    else:
        out["gpus"] = out["decode_tp"]
        out["prefill_gpus"] = out["decode_gpus"] = None
    return out


def _flag(value: Any) -> bool | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise RunRefused(f"dp_attention is {value!r}: expected true or false")


def _disagg_caveat(d: dict[str, Any]) -> str:
    return (f"disaggregated: {d['prefill_gpus']} prefill GPUs (TP {d['prefill_tp']}, EP "
            f"{d['prefill_ep']}) and {d['decode_gpus']} decode GPUs (TP {d['decode_tp']}, EP "
            f"{d['decode_ep']}); the model holds it as one aggregated replica at the decode TP, "
            f"per GPU over all {d['gpus']} GPUs")


def _throughputs(raw: dict, metrics: dict, d: dict[str, Any]) -> None:
    gpus, split = d["gpus"], d["disaggregated"]
    per_gpu = number(raw, "tput_per_gpu")
    if per_gpu <= 0:
        raise RunRefused("'tput_per_gpu' is 0: the run measured nothing")
    put(metrics, "throughput_per_gpu", "mean", per_gpu, "token/s",
        f"total (input + output) tokens / s ÷ {gpus} GPUs")
    for key, base, pool in (("output_tput_per_gpu", "output_throughput_per_gpu", "decode"),
                            ("input_tput_per_gpu", "input_throughput_per_gpu", "prefill")):
        value = number(raw, key, required=False)
        if value is not None:
            over = f"{d[pool + '_gpus']} {pool} GPUs" if split else f"{gpus} GPUs"
            put(metrics, base, "mean", value, "token/s",
                f"{'output' if pool == 'decode' else 'input'} tokens / s ÷ {over}")


def _random_range(run: MeasuredRun, isl: float, osl: float) -> str | None:
    if run.isl_expected is None or run.osl_expected is None or run.range_ratio is None:
        return None
    return (f"ISL/OSL: random in [{run.range_ratio:g}, 1] × {fmt_num(isl)}/{fmt_num(osl)} "
            f"(--random-range-ratio {run.range_ratio:g}); the rows record no measured lengths, "
            "so the run is modelled at the expected means "
            f"{fmt_num(run.isl_expected)}/{fmt_num(run.osl_expected)}")


#: The late caveats' checks (:class:`LateCaveat`) of the rows: the configured random range
#: and the expected means (cells) the run is modelled at.
LATE_CHECKS: Mapping[str, Callable[..., str | None]] = MappingProxyType(
    {"random_range": _random_range})
