"""``perfgraph compare --plan plans.json RUN…``: did the measured deployment keep the plan's
promises? Exit 0 when every SLO is met in every run, 1 when one is missed (or no run could be
read), 2 on bad input."""

from __future__ import annotations

import argparse
import json
import sys

from perfgraph._infra.atomic import write_text_atomic
from perfgraph.errors import InputError
from perfgraph.measured import plan_check
from perfgraph.measured.derived import derive_runs
from perfgraph.measured.reading import read_measured
from perfgraph.output import plan_check_report as report

FORMATS = ("table", "json")


def run(args: argparse.Namespace) -> int:
    if args.format not in FORMATS:
        raise InputError(f"compare --plan writes {' or '.join(FORMATS)}, not {args.format}",
                         name="--format")
    promise = plan_check.read_plan(args.plan)
    measured = read_measured(args.runs)
    for p in measured.problems:
        print(f"perfgraph: refused {p.source}: {' '.join(p.reason.split())}", file=sys.stderr)
    if not measured.runs:
        print("perfgraph: error: no run could be read", file=sys.stderr)
        return 1
    checks = [plan_check.check(promise, r) for r in derive_runs(None, measured.runs)]
    text = json.dumps(report.as_json(promise, checks), indent=2) + "\n" \
        if args.format == "json" else report.table(promise, checks)
    if args.out:
        write_text_atomic(args.out, text)
        print(f"perfgraph: wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0 if all(c.all_met for c in checks) else 1
