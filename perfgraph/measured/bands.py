"""Prediction bands: the spread of measured / model over held-out runs, and its coverage.

A calibrated value carries the interval its held-out runs put around it: for the runs a
validation held out (fitted on other workloads, GPUs, models or engine builds), the ratio
measured / model of each; its 10th and 90th percentiles scale a new prediction into an 80%
band (``[profile.bands]``, read by perfgraph.scenario.profiles). Whether the band deserves
its name is measured, not assumed: on held-out runs the band was not taken from, the share
whose measured value falls inside it (:func:`coverage`) should be near 80%.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

#: the band's quantiles: p10 and p90, an 80% band
BAND = (0.1, 0.9)


def finite(ratios: Iterable[float]) -> list[float]:
    return [float(r) for r in ratios if math.isfinite(r) and r > 0]


def band(ratios: Iterable[float]) -> tuple[float, float] | None:
    """(p10, p90) of measured / model; None with fewer than 2 finite ratios."""
    got = finite(ratios)
    if len(got) < 2:
        return None
    lo, hi = np.quantile(got, BAND)
    return float(lo), float(hi)


def median_error(ratios: Iterable[float]) -> float | None:
    """Median |model − measured| / measured of the runs (ratio r: |1/r − 1|)."""
    got = finite(ratios)
    return float(np.median([abs(1 / r - 1) for r in got])) if got else None


def inside(ratios: Iterable[float], interval: tuple[float, float]) -> tuple[int, int]:
    """(runs whose measured / model lies in ``interval``, runs)."""
    got = finite(ratios)
    return sum(interval[0] <= r <= interval[1] for r in got), len(got)


def coverage(held: Sequence[Sequence[float]]) -> tuple[int, int]:
    """Cross-validated coverage over groups of held-out ratios (one group a split): each
    group against the band of the other groups pooled; (inside, runs) summed. A group with
    no band from the others is skipped."""
    hit = total = 0
    for i, group in enumerate(held):
        others = band(r for j, g in enumerate(held) if j != i for r in g)
        if others is not None:
            h, n = inside(group, others)
            hit, total = hit + h, total + n
    return hit, total


def toml_lines(bands: Mapping[str, Mapping[str, tuple[float, float]]],
               errors: Mapping[str, Mapping[str, float]], said: Mapping[str, str]) -> list[str]:
    """``[profile.bands]`` and ``[profile.errors]``, each kind with a comment (``said``)
    naming the held-out runs it comes from."""
    def row(kind: str, values: Mapping[str, object], fmt: str) -> str:
        inner = ", ".join(f"{m} = {fmt.format(*v) if isinstance(v, tuple) else fmt.format(v)}"
                          for m, v in values.items())
        return f"{kind} = {{ {inner} }}  # {said.get(kind, '')}".rstrip(" #")

    lines = ["[profile.bands]  # measured / model over held-out runs: [p10, p90], an 80% band"]
    lines += [row(k, v, "[{:.3f}, {:.3f}]") for k, v in bands.items() if v]
    lines += ["", "[profile.errors]  # median held-out |model − measured| / measured, per "
              "kind of extrapolation"]
    lines += [row(k, v, "{:.3f}") for k, v in errors.items() if v]
    return lines


PROFILE_TABLES = ("[profile.domain]", "[profile.bands]", "[profile.errors]")


def splice(text: str, tables: Sequence[str]) -> str:
    """An overlay's text with its ``[profile.domain]``, ``[profile.bands]`` and
    ``[profile.errors]`` tables replaced by ``tables`` (lines), placed before ``[values]``;
    everything else, the fitted values included, kept as it was."""
    kept, skipping = [], False
    for line in text.splitlines():
        if line.startswith("["):
            skipping = line.split("#")[0].strip() in PROFILE_TABLES
        if not skipping:
            kept.append(line)
    at = kept.index("[values]")
    while at > 0 and not kept[at - 1].strip():
        at -= 1
    return "\n".join([*kept[:at], "", *tables, "", *kept[at:]]).rstrip("\n") + "\n"
