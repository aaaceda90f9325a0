"""A calibration fit as the TOML overlay ``perfgraph calibrate`` writes: the fitted inputs in
``[values]``, what they were fitted on and how well in comments, and the ``[profile]`` table
(perfgraph.scenario.profiles) every prediction made with it is labelled from."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from perfgraph.measured.calibration import Fit, MetricError
from perfgraph.measured.comparison import Comparison
from perfgraph.measured.targets import STRUCTURE, TARGETS
from perfgraph.scenario.domain import toml_lines


def overlay_text(fit: Fit, use: str = "", engine: str | None = None,
                 engine_version: str | None = None, held_out_note: str = "") -> str:
    """The TOML overlay: the fitted inputs in ``[values]``, with comments saying what they were
    fitted on and how well they fit. ``use`` is an example command line; ``engine`` and
    ``engine_version`` go into ``[profile]``, ``held_out_note`` says where its held-out
    error comes from."""
    lines = ["# Calibration overlay written by `perfgraph calibrate`: the efficiency inputs",
             "# fitted by least squares (log TTFT, TPOT and throughput) to measured runs.",
             *_described("Fitted on", fit.fitted_runs)]
    lines += ["# Error, median |model − measured| / measured (roofline → calibrated):",
              *_error_comments("fitted runs", fit.fitted)]
    if fit.held_out_runs:
        lines += _described("Held out", fit.held_out_runs)
        lines += _error_comments("held-out runs", fit.held_out)
    lines += [f"# Left out of the fit: {e}" for e in fit.excluded]
    lines += [f"# Note: {n}" for n in fit.notes]
    if fit.workloads:
        lines.append(f"# Workloads (ISL/OSL) fitted: {', '.join(fit.workloads)}"
                     + ("" if len(fit.workloads) > 1 else
                        " (one shape: runs of several workloads generalise better)"))
    if use:
        lines.append(f"# Use: {use}")
    groups = sorted({" · ".join(_shown_part(p) for p in c.setup.group if p)
                     for c in fit.fitted_runs})
    lines += ["", f'name = "Calibrated efficiencies ({"; ".join(groups)}, '
                  f'{len(fit.fitted_runs)} runs)"', ""]
    if held_out_note:
        lines.append(f"# held_out: {held_out_note}")
    lines += [*profile_lines(fit, engine, engine_version), "", "[values]"]
    for cell, on in STRUCTURE.items():
        lines.append(f"{f'{cell} = {str(on).lower()}':<34}  # structure the fit assumed")
    for t in TARGETS:
        if t.cell not in fit.values:
            continue
        value, unit_text = fit.values[t.cell], fit.units[t.cell]
        shown = f'"{value:.4g} {unit_text}"' if unit_text else f"{value:.4g}"
        why = f"held: engines/{fit.engine}.toml documents it" if t.cell in fit.held else t.doc
        lines.append(f"{f'{t.cell} = {shown}':<34}  # {why}")
    return "\n".join(lines) + "\n"


def _shown_part(part: object) -> str:
    """A group part as a name reads it: the deployment's (cell, value) pairs as cell=value."""
    if isinstance(part, tuple):
        return ", ".join(f"{k}={v}" for k, v in part)
    return str(part)


def profile_lines(fit: Fit, engine: str | None = None,
                  engine_version: str | None = None) -> list[str]:
    """The overlay's ``[profile]`` table (perfgraph.scenario.profiles): what it was fitted
    on and its held-out error, for the label every prediction made with it carries."""
    hardware = sorted({c.setup.hardware for c in fit.fitted_runs if c.setup.hardware})
    lines = ["[profile]"]
    if len(hardware) == 1:
        lines.append(f'hardware = "{Path(hardware[0]).stem}"')
    if engine:
        lines.append(f'engine = "{engine}"')
    if engine_version:
        lines.append(f'engine_version = "{engine_version}"')
    lines.append(f"runs = {len(fit.fitted_runs)}")
    held = {e.metric: e.calibrated for e in fit.held_out if e.calibrated is not None}
    if held:
        inner = ", ".join(f"{m} = {v:.3f}" for m, v in held.items())
        lines.append(f"held_out = {{ {inner} }}")
    if fit.workloads:
        lines.append("workloads = [" + ", ".join(f'"{w}"' for w in fit.workloads) + "]")
    if fit.domain is not None:
        lines += ["", *toml_lines(fit.domain)]
    return lines


def _described(what: str, runs: Sequence[Comparison]) -> list[str]:
    sources = list(dict.fromkeys(c.run.source for c in runs))
    return [f"# {what} {len(runs)} runs from:", *(f"#   {s}" for s in sources)]


def _error_comments(what: str, errors: Sequence[MetricError]) -> list[str]:
    return [f"#   {what}: " + ", ".join(
        f"{e.metric} {_pct(e.roofline)} → {_pct(e.calibrated)}" for e in errors)]


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"
