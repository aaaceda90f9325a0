"""Comparisons of measured runs written out: table, markdown, JSON and Parquet rows.

The files are read by :func:`perfgraph.measured.reading.read_measured`.  The outputs state,
per file, the format detected, whether the ISL/OSL the model ran at are measured or
configured, the reader's caveats (the notes that change how the numbers read: zero-length
outputs, recomputed metrics, ITL per chunk, measured vs configured lengths), and the
definitions compared; ``--notes`` adds every note the reader made.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from perfgraph.engine.numbers import number, quantity
from perfgraph.measured.comparison import (
    METRICS,
    Comparison,
    median_possible,
)
from perfgraph.measured.findings import _pct as pct
from perfgraph.measured.reading import Measured
from perfgraph.output import percentile_columns as pcts

_HEAD = {"ttft": "TTFT", "tpot": "TPOT", "e2el": "E2EL", "throughput": "throughput"}


# --------------------------------------------------------------------------- text


def metric_text(c: Comparison, metric: str) -> str:
    """``measured / modelled (% of possible)`` of one metric of a run."""
    m = c.metric(metric)
    if m is None or m.measured is None:
        return "—"
    shown = quantity(m.measured, m.unit)
    if m.modelled is None:
        return f"{shown} / model failed"
    text = f"{shown} / {quantity(m.modelled, m.unit)} ({pct(m.possible)})"
    if m.vs_predicted is not None:
        text += f" {100 * m.vs_predicted:+.0f}% vs predicted"
    return text


def _model_at(c: Comparison) -> str:
    s = c.setup
    return f"{s.model} · {s.precision} · {s.hardware}"


#: The run's deployment beyond TP, as the file gives it (JSON and Parquet columns)
DEPLOYMENT = ("pp", "gpus", "ep", "dp_attention", "disaggregated", "prefill_gpus",
              "decode_gpus", "prefill_tp", "decode_tp", "prefill_ep", "decode_ep",
              "spec_decoding")

#: How the "model at" column names where a run's ISL/OSL came from.
LENGTHS_SAID = {"measured": "measured means (total tokens ÷ completed requests)",
                "expected": "expected means of the configured random range (the file records "
                            "no measured lengths)",
                "configured": "configured (the file records no measured lengths)",
                "scenario options": "from the scenario options (the file does not say)"}
_SHORT = {"measured": "meas.", "expected": "exp.", "configured": "cfg.",
          "scenario options": "opt."}


def _lengths(c: Comparison) -> str:
    s = c.setup
    if s.isl_source == s.osl_source:
        return LENGTHS_SAID.get(s.isl_source or "", "?")
    return f"ISL {s.isl_source}, OSL {s.osl_source}"


def _row(c: Comparison, with_model: bool, with_lengths: bool = False) -> list[str]:
    s = c.setup
    where = f"#{c.run.index}"
    config = f"TP{number(s.tp or 0)} B={number(s.concurrency or 0, 3)} " \
             f"{number(s.isl or 0, 4)}/{number(s.osl or 0, 4)}"
    if with_lengths:
        config += f" {_SHORT.get(s.isl_source or '', '?')}/{_SHORT.get(s.osl_source or '', '?')}"
    if with_model:
        config = f"{_model_at(c)} {config}"
    return [where, config, *(metric_text(c, m) for m in METRICS), pct(c.mfu), pct(c.mbu)]


COLUMNS = ("run", "model at", *(_HEAD[m] for m in METRICS), "MFU", "MBU")
CELL_SAYS = ("each metric: measured / {reference} at the run's configuration (% of "
             "possible); model at: TP, batch B, ISL/OSL")
UTILISATION_SAYS = ("MFU, MBU: the sheet's achieved_mfu and achieved_mbu, with "
                    "measured_output_throughput = the measured output tokens/s and "
                    "measured_tpot = the measured TPOT (perfgraph explain achieved_mfu)")


def _header(runs: Sequence[Comparison], reference: str) -> tuple[list[str], bool, bool]:
    """The per-file lines above the table; whether each row must name its model, and whether
    each row must say where its ISL/OSL came from (when the runs differ in that)."""
    compared = [c for c in runs if c.error is None]
    models = {_model_at(c) for c in compared}
    says = CELL_SAYS.format(reference=reference)
    if not models:
        return [], False, False
    lengths = {_lengths(c) for c in compared}
    mixed = len(lengths) > 1
    said = "ISL/OSL in 'model at': " + (
        "per row, meas. = measured mean, cfg. = configured, opt. = from the scenario options"
        if mixed else lengths.pop())
    head = [f"model: {models.pop()}"] if len(models) == 1 else []
    return [*head, says, said], not head, mixed


def _by_source(comparisons: Sequence[Comparison], measured: Measured,
               ) -> list[tuple[str, str, list[Comparison]]]:
    groups: dict[str, list[Comparison]] = {}
    for c in comparisons:
        groups.setdefault(c.run.source, []).append(c)
    return [(source, fmt, groups[source]) for source, fmt in measured.formats
            if source in groups]


def _not_compared(runs: Sequence[Comparison]) -> list[str]:
    """Runs that could not be modelled, grouped by reason."""
    reasons: dict[str, list[str]] = {}
    for c in runs:
        if c.error is not None:
            reasons.setdefault(c.error, []).append(f"#{c.run.index}")
    return [f"not compared ({', '.join(which)}): {why}" for why, which in reasons.items()]


def caveat_lines(runs: Sequence[Comparison]) -> list[str]:
    """The reader's caveats on the runs, each distinct one once with the runs it holds for."""
    which: dict[str, list[str]] = {}
    for c in runs:
        for text in c.run.caveats:
            which.setdefault(text, []).append(f"#{c.run.index}")
    return [f"read with care ({', '.join(w)}): {text}" for text, w in which.items()]


def _explained(runs: Sequence[Comparison]) -> list[str]:
    """The reader's caveats, the definitions compared and the notes on how runs were set up
    (each distinct sentence once), then what the runs show, grouped by symptom with its
    lever."""
    lines: list[str] = caveat_lines(runs)
    runs = [c for c in runs if c.error is None]
    if not runs:
        return lines
    for c in runs:
        lines += [m.definition for m in c.metrics if m.measured is not None]
        lines += [f"note: {n}" for n in c.setup.notes]
        lines += [f"#{c.run.index} {m.metric}: {m.error}" for m in c.metrics
                  if m.error and m.measured is not None]
    return [*dict.fromkeys([*lines, UTILISATION_SAYS]), *_symptom_lines(runs)]


def _symptom_lines(runs: Sequence[Comparison]) -> list[str]:
    """Each symptom once, with its lever, then the runs that show it (ours before the levers
    module's advice)."""
    pairs = [(c.run.index, f) for c in runs for f in c.findings]
    pairs.sort(key=lambda pair: pair[1].id.startswith("lever:"))
    groups: dict[tuple[str, str], dict[str, list[str]]] = {}
    for index, f in pairs:
        groups.setdefault((f.title, f.lever), {}).setdefault(f.text, []).append(f"#{index}")
    lines = []
    for (title, lever), texts in groups.items():
        lines.append(f"symptom: {title} → {lever}")
        for text, which in texts.items():
            lines.append(f"  {', '.join(which)}" + ("" if text == title else f": {text}"))
    return lines


def summary_lines(comparisons: Sequence[Comparison], measured: Measured,
                  reference: str = "roofline") -> list[str]:
    compared = [c for c in comparisons if c.error is None]
    medians = ", ".join(f"{_HEAD[m]} {pct(median_possible(compared, m))}" for m in METRICS)
    beats = [c for c in compared if any(f.id == "beats-roofline" for f in c.findings)]
    lines = [f"{len(compared)} runs compared, {len(comparisons) - len(compared)} not "
             f"compared, {len(measured.problems)} refused by the reader",
             f"median % of possible: {medians}",
             f"no run beats the {reference}" if not beats else
             f"{len(beats)} runs beat the {reference}: " + "; ".join(
                 f"{c.run.source} #{c.run.index}" for c in beats)]
    return lines


def as_table(comparisons: Sequence[Comparison], measured: Measured, notes: bool = False,
             reference: str = "roofline") -> str:
    out: list[str] = []
    for source, fmt, runs in _by_source(comparisons, measured):
        header, with_model, with_lengths = _header(runs, reference)
        out += [f"{source}  [format: {fmt}]", *(f"  {h}" for h in [*header,
                                                                    *pcts.header(runs)])]
        columns = _columns(runs)
        compared = [_cells(c, runs, with_model, with_lengths) for c in runs if c.error is None]
        rows = [list(columns), *compared] if compared else []
        widths = [max((len(r[i]) for r in rows), default=0) for i in range(len(columns))]
        for r in rows:
            cells = (t.ljust(w) for t, w in zip(r, widths, strict=True))
            out.append(("  " + "  ".join(cells)).rstrip())
        out += ["  " + line for line in [*_not_compared(runs), *pcts.explained(runs),
                                         *_explained(runs)]]
        if notes:
            out += [f"  #{c.run.index} file note: {n}" for c in runs for n in c.run.notes]
        out.append("")
    out += pcts.missing(comparisons)
    out += _problem_lines(measured)
    out += summary_lines(comparisons, measured, reference)
    return "\n".join(out) + "\n"


def _columns(runs: Sequence[Comparison]) -> tuple[str, ...]:
    """The table's columns: the percentiles' too where a run of the file has them."""
    return (*COLUMNS, *pcts.COLUMNS) if pcts.wanted(runs) else COLUMNS


def _cells(c: Comparison, runs: Sequence[Comparison], with_model: bool,
           with_lengths: bool) -> list[str]:
    row = _row(c, with_model, with_lengths)
    return [*row, *pcts.cells(c)] if pcts.wanted(runs) else row


def problem_lines(measured: Measured) -> list[str]:
    """One line per refused run or file: where, the format detected (when known), why."""
    out = []
    for p in measured.problems:
        fmt = measured.format_of(p.source)
        where = p.source if p.index is None else f"{p.source} #{p.index}"
        out.append(f"{where}{f' [format: {fmt}]' if fmt else ''}: {p.reason}")
    return out


def _problem_lines(measured: Measured) -> list[str]:
    if not measured.problems:
        return []
    return ["refused:", *(f"  {line}" for line in problem_lines(measured)), ""]


def as_markdown(comparisons: Sequence[Comparison], measured: Measured,
                reference: str = "roofline") -> str:
    out = [f"## Measured runs vs the {reference}", ""]
    for source, fmt, runs in _by_source(comparisons, measured):
        header, with_model, with_lengths = _header(runs, reference)
        columns = _columns(runs)
        out += [f"### `{source}` (format: {fmt})", "",
                *(f"{h}  " for h in [*header, *pcts.header(runs)]), "",
                "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        for c in runs:
            if c.error is None:
                row = _cells(c, runs, with_model, with_lengths)
                out.append("| " + " | ".join(t.replace("|", "\\|") for t in row) + " |")
        explained = [*_not_compared(runs), *pcts.explained(runs), *_explained(runs)]
        out += ["", *(f"  - {t.strip()}" if t.startswith("  ") else f"- {t}"
                      for t in explained), ""]
    out += [f"- {line}" for line in pcts.missing(comparisons)]
    out += [line.replace("refused:", "### Refused") for line in _problem_lines(measured)]
    summary = summary_lines(comparisons, measured, reference)
    out += ["### Summary", "", *(f"- {line}" for line in summary)]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- data


def records(comparisons: Sequence[Comparison]) -> list[dict]:
    """One flat record per run (the Parquet rows): units in the column names."""
    out = []
    for c in comparisons:
        s, r = c.setup, c.run
        row: dict = {"source": r.source, "format": r.format, "index": r.index,
                     "label": r.label, "model": s.model, "hardware": s.hardware,
                     "precision": s.precision, "precision_in_file": r.precision, "tp": s.tp,
                     "concurrency": s.concurrency, "concurrency_source": s.concurrency_source,
                     "concurrency_configured": r.concurrency,
                     "concurrency_measured": r.concurrency_measured,
                     "isl": s.isl, "osl": s.osl, "isl_source": s.isl_source,
                     "osl_source": s.osl_source, "isl_configured": r.isl_configured,
                     "osl_configured": r.osl_configured, "isl_measured": r.isl_measured,
                     "osl_measured": r.osl_measured, "osl_implied": r.osl_implied,
                     "isl_expected": r.isl_expected, "osl_expected": r.osl_expected,
                     "e2el_osl": s.e2el_osl, "engine": s.engine, "engine_in_file": r.engine,
                     "engine_build": r.engine_build, **{k: getattr(r, k) for k in DEPLOYMENT}}
        for name in METRICS:
            m = c.metric(name)
            unit = "token_per_s" if name == "throughput" else "ms"
            row[f"{name}_measured_{unit}"] = m.measured if m else None
            row[f"{name}_modelled_{unit}"] = m.modelled if m else None
            row[f"{name}_possible"] = m.possible if m else None
            row[f"{name}_predicted_{unit}"] = m.predicted if m else None
            row[f"{name}_statistic"] = m.statistic if m else None
            row[f"{name}_measured_as"] = m.measured_as if m else None
            row[f"{name}_definition"] = m.definition if m else None
        row |= {"mfu": c.mfu, "mbu": c.mbu, "decode_headroom": c.headroom,
                "findings": [f"{f.id}: {f.text}" for f in c.findings],
                "caveats": list(r.caveats), "notes": [*s.notes, *r.notes], "error": c.error}
        if c.percentiles is not None:
            row |= pcts.columns(c.percentiles)
        out.append({k: _clean(v) for k, v in row.items()})
    return out


def _clean(value):
    return None if isinstance(value, float) and not math.isfinite(value) else value


def as_json(comparisons: Sequence[Comparison], measured: Measured) -> str:
    runs = []
    for c, flat in zip(comparisons, records(comparisons), strict=True):
        metrics = {m.metric: {"measured": _clean(m.measured), "modelled": _clean(m.modelled),
                              "unit": m.unit, "statistic": m.statistic,
                              "measured_as": m.measured_as, "model_cell": m.model_cell,
                              "ratio": _clean(m.ratio), "possible": _clean(m.possible),
                              "predicted": _clean(m.predicted),
                              "vs_predicted": _clean(m.vs_predicted),
                              "definition": m.definition, "error": m.error}
                   for m in c.metrics}
        keep = ("source", "format", "index", "label", "model", "hardware", "precision",
                "precision_in_file", "tp", "concurrency", "concurrency_source",
                "concurrency_configured", "concurrency_measured", "isl", "osl", "isl_source",
                "osl_source", "isl_configured", "osl_configured", "isl_measured",
                "osl_measured", "osl_implied", "isl_expected", "osl_expected", "e2el_osl",
                "engine", "engine_in_file", "engine_build", *DEPLOYMENT, "mfu", "mbu",
                "decode_headroom", "caveats", "notes", "error")
        runs.append({**{k: flat[k] for k in keep}, "metrics": metrics,
                     "findings": [{"id": f.id, "title": f.title, "text": f.text, "lever": f.lever,
                                   "effect": f.effect} for f in c.findings]})
        if c.percentiles is not None:
            runs[-1]["percentiles"] = pcts.as_dict(c.percentiles)
    compared = [c for c in comparisons if c.error is None]
    document = {
        "formats": [{"source": s, "format": f} for s, f in measured.formats],
        "runs": runs,
        "problems": [{"source": p.source, "index": p.index,
                      "format": measured.format_of(p.source), "reason": p.reason}
                     for p in measured.problems],
        "summary": {"compared": len(compared),
                    "median_possible": {m: _clean(median_possible(compared, m))
                                        for m in METRICS}},
    }
    return json.dumps(document, indent=2, allow_nan=False, ensure_ascii=False) + "\n"
