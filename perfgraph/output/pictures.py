"""``python3 -m perfgraph.output.pictures [FOLDER]``: the README's two charts.

The seed's "Across configurations" throughput and latencies against concurrent users, with
the InferenceMAX Llama 3.3 70B FP8 runs (1k/1k) the repo ships over the model, and the
default scenario's roofline; written (atomically) to ``perfgraph/output/assets/`` or FOLDER,
with the figures ``perfgraph plot`` draws for those commands
(the output layer, so it builds them itself rather than calling the CLI).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from perfgraph.errors import PerfgraphError
from perfgraph.measured.compare import compare_runs
from perfgraph.measured.reading import read_measured
from perfgraph.measured.setup import Baseline
from perfgraph.output import chart_data, charts
from perfgraph.scenario.loading import ScenarioSpec, load

DEFAULT = Path(__file__).resolve().parent / "assets"
MEASURED = Path(__file__).resolve().parents[2] / "tests" / "data" / "measured" / \
    "inferencemax_llama70b_fp8" / "1k1k"


def across() -> charts.Figure:
    """``perfgraph plot concurrency --measured …/1k1k``'s figure."""
    base = Baseline.from_spec(ScenarioSpec())
    runs = compare_runs(read_measured([str(MEASURED)]).runs, base, levers=False)
    return charts.across(chart_data.measured_panels(runs, base, "concurrency"),
                         x="concurrency", title="Measured runs against the model (reference: "
                         f"{base.reference}), against concurrent users")


def roofline() -> charts.Figure:
    """``perfgraph plot roofline``'s figure."""
    scenario = load()
    data = chart_data.roofline(scenario.sheet)
    return charts.roofline(data.roof, data.ridge, data.points,
                           title=f"Roofline: {scenario.title}", x_unit=data.x_unit,
                           y_unit=data.y_unit)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m perfgraph.output.pictures",
                                     description="Write the README's two charts.")
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT,
                        help=f"where to write them (default: {DEFAULT})")
    folder = parser.parse_args(argv).folder
    try:
        for name, build in (("concurrency.svg", across), ("roofline.svg", roofline)):
            charts.save(build(), folder / name)
            print(folder / name)
    except PerfgraphError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
