"""Prediction bands: the spread of measured / model over held-out runs, and its coverage.

A calibrated value carries the interval its held-out runs put around it: for the runs a
validation held out (fitted on other workloads, GPUs, models or engine builds), the ratio
measured / model of each. The 80% band (``[profile.bands]``, read by
perfgraph.scenario.profiles) takes each split as one exchangeable unit (:func:`split_band`):
a new prediction is a new split (a model, a GPU, a build the fit never saw), not one more run
of a split already seen, and the runs of one split share its error. So each run weighs 1 /
the runs of its split, and the band leaves a tenth of the weight outside each end.
Pooling the runs instead (:func:`band`, split-conformal over runs: the ⌈0.8 (n + 1)⌉-th of n
scores) let a split of 36 runs set the band of a kind of eight splits, and the ninth fell
outside it (54% coverage leaving one model out). The split-level finite-sample rank,
0.8 (K + 1) / K over K splits, is no cure with K of 3 to 8: it reaches the farthest run of
any split (TTFT ×0.6–11 across GPUs).

A fitted value on its bound is a term the runs pushed past what physics allows: the fit
there says less than its residuals suggest. :func:`widening` measures by how much: the
splits of the kind whose fit hit one of the same bounds, each held against the band of the
others, and the factor on the band's log half-width their runs need to be covered four times
in five (never below 1). The profile ships it (``[profile.widen]``) and every band it gives
is widened so (:func:`perfgraph.scenario.profiles.widen`).

Whether a band deserves its name is measured, not assumed: on held-out splits the band was
not taken from, the share of runs whose measured value falls inside it (:func:`coverage`)
should be near 80% (benchmarks/research/validate_calibration.py prints it per kind of split,
with each band's ends beside it).
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
    split weighs 1 / its runs, so a split of 36 runs counts as much as one of 1; each tail
    apart (an error of one kind of extrapolation is seldom symmetric): the high end the
    smallest ratio with 90% of the weight at or below it, the low end the largest with 90%
    at or above it. None with fewer than 2 splits that hold a finite ratio."""
    logs = [np.log(got) for g in groups if (got := finite(g))]
    if len(logs) < 2:
        return None
    values = np.concatenate(logs)
    weights = np.concatenate([np.full(len(g), 1 / len(g)) for g in logs])
    tail = (1 + LEVEL) / 2
    low = -weighted_quantile(-values, weights, tail)
    return math.exp(low), math.exp(weighted_quantile(values, weights, tail))


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
    band of its kind (``groups``: each split of the kind, its fit's bounds and its held-out
    ratios). The splits whose fit left one of the same cells on the same bound are held,
    each, against the band ``of`` the other splits give; each of their runs needs the band's
    log half-width times some factor to fall inside; the widening is the 80% point of those
    factors (each split one unit), never below 1: a bound widens a band as far as the
    held-out runs of fits that hit it need to be covered four times in five, and not at all
    when fewer than two splits share one of its bounds, or when they are covered already."""
    of = of or split_band
    cells = set(bound)
    hit = [i for i, (b, _) in enumerate(groups) if cells & set(b)]
    needs: list[float] = []
    weights: list[float] = []
    for i in hit if len(hit) > 1 else ():
        band_i = of([g for j, (_, g) in enumerate(groups) if j != i])
        got = finite(groups[i][1])
        if band_i is None or not got or band_i[0] == band_i[1]:
            continue
        centre, half = math.sqrt(band_i[0] * band_i[1]), half_width(band_i) or 1.0
        needs += [abs(math.log(r / centre)) / half for r in got]
        weights += [1 / len(got)] * len(got)
    if not needs:
        return 1.0
    return max(1.0, weighted_quantile(np.array(needs), np.array(weights), LEVEL))


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
                  "half-width times this (what the held-out runs of splits whose fit hit one "
                  "of these bounds need to be covered 80%)",
                  "on_bound = [" + ", ".join(f'"{b}"' for b in bound) + "]"]
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
