"""No measured run beats the ceiling: every run in every file of tests/data/measured, held
against the roofline at its own configuration, reaches at most 100% of possible on every metric
(throughput: measured ÷ roofline ≤ 1; TTFT, TPOT, E2EL: roofline ÷ measured ≤ 1).

Files whose model, hardware or precision the file does not name get them from OPTIONS (what
PROVENANCE.md says of them); runs that cannot be modelled (a model or GPU not yet in the
catalog) are not compared and not counted here. Issue 11 — until the physics and catalog fixes
land (capacities in GiB, MoE bytes per step, MLA FLOPs, EP, speculation), some runs beat it: the
test is xfail(strict=False) and names the offenders in its failure message.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from perfgraph.measured.adapters import MeasuredFileError, UnknownFormatError, read_runs
from perfgraph.measured.compare import METRICS, compare_runs
from perfgraph.measured.setup import Baseline
from perfgraph.scenario.loading import ScenarioSpec

DATA = Path(__file__).parent / "data" / "measured"
SKIP = ("bad", "synthetic")  # made-up or malformed files, not measurements
#: folder → what the files do not say (PROVENANCE.md)
OPTIONS = {
    "sglang_h200_datacrunch": ScenarioSpec(model="llama-3.3-70b", hardware="h200",
                                           precision="bf16", sets=(("tp", "4"),)),
    "gpu_conc_h100_pcie": ScenarioSpec(model="gpt-oss-20b", hardware="h100-pcie",
                                       sets=(("tp", "1"),)),
    "inferencex_dsr1": ScenarioSpec(model="deepseek-v3"),  # DeepSeek-R1-0528: V3's architecture
    "a100_vllm_llama33_70b": ScenarioSpec(precision="bf16"),
    "inferencemax_llama70b_fp8": ScenarioSpec(model="llama-3.3-70b"),
}


def _files() -> list[Path]:
    return sorted(p for p in DATA.rglob("*") if p.is_file() and p.suffix in
                  (".json", ".jsonl", ".csv") and p.relative_to(DATA).parts[0] not in SKIP)


def _offenders() -> tuple[list[str], int]:
    offenders, compared = [], 0
    for path in _files():
        try:
            runs = read_runs(path).runs
        except (MeasuredFileError, UnknownFormatError):
            continue  # refused whole with a reason (tests/test_adapters.py holds that)
        folder = path.relative_to(DATA).parts[0]
        base = Baseline.from_spec(OPTIONS.get(folder, ScenarioSpec()))
        for c in compare_runs(runs, base):
            if c.error is not None:
                continue
            compared += 1
            for name in METRICS:
                m = c.metric(name)
                if m is not None and m.possible is not None and m.possible > 1 + 1e-9:
                    offenders.append(f"{path.relative_to(DATA)} #{c.run.index} {c.run.label}: "
                                     f"{name} {m.possible:.0%} of possible")
    return offenders, compared


#: the runs that beat it on the adapters branch (issue 11; --runxfail shows the current list)
OFFENDERS_ON_BRANCH = (
    "gpu_conc_h100_pcie/benchmark_summary_20250811_091131.json #1 (conc 4: throughput 110%, "
    "E2EL 109%) and #2 (conc 8: throughput 119%, E2EL 117%): gpt-oss-20b counted at 1 B a "
    "parameter, its MXFP4 experts and MoE bytes per step not modelled",
    "inferencex_dsr1/benchmarks.json #11 (trt fp8 MTP H200 TP8 conc 16: TPOT 114%, E2EL 112%, "
    "throughput 109%): MTP emits several tokens a step",
    "inferencex_dsr1/benchmarks.json #25 (dynamo-sglang fp8 H200 disaggregated conc 32: TPOT "
    "114%, E2EL 106%): decode pool modelled as one aggregated replica, EP/DP-attention absent",
)


@pytest.mark.xfail(strict=False, reason="issue 11, until the physics and catalog fixes land: "
                   + "; ".join(OFFENDERS_ON_BRANCH))
def test_no_measured_run_beats_the_ceiling():
    offenders, compared = _offenders()
    assert compared > 50, f"only {compared} runs compared: the walk lost files"
    assert not offenders, f"{len(offenders)} of {compared} runs' metrics beat the ceiling:\n" + \
        "\n".join(offenders)
