"""The scenario options every command shares, and turning them into a loaded scenario."""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Iterable

from perfgraph.errors import InputError
from perfgraph.scenario.loading import (
    DEFAULT_ENGINE,
    DEFAULTS,
    Scenario,
    ScenarioSpec,
    engine_names,
    load,
    parse_set,
    precisions,
)

FORMATS = ("table", "json", "csv", "markdown")


def add_scenario_options(parser: argparse.ArgumentParser, *, positional: bool = True) -> None:
    if positional:
        parser.add_argument("scenario", nargs="?", metavar="SCENARIO.toml",
                            help="a scenario file (default: the built-in default scenario)")
    group = parser.add_argument_group("scenario")
    group.add_argument("--model", "-m", help="model catalog name or TOML path")
    group.add_argument("--hardware", "-H", help="hardware catalog name or TOML path")
    group.add_argument("--workload", "-w", help="workload catalog name or TOML path")
    group.add_argument("--precision", "-p",
                       help=f"{_listed(list(precisions().data))} (default: {DEFAULTS['precision']};"
                            " the hardware's table must have it)")
    group.add_argument("--engine", "-e",
                       help="serving engine whose memory rule and scheduling defaults apply: "
                            f"{_listed(engine_names())} (default: {DEFAULT_ENGINE})")
    group.add_argument("--set", "-s", dest="sets", action="append", default=[],
                       metavar="NAME=VALUE",
                       help="set an input or pin any cell to a value ('4.8 TB/s') or a "
                            "formula ('floor(max_concurrency_paged)'); repeatable")
    group.add_argument("--calibration", metavar="FILE|auto",
                       help="a calibration overlay (efficiency inputs fitted to measured runs "
                            "by 'perfgraph calibrate'), applied after the precision; 'auto': "
                            "the shipped profile for the hardware and engine")


#: What ``--force`` means, the same in every command that has it.
FORCE_HELP = ("let --out replace a file perfgraph otherwise keeps: one this command read, or "
              "an entry of the catalog (models/, hardware/, workloads/)")


def _listed(names: list[str]) -> str:
    """``a, b or c``: the names a catalog has, as help lists them."""
    return ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else "".join(names)


def add_force_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--force", action="store_true", help=FORCE_HELP)


def distinct_outputs(outputs: Iterable[tuple[str, str | None]],
                     inputs: Iterable[tuple[str, str | None]], *, force: bool = False) -> None:
    """Refuse, before any work, two outputs that name one file, or an output that names an
    input (unless ``force``); paths are compared resolved, so ``./x`` and a symlink to ``x``
    are ``x``. A device or FIFO (``/dev/null``, ``/dev/stdout``) may be named by any."""
    read = {os.path.realpath(path): flag for flag, path in inputs
            if path and _regular_or_absent(path)}
    written: dict[str, str] = {}
    for flag, path in outputs:
        if not path or not _regular_or_absent(path):
            continue
        key = os.path.realpath(path)
        if key in written:
            raise InputError(f"{path} is also the {written[key]} file: give each its own file",
                             name=flag)
        if key in read and not force:
            raise InputError(f"{path} is also the {read[key]} file this command reads; give "
                             "another file, or --force to replace it", name=flag)
        written[key] = flag


#: Help for ``--measured`` where a positional scenario may follow it.
MEASURED_HELP = ("measured benchmark results (.json, .jsonl, .csv files or folders, as for "
                 "'perfgraph compare'); a scenario .toml after them is still the scenario")


def scenario_after_measured(args: argparse.Namespace, positional: str = "scenario",
                            source: str = "measured") -> None:
    """Give to ``positional`` a scenario .toml that the list of measured runs ``source``
    took in (``tui --measured runs/ s.toml``, ``compare run.json s.toml``): a measured run
    is never a TOML file. A second scenario is refused, naming both."""
    runs = getattr(args, source)
    tomls = [m for m in runs if m.lower().endswith(".toml")]
    if not tomls:
        return
    setattr(args, source, [m for m in runs if m not in tomls])
    current = getattr(args, positional)
    if isinstance(current, list):
        current.extend(tomls)
        return
    if current is not None or len(tomls) > 1:
        given = [*([current] if current else []), *tomls]
        raise InputError(f"one scenario file at most, got {', '.join(given)} (measured runs "
                         "are .json, .jsonl, .csv or folders)",
                         name="--measured" if source == "measured" else None)
    setattr(args, positional, tomls[0])


def _regular_or_absent(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return True


def add_format_option(parser: argparse.ArgumentParser, formats: tuple[str, ...] = FORMATS,
                      ) -> None:
    parser.add_argument("--format", "-f", choices=formats, default="table",
                        help="output format (default: table)")


def spec_from_args(args: argparse.Namespace) -> ScenarioSpec:
    return ScenarioSpec(
        file=getattr(args, "scenario", None), model=args.model, hardware=args.hardware,
        workload=args.workload, precision=args.precision,
        sets=tuple(parse_set(s) for s in args.sets),
        calibration=getattr(args, "calibration", None), engine=getattr(args, "engine", None))


def load_scenario(args: argparse.Namespace) -> Scenario:
    """The scenario the options name; an engine on hardware it does not run on is one
    warning line on stderr. A warning, not a refusal: the sheet still answers what the engine's
    memory rule and scheduler would give there (a what-if, as a --set of any cell is), but no
    deployment runs that pair; ``plan``, which proposes deployments, leaves such pairs out."""
    scenario = load(spec_from_args(args))
    why = scenario.engine_not_on_hardware
    if why:
        print(f"perfgraph: warning: {why}; the figures are a what-if, not a deployment",
              file=sys.stderr)
    return scenario
