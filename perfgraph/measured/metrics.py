"""One metric of one measured run against the model: the record compare and findings share."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetricComparison:
    """One metric of one run: measured vs modelled, in ``unit``, with what was compared."""

    metric: str  # ttft | tpot | e2el | throughput
    unit: str  # ms | token/s
    measured: float | None
    statistic: str | None  # mean | median | p50 (of the measured value)
    measured_as: str | None  # the run's metric key used (tpot, itl_median, throughput_per_gpu)
    modelled: float | None  # the roofline, like for like
    model_cell: str
    definition: str  # the sentence saying what was compared with what
    error: str | None = None  # why there is no comparison
    #: the calibrated model, like for like, when a calibration is given (``modelled`` is
    #: then still the roofline, so "% of possible" keeps meaning the ceiling)
    predicted: float | None = None

    @property
    def ratio(self) -> float | None:
        """measured ÷ modelled."""
        if self.measured is None or not self.modelled:
            return None
        return self.measured / self.modelled

    @property
    def vs_predicted(self) -> float | None:
        """(measured − predicted) / predicted: + slower (or, for throughput, more) than the
        calibrated model said."""
        if self.measured is None or not self.predicted:
            return None
        return self.measured / self.predicted - 1.0

    @property
    def possible(self) -> float | None:
        """How much of the roofline the run reached (1.0 = all of it)."""
        ratio = self.ratio
        if ratio is None or ratio == 0:
            return None
        return ratio if self.metric == "throughput" else 1.0 / ratio
