"""What vLLM's ``benchmark_serving`` and SGLang's ``bench_serving`` result records share.

Both write one flat object per run: ``completed``, ``duration``, the token totals, the load
(``max_concurrency``, ``request_rate``) and latency statistics as ``<stat>_<name>_ms``.
``ServingRecord`` reads that common part and builds the run; each adapter reads the rest
(throughput keys, configured lengths, per-request arrays) in its own order, which is the
order of its notes and caveats and of the checks that may refuse the run.

The mean lengths (token totals ÷ ``completed``) are cells (``measured_mean_isl``,
``measured_mean_osl``): the run lists them in its ``derive``, and the caveats that need them
or the achieved request rate are late ones (:data:`LATE_CHECKS`), checked once the run is
derived.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeGuard

from .base import (
    Context,
    LateCaveat,
    MeasuredRun,
    Metric,
    RunRefused,
    build_run,
    collect_stats,
    completed_count,
    concurrency_of,
    fmt_num,
    number,
    positive,
)


def definitions(tpot_more: str = "", itl_more: str = "") -> dict[str, str]:
    """The latency definitions of a benchmark_serving file; each tool words TPOT and ITL a
    little further (``tpot_more`` ends the TPOT one, ``itl_more`` goes inside ITL's bracket)."""
    return {
        "ttft": "time to first token: request sent → first streamed chunk",
        "tpot": "time per output token EXCLUDING the first: (latency − ttft)/(output tokens − 1) "
        f"per request{tpot_more}",
        "itl": "inter-token latency: gap between successive streamed chunks, pooled over all "
        f"requests (excludes the first token{itl_more})",
        "e2el": "end-to-end request latency: request sent → last chunk",
    }


def has_totals(record: Mapping | None) -> TypeGuard[Mapping]:
    """The keys every benchmark_serving record holds (not enough alone to tell the tool)."""
    if not record:
        return False
    return "completed" in record and "duration" in record


#: The mean lengths a record leaves to the cells: its token totals ÷ its completed requests.
LENGTHS: tuple[tuple[str, str], ...] = (
    ("isl_measured", "total_input_tokens ÷ completed"),
    ("osl_measured", "total_output_tokens ÷ completed"))


#: A record's caveats as the reader adds them: a caveat, a late one, or None (none found).
Caveats = list[str | LateCaveat | None]


@dataclass
class ServingRecord:
    """One record being read: its checked totals and latencies, the notes and caveats the
    adapter adds in order, and the load and configured lengths once checked."""

    record: dict
    completed: int
    duration: float
    total_in: float
    total_out: float
    metrics: dict[str, Metric]
    notes: list[str] = field(default_factory=list)
    caveats: Caveats = field(default_factory=list)
    #: what the record leaves to the cells (``MeasuredRun.derive``), the mean lengths too
    derive: list[tuple[str, str]] = field(default_factory=lambda: list(LENGTHS))
    load: tuple[float | None, float | None] = (None, None)  # (max_concurrency, request_rate)
    configured: tuple[float | None, float | None] = (None, None)  # (ISL, OSL) configured

    @classmethod
    def read(cls, record: dict, names: Mapping[str, str],
             definitions: Mapping[str, str]) -> ServingRecord:
        """The totals (refused when missing, 0 or not numbers) and the ``*_ms`` latencies."""
        completed = completed_count(record, "completed")
        duration = positive(record, "duration", what=" s: a run must last longer than 0 s")
        total_in = positive(record, "total_input_tokens", what=": the requests had no prompt")
        total_out = positive(record, "total_output_tokens",
                             what=": the run produced no output tokens")
        metrics = collect_stats(record, names, "_ms", 1.0, definitions)
        return cls(record, completed, duration, total_in, total_out, metrics)

    def check_load(self) -> None:
        """The configured load, with a caveat when the server fell behind the request rate
        (checked against the achieved rate once the run is derived)."""
        self.load = load_of(self.record)
        self.caveats.append(LateCaveat("pacing", (self.load[1],)))

    def check_lengths(self, isl_cfg: float | None, osl_cfg: float | None, why: str = "") -> None:
        """The configured lengths, with a caveat when the measured means (derived) stray from
        them."""
        self.configured = isl_cfg, osl_cfg
        self.caveats.append(LateCaveat("lengths", (isl_cfg, osl_cfg, why)))

    def build(self, ctx: Context, fmt: str, index: int, label_prefix: str = "",
              **fields: Any) -> MeasuredRun:
        return build_run(
            ctx,
            fmt,
            index,
            metrics=self.metrics,
            notes=self.notes,
            caveats=self.caveats,
            label_prefix=label_prefix,
            concurrency=self.load[0],
            request_rate=self.load[1],
            isl_configured=self.configured[0],
            osl_configured=self.configured[1],
            completed=self.completed,
            duration_s=self.duration,
            tokens_in=self.total_in,
            tokens_out=self.total_out,
            derive=tuple(self.derive),
            **fields,
        )


def load_of(record: Mapping) -> tuple[float | None, float | None]:
    """(max_concurrency, request_rate) of a benchmark_serving record; a concurrency-bound run
    sent at rate inf has no request pacing, so its rate is None."""
    rate = number(record, "request_rate", required=False, allow_inf=True)
    if rate == 0:
        raise RunRefused("'request_rate' is 0: no request would ever be sent")
    conc = record.get("max_concurrency")
    conc = None if conc is None else concurrency_of(conc, "max_concurrency")
    if conc is not None and rate is not None and math.isinf(rate):
        rate = None
    return conc, rate


def length_note(kind: str, measured: float | None, configured: float | None):
    if measured is None or not configured or abs(measured / configured - 1) <= 0.05:
        return None
    return f"{kind}: measured mean {measured:.0f} vs configured {fmt_num(configured)}"


def lengths_note(isl: float | None, osl: float | None, isl_cfg: float | None,
                 osl_cfg: float | None, why: str = "") -> str | None:
    """One note for measured mean lengths more than 5% off the configured ones."""
    parts = [n for n in (length_note("ISL", isl, isl_cfg), length_note("OSL", osl, osl_cfg)) if n]
    return "; ".join(parts) + why if parts else None


#: The share of its configured request rate a paced run must achieve to count as having kept up
#: (below it the server fell behind and requests queued)
KEPT_UP = 0.9


def kept_up(rate: float, achieved: float | None) -> bool:
    """A paced run's server completed at least KEPT_UP of its configured request rate (or
    the run sent everything at once, or does not say what it achieved)."""
    return math.isinf(rate) or achieved is None or achieved >= KEPT_UP * rate


def pacing_note(rate: float | None, achieved: float | None) -> str | None:
    if rate is None or kept_up(rate, achieved):
        return None
    return (
        f"achieved {achieved:.2f} requests/s < {KEPT_UP:.0%} of the configured rate "
        f"{fmt_num(rate)}: the server did not keep up and requests queued"
    )


def _pacing(run: MeasuredRun, rate: float | None) -> str | None:
    achieved = run.metrics.get("request_throughput")
    return pacing_note(rate, None if achieved is None else achieved.value)


def _lengths(run: MeasuredRun, isl_cfg: float | None, osl_cfg: float | None,
             why: str) -> str | None:
    return lengths_note(run.isl_measured, run.osl_measured, isl_cfg, osl_cfg, why)


#: The late caveats' checks (:class:`LateCaveat`), each on the derived run with the file's
#: side of it: the configured request rate against the achieved one, the configured lengths
#: against the measured means.
LATE_CHECKS: Mapping[str, Callable[..., str | None]] = MappingProxyType(
    {"pacing": _pacing, "lengths": _lengths})
