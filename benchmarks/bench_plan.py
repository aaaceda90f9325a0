"""perfgraph plan's default space for one model (≥ 1,000,000 candidates), timed in-process.

Run: python3 benchmarks/bench_plan.py [--repeats R] [--jobs N]. Each repeat times the search
on 1 worker and on N (default: the cores), alternating in the same run, wall clock and CPU
time (all threads), with the load (os.getloadavg) before each; the answers must be the same.
States candidates/s beside aiconfigurator's ~5.7 s to estimate one configuration (measured on
this project's machine).

The space is cut into boxes of ~131,072 candidates evaluated as N-D grids (a cell computed
once per combination of the axes it reads) on a thread pool; the parts join in row order, so
any --jobs gives the same answer bit for bit. Without a free core, --jobs 1 is faster.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perfgraph.scenario.loading import ScenarioSpec  # noqa: E402
from perfgraph.whatif import plan_report
from perfgraph.whatif import plan_search as plan  # noqa: E402

AICONFIGURATOR_S_PER_CONFIG = 5.7


def timed(spec: ScenarioSpec, q: plan.Question, jobs: int) -> tuple[plan.Result, float, float]:
    start, cpu = time.perf_counter(), time.process_time()
    result = plan.run(spec, q, jobs=jobs)
    return result, time.perf_counter() - start, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=plan.jobs_default())
    args = parser.parse_args()
    spec = ScenarioSpec(model="llama-3.3-70b", workload="chat-1k1k")
    q = plan.question(spec, ["ttft=1s", "itl=50ms"], "20 request/s")
    plan.run(spec, q, ["hardware=h200", "concurrency=1,2"])  # warm: Pint, sheets
    print(f"perfgraph plan, default space; 1 worker against {args.jobs} "
          f"(os.cpu_count() {os.cpu_count()}), alternating")
    walls: dict[int, list[float]] = {1: [], args.jobs: []}
    answers = []
    for k in range(args.repeats):
        for jobs in (1, args.jobs) if k % 2 == 0 else (args.jobs, 1):
            load = os.getloadavg()[0]
            result, wall, cpu = timed(spec, q, jobs)
            walls[jobs].append(wall)
            answers.append(plan_report.answer(result, 5))
            print(f"  repeat {k + 1}, {jobs} worker{'s' * (jobs > 1)} (load {load:.2f}): "
                  f"{result.searched:,} candidates ({result.feasible:,} feasible) in "
                  f"{wall:.2f} s wall, {cpu:.2f} s CPU: {result.searched / wall:,.0f} "
                  f"candidates/s")
    assert all(a == answers[0] for a in answers), "the answer changed with the workers"
    one, many = min(walls[1]), min(walls[args.jobs])
    rate = result.searched / many
    print(f"best wall: 1 worker {one:.2f} s, {args.jobs} workers {many:.2f} s "
          f"({one / many:.2f}× faster); {rate:,.0f} candidates/s. aiconfigurator: "
          f"{AICONFIGURATOR_S_PER_CONFIG} s for one configuration (in that time, "
          f"{rate * AICONFIGURATOR_S_PER_CONFIG:,.0f} candidates here); the same answer "
          f"every time")


if __name__ == "__main__":
    main()
