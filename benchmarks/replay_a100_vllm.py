"""Replay the A100 vLLM runs (Llama-3.3-70B BF16, 8 × A100-SXM4-40GB; Poisson 1, 4, 16
request/s and a burst of 200) as ``perfgraph simulate --lengths FILE`` and hold the
simulated median and p99 TTFT and TPOT against what each run measured.

Run: PYTHONPATH=. python3 benchmarks/replay_a100_vllm.py [--calibrated]
Data: /work/shared/measured/a100_vllm_llama33_70b (see its PROVENANCE.md). The 40 GB part
is the 80 GB catalog entry with its capacity and bandwidth set (datasheet: 40 GB HBM2,
1,555 GB/s). vLLM's defaults stand in for what the logs do not show: max_num_seqs 256,
block 16, max_num_batched_tokens 2048 (the PP runs' logs say so). Arrivals are redrawn
at each run's rate (the JSONs keep lengths, not send times), so a 200-request run's
percentiles carry sampling noise of their own. Prints a Markdown table; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from perfgraph.scenario.loading import ScenarioSpec, load, parse_set
from perfgraph.whatif.simulate import Setup, simulate
from perfgraph.whatif.simulate.summary import summarise

ROOT = Path("/work/shared/measured/a100_vllm_llama33_70b")
RUNS = {"01_tp8_pp1": ("tp8_pp1", ["tp=8", "pp=1"]),
        "03_tp4_pp2_IB": ("tp4_pp2", ["tp=4", "pp=2", "microbatches=2"])}
A100_40GB = ["hbm_capacity=40 GB", "hbm_bandwidth=1.555 TB/s", "concurrency=256",
             "block_size=16", "max_context=4096"]
#: Share of a ShareGPT prompt (mean 213 tokens) in full 16-token blocks: ~8 tokens recomputed
PREFIX_HIT = 1 - 8 / 213


def _path(folder: str, tag: str, qps: str) -> Path:
    name = f"serving_meta-llama-Llama-3.3-70B-Instruct_{tag}_sharegpt_qps_{qps}.json"
    return ROOT / folder / name


def _latency(sheet, path: Path) -> dict:  # noqa: ANN001
    run = simulate(sheet, Setup(lengths=str(path), token_budget=2048, seed=0))
    return summarise(run, sheet)["latency"]


def fit(sheet, path: Path) -> dict[str, float]:  # noqa: ANN001
    """Fit bandwidth_efficiency to the run's median TPOT and compute_efficiency to its
    median TTFT (each step time scales as 1 / efficiency on its side of the roofline)."""
    measured = json.loads(path.read_text())
    for _ in range(3):
        s = _latency(sheet, path)
        for cell, metric in (("bandwidth_efficiency", "tpot"), ("compute_efficiency", "ttft")):
            ratio = s[metric][1]["p50"] / measured[f"median_{metric}_ms"]
            sheet.set(cell, min(1.0, max(0.02, sheet.magnitude(cell) * ratio)))
    return {c: sheet.magnitude(c) for c in ("bandwidth_efficiency", "compute_efficiency")}


def replay(folder: str, tag: str, sets: list[str], calibrated: bool) -> list[str]:
    spec = ScenarioSpec(model="llama-3.3-70b", hardware="a100-80gb", precision="bf16",
                        sets=tuple(parse_set(s) for s in [*A100_40GB, *sets]))
    sheet = load(spec).sheet
    rows = []
    if calibrated:
        fitted = fit(sheet, _path(folder, tag, "01"))
        rows.append(f"| {folder} | fitted on 01: " + ", ".join(
            f"{k} {v:.3f}" for k, v in fitted.items()) + " | | | | |")
    for qps in ("01", "04", "16", "inf"):
        path = _path(folder, tag, qps)
        measured = json.loads(path.read_text())
        # the client sends the same 200 ShareGPT prompts every run and the server keeps
        # prefix caching on: after the first run (01) every full 16-token block is cached
        sheet.set("prefix_hit_rate", 0 if qps == "01" else PREFIX_HIT)
        s = _latency(sheet, path)
        cells = []
        for metric in ("ttft", "tpot"):
            for stat, key in (("p50", "median"), ("p99", "p99")):
                sim, meas = s[metric][1][stat], measured[f"{key}_{metric}_ms"]
                cells.append(f"{sim:.1f} / {meas:.1f} ({100 * (sim / meas - 1):+.0f}%)")
        rows.append(f"| {folder} | {qps} | " + " | ".join(cells) + " |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calibrated", action="store_true",
                        help="fit the efficiencies on each config's 01 run first")
    args = parser.parse_args()
    print("| run | rate | TTFT p50 sim / meas | TTFT p99 | TPOT p50 | TPOT p99 |")
    print("|---|---|---:|---:|---:|---:|")
    for folder, (tag, sets) in RUNS.items():
        for row in replay(folder, tag, sets, args.calibrated):
            print(row)


if __name__ == "__main__":
    main()
