"""InferenceMAX (SemiAnalysis) results.

* ``inferencemax``: dashboard rows (a JSON array) with Hardware, Framework, Precision, TP,
  Conc, "TTFT (ms)", "TPOT (ms)", "E2EL (s)", "TPUT per GPU".  "TPUT per GPU" is total
  (input + output) tokens/s ÷ TP.  The rows carry neither the model nor ISL/OSL: lengths come
  from overrides or from the parent directory name ("1k1k", "8k1k-70b") — the only place a
  path is used, and for lengths only.
* ``inferencemax-agg``: ``agg_*.json`` written by InferenceMAX's utils/process_result.py from
  a vLLM/SGLang benchmark_serving result: one object (or a list of them) with hw, conc, tp,
  isl, osl, model, ``tput_per_gpu`` (= total_token_throughput ÷ GPUs), ``output_tput_per_gpu``,
  ``input_tput_per_gpu`` and ``mean/median/std/p99_{ttft,tpot,itl,e2el}`` in SECONDS.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType

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
    gpu_name,
    number,
    put,
    total_from_per_gpu,
    tp_of,
)

DEFAULT_MODEL = "Llama-3.3-70B"  # the dashboard rows collected in PROVENANCE.md are all this model
PER_GPU = "total (input + output) tokens / s ÷ {gpus}"
DEFINITIONS = {
    "ttft": "time to first token, mean over the run (InferenceMAX, vLLM benchmark_serving)",
    "tpot": "time per output token EXCLUDING the first: (latency − ttft)/(output tokens − 1) per "
    "request",
    "itl": "inter-token latency: gap between successive streamed chunks (excludes the first token)",
    "e2el": "end-to-end request latency",
}
#: The suite's client draws each request's ISL and OSL uniformly from the integers in
#: [int(RANGE_RATIO × nominal), nominal] (utils/bench_serving/benchmark_serving.py,
#: sample_random_requests, run with --random-range-ratio 0.8 on every InferenceMAX and
#: InferenceX workload): the mean is (1 + RANGE_RATIO) / 2 × nominal, the cells
#: ``measured_expected_isl``/``_osl`` (a run gives the ratio as ``range_ratio`` and names
#: :data:`EXPECTED_LENGTHS` in its ``derive``). The dashboard rows bear it out:
#: (E2EL − TTFT) / TPOT + 1 gives a mean OSL of ~922 for "1k" (0.9 × 1024).
RANGE_RATIO = 0.8
#: The mean lengths a run drawn in the suite's random range leaves to the cells.
EXPECTED_LENGTHS: tuple[tuple[str, str], ...] = (
    ("isl_expected", "configured ISL × (1 + range ratio) ÷ 2"),
    ("osl_expected", "configured OSL × (1 + range ratio) ÷ 2"))
_K = {"1k": 1024, "2k": 2048, "4k": 4096, "8k": 8192, "16k": 16384, "32k": 32768}
#: A runner named by its GPU and the framework it ran: "H200-TRT" and "B200-TRT" in the
#: dashboard rows (the default vLLM build's runners are the bare "H200", "B200"); the
#: InferenceX app's hardware keys add h200-sglang, b200-dynamo-trt, mi355x-mori-sglang,
#: mi355x-atom, and "-mtp" for a run with MTP speculative decoding (its lib/constants.ts).
_RUNNER = re.compile(r"^(?P<gpu>.+?)[-_ ](?P<engine>(?:dynamo-|mori-)?(?:trt|trtllm|sglang|"
                     r"vllm|atom))(?:[-_ ](?P<mtp>mtp))?$", re.IGNORECASE)


def split_runner(text) -> tuple[str | None, str | None, str | None]:
    """(GPU, engine, speculative method) of a runner name: "H200-TRT" is an H200 running
    TRT (TensorRT-LLM), "b200-sglang-mtp" a B200 running SGLang with MTP; a name without a
    framework suffix is the GPU alone."""
    name = gpu_name(text)
    found = _RUNNER.match(name) if name else None
    if found is None:
        return name, None, None
    return found["gpu"], found["engine"].lower(), "mtp" if found["mtp"] else None


def spec_caveat(spec: str) -> str:
    return (f"speculative decoding ({spec}): a step may emit several tokens, so TPOT sits "
            "below one decode step")


def runner_gpu(text, notes: list[str], suite: str = "InferenceMAX") -> str | None:
    """The row's GPU name, less the framework a runner name appends ("H200-TRT" is an H200);
    a bare "H100" is the SXM part (the suite's H100 runners are SXM; InferenceX is
    InferenceMAX renamed, on the same runners)."""
    name, engine, spec = split_runner(text)
    if engine is not None:
        notes.append(f"hardware '{text}' read as {name} running {engine}"
                     f"{' with ' + spec.upper() if spec else ''}: {suite} names a runner by "
                     "its GPU and framework")
    if name is not None and name.lower() == "h100":
        notes.append(f"hardware '{text}' read as H100-SXM: {suite}'s H100 runners are SXM")
        return "H100-SXM"
    return name



def _lengths_from_dir(doc: Document) -> tuple[int, int, str] | None:
    for part in (doc.directory.name, doc.directory.parent.name):
        m = re.match(r"^(\d+k)(\d+k)(?:\b|-|_|$)", part.lower())
        if m and m.group(1) in _K and m.group(2) in _K:
            return _K[m.group(1)], _K[m.group(2)], part
    return None


class InferenceMaxRowsAdapter(Adapter):
    format = "inferencemax"
    reads = (
        'InferenceMAX dashboard rows: JSON array of {Hardware, TP, Conc, "TTFT (ms)", '
        '"TPOT (ms)", "E2EL (s)", "TPUT per GPU"}'
    )

    def detect(self, doc: Document) -> bool:
        record = first_record(doc)
        if not record:
            return False
        return {"Hardware", "TTFT (ms)", "TPUT per GPU"} <= set(record)

    def prepare(self, doc: Document, ctx: Context) -> dict:
        lengths = None
        if "isl" not in ctx.values or "osl" not in ctx.values:
            lengths = _lengths_from_dir(doc)
        lowest: dict[tuple, float] = {}
        for _, row in self.records(doc):
            try:
                key, ttft = _group(row), number(row, "TTFT (ms)")
                lowest[key] = min(ttft, lowest.get(key, ttft))
            except (RunRefused, TypeError, AttributeError):
                continue
        return {"lengths": lengths, "lowest_ttft": lowest}

    def read_record(self, record: dict, index: int, ctx: Context, shared: dict) -> MeasuredRun:
        tp = tp_of(_required(record, "TP"), "TP")
        conc = concurrency_of(_required(record, "Conc"), "Conc")
        ttft, tpot = number(record, "TTFT (ms)"), number(record, "TPOT (ms)")
        e2el_s, per_gpu = number(record, "E2EL (s)"), number(record, "TPUT per GPU")
        if tpot <= 0 or per_gpu <= 0 or e2el_s <= 0:
            zero = next(k for k, v in (("TPOT (ms)", tpot), ("TPUT per GPU", per_gpu),
                                       ("E2EL (s)", e2el_s)) if v <= 0)
            raise RunRefused(f"'{zero}' is 0: the run measured nothing")
        precision, framework = record.get("Precision"), record.get("Framework")
        _, suffix, spec = split_runner(record["Hardware"])
        framework = framework or suffix
        notes = [f"{framework or '?'} {precision or '?'}; TTFT/TPOT/E2EL are means over the run",
                 "TPUT per GPU is total (input+output) tokens/s ÷ TP"]
        caveats: list[str | LateCaveat] = [spec_caveat(spec)] if spec else []
        _queued(ttft, shared["lowest_ttft"].get(_group(record)), notes)
        isl_cfg, osl_cfg = _lengths(shared["lengths"], caveats)
        implied = (len(notes), _implied_note(osl_cfg))  # said after the notes so far
        return build_run(
            ctx, self.format, index, metrics=_row_metrics(ttft, tpot, e2el_s, per_gpu),
            notes=notes, caveats=caveats, model=_model(record, ctx, notes),
            precision=str(precision) if precision else None,
            hardware=runner_gpu(record["Hardware"], notes), tp=tp, concurrency=conc,
            isl_configured=isl_cfg, osl_configured=osl_cfg, range_ratio=RANGE_RATIO,
            derive=ROW_DERIVED + (EXPECTED_LENGTHS if shared["lengths"] else ()),
            derive_notes=(implied,),
            # the row's Framework as it says it ("VLLM", "TRT"), else its runner's suffix;
            # measured/setup maps it to an engine
            engine=str(framework).strip().lower() if framework else None,
            spec_decoding=spec,
        )


def _queued(ttft: float, lowest: float | None, notes: list[str]) -> None:
    if lowest and ttft > 5 * lowest:
        notes.append(f"TTFT {ttft:.0f} ms is {ttft / lowest:.0f}× the lowest TTFT at this "
                     "hardware/TP in the file: requests queued (the server could not hold "
                     "this concurrency)")


#: The rows record no lengths: the mean OSL their latencies imply is the sheet's
#: ``measured_implied_osl`` (perfgraph.measured.derived), (E2EL − TTFT) ÷ TPOT + 1.
IMPLIED_OSL = (("osl_implied", "(E2EL − TTFT)/TPOT + 1: the rows record no lengths"),)
#: What a row leaves to the cells: its implied OSL, and its total tokens/s (per GPU × TP).
ROW_DERIVED = (*IMPLIED_OSL, total_from_per_gpu("TPUT per GPU", "TP"))


def _implied_note(osl_cfg: int | None) -> str:
    """The note stating the implied OSL, a template ``derived`` fills in."""
    return ("implied mean OSL ≈ (E2EL − TTFT)/TPOT + 1 = {osl_implied:.0f}"
            + (f" (configured {osl_cfg})" if osl_cfg else ""))


def _row_metrics(ttft: float, tpot: float, e2el_s: float, per_gpu: float) -> dict:
    metrics: dict = {}
    put(metrics, "ttft", "mean", ttft, "ms", DEFINITIONS["ttft"])
    put(metrics, "tpot", "mean", tpot, "ms", DEFINITIONS["tpot"])
    put(metrics, "e2el", "mean", e2el_s * 1000.0, "ms", DEFINITIONS["e2el"])
    put(metrics, "throughput_per_gpu", "mean", per_gpu, "token/s", PER_GPU.format(gpus="TP"))
    return metrics


def _model(record: dict, ctx: Context, notes: list[str]) -> str | None:
    model = record.get("Model")
    if not model and "model" not in ctx.values:
        notes.append(f"model not in the rows; assumed {DEFAULT_MODEL} (the InferenceMAX rows "
                     "in PROVENANCE.md); pass overrides={'model': ...} for other files")
        return DEFAULT_MODEL
    return model


def _required(record: dict, key: str):
    if record.get(key) is None:
        raise RunRefused(f"required field '{key}' is missing")
    return record[key]


def _group(row: dict) -> tuple:
    return (row.get("Hardware"), row.get("Framework"), row.get("Precision"), row.get("TP"))


def _lengths(lengths, caveats: list[str | LateCaveat]) -> tuple[int | None, int | None]:
    """The configured lengths the directory name gives, with a caveat stating the expected
    means the run is modelled at (a late one: they are cells)."""
    if lengths is None:
        return None, None
    caveats.append(LateCaveat("lengths_from_directory", lengths))
    return lengths[0], lengths[1]


def _lengths_from_directory(run: MeasuredRun, isl: int, osl: int, part: str) -> str | None:
    if run.isl_expected is None or run.osl_expected is None or run.range_ratio is None:
        return None
    return (f"ISL/OSL {isl}/{osl} taken from the directory name '{part}' (the rows carry no "
            f"lengths); InferenceMAX draws each in [{run.range_ratio:g}, 1] × nominal "
            f"(--random-range-ratio {run.range_ratio:g}), so the run is modelled at the "
            f"expected means {run.isl_expected:g}/{run.osl_expected:g}")


#: The late caveats' checks (:class:`LateCaveat`) of the dashboard rows: the lengths a
#: directory name gives, and the expected means (cells) the run is modelled at.
LATE_CHECKS: Mapping[str, Callable[..., str | None]] = MappingProxyType(
    {"lengths_from_directory": _lengths_from_directory})


class InferenceMaxAggAdapter(Adapter):
    format = "inferencemax-agg"
    reads = (
        "InferenceMAX agg_*.json from utils/process_result.py (hw, conc, tp, isl, osl, "
        "tput_per_gpu, mean/median/p99_{ttft,tpot,itl,e2el} in seconds)"
    )

    def detect(self, doc: Document) -> bool:
        record = first_record(doc)
        if not record:
            return False
        return {"hw", "conc", "tput_per_gpu"} <= set(record)

    def read_record(self, record: dict, index: int, ctx: Context, shared) -> MeasuredRun:
        notes: list[str] = []
        metrics = collect_stats(record, {k: k for k in DEFINITIONS}, "", 1000.0, DEFINITIONS)
        if not metrics:
            raise RunRefused("no latency statistics (mean_ttft, median_tpot, ...) in the record")
        tp, gpus = _gpus(record, notes)
        _agg_throughputs(record, metrics, gpus)
        notes.append("latencies converted from seconds (agg files) to ms")
        precision = record.get("precision")
        isl, osl = number(record, "isl", required=False), number(record, "osl", required=False)
        caveats = [] if isl is None and osl is None else [
            f"ISL/OSL {_shown(isl)}/{_shown(osl)} are the configured lengths (the agg file "
            "records no measured means)"]
        return build_run(
            ctx,
            self.format,
            index,
            metrics=metrics,
            notes=notes,
            caveats=caveats,
            model=record.get("model"),
            precision=str(precision) if precision else None,
            label_prefix=f"{record.get('framework', '')} {precision or ''}".strip(),
            hardware=runner_gpu(_required(record, "hw"), notes),
            engine=split_runner(record["hw"])[1],  # a runner's framework suffix, if any
            tp=tp,
            concurrency=concurrency_of(_required(record, "conc"), "conc"),
            isl_configured=isl,
            osl_configured=osl,
            gpus=gpus if tp is None else None,  # a multinode run's GPUs (single-node: its TP)
            derive=(total_from_per_gpu("tput_per_gpu", gpus),),
        )


def _agg_throughputs(record: dict, metrics: dict, gpus: int) -> None:
    """The agg file's per-GPU throughputs (the whole system's total is a cell: the run's
    ``derive``)."""
    split = record.get("is_multinode")
    for key, base, what in (
        ("tput_per_gpu", "throughput_per_gpu", f"total (input + output) tokens / s ÷ {gpus} GPUs"),
        ("output_tput_per_gpu", "output_throughput_per_gpu",
         "output tokens / s ÷ " + ("decode GPUs" if split else f"{gpus} GPUs")),
        ("input_tput_per_gpu", "input_throughput_per_gpu",
         "input tokens / s ÷ " + ("prefill GPUs" if split else f"{gpus} GPUs")),
    ):
        value = number(record, key, required=(key == "tput_per_gpu"))
        if value is not None:
            put(metrics, base, "mean", value, "token/s", what)


def _shown(x: float | None) -> str:
    return "?" if x is None else f"{x:g}"


def _gpus(record: dict, notes: list[str]) -> tuple[int | None, int]:
    if record.get("is_multinode"):
        gpus = tp_of(number(record, "num_prefill_gpu") + number(record, "num_decode_gpu"),
                     "num_prefill_gpu + num_decode_gpu")
        notes.append(
            f"disaggregated multinode run: prefill TP {record.get('prefill_tp')} × "
            f"{record.get('prefill_num_workers')}, decode TP {record.get('decode_tp')} × "
            f"{record.get('decode_num_workers')}, {gpus} GPUs; tp left empty"
        )
        return None, gpus
    tp = tp_of(_required(record, "tp"), "tp")
    return tp, tp
