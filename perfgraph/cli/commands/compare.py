"""``perfgraph compare RUN…``: measured benchmark runs held against the model's roofline."""

from __future__ import annotations

import argparse
import sys

from perfgraph._infra.atomic import write_text_atomic
from perfgraph._infra.inputfile import not_a_file
from perfgraph.cli.options import (
    add_force_option,
    add_scenario_options,
    scenario_after_measured,
    spec_from_args,
)
from perfgraph.errors import InputError
from perfgraph.measured.comparison import compare_runs
from perfgraph.measured.comparison import reference as held_against
from perfgraph.measured.reading import read_measured
from perfgraph.measured.setup import Baseline
from perfgraph.output.compare_report import (
    as_json,
    as_markdown,
    as_table,
    problem_lines,
    records,
    summary_lines,
)
from perfgraph.output.parquet import write_records

FORMATS = ("table", "markdown", "json", "parquet")


def add_run_options(p: argparse.ArgumentParser) -> None:
    """The measured files and the scenario options for what they do not say."""
    p.add_argument("runs", nargs="+", metavar="RUN",
                   help="measured results: vLLM, SGLang, AIPerf, InferenceMAX files (format "
                        "detected from the content), or folders of them; a SCENARIO.toml "
                        "among them is the scenario, as in every other command")
    p.add_argument("--scenario", metavar="SCENARIO.toml",
                   help="a scenario file for what the runs do not say (or give it among "
                        "the runs)")
    add_scenario_options(p, positional=False)


def check_runs(args: argparse.Namespace, *flags: str) -> None:
    """Before any work: a scenario .toml among the runs becomes the scenario; every run
    path given (``RUN…`` and ``flags``' lists) must be a file or a folder, else the one
    message naming it."""
    scenario_after_measured(args, "scenario", source="runs")
    if not args.runs:
        raise InputError("no measured run given, only the scenario: name the runs' files "
                         "or folders", file=args.scenario)
    for flag, paths in (("RUN", args.runs), *((f, getattr(args, f[2:])) for f in flags)):
        if flag != "RUN" and not paths:
            continue
        for path in paths:
            what = not_a_file(path)
            if what is not None and what != "a folder":
                raise InputError(f"{what} (expected a measured results file or a folder of "
                                 "them)", file=path, name=None if flag == "RUN" else flag)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        description="Compare measured benchmark runs with the roofline at each run's own "
                    "configuration. Model, hardware, precision, TP, ISL/OSL and concurrency "
                    "come from the file; the scenario options fill in only what it does not "
                    "say.")
    add_run_options(p)
    p.add_argument("--format", "-f", choices=FORMATS, default="table",
                   help="output format (default: table); parquet needs --out")
    p.add_argument("--out", "-o", metavar="FILE", help="write to FILE instead of stdout")
    add_force_option(p)
    p.add_argument("--notes", action="store_true",
                   help="table: also print every note the file reader made about each run")
    p.add_argument("--plan", metavar="PLANS.json",
                   help="hold the runs against this plan (plan --format json output): SLO by "
                        "SLO met or missed, and each prediction's error; exit 1 when an SLO is "
                        "missed (formats table, json)")
    p.set_defaults(func=run)


def one_line(text: str) -> str:
    """A (possibly multi-line) message as one line of stderr."""
    return "; ".join(part.strip() for part in text.splitlines() if part.strip())


def run(args: argparse.Namespace) -> int:
    if args.plan is not None:
        from perfgraph.cli.commands import compare_plan

        return compare_plan.run(args)
    if args.format == "parquet" and not args.out:
        raise InputError("--format parquet writes a file: give --out FILE.parquet")
    check_runs(args)
    base = Baseline.from_spec(spec_from_args(args))
    measured = read_measured(args.runs)
    comparisons = compare_runs(measured.runs, base, percentiles=True)
    if args.format == "parquet":
        write_records(args.out, records(comparisons))
    else:
        reference = held_against(comparisons, base)
        text = {"table": lambda: as_table(comparisons, measured, args.notes, reference),
                "markdown": lambda: as_markdown(comparisons, measured, reference),
                "json": lambda: as_json(comparisons, measured)}[args.format]()
        if args.out:
            write_text_atomic(args.out, text)
        else:
            sys.stdout.write(text)
    nothing = not any(c.error is None for c in comparisons)
    if args.out or nothing:  # the problems are not on the screen otherwise
        for line in problem_lines(measured):
            print(f"perfgraph: refused {one_line(line)}", file=sys.stderr)
    if args.out:
        summary = summary_lines(comparisons, measured, held_against(comparisons, base))
        print(f"perfgraph: wrote {args.out}: {summary[0]}", file=sys.stderr)
    if nothing:
        print("perfgraph: error: no run could be compared", file=sys.stderr)
        return 1
    return 0
