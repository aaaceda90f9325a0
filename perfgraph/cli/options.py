"""The scenario options every command shares, and turning them into a loaded scenario."""

from __future__ import annotations

import argparse

from perfgraph.scenario.loading import Scenario, ScenarioSpec, load, parse_set

FORMATS = ("table", "json", "csv", "markdown")


def add_scenario_options(parser: argparse.ArgumentParser, *, positional: bool = True) -> None:
    if positional:
        parser.add_argument("scenario", nargs="?", metavar="SCENARIO.toml",
                            help="a scenario file (default: the built-in default scenario)")
    group = parser.add_argument_group("scenario")
    group.add_argument("--model", "-m", help="model catalog name or TOML path")
    group.add_argument("--hardware", "-H", help="hardware catalog name or TOML path")
    group.add_argument("--workload", "-w", help="workload catalog name or TOML path")
    group.add_argument("--precision", "-p", help="bf16, fp8, int8 or fp4")
    group.add_argument("--set", "-s", dest="sets", action="append", default=[],
                       metavar="NAME=VALUE",
                       help="set an input or pin any cell to a value ('4.8 TB/s') or a "
                            "formula ('floor(max_concurrency_paged)'); repeatable")
    group.add_argument("--calibration", metavar="FILE|auto",
                       help="a calibration overlay (efficiency inputs fitted to measured runs "
                            "by 'perfgraph calibrate'), applied after the precision; 'auto': "
                            "the shipped profile for the hardware and engine")


def add_format_option(parser: argparse.ArgumentParser, formats: tuple[str, ...] = FORMATS,
                      ) -> None:
    parser.add_argument("--format", "-f", choices=formats, default="table",
                        help="output format (default: table)")


def spec_from_args(args: argparse.Namespace) -> ScenarioSpec:
    return ScenarioSpec(
        file=getattr(args, "scenario", None), model=args.model, hardware=args.hardware,
        workload=args.workload, precision=args.precision,
        sets=tuple(parse_set(s) for s in args.sets),
        calibration=getattr(args, "calibration", None))


def load_scenario(args: argparse.Namespace) -> Scenario:
    return load(spec_from_args(args))
