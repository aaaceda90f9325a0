"""A simulation's summary as frozen values: what :func:`.summary.summarise` hands out and
the renderers (:mod:`perfgraph.output.simulate_report`), the dashboard and the planner read.

Latencies are in their unit (ms for TTFT, TPOT and ITL, s for E2E), None where nothing was
sampled or an overload hides them; shares (goodput, KV use, busy, hits) are fractions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields

#: The statistics of a latency, in the order they are shown; p99.9 only over 10 000 requests.
STAT_KEYS = ("mean", "p50", "p90", "p99", "p99.9")
#: The latencies, in the order they are shown.
METRIC_KEYS = ("ttft", "tpot", "itl", "e2e")


@dataclass(frozen=True)
class LatencyStats:
    """One latency's mean and percentiles in ``unit``; ``keys`` the statistics taken."""

    unit: str
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    p99_9: float | None = None
    keys: tuple[str, ...] = STAT_KEYS[:4]

    def get(self, key: str) -> float | None:
        """A statistic by the name a user gives it (``p99``, ``p99.9``); None if not taken."""
        return getattr(self, key.replace(".", "_")) if key in self.keys else None

    def items(self) -> tuple[tuple[str, float | None], ...]:
        return tuple((k, self.get(k)) for k in self.keys)

    def hidden(self) -> LatencyStats:
        """The same statistics, every value hidden (an overloaded run's TTFT and E2E)."""
        return LatencyStats(self.unit, keys=self.keys)


@dataclass(frozen=True)
class Latencies:
    ttft: LatencyStats
    tpot: LatencyStats
    itl: LatencyStats
    e2e: LatencyStats

    def items(self) -> tuple[tuple[str, LatencyStats], ...]:
        return tuple((k, getattr(self, k)) for k in METRIC_KEYS)

    def of(self, metric: str) -> LatencyStats | None:
        """A latency by the name a user gives it (``ttft``), None for another name."""
        return getattr(self, metric) if metric in METRIC_KEYS else None


@dataclass(frozen=True)
class MeanMax:
    """A step quantity weighted by the steps' durations: its mean, and its largest value."""

    mean: float
    max: float


@dataclass(frozen=True)
class SloLimits:
    ttft_ms: float
    itl_ms: float


@dataclass(frozen=True)
class Overload:
    """An open loop whose queue grew through the window: offered and sustained request/s."""

    offered: float
    sustained: float
    queue_growth: int


@dataclass(frozen=True)
class TokenLag:
    """From a step's end to its tokens reaching their clients (ms, weighted by tokens)."""

    mean_ms: float
    p99_ms: float
    max_ms: float


@dataclass(frozen=True)
class FrontendLoad:
    """The API server's loop: its costs, the share of the run it was busy, the token lag."""

    request_ms: float
    chunk_ms: float
    coalesce: bool
    busy_share: float
    lag: TokenLag


@dataclass(frozen=True)
class SpeculationYield:
    """Speculative decoding's k, the tokens a decode gained a step, the sheet's expectation."""

    k: int
    accepted: float
    expected: float


@dataclass(frozen=True)
class SeriesPoint:
    """Decodes a step and KV in use (a share) at simulated time ``t`` (s)."""

    t: float
    batch: float
    kv_use: float


@dataclass(frozen=True)
class ReplicaLoad:
    """One replica of a pool: its requests (and their share), the share of the run its
    steps took, its mean batch and KV use while busy, its TTFT p50 and p99 (ms), and with
    sessions the share of its requests that found their prefix there (and were copied back
    from host memory)."""

    pool: str
    replica: int
    requests: int
    share: float
    busy: float
    batch: float
    kv_use: float
    ttft_p50: float
    ttft_p99: float
    hit_rate: float | None = None
    reload_rate: float | None = None


@dataclass(frozen=True)
class SimSummary:
    """The run in numbers (:mod:`.summary` says how each is taken)."""

    partial: bool
    requests: int
    measured: int
    warmup: int
    simulated_s: float
    steps: int
    window_s: float
    latency: Latencies
    output_throughput: float
    total_throughput: float
    request_throughput: float
    goodput: float
    goodput_share: float
    slo: SloLimits
    preemptions: int
    dropped: int
    batch: MeanMax
    speculation: SpeculationYield | None
    kv_use: MeanMax
    series: tuple[SeriesPoint, ...]
    overload: Overload | None
    frontend: FrontendLoad | None
    replicas: tuple[ReplicaLoad, ...] = ()
    #: what the replayed run reported, {metric: {stat: ms}}, and its file (``--lengths``)
    run_measured: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    measured_source: str = ""


def field_names(kind: type) -> tuple[str, ...]:
    """A summary type's fields, in order (the keys of its plain form)."""
    return tuple(f.name for f in fields(kind))
