"""Arrival times: an open loop at a rate (Poisson, gamma with a CV, or evenly spaced), or the
closed loop's first requests.

``--rate`` is a quantity with a unit (``"8 request/s"``, ``"480 request/min"``, ``"8/s"``);
a bare number, a negative rate or a rate of another kind is refused, naming the option.
"""

from __future__ import annotations

import math

import numpy as np

from perfgraph.engine.units import parse_quantity, unit
from perfgraph.errors import InputError, PerfgraphError

ARRIVALS = ("poisson", "gamma:CV", "constant")


def parse_rate(text: str) -> float:
    """``--rate`` in requests per second."""
    try:
        value, dims = parse_quantity(text)
    except PerfgraphError as exc:
        raise InputError(f"{text!r}: {exc}", name="--rate") from None
    per_second = unit("request/s").dims
    if dims == unit("1/s").dims:
        value, dims = value, per_second  # "8/s": requests are what arrive
    if dims == unit("").dims:
        raise InputError(f"{text!r} has no unit: give one, e.g. '8 request/s'",
                         name="--rate")
    if dims != per_second:
        raise InputError(f"{text!r} is not a rate of requests (e.g. '8 request/s')",
                         name="--rate")
    if not value > 0 or not math.isfinite(value):
        raise InputError(f"{text!r} must be a positive rate", name="--rate")
    return value


def parse_arrivals(text: str) -> tuple[str, float]:
    """``poisson`` → (gamma, CV 1); ``gamma:CV``; ``constant`` → (gamma, CV 0)."""
    if text == "poisson":
        return "gamma", 1.0
    if text == "constant":
        return "gamma", 0.0
    kind, _, cv = text.partition(":")
    if kind == "gamma":
        try:
            value = float(cv)
        except ValueError:
            value = -1.0
        if value > 0 and math.isfinite(value):
            return "gamma", value
    raise InputError(f"{text!r}: expected poisson, constant or gamma:CV with a "
                     f"positive CV (e.g. gamma:2)", name="--arrivals")


def open_loop(n: int, rate: float, cv: float, rng: np.random.Generator) -> np.ndarray:
    """``n`` arrival times (s) at ``rate`` requests/s; gaps of coefficient of variation ``cv``
    (1 is Poisson, as vLLM's benchmark_serving draws them; 0 evenly spaced)."""
    if cv == 0:
        gaps = np.full(n, 1.0 / rate)
    else:
        shape = 1.0 / (cv * cv)
        gaps = rng.gamma(shape, 1.0 / (rate * shape), size=n)
    gaps[0] = 0.0  # the first request arrives at t = 0
    return np.cumsum(gaps)
