"""plan held to p99 SLOs with 200 candidates simulated, against the same simulations run one
after another in this process (the baseline, measured in the same run).

Run: python3 benchmarks/bench_plan_percentiles.py [--candidates N] [--requests N] [--jobs N].
Prints the whole plan's wall time (the analytic search, then N simulations of N requests on a
process pool of --jobs workers, default the cores) and the serial sum of the same N
simulations, and their ratio, with the CPU seconds each used (on a shared machine the wall
times move with the load; the CPU seconds do not). Target: 200 candidates in ≤ 60 s on 2
cores, the pool faster than serial.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perfgraph.cli.commands.plan import best_spec  # noqa: E402
from perfgraph.scenario.loading import ScenarioSpec, load  # noqa: E402
from perfgraph.whatif import plan_percentiles as pp  # noqa: E402
from perfgraph.whatif import plan_search as plan  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=200)
    parser.add_argument("--requests", type=int, default=pp.DEFAULT_REQUESTS)
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args()
    spec = ScenarioSpec(model="llama-3.3-70b", workload="chat-1k1k")
    texts = ["ttft.p99=3s", "itl.p99=60ms"]
    plain, percentile = pp.split_slos(texts)
    q = plan.question(spec, pp.analytic_texts(plain, percentile), "20 request/s")
    slos = pp.percentile_slos(percentile, load(spec).sheet)
    start = time.perf_counter()
    result = plan.run(spec, q)
    searched = time.perf_counter() - start
    start, cpu = time.perf_counter(), _cpu()
    held = pp.hold_plan(result, slos, lambda i: best_spec(result, i, None), args.requests,
                        args.candidates, workers=args.jobs)  # what plan itself runs
    pool_s, pool_cpu = time.perf_counter() - start, _cpu() - cpu
    jobs, pooled = held.jobs, list(held.outcomes)
    start, cpu = time.perf_counter(), _cpu()
    serial = pp.run_jobs(jobs, slos, workers=1)
    serial_s, serial_cpu = time.perf_counter() - start, _cpu() - cpu
    assert pooled == serial, "the pool and one process disagree"
    met = sum(o.meets for o in pooled)
    print(f"plan, {len(jobs)} candidates × {args.requests} requests, {args.jobs} workers "
          f"(load {os.getloadavg()[0]:.2f}): search {searched:.1f} s + simulations "
          f"{pool_s:.1f} s ({pool_cpu:.1f} CPU s) = {searched + pool_s:.1f} s; {met} meet the SLOs")
    print(f"  baseline, the same simulations one after another: {serial_s:.1f} s "
          f"({serial_cpu:.1f} CPU s) (pool / serial = {pool_s / serial_s:.2f})")


def _cpu() -> float:
    """CPU seconds this process and its ended workers have used."""
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))


if __name__ == "__main__":
    main()
