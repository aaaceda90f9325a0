"""vLLM ``benchmarks/benchmark_serving.py --save-result`` / ``vllm bench serve`` result JSON.

* ``vllm-legacy`` (v0.4-v0.5 era): ``input_throughput`` + ``output_throughput``, no
  ``total_token_throughput``; ``mean/median/std/p99`` of ``ttft``/``tpot``/``itl`` in ms
  (some forks add ``*_latency_ms`` for the end-to-end latency).
* ``vllm`` (v0.6+): ``total_token_throughput``, ``*_e2el_ms``, ``request_goodput`` (spelt
  ``"request_goodput:"`` with a trailing colon in several versions), ``max_concurrency``,
  percentile keys like ``p99_itl_ms``/``p99.9_ttft_ms``.  ``--append-result`` files hold one
  result per line (JSONL); each line is one run.

With ``--save-detailed`` (or in old versions always) per-request arrays ``output_lens``,
``ttfts``, ``itls``, ``errors`` are present and are used to check zero-length outputs.
"""

from __future__ import annotations

import math
import statistics

from .base import (
    THROUGHPUTS,
    Adapter,
    Context,
    Document,
    MeasuredRun,
    PerRequest,
    RunRefused,
    check_number,
    first_record,
    gpu_name,
    number,
    put,
    put_rate,
    tp_of,
)
from .commands import commands_file
from .serving import Caveats, ServingRecord, definitions, has_totals
from .sglang import looks_like_sglang

_NAMES = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2el": "e2el", "latency": "e2el"}
DEFINITIONS = definitions(tpot_more=" (requests with > 1 token), then averaged",
                          itl_more="; a chunk may carry several tokens")


def _is_vllm(record: dict | None) -> bool:
    return (
        has_totals(record)
        and not looks_like_sglang(record)
        and any(k.endswith(("_ttft_ms", "_tpot_ms", "_e2el_ms")) for k in record)
    )


def _is_current(record: dict) -> bool:
    return "total_token_throughput" in record or any(k.endswith("_e2el_ms") for k in record)


class VllmAdapter(Adapter):
    format = "vllm"
    reads = (
        "vLLM benchmark_serving / `vllm bench serve` result JSON v0.6+ (total_token_throughput, "
        "*_e2el_ms, request_goodput); JSONL from --append-result"
    )
    legacy = False

    def detect(self, doc: Document) -> bool:
        record = first_record(doc)
        return record is not None and _is_vllm(record) and _is_current(record) != self.legacy

    def prepare(self, doc: Document, ctx: Context) -> dict | None:
        return commands_file(doc)

    def read_record(self, record: dict, index: int, ctx: Context, shared) -> MeasuredRun:
        run = ServingRecord.read(record, _NAMES, DEFINITIONS)
        deploy = shared or {}
        run.notes.extend(deploy.get("notes", ()))
        self._throughputs(record, run)
        _per_request(record, run.metrics, run.caveats)
        _lengths_note(record, run.notes)
        _e2el_from_arrays(record, run.metrics, run.notes)
        failed = number(record, "failed", required=False)
        if failed:
            run.caveats.append(f"{failed:g} requests failed and are excluded from every statistic")
        run.check_load()
        run.check_lengths(number(record, "random_input_len", required=False),
                          number(record, "random_output_len", required=False))
        tp = next((record[k] for k in ("tensor_parallel_size", "tp") if record.get(k) is not None),
                  deploy.get("tp"))
        precision = record.get("precision")  # not in upstream files; some harnesses add it
        return run.build(
            ctx,
            self.format,
            index,
            precision=str(precision) if precision else None,
            model=record.get("model_id"),
            hardware=gpu_name(record.get("gpu") or record.get("hardware")
                                   or deploy.get("gpu")),
            tp=tp_of(tp, "tensor_parallel_size") if tp is not None else None,
            pp=deploy.get("pp"), gpus=deploy.get("gpus"),
            engine="vllm" if record.get("backend") == "vllm" else None,  # the client's backend
            per_request=per_request(record),
        )

    def _throughputs(self, record: dict, run: ServingRecord) -> None:
        metrics, notes = run.metrics, run.notes
        put_rate(metrics, "request_throughput", number(record, "request_throughput"))
        put_rate(metrics, "output_throughput", number(record, "output_throughput"))
        put_rate(metrics, "total_throughput", number(record, "total_token_throughput"))
        goodput_key = "request_goodput" if "request_goodput" in record else "request_goodput:"
        goodput = number(record, goodput_key, required=False)
        if goodput is None:
            return
        what = "requests meeting every --goodput SLO / s"
        put(metrics, "request_goodput", "mean", goodput, "request/s", what)
        if goodput_key.endswith(":"):
            notes.append(
                "goodput read from the key 'request_goodput:' (trailing colon, as "
                "several vLLM versions spell it)"
            )


class VllmLegacyAdapter(VllmAdapter):
    format = "vllm-legacy"
    reads = (
        "old vLLM benchmark_serving --save-result JSON (v0.4-0.5: input_throughput, "
        "mean/median/std/p99 ttft/tpot/itl ms, optional *_latency_ms, per-request arrays)"
    )
    legacy = True

    def _throughputs(self, record: dict, run: ServingRecord) -> None:
        """The file's rates; its total tokens/s is left to the cells (``measured_rates_total``:
        input + output tokens/s)."""
        put_rate(run.metrics, "request_throughput", number(record, "request_throughput"))
        put_rate(run.metrics, "output_throughput", number(record, "output_throughput"))
        put_rate(run.metrics, "input_throughput", number(record, "input_throughput"))
        run.derive.append(("total_of_rates", f"{THROUGHPUTS['total_throughput'][1]} "
                           "(derived: input + output throughput)"))
        run.notes.append(
            "total_throughput derived as input_throughput + output_throughput "
            "(old vLLM files carry no total)"
        )


def _lengths_note(record: dict, notes: list[str]) -> None:
    """Say where the measured mean lengths come from when per-request arrays back them."""
    ins, outs = record.get("input_lens"), record.get("output_lens")
    if not (isinstance(ins, list) and isinstance(outs, list) and ins and outs):
        return
    try:
        isl = statistics.fmean(check_number(x, "input_lens[]") for x in ins)
        osl = statistics.fmean(check_number(x, "output_lens[]") for x in outs)
    except RunRefused:
        return
    notes.append(f"mean ISL {isl:.1f} / OSL {osl:.1f} over the {len(ins)} per-request "
                 "input_lens/output_lens (measured lengths)")


def per_request(record: dict) -> PerRequest | None:
    """The successful requests with output, from ``input_lens``, ``output_lens``, ``ttfts``
    and ``itls`` (all four, of one length; ``errors`` marks the failed); None without them."""
    found = [record.get(k) for k in ("input_lens", "output_lens", "ttfts", "itls")]
    arrays: list[list] = [a for a in found if isinstance(a, list) and a]
    if len(arrays) != 4 or len({len(a) for a in arrays}) != 1:
        return None
    errors = record.get("errors")
    if not isinstance(errors, list) or len(errors) != len(arrays[0]):
        errors = [""] * len(arrays[0])
    rows = []
    try:
        for isl, osl, ttft, gaps, error in zip(*arrays, errors, strict=True):
            out = check_number(osl, "output_lens[]")
            if error or not isinstance(gaps, list) or out < 1:
                continue
            rows.append((int(check_number(isl, "input_lens[]")), int(out),
                         check_number(ttft, "ttfts[]") * 1000.0,
                         sum(check_number(g, "itls[]") for g in gaps) * 1000.0))
    except RunRefused:
        return None
    if not rows:
        return None
    burst = record.get("burstiness")
    isl_, osl_, ttft_, decode = (tuple(col) for col in zip(*rows, strict=True))
    return PerRequest(isl_, osl_, ttft_, decode,  # type: ignore[arg-type]
                      burstiness=float(burst) if isinstance(burst, (int, float))
                      and burst > 0 else 1.0)


def _e2el_from_arrays(record: dict, metrics: dict, notes: list[str]) -> None:
    """Mean E2EL from the per-request arrays (TTFT + the request's inter-token gaps) where the
    file has no E2EL statistic (vLLM 0.8 reports ttft, tpot, itl by default)."""
    ttfts, itls, errors = record.get("ttfts"), record.get("itls"), record.get("errors")
    if "e2el" in metrics or not isinstance(ttfts, list) or not isinstance(itls, list) \
            or len(ttfts) != len(itls) or not ttfts:
        return
    errors = errors if isinstance(errors, list) and len(errors) == len(ttfts) else [""] * len(ttfts)
    try:
        e2els = [check_number(t, "ttfts[]") + sum(check_number(g, "itls[]") for g in gaps)
                 for t, gaps, err in zip(ttfts, itls, errors, strict=True)
                 if not err and isinstance(gaps, list)]
    except RunRefused:
        return
    if not e2els:
        return
    put(metrics, "e2el", "mean", statistics.fmean(e2els) * 1000.0, "ms",
        DEFINITIONS["e2el"] + "; here TTFT + the request's inter-token gaps, per request")
    notes.append(f"mean E2EL worked out from the per-request ttfts and itls of {len(e2els)} "
                 "requests (the file has no E2EL statistic)")


def _per_request(record: dict, metrics: dict, notes: Caveats) -> None:
    outs, ttfts = record.get("output_lens"), record.get("ttfts")
    if not isinstance(outs, list) or not isinstance(ttfts, list):
        return
    raw_errors = record.get("errors")
    errors = raw_errors if isinstance(raw_errors, list) else [""] * len(outs)
    if not len(outs) == len(ttfts) == len(errors):
        notes.append("per-request arrays differ in length; not used")
        return
    try:
        outs = [check_number(o, "output_lens[]") for o in outs]
        ttfts = [check_number(t, "ttfts[]") * 1000.0 for t in ttfts]
    except RunRefused as exc:
        notes.append(f"per-request arrays not used: {exc}")
        return
    ok = [not e for e in errors]
    zero = sum(1 for o, good in zip(outs, ok, strict=True) if good and o == 0)
    if zero:
        notes.append(
            f"{zero} of {len(outs)} completed requests returned zero output tokens "
            "(their ttft is recorded as 0.0 ms); they still count in 'completed', "
            "e2el and the OSL mean"
        )
        valid = [t for t, o, good in zip(ttfts, outs, ok, strict=True) if good and o > 0]
        if valid:
            _recompute_ttft(metrics, valid, notes)
    _chunk_note(record.get("itls"), outs, ok, notes)


def _recompute_ttft(metrics: dict, valid: list[float], notes: Caveats) -> None:
    old = metrics.get("ttft")
    for key, m in list(metrics.items()):
        if key == "ttft" or key.startswith("ttft_"):
            metrics[key] = type(m)(
                summarize(valid, m.statistic),
                "ms",
                m.statistic,
                f"{DEFINITIONS['ttft']}; recomputed over the {len(valid)} requests with output > 0",
            )
    new = metrics.get("ttft")
    if old is not None and new is not None:
        notes.append(
            f"ttft statistics recomputed from the per-request array over the "
            f"{len(valid)} requests with output > 0: mean {new.value:.2f} ms "
            f"(the file's mean {old.value:.2f} ms averaged in the zero-length requests)"
        )


def _chunk_note(itls, outs: list[float], ok: list[bool], notes: Caveats) -> None:
    if not isinstance(itls, list) or len(itls) != len(outs):
        return
    rows = zip(itls, outs, ok, strict=True)
    chunks = sum(len(g) + 1 for g, o, good in rows if good and o > 0 and isinstance(g, list))
    tokens = sum(o for o, good in zip(outs, ok, strict=True) if good)
    if chunks and tokens / chunks > 1.5:
        notes.append(
            f"streamed {chunks} chunks for {tokens:.0f} output tokens (≈{tokens / chunks:.1f} "
            "tokens per chunk): itl is per chunk, so itl ≫ tpot here"
        )


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile, as numpy.percentile computes it."""
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summarize(values: list[float], stat: str) -> float:
    if stat == "mean":
        return statistics.fmean(values)
    if stat in ("median", "p50"):
        return statistics.median(values)
    if stat == "std":
        return statistics.pstdev(values)  # numpy's default (ddof=0)
    return percentile(values, float(stat[1:]))
