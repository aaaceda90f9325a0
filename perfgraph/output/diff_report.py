"""``perfgraph diff``'s report (:class:`~perfgraph.whatif.scenario_diff.DiffReport`) as a
table, Markdown (for a pull request) or JSON: the inputs that changed, then each result
that moved past the threshold, largest change first, with the edits that move it alone."""

from __future__ import annotations

import json

from perfgraph.engine.numbers import quantity
from perfgraph.whatif.scenario_diff import Contribution, DiffReport, MovedResult

TOGETHER = "no single edit moves it alone: the edits together do"


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
