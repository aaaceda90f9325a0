"""The data behind ``perfgraph plot``: the sheet evaluated over a column of concurrencies or
TPs (``Sheet.evaluate_columns``, each formula once), measured runs compared with the model
at their own configuration (``perfgraph.measured.compare``), turned into :class:`charts.Series`.

Everything is in the units of :data:`charts.METRICS`: throughput as output tokens/s per GPU,
E2E latency in s, TTFT and ITL (the mean TPOT) in ms. A measured run's relative figure is
``perfgraph compare``'s "% of possible" for that metric (throughput: measured ÷ modelled;
a latency: modelled ÷ measured), so 100 % is the model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from perfgraph.engine.numbers import number
from perfgraph.engine.sheet import Sheet
from perfgraph.errors import InputError, PerfgraphError
from perfgraph.measured.compare import Comparison, config_columns, in_unit
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
    """Every metric, and the throughput ceiling per GPU, over ``values`` of ``x``."""
    xs = np.asarray(values, dtype=float)
    given = {name: np.full(len(xs), float(v)) for name, v in (config or {}).items()}
    cols = sheet.evaluate_columns({**given, x: xs}, len(xs))
    out = {m: in_unit(sheet, cols, cell, u) for m, (cell, u, _) in CELLS.items()}
    with np.errstate(all="ignore"):
        out["ceiling"] = in_unit(sheet, cols, "throughput_ceiling", "token/s") / np.asarray(
            cols["n_gpus"], dtype=float)
    return out


def grid(sheet: Sheet, x: str, also: Sequence[float] = ()) -> np.ndarray:
    """The x values of a chart: concurrencies from 1 up (even in log), or TPs 1–8."""
    if x == "concurrency":
        return concurrency_grid([sheet.magnitude("concurrency"), *also])
    return np.unique([*TPS, sheet.magnitude("tp"), *also])


def scenario_panels(sheet: Sheet, x: str, label: str = "model", color: str | None = None,
                    ) -> dict[str, list[Series]]:
    """The model's curves of one scenario over ``x``: one line per metric, and the
    ceiling (dashed) with the throughput."""
    if x not in AXES:
        raise InputError(f"--x must be one of {', '.join(AXES)}, got {x!r}")
    xs = grid(sheet, x)
    values = curves(sheet, x, xs)
    panels = {m: [Series(label, xs, values[m], color=color)] for m in CELLS}
    panels["throughput"].append(Series(f"{label}: ceiling (KV-capped batch)", xs,
                                       values["ceiling"], "ceiling", color=color))
    return panels


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
    slug = (hardware or "?").rsplit("/", 1)[-1].removesuffix(".toml")
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


def _measured(c: Comparison, metric: str, n_gpus: float, relative: bool) -> float:
    m = c.metric(CELLS[metric][2])
    if relative:
        return math.nan if m is None or m.possible is None else 100 * m.possible
    if metric == "throughput":
        return math.nan if c.measured_output is None else c.measured_output / n_gpus
    if m is None or m.measured is None:
        return math.nan
    return m.measured / 1000 if metric == "e2e_latency" else m.measured


def measured_panels(comparisons: Sequence[Comparison], base: Baseline, x: str,
                    relative: bool = False) -> dict[str, list[Series]]:
    """Measured runs as points over ``x``, and (unless ``relative``) the model at each
    group's configuration as lines of the same colour."""
    found = groups(comparisons, x)
    if not found:
        raise InputError("no measured run could be modelled (see 'perfgraph compare')")
    panels: dict[str, list[Series]] = {m: [] for m in CELLS}
    sheets: dict[tuple, Sheet] = {}
    for i, group in enumerate(found):
        first = group.runs[0].setup
        if first.group not in sheets:
            try:
                sheets[first.group] = load(first.spec(base.spec)).sheet
            except PerfgraphError:
                continue
        sheet, color, label = sheets[first.group], f"C{i % 10}", _label(group, x)
        cols = config_columns([c.setup for c in group.runs])
        gpus = sheet.evaluate_columns(cols, len(group.runs))["n_gpus"]
        xs = np.array([_x_of(c, x) for c in group.runs])
        for metric in CELLS:
            ys = np.array([_measured(c, metric, float(gpus[j]), relative)
                           for j, c in enumerate(group.runs)])
            panels[metric].append(Series(f"{label} (measured)", xs, ys, "points", color))
        if not relative:
            _model_lines(panels, sheet, group, x, label, color)
    return panels


def _model_lines(panels: dict[str, list[Series]], sheet: Sheet, group: _Group, x: str,
                 label: str, color: str) -> None:
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
        panels[metric].insert(0, Series(f"{label} (model)", xs, values[metric], color=color))


@dataclass(frozen=True)
class RooflineData:
    roof: Series
    ridge: tuple[float, float]
    points: tuple[Series, ...]
    x_unit: str
    y_unit: str


def roofline(sheet: Sheet, also: Sequence[float] = ()) -> RooflineData:
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
                          "marker") for what, x, y in (
        ("decode", "decode_intensity", "attainable_flops"),
        ("prefill", "prefill_intensity", "prefill_attainable_flops")))
    decl = sheet.declaration
    return RooflineData(Series("roof (one GPU)", xs, roof), (ridge, float(roof[xs == ridge][0])),
                        points, decl("ridge_point").unit, decl("attainable_flops").unit)


def measured_roofline_points(comparisons: Sequence[Comparison], base: Baseline,
                             y_unit: str) -> list[Series]:
    """Each run's decode at its decode intensity (the model's, at its configuration), placed
    by its MBU: achieved FLOP/s = MBU × HBM bandwidth × intensity, of its own hardware, per
    GPU. MFU counts prefill's FLOPs too, so it has no place at the decode intensity; it is
    kept as MFU × peak FLOP/s, one series at the run's prefill intensity."""
    by_mbu: list[tuple[float, float]] = []
    by_mfu: list[tuple[float, float]] = []
    for group in groups(comparisons, "concurrency"):
        first = group.runs[0].setup
        try:
            sheet = load(first.spec(base.spec)).sheet
        except PerfgraphError:
            continue
        cols = sheet.evaluate_columns(config_columns([c.setup for c in group.runs]),
                                      len(group.runs))
        intensity = in_unit(sheet, cols, "decode_intensity", "FLOP/B")
        prefill = in_unit(sheet, cols, "prefill_intensity", "FLOP/B")
        flops_per_byte = in_unit(sheet, cols, "hbm_bandwidth", "B/s") * intensity
        peak = in_unit(sheet, cols, "peak_flops", "FLOP/s")
        for j, c in enumerate(group.runs):
            if c.mbu is not None:
                by_mbu.append((intensity[j], c.mbu * flops_per_byte[j]))
            if c.mfu is not None:
                by_mfu.append((prefill[j], c.mfu * peak[j]))
    scale = 1 / _factor(y_unit)
    out = []
    for label, pts in (("measured runs, by MBU", by_mbu),
                       ("measured runs, by MFU (at prefill intensity)", by_mfu)):
        if pts:
            arr = np.array(pts)
            out.append(Series(label, arr[:, 0], arr[:, 1] * scale, "points"))
    return out


def _factor(unit_text: str) -> float:
    from perfgraph.engine.units import unit

    return float(unit(unit_text).factor / unit("FLOP/s").factor)


def measured_pairs(comparisons: Sequence[Comparison],
                   ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per metric, the modelled and measured values of every run, like for like (each run's
    own throughput definition, as ``perfgraph compare`` compares them)."""
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for metric, (_, _, name) in CELLS.items():
        rows = [m for c in comparisons if c.error is None and (m := c.metric(name)) is not None
                and m.measured is not None and m.modelled is not None]
        scale = 1e-3 if metric == "e2e_latency" else 1.0
        if rows:
            out[metric] = (np.array([m.modelled for m in rows]) * scale,
                           np.array([m.measured for m in rows]) * scale)
    return out
