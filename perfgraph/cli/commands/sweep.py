"""``perfgraph sweep``: the cartesian product of axes, one row per point, to Parquet or CSV."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TextIO

from perfgraph.cli.options import add_force_option, add_scenario_options, spec_from_args
from perfgraph.engine.numbers import number
from perfgraph.output import parquet as export
from perfgraph.output import sweep_file
from perfgraph.whatif import sweep_axes as sweep

FORMATS = ("parquet", "csv")

EPILOG = """\
axes:
  NAME=V1,V2,…        a cell's values, in its declared unit or with units ("4.8 TB/s")
  NAME=1..512:x2      a range: 1, 2, 4 … 512 (×FACTOR), 0..64:+16 (+STEP), 1..8 (step 1)
  hardware=h100-sxm,h200   model=…, workload=…, precision=…, engine=…: catalog names
The product of the axes may have at most {limit:,} points. Each row has the catalog
choices (model, hardware, workload, precision, engine), then every cell, named as in the
vocabulary, in its declared unit (NaN where the cell fails); the units are in the Parquet
metadata under "perfgraph.units".
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        description="Evaluate a scenario at every point of the cartesian product of the "
                    "axes; write one row per point with every cell as a column.",
        epilog=EPILOG.format(limit=sweep.MAX_POINTS),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_scenario_options(p)
    p.add_argument("--axis", "-a", action="append", default=[], required=True,
                   metavar="NAME=VALUES", help="an axis to sweep (repeatable)")
    p.add_argument("--out", "-o", metavar="FILE.parquet",
                   help="write here: Parquet, or CSV for a .csv file (default: CSV on "
                        "stdout)")
    p.add_argument("--format", "-f", choices=FORMATS, default=None,
                   help="parquet or csv (default: from --out's suffix; Parquet for a file "
                        "of any other name, CSV on stdout)")
    add_force_option(p)
    p.add_argument("--only", metavar="NAME[,NAME…]",
                   help="write only these cells (comma-separated; default: every cell)")
    p.set_defaults(func=run)


class ProgressBar:
    """A one-line bar on a terminal, drawn once the sweep has run for a moment."""

    WIDTH = 30

    def __init__(self, total: int, stream: TextIO, delay: float = 0.5) -> None:
        self.total, self.stream, self.delay = total, stream, delay
        self.done = 0
        self.start = time.monotonic()
        self.drawn_at = 0.0

    def __call__(self, rows: int) -> None:
        self.done += rows
        now = time.monotonic()
        if now - self.start < self.delay or (now - self.drawn_at < 0.1
                                             and self.done < self.total):
            return
        self.drawn_at = now
        filled = self.WIDTH * self.done // max(self.total, 1)
        bar = "█" * filled + "·" * (self.WIDTH - filled)
        self.stream.write(f"\r{bar} {self.done:,}/{self.total:,} points "
                          f"{number(now - self.start, 3)} s")
        self.stream.flush()

    def close(self) -> None:
        if self.drawn_at:
            self.stream.write("\n")
            self.stream.flush()


def run(args: argparse.Namespace) -> int:
    fmt = export.output_format(args.out, args.format, FORMATS, "csv", "parquet")
    spec = spec_from_args(args)
    plan = sweep.plan(spec, args.axis)
    only = [n.strip() for n in args.only.split(",") if n.strip()] if args.only else None
    if args.out is None:
        sweep_file.write_csv(plan, sys.stdout, only)
        return 0
    if fmt == "csv":
        sweep_file.write_csv_file(plan, args.out, only)
        print(f"wrote {plan.points:,} rows to {args.out}", file=sys.stderr)
        return 0
    bar = ProgressBar(plan.points, sys.stderr) if sys.stderr.isatty() else None
    try:
        written = sweep_file.write(plan, args.out, only, bar)
    finally:
        if bar is not None:
            bar.close()
    print(f"wrote {plan.points:,} rows × {len(written) + len(sweep.CATALOG_AXES)} columns "
          f"to {args.out}", file=sys.stderr)
    return 0
