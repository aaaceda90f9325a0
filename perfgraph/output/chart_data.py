"""The data behind ``perfgraph plot``: the sheet evaluated over a column of concurrencies or
TPs (``Sheet.evaluate_columns``, each formula once), measured runs compared with the model
at their own configuration (``perfgraph.measured.comparison``), turned into :class:`charts.Series`.

Everything is in the units of :data:`charts.METRICS`: throughput as output tokens/s per GPU,
E2E latency in s, TTFT and ITL (the mean TPOT) in ms. A measured run's relative figure is
``perfgraph compare``'s "% of possible" for that metric (throughput: measured ÷ modelled;
a latency: modelled ÷ measured), so 100 % is the model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from perfgraph.engine.numbers import number
from perfgraph.engine.sheet import Sheet
from perfgraph.errors import InputError, PerfgraphError
from perfgraph.measured.comparison import Comparison, config_columns, in_unit
from perfgraph.measured.curves import concurrency_grid
from perfgraph.measured.setup import Baseline
from perfgraph.output.charts import Series
from perfgraph.scenario.loading import load

#: metric → (the model's cell, the unit it is plotted in, the compare metric of a run)
CELLS = {"throughput": ("throughput_per_gpu", "token/s", "throughput"),
         "e2e_latency": ("e2e_latency", "s", "e2el"),
         "ttft": ("ttft", "ms", "ttft"),
         "itl": ("itl", "ms", "tpot")}
#: The TPs a TP chart spans (with the scenario's and the runs' own).
TPS = (1.0, 2.0, 4.0, 8.0)
AXES = ("concurrency", "tp")
ROOF_POINTS = 96


def curves(sheet: Sheet, x: str, values: np.ndarray,
           config: Mapping[str, float] | None = None) -> dict[str, np.ndarray]:
    """Every metric, the throughput ceiling per GPU and the batch the KV memory holds
    (``kv_limit``, the sheet's ``floor(max_concurrency)``) over ``values`` of ``x``.

    Throughput is what the sheet says is attainable: where the users outnumber what the KV
    cache holds, the sheet evaluated at the batch that really runs (``ceiling_batch``, the
    concurrency capped by the KV memory), and nothing where not one sequence fits."""
    xs = np.asarray(values, dtype=float)
    given = {name: np.full(len(xs), float(v)) for name, v in (config or {}).items()}
    cols = sheet.evaluate_columns({**given, x: xs}, len(xs))
    out = {m: in_unit(sheet, cols, cell, u) for m, (cell, u, _) in CELLS.items()}
    batch = np.asarray(cols["ceiling_batch"], dtype=float)
    capped = batch < np.asarray(cols["concurrency"], dtype=float)
    if capped.any():
        held = sheet.evaluate_columns({**given, x: xs, "concurrency": np.maximum(batch, 1)},
                                      len(xs))
        out["throughput"] = np.where(capped, in_unit(sheet, held, "throughput_per_gpu",
                                                     "token/s"), out["throughput"])
    out["throughput"] = np.where(batch >= 1, out["throughput"], np.nan)
    out["ceiling"] = in_unit(sheet, cols, "throughput_ceiling_per_gpu", "token/s")
    out["kv_limit"] = np.floor(np.asarray(cols["max_concurrency"], dtype=float))
    return out


def grid(sheet: Sheet, x: str, also: Sequence[float] = ()) -> np.ndarray:
    """The x values of a chart: concurrencies from 1 up (even in log), or TPs 1–8."""
    if x == "concurrency":
        return concurrency_grid([sheet.magnitude("concurrency"), *also])
    return np.unique([*TPS, sheet.magnitude("tp"), *also])


def scenario_panels(sheet: Sheet, x: str, label: str = "model", color: str | None = None,
                    ) -> dict[str, list[Series]]:
    """The model's curves of one scenario over ``x``: one line per metric, the ceiling
    (dashed) with the throughput and, against concurrency, where the KV cache runs out (a
    vertical line on every panel; the grid reaches past it)."""
    if x not in AXES:
        raise InputError(f"--x must be one of {', '.join(AXES)}, got {x!r}")
    limit = kv_limit(sheet)
    xs = grid(sheet, x, [limit] if x == "concurrency" and math.isfinite(limit) else [])
    values = curves(sheet, x, xs)
    panels = {m: [Series(label, xs, values[m], color=color)] for m in CELLS}
    panels["throughput"].append(Series(f"{label}: ceiling (KV-capped batch)", xs,
                                       values["ceiling"], "ceiling", color=color))
    mark = _kv_mark(sheet, x, xs, values["kv_limit"], limit, label, color)
    if mark is not None:
        for m in CELLS:
            panels[m].append(mark)
    return panels


def _kv_mark(sheet: Sheet, x: str, xs: np.ndarray, limits: np.ndarray, limit: float,
             label: str, color: str | None) -> Series | None:
    """Where the KV cache runs out: against concurrency, the most users it holds; against
    TP, the smallest TP whose KV cache holds the scenario's users (when a smaller one
    does not)."""
    where, what = math.nan, ""
    if x == "concurrency":
        where, what = limit, f"KV cache full above {number(limit)} users"
    elif sheet.error("concurrency") is None:
        users = sheet.magnitude("concurrency")
        fits = np.flatnonzero(limits >= users)
        if len(fits) and fits[0] > 0:
            where = float(xs[fits[0]])
            what = f"KV cache holds {number(users)} users from TP {number(where)}"
    if not math.isfinite(where):
        return None
    return Series(f"{label}: {what}", np.array([where]), np.array([math.nan]), "limit",
                  color=color)


def kv_limit(sheet: Sheet) -> float:
    """The most users whose KV the memory holds (the sheet's ``floor(max_concurrency)``); NaN
    where that cell fails."""
    if sheet.error("max_concurrency") is not None:
        return math.nan
    return float(math.floor(sheet.magnitude("max_concurrency")))


def merge(*many: Mapping[str, list[Series]]) -> dict[str, list[Series]]:
    out: dict[str, list[Series]] = {}
    for panels in many:
        for name, series in panels.items():
            out.setdefault(name, []).extend(series)
    return out


@dataclass
class _Group:
    key: tuple
    runs: list[Comparison]


def _key(c: Comparison, x: str) -> tuple:
    s = c.setup
    other = s.tp if x == "concurrency" else s.concurrency
    return (s.model, s.hardware, s.precision, other, s.isl, s.osl)


def _label(group: _Group, x: str) -> str:
    model, hardware, precision, other, isl, osl = group.key
    slug = _slug(hardware)
    fixed = f"TP {number(other)}" if x == "concurrency" else f"{number(other)} users"
    return f"{slug} · {precision} · {fixed} · {number(isl, 4)}/{number(osl, 4)}"


def groups(comparisons: Sequence[Comparison], x: str) -> list[_Group]:
    """The modelled runs, one group per line: the same configuration but for ``x``."""
    out: list[_Group] = []
    for c in comparisons:
        if c.error is None:
            key = _key(c, x)
            found = next((g for g in out if g.key == key), None)
            if found is None:
                out.append(_Group(key, [c]))
            else:
                found.runs.append(c)
    return out


def _x_of(c: Comparison, x: str) -> float:
    value = c.setup.concurrency if x == "concurrency" else c.setup.tp
    return math.nan if value is None else float(value)


def _measured(c: Comparison, metric: str, relative: bool) -> float:
    m = c.metric(CELLS[metric][2])
    if relative:
        return math.nan if m is None or m.possible is None else 100 * m.possible
    if metric == "throughput":
        per_gpu = c.measured_output_per_gpu
        return math.nan if per_gpu is None else per_gpu
    if m is None or m.measured is None:
        return math.nan
    return m.measured / 1000 if metric == "e2e_latency" else m.measured


def measured_panels(comparisons: Sequence[Comparison], base: Baseline, x: str,
                    relative: bool = False) -> dict[str, list[Series]]:
    """Measured runs as points over ``x``, and (unless ``relative``) the model at each
    group's configuration as lines: one colour per model, GPU, precision and lengths, one
    marker (points) and dash pattern (lines) per TP (or concurrency, against TP)."""
    found = groups(comparisons, x)
    if not found:
        raise InputError("no measured run could be modelled (see 'perfgraph compare')")
    panels: dict[str, list[Series]] = {m: [] for m in CELLS}
    lines: dict[str, list[Series]] = {m: [] for m in CELLS}  # the model's, drawn first
    sheets: dict[tuple, Sheet] = {}
    colours, styles = encoding([g.key for g in found])
    for group, color, style in zip(found, colours, styles, strict=True):
        first = group.runs[0].setup
        if first.group not in sheets:
            try:
                sheets[first.group] = load(first.spec(base.spec)).sheet
            except PerfgraphError:
                continue
        sheet, label = sheets[first.group], _label(group, x)
        xs = np.array([_x_of(c, x) for c in group.runs])
        for metric in CELLS:
            ys = np.array([_measured(c, metric, relative) for c in group.runs])
            panels[metric].append(Series(f"{label} (measured)", xs, ys, "points", color,
                                         style))
        if not relative:
            _model_lines(lines, sheet, group, x, Series(label, xs, xs, color=color,
                                                        style=style))
    return {m: lines[m] + panels[m] for m in CELLS}


def encoding(keys: Sequence[tuple]) -> tuple[list[str], list[int]]:
    """Each group's colour (one per model, GPU, precision and lengths: its key but for the
    fourth field) and style index (one per value of that fourth field: TP or users)."""
    families = list(dict.fromkeys(k[:3] + k[4:] for k in keys))
    others = sorted({k[3] or 0 for k in keys})
    return ([f"C{families.index(k[:3] + k[4:]) % 10}" for k in keys],
            [others.index(k[3] or 0) for k in keys])


def _model_lines(panels: dict[str, list[Series]], sheet: Sheet, group: _Group, x: str,
                 like: Series) -> None:
    """The model at ``group``'s configuration over ``x``, in ``like``'s label and style."""
    first = group.runs[0].setup
    config = {"isl": float(first.isl or 0), "osl": float(first.osl or 0)}
    if x == "concurrency":
        config["tp"] = float(first.tp or 0)
        xs = concurrency_grid([_x_of(c, x) for c in group.runs])
    else:
        config["concurrency"] = float(first.concurrency or 0)
        xs = np.unique([*TPS, *(_x_of(c, x) for c in group.runs)])
    values = curves(sheet, x, xs, config)
    for metric in CELLS:
        panels[metric].append(replace(like, label=f"{like.label} (model)", x=xs,
                                      y=values[metric]))


@dataclass(frozen=True)
class RooflineData:
    roof: Series
    ridge: tuple[float, float]
    points: tuple[Series, ...]
    x_unit: str
    y_unit: str


def roofline_data(sheet: Sheet, also: Sequence[float] = ()) -> RooflineData:
    """One GPU's roof (the sheet's own ``attainable_flops`` over a column of intensities),
    its ridge, and the scenario's prefill and decode points on it; the roof spans ``also``
    (measured runs' intensities) too."""
    for name in ("ridge_point", "decode_intensity", "prefill_intensity"):
        if sheet.error(name) is not None:
            raise InputError(f"the roofline cannot be drawn: {name} fails: "
                             f"{sheet.error(name)}")
    ridge = sheet.magnitude("ridge_point")
    known = [ridge, sheet.magnitude("decode_intensity"), sheet.magnitude("prefill_intensity"),
             *(a for a in also if math.isfinite(a))]
    lo = 10 ** math.floor(math.log10(min(k for k in known if k > 0) / 2))
    hi = 10 ** math.ceil(math.log10(max(known) * 2))
    xs = np.union1d(np.geomspace(lo, hi, ROOF_POINTS), [ridge])
    roof = sheet.evaluate_columns({"decode_intensity": xs}, len(xs))["attainable_flops"]
    points = tuple(Series(f"{what} ({number(sheet.magnitude(x), 4)} FLOP/B)",
                          np.array([sheet.magnitude(x)]), np.array([sheet.magnitude(y)]),
                          "marker", color) for what, x, y, color in (
        ("decode", "decode_intensity", "attainable_flops", "crimson"),
        ("prefill", "prefill_intensity", "prefill_attainable_flops", "gold")))
    decl = sheet.declaration
    return RooflineData(Series("roof (one GPU)", xs, roof, color=ROOF_COLOURS[0][0]),
                        (ridge, float(roof[xs == ridge][0])),
                        points, decl("ridge_point").unit, decl("attainable_flops").unit)


#: Per accelerator on a roofline: its roof's colour, and its measured runs' (the same hue,
#: lighter, so a run is read against its own roof and never mistaken for it).
ROOF_COLOURS = (("#1f77b4", "#aec7e8"), ("#ff7f0e", "#ffbb78"), ("#2ca02c", "#98df8a"),
                ("#9467bd", "#c5b0d5"), ("#8c564b", "#c49c94"), ("#17becf", "#9edae5"))


@dataclass
class _OnRoof:
    sheet: Sheet
    by_mbu: list[tuple[float, float]]
    by_mfu: list[tuple[float, float]]


def measured_roofline_points(comparisons: Sequence[Comparison], base: Baseline,
                             y_unit: str, scenario: Sheet | None = None,
                             ) -> tuple[str | None, list[Series]]:
    """Each run's decode at its decode intensity (the model's, at its configuration), placed
    by its MBU: the sheet's ``achieved_decode_flops`` (MBU × HBM bandwidth × intensity, of
    its own hardware, per GPU). MFU counts prefill's FLOPs too, so it has no place at the
    decode intensity; ``achieved_flops`` (MFU × peak FLOP/s) is one series at the run's
    prefill intensity.

    One roof per accelerator the runs ran on, each its own colour and its runs a lighter
    shade of it; an accelerator whose roof is ``scenario``'s draws no roof of its own (the
    first label returned names the scenario's roof after it, else None)."""
    found: dict[str, _OnRoof] = {}
    for group in groups(comparisons, "concurrency"):
        first = group.runs[0].setup
        try:
            sheet = load(first.spec(base.spec)).sheet
        except PerfgraphError:
            continue
        at = found.setdefault(_slug(first.hardware), _OnRoof(sheet, [], []))
        cols = sheet.evaluate_columns(config_columns([c.setup for c in group.runs]),
                                      len(group.runs))
        intensity = in_unit(sheet, cols, "decode_intensity", "FLOP/B")
        prefill = in_unit(sheet, cols, "prefill_intensity", "FLOP/B")
        for j, c in enumerate(group.runs):
            if c.achieved_decode_flops is not None:
                at.by_mbu.append((intensity[j], c.achieved_decode_flops))
            if c.achieved_flops is not None:
                at.by_mfu.append((prefill[j], c.achieved_flops))
    return _roofs_and_runs(found, 1 / _factor(y_unit), scenario)


def _roofs_and_runs(found: Mapping[str, _OnRoof], scale: float, scenario: Sheet | None,
                    ) -> tuple[str | None, list[Series]]:
    named, out, others = None, [], 0
    for slug, at in found.items():
        if scenario is not None and named is None and _same_roof(at.sheet, scenario):
            named, (_, light) = f"roof: {slug} (one GPU)", ROOF_COLOURS[0]
        else:
            others += 1
            dark, light = ROOF_COLOURS[others % len(ROOF_COLOURS)]
            xs = [x for x, _ in at.by_mbu + at.by_mfu]
            out.append(replace(roofline_data(at.sheet, xs).roof, label=f"roof: {slug} (one GPU)",
                               color=dark))
        for what, pts, style in (("by MBU", at.by_mbu, 0),
                                 ("by MFU (at prefill intensity)", at.by_mfu, 2)):
            if pts:
                arr = np.array(pts)
                out.append(Series(f"{slug}: measured runs, {what}", arr[:, 0],
                                  arr[:, 1] * scale, "points", light, style))
    return named, out


def _same_roof(a: Sheet, b: Sheet) -> bool:
    """Whether two sheets' roofs are one: the same ridge, the same roof far below and above
    it."""
    probe = np.array([1.0, 1e6])
    roofs = [s.evaluate_columns({"decode_intensity": probe}, 2)["attainable_flops"]
             for s in (a, b)]
    return bool(np.allclose(roofs[0], roofs[1], rtol=1e-9)) and math.isclose(
        a.magnitude("ridge_point"), b.magnitude("ridge_point"), rel_tol=1e-9)


def _slug(hardware: str | None) -> str:
    return (hardware or "?").rsplit("/", 1)[-1].removesuffix(".toml")


def _factor(unit_text: str) -> float:
    from perfgraph.engine.units import unit

    return float(unit(unit_text).factor / unit("FLOP/s").factor)


def measured_pairs(comparisons: Sequence[Comparison]) -> dict[str, list[Series]]:
    """Per metric, each group's runs (the same model, GPU, precision, TP and lengths) as
    points at (modelled, measured), like for like (each run's own throughput definition, as
    ``perfgraph compare`` compares them): one colour per model, GPU, precision and lengths,
    one marker per TP."""
    found = groups(comparisons, "concurrency")
    colours, styles = encoding([g.key for g in found])
    out: dict[str, list[Series]] = {}
    for metric, (_, _, name) in CELLS.items():
        scale = 1e-3 if metric == "e2e_latency" else 1.0
        for group, color, style in zip(found, colours, styles, strict=True):
            rows = [m for c in group.runs if (m := c.metric(name)) is not None
                    and m.measured is not None and m.modelled is not None]
            if rows:
                out.setdefault(metric, []).append(Series(
                    _label(group, "concurrency"), np.array([m.modelled for m in rows]) * scale,
                    np.array([m.measured for m in rows]) * scale, "points", color, style))
    return out
