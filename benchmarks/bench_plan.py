"""perfgraph plan's default space for one model (≥ 1,000,000 candidates), timed in-process.

Run: python3 benchmarks/bench_plan.py. States candidates/s beside aiconfigurator's ~5.7 s to
estimate one configuration (issue 13's figure, measured on this project's machine).
"""

from __future__ import annotations

import time

from perfgraph.scenario.loading import ScenarioSpec
from perfgraph.whatif import plan

AICONFIGURATOR_S_PER_CONFIG = 5.7


def main() -> None:
    spec = ScenarioSpec(model="llama-3.3-70b", workload="chat-1k1k")
    q = plan.question(spec, ["ttft=1s", "itl=50ms"], "20 request/s")
    plan.run(spec, q, ["hardware=h200", "concurrency=1,2"])  # warm: Pint, sheets
    start, cpu = time.perf_counter(), time.process_time()
    result = plan.run(spec, q)
    took, cpu = time.perf_counter() - start, time.process_time() - cpu
    rate = result.searched / took
    print(f"searched {result.searched:,} candidates ({result.feasible:,} feasible) in "
          f"{took:.2f} s ({cpu:.2f} s of CPU): {rate:,.0f} candidates/s; aiconfigurator: "
          f"{AICONFIGURATOR_S_PER_CONFIG} s for one ({rate * AICONFIGURATOR_S_PER_CONFIG:,.0f}× "
          f"as many candidates in that time)")


if __name__ == "__main__":
    main()
