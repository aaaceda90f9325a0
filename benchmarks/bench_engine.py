"""Engine speed: cold `perfgraph eval`, a full evaluation, one edit's recompute.

Run: python3 benchmarks/bench_engine.py  (PYTHONPATH=. … --checkout: time this checkout's
code in the new processes too, not the installed package's; --against DIR: also the
configurations a second of the checkout at DIR, alternating with this one's, in new
processes, so that both face the same load)
Targets: one edit < 1 ms; a full evaluation < 10 ms; `perfgraph eval` < 1 s; ≥ 10,000
configurations a second in-process; cold eval ≤ 3× `import numpy` (its baseline, timed here).
Prints figures, asserts nothing: speed is measured here, not in the tests.

An edit computes nothing: it marks stale what the changed inputs reach, and a read computes
only the stale cells it needs, as closures over floats in canonical units (plans cached per
stale set). A cold `eval` imports neither Pint (unit factors are cached in the user cache
folder), NetworkX nor Polars.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from perfgraph.scenario.loading import load


def best_of(fn: Callable[[], object], repeat: int, number: int) -> tuple[float, float]:
    """(best, median) seconds per call over ``repeat`` rounds of ``number`` calls."""
    rounds = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        rounds.append((time.perf_counter() - start) / number)
    return min(rounds), statistics.median(rounds)


def cold_eval(repeat: int = 7) -> tuple[float, float]:
    """`perfgraph eval` as a user runs it: the installed console script (else ``python -m``),
    from a folder outside the checkout, so the timing is the installed package's."""
    script = Path(sys.executable).with_name("perfgraph")
    command = [str(script)] if script.exists() and "--checkout" not in sys.argv \
        else [sys.executable, "-m", "perfgraph.cli"]  # --checkout: this checkout's code
    times = []
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(repeat):
            start = time.perf_counter()
            subprocess.run([*command, "eval"], check=True, stdout=subprocess.DEVNULL,
                           cwd=folder, env=_checkout_env())
            times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def _checkout_env(root: Path | None = None) -> dict[str, str]:
    """The environment of a new process: with --checkout (or ``root``), this checkout's
    (or ``root``'s) perfgraph first on the path, whatever folder it runs in."""
    env = dict(os.environ)
    if root is not None or "--checkout" in sys.argv:
        env["PYTHONPATH"] = str(root or Path(__file__).resolve().parent.parent)
    return env


def cold_run(argv: list[str], repeat: int = 7) -> float:
    """The best wall time of ``argv`` in a new process, from a folder outside the checkout."""
    times = []
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(repeat):
            start = time.perf_counter()
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, cwd=folder,
                           env=_checkout_env())
            times.append(time.perf_counter() - start)
    return min(times)


#: Configurations of the in-process benchmark: 4 × 4 × 3 × 2 = 96, each four inputs, in
#: grid order (the last varies fastest, so most steps change one or two inputs).
CONFIGS = [{"concurrency": c, "tp": t, "isl": i, "osl": o} for c in (1, 8, 64, 256)
           for t in (1, 2, 4, 8) for i in (512, 1024, 4096) for o in (128, 1024)]
#: The worst case: 96 configurations in which every input changes at every step.
EVERY_INPUT = [{"concurrency": (1, 8, 64, 256)[k % 4], "tp": (1, 2, 4, 8)[(k // 4 + k) % 4],
                "isl": (512, 1024, 4096)[k % 3], "osl": (128, 1024)[k % 2]}
               for k in range(96)]
OUTPUTS = ("itl", "ttft", "throughput")


def configurations_per_second(rounds: int = 7) -> dict[str, float]:
    """Configurations a second, in-process, each setting four inputs and reading three
    outputs: with Sheet.assign (grid order, and every input changing), with one Sheet.set
    per input; best of ``rounds``, by the wall clock and by this process's CPU time (which
    other processes' load disturbs less)."""
    sheet = load().sheet

    def with_assign(config: dict) -> None:
        sheet.assign(config)
        for name in OUTPUTS:
            sheet.magnitude(name)

    def with_set(config: dict) -> None:
        for name, value in config.items():
            sheet.set(name, value)
        for name in OUTPUTS:
            sheet.magnitude(name)

    out = {}
    for label, way, configs in (("assign", with_assign, CONFIGS),
                                ("assign, every input changing", with_assign, EVERY_INPUT),
                                ("set", with_set, CONFIGS)):
        wall = cpu = 0.0
        for _ in range(rounds):
            start, start_cpu = time.perf_counter(), time.process_time()
            for config in configs * 5:
                way(config)
            wall = max(wall, len(configs) * 5 / (time.perf_counter() - start))
            cpu = max(cpu, len(configs) * 5 / max(time.process_time() - start_cpu, 1e-9))
        out[f"{label} (wall)"], out[f"{label} (CPU)"] = wall, cpu
    return out


def rates_against(other: Path, runs: int = 3) -> tuple[dict[str, float], dict[str, float]]:
    """(this checkout's, ``other``'s) best configurations a second over ``runs`` new
    processes each, alternating, so both see the same load."""
    best: list[dict[str, float]] = [{}, {}]
    for _ in range(runs):
        for i, root in enumerate((Path(__file__).resolve().parent.parent, other)):
            result = subprocess.run([sys.executable, __file__, "--rates"], check=True,
                                    capture_output=True, text=True, env=_checkout_env(root))
            for key, value in json.loads(result.stdout).items():
                best[i][key] = max(best[i].get(key, 0.0), value)
    return best[0], best[1]


def main() -> None:
    sheet = load().sheet
    n_cells = len(sheet.names)
    values = iter(range(1, 10**9))
    full = best_of(sheet.recompute, repeat=7, number=200)

    def edit(name: str, value: object) -> None:
        """An edit, then a read of every cell it reaches (an edit alone computes nothing)."""
        for cell in sheet.set(name, value):
            sheet.raw(cell)

    edit_input = best_of(lambda: edit("concurrency", next(values) % 512 + 1), 7, 2000)
    edit_leafish = best_of(lambda: edit("spec_alpha", (next(values) % 9 + 1) / 10), 7,
                           2000)
    pin = best_of(lambda: edit("decode_step_time", f"{next(values) % 50 + 1} ms"), 7, 500)
    load_time = best_of(load, repeat=5, number=5)
    cold = cold_eval()
    numpy = cold_run([sys.executable, "-c", "import numpy"])
    rates = configurations_per_second()
    rows = [
        ("cells in the default sheet", f"{n_cells}", ""),
        ("full evaluation (Sheet.recompute)", f"{full[0] * 1e3:.3f} ms",
         f"median {full[1] * 1e3:.3f} ms; target < 10 ms"),
        ("one edit, then read what it reaches: concurrency (most of the sheet)",
         f"{edit_input[0] * 1e6:.1f} µs", f"median {edit_input[1] * 1e6:.1f} µs; target < 1 ms"),
        ("the same: spec_alpha (a few cells below it)", f"{edit_leafish[0] * 1e6:.1f} µs",
         f"median {edit_leafish[1] * 1e6:.1f} µs"),
        ("the same: pin decode_step_time to a value (rewires the graph)", f"{pin[0] * 1e6:.1f} µs",
         f"median {pin[1] * 1e6:.1f} µs"),
        ("load the default scenario (parse TOML, build, check, evaluate)",
         f"{load_time[0] * 1e3:.1f} ms", f"median {load_time[1] * 1e3:.1f} ms"),
        ("cold `perfgraph eval` (new process)", f"{cold[0] * 1e3:.0f} ms",
         f"median {cold[1] * 1e3:.0f} ms; target < 1 s"),
        ("`python -c 'import numpy'` (new process, same interpreter)", f"{numpy * 1e3:.0f} ms",
         f"cold eval / import numpy = {cold[0] / numpy:.2f}x; target ≤ 3x"),
        *((f"configurations in-process, {label}", f"{rate:,.0f}/s", "target ≥ 10,000/s")
          for label, rate in rates.items()),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"python {sys.version.split()[0]}")
    for what, best, note in rows:
        print(f"{what:<{width}}  {best:>12}  {note}")
    if "--against" in sys.argv:
        other = Path(sys.argv[sys.argv.index("--against") + 1]).resolve()
        mine, theirs = rates_against(other)
        print(f"configurations a second, this checkout against {other}, alternating:")
        for key in mine:
            print(f"  {key:<36} {mine[key]:>9,.0f}/s  {theirs.get(key, 0):>9,.0f}/s  "
                  f"{mine[key] / max(theirs.get(key, 0), 1e-9):.1f}x")


if __name__ == "__main__":
    if "--rates" in sys.argv:  # one measurement, for rates_against
        print(json.dumps(configurations_per_second(rounds=5)))
    else:
        main()
