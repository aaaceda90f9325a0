"""Engine speed: cold `perfgraph eval`, a full evaluation, one edit's recompute.

Run: python3 benchmarks/bench_engine.py
Targets (issue 2): one edit < 1 ms; a full evaluation < 10 ms; `perfgraph eval` < 1 s.
Prints figures, asserts nothing: speed is measured here, not in the tests.
"""

from __future__ import annotations

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
    command = [str(script)] if script.exists() else [sys.executable, "-m", "perfgraph.cli.main"]
    times = []
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(repeat):
            start = time.perf_counter()
            subprocess.run([*command, "eval"], check=True, stdout=subprocess.DEVNULL,
                           cwd=folder)
            times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def main() -> None:
    sheet = load().sheet
    n_cells = len(sheet.names)
    values = iter(range(1, 10**9))
    full = best_of(sheet.recompute, repeat=7, number=200)
    edit_input = best_of(lambda: sheet.set("concurrency", next(values) % 512 + 1), 7, 2000)
    edit_leafish = best_of(lambda: sheet.set("spec_alpha", (next(values) % 9 + 1) / 10), 7,
                           2000)
    pin = best_of(lambda: sheet.set("decode_step_time", f"{next(values) % 50 + 1} ms"), 7, 500)
    load_time = best_of(load, repeat=5, number=5)
    cold = cold_eval()
    rows = [
        ("cells in the default sheet", f"{n_cells}", ""),
        ("full evaluation (Sheet.recompute)", f"{full[0] * 1e3:.3f} ms",
         f"median {full[1] * 1e3:.3f} ms; target < 10 ms"),
        ("one edit: concurrency (most of the sheet below it)",
         f"{edit_input[0] * 1e6:.1f} µs", f"median {edit_input[1] * 1e6:.1f} µs; target < 1 ms"),
        ("one edit: spec_alpha (a few cells below it)", f"{edit_leafish[0] * 1e6:.1f} µs",
         f"median {edit_leafish[1] * 1e6:.1f} µs"),
        ("pin decode_step_time to a value (rewires the graph)", f"{pin[0] * 1e6:.1f} µs",
         f"median {pin[1] * 1e6:.1f} µs"),
        ("load the default scenario (parse TOML, build, check, evaluate)",
         f"{load_time[0] * 1e3:.1f} ms", f"median {load_time[1] * 1e3:.1f} ms"),
        ("cold `perfgraph eval` (new process)", f"{cold[0] * 1e3:.0f} ms",
         f"median {cold[1] * 1e3:.0f} ms; target < 1 s"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"python {sys.version.split()[0]}")
    for what, best, note in rows:
        print(f"{what:<{width}}  {best:>12}  {note}")


if __name__ == "__main__":
    main()
