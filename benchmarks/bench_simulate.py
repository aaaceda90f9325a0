"""Simulation speed: 10,000 requests of 1k in / 1k out at 64 concurrent (~160,000 steps).

Run: python3 benchmarks/bench_simulate.py
Target: ≤ 2 s on 2 cores; cost linear in steps, memory in requests (not tokens).
Prints figures beside the simulated time they cover, and a baseline measured in the same
run: the same steps taken one at a time by the fused step sheet (no runs over columns), so
the ratio says what the event skipping buys; the time to fuse the step sheet once; and the
10,000-request run again with the API server's loop on (``frontend``), against the run
without; again with speculative decoding (k = 3, α = 0.7: a drawn number of tokens a
decode a step); and 10,000 requests over 4 replicas behind a router. Asserts nothing.

Runs of decode-only steps between events are computed over columns in one call; only the
steps that carry a prefill chunk (and runs of 16 steps or fewer) are taken one at a time. Per
request the loop keeps a dozen numbers, per step six, never one per token.
"""

from __future__ import annotations

import resource
import statistics
import time

from perfgraph.scenario.loading import load
from perfgraph.whatif.simulate import Setup, simulate
from perfgraph.whatif.simulate.cluster import simulate_replicas
from perfgraph.whatif.simulate.step_sheet import StepSheet
from perfgraph.whatif.simulate.summary import summarise


def timed(fn, repeat: int = 5) -> tuple[float, float, object]:  # noqa: ANN001
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times), out


def one_at_a_time(model: StepSheet, steps: int) -> float:
    """Baseline: a Python call of the fused step sheet per step, nothing else."""
    t, kv = 0.0, 64 * 1024.0
    for _ in range(steps):
        t += model.time(64, 0, kv, kv)
        kv += 64
    return t


def main() -> None:
    sheet = load().sheet
    rows = []
    for requests in (2_500, 10_000, 40_000):
        best, median, run = timed(lambda n=requests: simulate(sheet, Setup(users=64,
                                                                          requests=n)),
                                  repeat=3 if requests > 10_000 else 5)
        s = summarise(run, sheet)  # type: ignore[arg-type]
        rows.append((requests, s.steps, s.simulated_s, best, median))
        if requests == 10_000:
            summary = timed(lambda r=run: summarise(r, sheet), repeat=5)  # type: ignore[misc]
            steps = s.steps
    fused, _, model = timed(lambda: StepSheet.from_sheet(sheet), repeat=3)
    base, _, _ = timed(lambda: one_at_a_time(model, steps), repeat=3)
    looped = load().sheet  # the API server's loop on: every step also passes through it
    looped.set("frontend_request_time", "1 ms")
    looped.set("frontend_token_time", "0.1 ms/token")
    loop_best, _, loop_run = timed(lambda: simulate(looped, Setup(users=64, requests=10_000)))
    loop_steps = summarise(loop_run, looped).steps  # type: ignore[arg-type]
    spec = load().sheet
    spec.set("spec_k", "3")
    spec.set("spec_alpha", "0.7")
    spec_best, _, spec_run = timed(lambda: simulate(spec, Setup(users=64, requests=10_000)))
    spec_steps = summarise(spec_run, spec).steps  # type: ignore[arg-type]
    print("| requests | steps | simulated | wall (best) | wall (median) | µs / step |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n, st, sim, best, median in rows:
        print(f"| {n:,} | {st:,} | {sim:,.0f} s | {best:.3f} s | {median:.3f} s | "
              f"{best / st * 1e6:.2f} |")
    print(f"\nsummary of the 10,000-request run (percentiles, windows): {summary[0]:.3f} s")
    print(f"fusing the step sheet (once a simulation): {fused:.3f} s")
    print(f"baseline, the fused step sheet called once per step for the same {steps:,} steps: "
          f"{base:.3f} s ({rows[1][3] / base:.2f}× of it for the whole simulation)")
    print(f"with the API server's loop on (1 ms a request, 0.1 ms a token): {loop_steps:,} "
          f"steps in {loop_best:.3f} s best ({loop_best / rows[1][3]:.2f}× the run without, "
          f"{loop_best / loop_steps * 1e6:.2f} µs / step)")
    print(f"with speculative decoding (k = 3, α = 0.7): {spec_steps:,} steps in "
          f"{spec_best:.3f} s best ({spec_best / spec_steps * 1e6:.2f} µs / step)")
    pooled(sheet, rows[1][0] / rows[1][2] if rows[1][2] else 0.0)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


def pooled(sheet, one_rate: float) -> None:  # noqa: ANN001
    """10,000 requests over 4 replicas, open loop at four times one replica's 64-user rate
    (each replica about as busy as the run above): round-robin sends without looking, so
    each engine runs alone; least-outstanding steps every engine to every arrival."""
    rate = 4 * one_rate
    for policy in ("round-robin", "least-outstanding"):
        best, _, run = timed(lambda p=policy: simulate_replicas(
            sheet, Setup(rate=rate, requests=10_000), 4, p), repeat=3)
        steps = summarise(run, sheet).steps  # type: ignore[arg-type]
        print(f"4 replicas, {policy}, {rate:.3g} request/s: {steps:,} steps in {best:.3f} s "
              f"best ({best / steps * 1e6:.2f} µs / step)")


if __name__ == "__main__":
    main()
