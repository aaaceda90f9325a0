"""Replay the A100 vLLM runs (Llama-3.3-70B BF16 on 8 × A100-SXM4-40GB, vLLM 0.8.3; Poisson
1, 4, 16 request/s and a burst of 200) with ``perfgraph calibrate`` fitted on some runs and the
others held out, and hold each run's simulated p50 and p99 TTFT and TPOT (``compare``'s
percentiles: ``perfgraph simulate`` of the run's own requests) against what it measured.

Run: PYTHONPATH=. python3 benchmarks/replay_a100_vllm.py [--fit 01,16] [--roofline]
Data: /work/shared/measured/a100_vllm_llama33_70b (tests/data/measured/PROVENANCE.md). The
runs name their GPU (a100-40gb in the catalog) and, in their .commands files, TP and PP.

What the deployment is, from its logs and manifests (configs_at_58b61c5, lws-run-1.sh):
- TP8: one node, ``--enable-prefix-caching``, vLLM 0.8.3's V1 engine (max_num_batched_tokens
  8192 for the OpenAI server, the engine file's default);
- TP4 × PP2: two nodes, the log says "Falling back to V0" and "Chunked prefill is enabled with
  max_num_batched_tokens=2048"; V0 runs one scheduler per stage (virtual engines), so the
  pipeline is in steady state (``pp_steady_state``, two microbatches);
- prefix caching on in both, and the client sends the same 200 ShareGPT prompts in every run:
  after the first run (01) a prompt's full 16-token blocks are cached (``prefix_hit_rate`` =
  1 − 8/213, all but the last partial block of a mean prompt).

The fit is ``perfgraph.measured.calibrate.calibrate`` on the fitted runs (both
configurations), its overlay written with ``overlay_text`` and loaded as ``--calibration``.
Prints Markdown tables; asserts nothing.
"""

from __future__ import annotations

import argparse
import math
import tempfile
from pathlib import Path

from perfgraph.measured.calibrate import calibrate, overlay_text
from perfgraph.measured.compare import Comparison, compare_runs
from perfgraph.measured.percentiles import Percentiles, Sheets, run_percentiles
from perfgraph.measured.reading import read_measured
from perfgraph.measured.setup import Baseline
from perfgraph.scenario.loading import ScenarioSpec, parse_set

ROOT = Path("/work/shared/measured/a100_vllm_llama33_70b")
CONFIGS = {"01_tp8_pp1": ("tp8_pp1", ["max_num_batched_tokens=8192 token"]),
           "03_tp4_pp2_IB": ("tp4_pp2", ["max_num_batched_tokens=2048 token",
                                         "microbatches=2", "pp_steady_state=true"])}
RATES = ("01", "04", "16", "inf")
#: Share of a ShareGPT prompt (mean 213 tokens) in full 16-token blocks: ~8 tokens recomputed
PREFIX_HIT = 1 - 8 / 213
CELLS = (("ttft", "p50"), ("ttft", "p99"), ("tpot", "p50"), ("tpot", "p99"))


def path(folder: str, tag: str, qps: str) -> Path:
    name = f"serving_meta-llama-Llama-3.3-70B-Instruct_{tag}_sharegpt_qps_{qps}.json"
    return ROOT / folder / name


def base(folder: str, calibration: str | None = None) -> Baseline:
    sets = CONFIGS[folder][1]
    return Baseline.from_spec(ScenarioSpec(precision="bf16", calibration=calibration,
                                           sets=tuple(parse_set(s) for s in sets)))


def comparisons(folder: str, rates: tuple[str, ...], calibration: str | None = None,
                ) -> list[Comparison]:
    tag = CONFIGS[folder][0]
    measured = read_measured([str(path(folder, tag, q)) for q in rates])
    return [c for c in compare_runs(measured.runs, base(folder, calibration), levers=False)
            if c.error is None]


def fitted_overlay(fit_rates: tuple[str, ...], held_rates: tuple[str, ...]) -> tuple[str, str]:
    """calibrate() on the fitted runs of every configuration; the overlay's path and text."""
    fit_runs, held_runs = [], []
    for folder, (tag, _) in CONFIGS.items():
        fit_runs += [path(folder, tag, q) for q in fit_rates]
        held_runs += [path(folder, tag, q) for q in held_rates]
    # one Baseline for the fit: the deployment-specific sets go in per configuration below
    runs = read_measured([str(p) for p in fit_runs]).runs
    held = read_measured([str(p) for p in held_runs]).runs
    fit = calibrate(runs, base_for_fit(), holdout=held)
    text = overlay_text(fit, engine="vllm", engine_version="0.8.3",
                        held_out_note="A100 replay, rates " + ", ".join(held_rates))
    out = Path(tempfile.mkdtemp()) / "a100-40gb.vllm.toml"
    out.write_text(text)
    return str(out), text


def base_for_fit() -> Baseline:
    return Baseline.from_spec(ScenarioSpec(precision="bf16",
                                           sets=(parse_set("pp_steady_state=true"),
                                                 parse_set("microbatches=2"))))


def replayed(c: Comparison, folder: str, qps: str, calibration: str | None) -> Percentiles:
    sheets = Sheets(base(folder, calibration))
    sheet, reference = sheets(c.setup)
    sheet.set("prefix_hit_rate", 0 if qps == "01" else PREFIX_HIT)
    return run_percentiles(c.run, sheet, reference)


def rows(calibration: str | None, held: set[str]) -> tuple[list[str], dict]:
    out, errors = [], {}
    for folder in CONFIGS:
        for c, qps in zip(comparisons(folder, RATES, calibration), RATES, strict=True):
            p = replayed(c, folder, qps, calibration)
            cells = []
            for metric, stat in CELLS:
                sim = p.simulated.get(metric, {}).get(stat)
                meas = p.measured[metric][stat]
                err = p.error_of(metric, stat)
                errors[(folder, qps, metric, stat)] = err
                cells.append("—" if sim is None else
                             f"{sim:.1f} / {meas:.1f} ({100 * err:+.0f}%)")
            role = "held out" if qps in held else "fitted"
            out.append(f"| {folder} | {qps} | {role} | " + " | ".join(cells) + " |")
    return out, errors


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fit", default="01,16", help="rates fitted on (the rest held out)")
    parser.add_argument("--roofline", action="store_true", help="also the roofline table")
    args = parser.parse_args()
    fit_rates = tuple(args.fit.split(","))
    held_rates = tuple(q for q in RATES if q not in fit_rates)
    head = ["| run | rate | role | TTFT p50 sim / meas | TTFT p99 | TPOT p50 | TPOT p99 |",
            "|---|---|---|---:|---:|---:|---:|"]
    if args.roofline:
        print("Roofline:\n")
        print("\n".join(head + rows(None, set(RATES))[0]) + "\n")
    overlay, text = fitted_overlay(fit_rates, held_rates)
    print("Fitted overlay (perfgraph calibrate):\n\n```toml")
    print(text.rstrip() + "\n```\n")
    table, errors = rows(overlay, set(held_rates))
    print("\n".join(head + table) + "\n")
    held = {k: v for k, v in errors.items() if k[1] in held_rates}
    met = sum(1 for v in held.values() if v is not None and abs(v) <= 0.25)
    print(f"held-out cells within 25%: {met} of {len(held)}")
    for folder in CONFIGS:
        mine = [v for k, v in held.items() if k[0] == folder and v is not None]
        print(f"  {folder}: {sum(abs(v) <= 0.25 for v in mine)} of {len(mine)}; median "
              f"|error| {100 * sorted(map(abs, mine))[len(mine) // 2]:.0f}%"
              if mine else f"  {folder}: —")
    worst = max((abs(v), k) for k, v in held.items() if v is not None and math.isfinite(v))
    print(f"worst held-out cell: {worst[1]} at {100 * worst[0]:.0f}%")


if __name__ == "__main__":
    main()
