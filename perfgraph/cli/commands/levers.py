"""``perfgraph levers``: the symptoms a scenario shows, and each lever's computed effect."""

from __future__ import annotations

import argparse
import json
import sys

from perfgraph.cli.options import add_format_option, add_scenario_options, load_scenario
from perfgraph.engine.sheet import Sheet
from perfgraph.whatif.lever_advice import Advice, diagnose, effect_text, symptoms
from perfgraph.whatif.playbook import STAGES, Symptom, load_playbook

FORMATS = ("table", "json", "markdown")
NOTHING = "No symptom holds: nothing to advise for this scenario."


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("levers",
                       description="Evaluate the scenario, list the symptoms that hold, and "
                                   "for each lever the change it makes to the cells it "
                                   "watches, computed by applying it to the graph. Ordered "
                                   "measure → structural → scheduling → cost.")
    add_scenario_options(p)
    add_format_option(p, FORMATS)
    p.add_argument("--playbook", metavar="LEVERS.toml",
                   help="symptoms and levers to use "
                        "(default: the shipped perfgraph/whatif/levers.toml)")
    p.set_defaults(func=run)


def _effect_lines(sheet: Sheet, advice: Advice) -> list[str]:
    """The watched cells that move, then those that do not (a lever that raises ITL for
    no throughput says so), then the symptoms it would bring on."""
    moved = [e for e in advice.effects if e.before != e.after]
    still = [e for e in advice.effects if e.before == e.after]
    lines = [effect_text(sheet, e) for e in moved]
    lines += [f"{e.cell} unchanged" for e in still] if moved else \
        [effect_text(sheet, e) for e in still]
    return lines + [f"brings on: {s.title}" for s in advice.brings]


def as_table(sheet: Sheet, held: list[Symptom], advice: list[Advice], heading: str) -> str:
    lines = [heading, ""]
    if not held:
        return "\n".join([*lines, NOTHING]) + "\n"
    lines.append("SYMPTOMS")
    lines += [f"  - {s.title}: {s.doc}" for s in held]
    lines += ["", "LEVERS (" + " → ".join(STAGES) + ")"]
    for n, a in enumerate(advice, start=1):
        lines.append(f"  {n}. {a.lever.title} [{a.lever.stage}; for: {a.symptom.title}]")
        if a.error:
            lines.append(f"       cannot apply: {a.error}")
        lines += [f"       {line}" for line in _effect_lines(sheet, a)]
        lines.append(f"       trade-off: {a.lever.tradeoff}")
    if not advice:
        lines.append("  (every lever for these symptoms is already in effect)")
    return "\n".join(lines) + "\n"


def as_markdown(sheet: Sheet, held: list[Symptom], advice: list[Advice], heading: str) -> str:
    lines = [f"## {heading}", ""]
    if not held:
        return "\n".join([*lines, NOTHING]) + "\n"
    lines += ["### Symptoms", ""] + [f"- **{s.title}**: {s.doc}" for s in held]
    lines += ["", "### Levers", "", "| # | lever | stage | for | effect | trade-off |",
              "|---:|---|---|---|---|---|"]
    for n, a in enumerate(advice, start=1):
        effects = "<br>".join(_effect_lines(sheet, a))
        if a.error:
            effects = f"cannot apply: {a.error}"
        cells = [str(n), a.lever.title, a.lever.stage, a.symptom.title, effects,
                 a.lever.tradeoff]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def as_json(held: list[Symptom], advice: list[Advice], **extra: object) -> str:
    return json.dumps({
        **extra,
        "symptoms": [vars(s) for s in held],
        "advice": [{
            "symptom": a.symptom.id,
            "lever": {"id": a.lever.id, "title": a.lever.title, "stage": a.lever.stage,
                      "tradeoff": a.lever.tradeoff, "pins": dict(a.lever.pins)},
            "effects": [vars(e) for e in a.effects],
            "error": a.error,
            "brings": [s.id for s in a.brings],
        } for a in advice],
    }, indent=2, allow_nan=False) + "\n"


def run(args: argparse.Namespace) -> int:
    scenario = load_scenario(args)
    book = load_playbook(args.playbook)
    sheet = scenario.sheet
    held = symptoms(sheet, book)
    advice = diagnose(sheet, book)
    heading = scenario.title
    if args.format == "json":
        text = as_json(held, advice, scenario={  # as perfgraph eval --format json names them
            "model": scenario.model.slug, "hardware": scenario.hardware.slug,
            "workload": scenario.workload.slug, "precision": scenario.precision})
    elif args.format == "markdown":
        text = as_markdown(sheet, held, advice, heading)
    else:
        text = as_table(sheet, held, advice, heading)
    sys.stdout.write(text)
    return 0
