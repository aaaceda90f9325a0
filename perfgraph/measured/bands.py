"""Prediction bands: the spread of measured / model over held-out runs, and its coverage.

A calibrated value carries the interval its held-out runs put around it: for the runs a
validation held out (fitted on other workloads, GPUs, models or engine builds), the ratio
measured / model of each. The 80% band is a split-conformal interval in log space: centred
on the median log ratio m, half-width q the ⌈0.8 (n + 1)⌉-th smallest |log r − m| of the n
runs (the largest when that rank passes n), so [e^(m − q), e^(m + q)] (``[profile.bands]``,
read by perfgraph.scenario.profiles). With the handful of runs a split holds, the plain
p10–p90 of the ratios is too narrow: a new run falls outside it far more than one time in
five (54% coverage on the project's splits: benchmarks/research/validate_calibration.py);
the conformal rank is the finite-sample correction. Whether the band deserves its name is
measured, not assumed: on held-out runs the band was not taken from, the share whose
measured value falls inside it (:func:`coverage`) should be near 80%.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from perfgraph.scenario.profiles import widen  # noqa: F401  (bands.widen, the same rule)

#: the band's nominal coverage
LEVEL = 0.8


def finite(ratios: Iterable[float]) -> list[float]:
    return [float(r) for r in ratios if math.isfinite(r) and r > 0]


def band(ratios: Iterable[float]) -> tuple[float, float] | None:
    """The 80% band of measured / model (split-conformal in log space, module doc); None
    with fewer than 2 finite ratios."""
    logs = np.log(finite(ratios))
    if len(logs) < 2:
        return None
    centre = float(np.median(logs))
    scores = np.sort(np.abs(logs - centre))
    rank = min(math.ceil(LEVEL * (len(logs) + 1)), len(logs))
    half = float(scores[rank - 1])
    return math.exp(centre - half), math.exp(centre + half)


def split_band(groups: Sequence[Iterable[float]]) -> tuple[float, float] | None:
    """The 80% band with each split one exchangeable unit (module doc): every run of a
    split weighs 1 / its runs, so a split of 36 runs counts as much as one of 1; the centre
    is the weighted median log ratio, the half-width the weighted quantile of |log r − m| at
    0.8 (K + 1) / K over the K splits (all of them, the largest, once that passes 1). None
    with fewer than 2 splits that hold a finite ratio."""
    logs = [np.log(got) for g in groups if (got := finite(g))]
    if len(logs) < 2:
        return None
    values = np.concatenate(logs)
    weights = np.concatenate([np.full(len(g), 1 / len(g)) for g in logs])
    centre = weighted_quantile(values, weights, 0.5)
    level = min(1.0, LEVEL * (len(logs) + 1) / len(logs))
    half = weighted_quantile(np.abs(values - centre), weights, level)
    return math.exp(centre - half), math.exp(centre + half)


def weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """The smallest value whose share of the weight at or below it reaches ``q``."""
    order = np.argsort(values)
    share = np.cumsum(weights[order]) / float(np.sum(weights))
    at = min(int(np.searchsorted(share, q - 1e-12)), len(values) - 1)
    return float(values[order][at])


def pooled_runs(of: Callable) -> Callable:
    """A band of runs (``of``: :func:`band`, :func:`quantile_band`) as a band of splits: the
    splits' runs pooled, each run one unit."""
    def over(groups: Sequence[Iterable[float]]) -> tuple[float, float] | None:
        return of([r for g in groups for r in g])
    return over


def half_width(interval: tuple[float, float] | None) -> float | None:
    """Half the width of ``interval`` in log space, ln(hi / lo) / 2."""
    return None if interval is None else math.log(interval[1] / interval[0]) / 2


def on_bound(notes: Iterable[str]) -> tuple[str, ...]:
    """The fitted values a fit's notes put on a bound, each ``cell (lower|upper)``, from
    notes such as ``compute_efficiency: on its lower bound (0.3)``."""
    out = []
    for note in notes:
        cell, _, rest = note.partition(": on its ")
        side = rest.split(" ", 1)[0]
        if rest.startswith(("lower bound", "upper bound")) and cell.isidentifier():
            out.append(f"{cell} ({side})")
    return tuple(out)


def widening(bound: Iterable[str], groups: Sequence[tuple[Sequence[str], Sequence[float]]],
             of: Callable | None = None) -> float:
    """How much a fit with ``bound`` (cells on their bounds, :func:`on_bound`) widens the
    band of its kind: over the splits of that kind (``groups``: each split's bounds and
    held-out ratios), for each of its bounds the band of the splits whose fit hit the same
    bound, its half-width over the half-width of every split's band; the largest, never
    below 1 (a value on its bound never narrows a band). 1 when no bound is shared by two
    splits."""
    of = of or split_band
    every = half_width(of([g for _, g in groups]))
    if not every:
        return 1.0
    factor = 1.0
    for cell in set(bound):
        same = half_width(of([g for b, g in groups if cell in b]))
        if same is not None:
            factor = max(factor, same / every)
    return factor


def widest(*intervals: tuple[float, float] | None) -> tuple[float, float] | None:
    """The smallest interval holding every given one (None: none given)."""
    got = [i for i in intervals if i is not None]
    if not got:
        return None
    return min(lo for lo, _ in got), max(hi for _, hi in got)


def quantile_band(ratios: Iterable[float]) -> tuple[float, float] | None:
    """The plain p10–p90 of measured / model (for comparison with :func:`band`)."""
    got = finite(ratios)
    if len(got) < 2:
        return None
    lo, hi = np.quantile(got, (0.1, 0.9))
    return float(lo), float(hi)


def median_error(ratios: Iterable[float]) -> float | None:
    """Median |model − measured| / measured of the runs (ratio r: |1/r − 1|)."""
    got = finite(ratios)
    return float(np.median([abs(1 / r - 1) for r in got])) if got else None


def inside(ratios: Iterable[float], interval: tuple[float, float]) -> tuple[int, int]:
    """(runs whose measured / model lies in ``interval``, runs)."""
    got = finite(ratios)
    return sum(interval[0] <= r <= interval[1] for r in got), len(got)


def coverage(held: Sequence[Sequence[float]], of: Callable = split_band) -> tuple[int, int]:
    """Cross-validated coverage over groups of held-out ratios (one group a split): each
    group against the band ``of`` gives the other groups (a band of splits:
    :func:`split_band`, or :func:`pooled_runs` of a band of runs); (inside, runs) summed. A
    group with no band from the others is skipped."""
    hit = total = 0
    for i, group in enumerate(held):
        others = of([g for j, g in enumerate(held) if j != i])
        if others is not None:
            h, n = inside(group, others)
            hit, total = hit + h, total + n
    return hit, total


def toml_lines(bands: Mapping[str, Mapping[str, tuple[float, float]]],
               errors: Mapping[str, Mapping[str, float]], said: Mapping[str, str],
               evidence: Mapping[str, Mapping[str, int]] | None = None,
               widened: Mapping[str, Mapping[str, float]] | None = None,
               bound: Sequence[str] = ()) -> list[str]:
    """``[profile.bands]``, ``[profile.errors]``, ``[profile.evidence]`` (per kind: the
    splits and held-out runs behind it, and how many splits are of the profile's own
    hardware × engine) and ``[profile.widen]`` (``widened``: per kind the factor on a band's log
    half-width for the fitted values on a bound, ``bound``), each kind with a comment
    (``said``) naming its runs."""
    def row(kind: str, values: Mapping[str, object], fmt: str) -> str:
        inner = ", ".join(f"{m} = {fmt.format(*v) if isinstance(v, tuple) else fmt.format(v)}"
                          for m, v in values.items())
        return f"{kind} = {{ {inner} }}  # {said.get(kind, '')}".rstrip(" #")

    lines = ["[profile.bands]  # measured / model over held-out runs: an 80% band [low, high]"]
    lines += [row(k, v, "[{:.3f}, {:.3f}]") for k, v in bands.items() if v]
    lines += ["", "[profile.errors]  # median held-out |model − measured| / measured, per "
              "kind of extrapolation"]
    lines += [row(k, v, "{:.3f}") for k, v in errors.items() if v]
    if evidence:
        lines += ["", "[profile.evidence]  # behind each kind: held-out splits, runs, and the "
                  "splits of this hardware × engine (own)"]
        lines += [row(k, v, "{}") for k, v in evidence.items() if v]
    if widened and bound:
        lines += ["", "[profile.widen]  # fitted values on a bound widen each band: its log "
                  "half-width times this (the splits that hit the same bound, over every "
                  "split of the kind)", "on_bound = [" + ", ".join(f'"{b}"' for b in bound)
                  + "]"]
        lines += [row(k, v, "{:.3f}") for k, v in widened.items() if v]
    return lines


PROFILE_TABLES = ("[profile.domain]", "[profile.bands]", "[profile.errors]",
                  "[profile.evidence]", "[profile.widen]")


def splice(text: str, tables: Sequence[str]) -> str:
    """An overlay's text with its ``[profile.*]`` tables (PROFILE_TABLES) replaced by
    ``tables`` (lines), placed before ``[values]``;
    everything else, the fitted values included, kept as it was."""
    kept, skipping = [], False
    for line in text.splitlines():
        if line.startswith("["):
            skipping = line.split("#")[0].strip() in PROFILE_TABLES
        if not skipping:
            kept.append(line)
    at = kept.index("[values]")
    head = kept[:at]
    while head and not head[-1].strip():
        head.pop()
    return "\n".join([*head, "", *tables, "", *kept[at:]]).rstrip("\n") + "\n"
