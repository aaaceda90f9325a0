"""``perfgraph diff BASE HEAD``: what a change to a scenario does to every result.

BASE and HEAD are files, or ``REV:path`` (read with ``git show``, no checkout). A file in a
``models/``, ``hardware/`` or ``workloads/`` folder is read as that catalog entry (the rest
of the scenario from the options, or the default); any other as a scenario file; ``--as``
says which. Exit status: 0 when no result moved past ``--threshold``, 1 when some did, 2 on
bad input, so CI can gate on it.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from perfgraph import gitrev
from perfgraph.catalog import KINDS
from perfgraph.commands.options import add_format_option, add_scenario_options, spec_from_args
from perfgraph.diff import Contribution, DiffReport, MovedResult, diff
from perfgraph.display import quantity
from perfgraph.errors import InputError, PerfgraphError
from perfgraph.scenario import Scenario, ScenarioSpec, load

FOLDERS = {"models": "model", "hardware": "hardware", "workloads": "workload"}
READ_AS = ("auto", "scenario", *KINDS)
TOGETHER = "no single edit moves it alone: the edits together do"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "diff", help="compare two scenarios: changed inputs, moved results, and why",
        description="Compare two scenario files (or git revisions of one, REV:path): the "
                    "inputs that changed, then every result that moved, largest change "
                    "first, each with the edits that move it when applied alone.",
        epilog="exit status: 0 no result moved past --threshold, 1 some did, 2 bad input")
    p.add_argument("base", metavar="BASE", help="a file, or REV:path (main:workloads/x.toml)")
    p.add_argument("head", metavar="HEAD", help="a file, or REV:path")
    add_scenario_options(p, positional=False)
    add_format_option(p, ("table", "markdown", "json"))
    p.add_argument("--threshold", "-t", default="0", metavar="PCT",
                   help="show (and fail on) only results that moved by more than PCT "
                        "percent (default 0: any move)")
    p.add_argument("--as", dest="read_as", choices=READ_AS, default="auto",
                   help="read BASE and HEAD as this kind of file (default: by folder)")
    p.set_defaults(func=run)


def threshold(text: str) -> float:
    """``"1"``, ``"1%"`` or ``"0.5 %"`` → a fraction (0.01, 0.005)."""
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise InputError(f"--threshold expects a percentage such as 1 or 0.5%, "
                         f"got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise InputError(f"--threshold must be a percentage of 0 or more, got {text!r}")
    return value / 100


# ----------------------------------------------------------------- loading one side
def read_as(path: str, wanted: str) -> str:
    if wanted != "auto":
        return wanted
    return FOLDERS.get(Path(path).parent.name, "scenario")


def _spec(common: ScenarioSpec, path: str, kind: str) -> ScenarioSpec:
    return replace(common, file=path) if kind == "scenario" else replace(common, **{kind: path})


def load_side(text: str, common: ScenarioSpec, wanted: str) -> tuple[str, Scenario]:
    """One side of the diff: its label, and the scenario it makes."""
    ref = gitrev.parse(text)
    if ref is None:
        if not Path(text).is_file():
            raise InputError("no such file (or REV:path)", file=text)
        return text, load(_spec(common, text, read_as(text, wanted)))
    with gitrev.copy_of(ref) as copy:
        try:
            return ref.label, load(_spec(common, str(copy), read_as(ref.path, wanted)))
        except PerfgraphError as exc:
            if exc.file == str(copy):
                exc.file = ref.label
            raise


# ----------------------------------------------------------------- formats
def _q(value: float | None, result: MovedResult, error: str | None = None) -> str:
    if value is None:
        return f"#ERR {error}" if error else "#ERR"
    return quantity(value, result.unit, flag=result.flag)


def _signed(delta: float | None, result: MovedResult) -> str:
    if delta is None or result.flag:
        return "—"
    return ("+" if delta > 0 else "") + quantity(delta, result.unit)


def _ratio(result: MovedResult) -> str:
    return "—" if result.ratio is None or result.flag else f"{result.ratio:.4g}×"


def _alone(c: Contribution, result: MovedResult) -> str:
    if c.alone is None:
        return f"{c.input} alone: {c.error or 'fails'}"
    return f"{c.input} alone → {_q(c.alone, result)} ({_signed(c.delta, result)})"


def as_table(report: DiffReport, shown: tuple[MovedResult, ...], limit: float) -> str:
    lines = [f"{report.base} → {report.head}", ""]
    if report.choices:
        lines += [*(f"{c.kind}: {c.old} → {c.new}" for c in report.choices), ""]
    lines.append(f"inputs changed ({len(report.inputs)})")
    width = max((len(c.name) for c in report.inputs), default=0) + 2
    lines += [f"  {c.name:<{width}}{c.old} → {c.new}" for c in report.inputs] or ["  none"]
    lines += ["", f"results moved{_past(limit)} ({len(shown)} of {len(report.results)}), "
                  "largest change first"]
    rows = [(r.name, _q(r.old, r, r.old_error), _q(r.new, r, r.new_error),
             _signed(r.delta, r), _ratio(r)) for r in shown]
    header = ("name", "old", "new", "delta", "ratio")
    widths = [max(len(row[i]) for row in [header, *rows]) + 2 for i in range(5)]

    def line(cells: tuple[str, ...]) -> str:
        return "  " + "".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    lines.append(line(header) if rows else "  none")
    for row, result in zip(rows, shown, strict=True):
        lines.append(line(row))
        lines += [f"      {_alone(c, result)}" for c in result.contributions] or (
            [f"      {TOGETHER}"] if report.inputs else [])
    return "\n".join(lines) + "\n"


def _past(limit: float) -> str:
    return f" past {limit * 100:g}%" if limit else ""


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def as_markdown(report: DiffReport, shown: tuple[MovedResult, ...], limit: float) -> str:
    lines = [f"### perfgraph diff: `{report.base}` → `{report.head}`", ""]
    if report.choices:
        lines += [*(f"- {c.kind}: `{c.old}` → `{c.new}`" for c in report.choices), ""]
    lines += [f"**Inputs changed ({len(report.inputs)})**", ""]
    if report.inputs:
        lines += ["| input | old | new |", "|---|---:|---:|"]
        lines += [f"| `{c.name}` | {_md(c.old)} | {_md(c.new)} |" for c in report.inputs]
    lines += ["", f"**Results moved{_past(limit)} ({len(shown)} of {len(report.results)})**",
              ""]
    if shown:
        lines += ["| result | old | new | delta | ratio | moved by (each edit alone) |",
                  "|---|---:|---:|---:|---:|---|"]
    for r in shown:
        why = "; ".join(_md(_alone(c, r)) for c in r.contributions) or TOGETHER
        lines.append(f"| `{r.name}` | {_md(_q(r.old, r, r.old_error))} | "
                     f"{_md(_q(r.new, r, r.new_error))} | {_md(_signed(r.delta, r))} | "
                     f"{_ratio(r)} | {why} |")
    return "\n".join(lines) + "\n"


def as_json(report: DiffReport, shown: tuple[MovedResult, ...], limit: float) -> str:
    def result(r: MovedResult) -> dict[str, object]:
        return {"name": r.name, "unit": r.unit, "old": r.old, "new": r.new, "delta": r.delta,
                "ratio": r.ratio, "old_error": r.old_error, "new_error": r.new_error,
                "contributions": [{"input": c.input, "alone": c.alone, "delta": c.delta,
                                   "error": c.error} for c in r.contributions]}
    return json.dumps({
        "base": report.base, "head": report.head, "threshold_percent": limit * 100,
        "choices": [vars(c) for c in report.choices],
        "inputs": [{"name": c.name, "unit": c.unit, "kind": c.kind, "old": c.old_value,
                    "new": c.new_value, "old_text": c.old, "new_text": c.new}
                   for c in report.inputs],
        "moved": len(shown), "results": [result(r) for r in shown]},
        indent=2, allow_nan=False) + "\n"


FORMATTERS = {"table": as_table, "markdown": as_markdown, "json": as_json}


def run(args: argparse.Namespace) -> int:
    limit = threshold(args.threshold)
    common = spec_from_args(args)
    base_label, base = load_side(args.base, common, args.read_as)
    head_label, head = load_side(args.head, common, args.read_as)
    report = diff(base, head, base_label, head_label)
    shown = report.moved(limit)
    sys.stdout.write(FORMATTERS[args.format](report, shown, limit))
    return 1 if shown else 0
