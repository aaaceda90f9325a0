"""``perfgraph calibrate RUN… --out FILE``: fit the efficiency inputs to measured runs."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

from perfgraph._infra.atomic import write_text_atomic
from perfgraph.cli.commands.compare import add_run_options, check_runs, one_line
from perfgraph.cli.options import add_force_option, spec_from_args
from perfgraph.engine.numbers import quantity
from perfgraph.errors import InputError
from perfgraph.measured.calibration import TARGETS, Fit, calibrate
from perfgraph.measured.comparison import compare_runs
from perfgraph.measured.derived import derive_runs
from perfgraph.measured.reading import Measured, read_measured
from perfgraph.measured.setup import Baseline, setup_run
from perfgraph.output.compare_report import problem_lines
from perfgraph.output.profile_overlay import overlay_text
from perfgraph.scenario.catalog import KINDS, catalog_dir


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "calibrate",
        description="Fit the realistic terms (achievable bandwidth and compute, fixed costs "
                    "per step, sequence and request, exposed TP all-reduces), with chunked "
                    "prefill in each step and closed-loop queueing turned on, to measured runs "
                    "within physical bounds (bounded least squares on log TTFT, TPOT and "
                    "throughput), report the fit's median and p90 error on those runs and on "
                    "--holdout runs, and write the fitted values as a TOML overlay for "
                    "--calibration.")
    add_run_options(p)
    p.add_argument("--out", "-o", required=True, metavar="FILE",
                   help="the overlay to write (e.g. h100-sxm.vllm.toml)")
    add_force_option(p)
    p.add_argument("--holdout", nargs="+", default=[], metavar="RUN",
                   help="runs not fitted on, to report the error of the prediction")
    p.add_argument("--format", "-f", choices=("table", "json"), default="table",
                   help="how to print the fit (default: table)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    check_runs(args, "--holdout")
    _check_out(args.out)  # before minutes of fitting, not after
    base = Baseline.from_spec(spec_from_args(args))
    fitted, held = read_measured(args.runs), read_measured(args.holdout)
    _some_runs(args.runs, fitted, None)
    _some_runs(args.holdout, held, "--holdout")
    if held.runs and all(c.error for c in compare_runs(held.runs, base, levers=False)):
        raise InputError(f"no run of {', '.join(args.holdout)} could be compared with the "
                         "model, so there is no held-out error to report (run 'perfgraph "
                         "compare' on them to see why)", name="--holdout")
    fit = calibrate(fitted.runs, base, holdout=held.runs)
    write_text_atomic(args.out, overlay_text(fit, _use(args)))
    report = _json(fit, args.out) if args.format == "json" else _table(fit, args.out)
    sys.stdout.write(report)
    for line in (*problem_lines(fitted), *problem_lines(held)):
        print(f"perfgraph: refused {one_line(line)}", file=sys.stderr)
    _not_compared(fitted, fit, held, base)
    return 0


def _some_runs(paths: list[str], found: Measured, flag: str | None) -> None:
    """Refuse files given that hold no run the reader accepts, with the reader's reasons."""
    if paths and not found.runs:
        why = "; ".join(one_line(line) for line in problem_lines(found))
        raise InputError(f"no run in {', '.join(paths)}: {why}", name=flag)


def _check_out(out: str) -> None:
    """A folder that is there, and not a catalog folder: a calibration listed among the
    hardware (or models, workloads) would be read as one."""
    folder = Path(out).parent
    if not folder.is_dir():
        raise InputError(f"cannot write {out}: no such folder {folder}", file=out)
    real = os.path.realpath(folder)
    for kind in KINDS:
        if real == os.path.realpath(catalog_dir(kind)):
            raise InputError(f"{folder} is the {kind} catalog: a calibration written there "
                             "would be listed as a catalog entry; write it elsewhere (e.g. "
                             "calibrations/) and pass it with --calibration", name="--out")


def _use(args: argparse.Namespace) -> str:
    parts = ["perfgraph eval"]
    if args.hardware:
        parts.append(f"--hardware {shlex.quote(args.hardware)}")
    return " ".join([*parts, f"--calibration {shlex.quote(args.out)}"])


def _not_compared(fitted: Measured, fit: Fit, held: Measured, base: Baseline) -> None:
    used = {(c.run.source, c.run.index) for c in (*fit.fitted_runs, *fit.held_out_runs)}
    for r in derive_runs(base.sheet, (*fitted.runs, *held.runs)):  # modelled as compared
        if (r.source, r.index) not in used:
            why = setup_run(r, base).error or "the model has no value at its configuration " \
                "(see 'perfgraph compare')"
            print(f"perfgraph: not used {r.source} #{r.index}: {why}", file=sys.stderr)


def _table(fit: Fit, out: str) -> str:
    lines = [f"fitted on {len(fit.fitted_runs)} runs"
             + (f", held out {len(fit.held_out_runs)}" if fit.held_out_runs else "")]
    for t in TARGETS:
        if t.cell in fit.values:
            lines.append(f"  {t.cell:<31}{quantity(fit.values[t.cell], fit.units[t.cell])}"
                         f"   ({t.doc})")
    lines += ["|model − measured| / measured      roofline (median)   calibrated (median, p90)"]
    for what, errors in (("fitted", fit.fitted), ("held out", fit.held_out)):
        for e in errors:
            lines.append(f"  {what:<9} {e.metric:<11} ({e.runs:>3} runs)      "
                         f"{_pct(e.roofline):>8}   {_pct(e.calibrated):>10}, "
                         f"{_pct(e.calibrated_p90)}")
    lines += [f"left out of the fit: {e}" for e in fit.excluded]
    lines += [f"note: {n}" for n in fit.notes]
    if fit.workloads:
        lines.append(f"workloads fitted (ISL/OSL): {', '.join(fit.workloads)}")
    lines.append(f"wrote {out}")
    return "\n".join(lines) + "\n"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _json(fit: Fit, out: str) -> str:
    def errors(items):
        return {e.metric: {"runs": e.runs, "roofline": e.roofline, "calibrated": e.calibrated,
                           "calibrated_p90": e.calibrated_p90} for e in items}
    document = {"values": {c: {"value": v, "unit": fit.units[c]} for c, v in fit.values.items()},
                "fitted": {"runs": len(fit.fitted_runs), "error": errors(fit.fitted)},
                "held_out": {"runs": len(fit.held_out_runs), "error": errors(fit.held_out)},
                "left_out": list(fit.excluded), "notes": list(fit.notes),
                "workloads": list(fit.workloads), "residual": fit.residual, "out": out}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
