"""The distribution of "% of possible" over every measured run the project ships.

    python3 benchmarks/research/ceiling_distribution.py

For each folder of tests/data/measured, the throughput and TPOT of each compared run as a
share of its roofline ceiling (at the run's own configuration): min, median, p90, max. No
run may exceed 100% (tests/test_ceiling.py holds that); a ceiling made safe by inflating it
would put the best-tuned runs far below 100%, so the top of each distribution is the figure
to read. The files and the options they need are tests/test_ceiling.py's.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from perfgraph.errors import MeasuredFileError  # noqa: E402
from perfgraph.measured.adapters import read_runs  # noqa: E402
from perfgraph.measured.comparison import compare_runs  # noqa: E402
from perfgraph.measured.setup import Baseline  # noqa: E402
from perfgraph.scenario import ScenarioSpec  # noqa: E402
from tests.test_ceiling import DATA, OPTIONS, _files  # noqa: E402


def shares() -> dict[str, dict[str, list[float]]]:
    out: dict[str, dict[str, list[float]]] = {}
    for path in _files():
        try:
            runs = read_runs(path).runs
        except MeasuredFileError:
            continue
        folder = path.relative_to(DATA).parts[0]
        base = Baseline.from_spec(OPTIONS.get(folder, ScenarioSpec()))
        for c in compare_runs(runs, base, levers=False):
            for metric in ("throughput", "tpot"):
                m = c.metric(metric) if c.error is None else None
                if m is not None and m.possible is not None:
                    out.setdefault(folder, {}).setdefault(metric, []).append(m.possible)
    return out


def main() -> int:
    print("| runs of | metric | runs | min | median | p90 | max |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for folder, metrics in sorted(shares().items()):
        for metric, values in metrics.items():
            v = np.array(values) * 100
            print(f"| {folder} | {metric} | {v.size} | {v.min():.0f}% | {np.median(v):.0f}% | "
                  f"{np.percentile(v, 90):.0f}% | {v.max():.0f}% |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
