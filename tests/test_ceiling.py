"""No measured run beats the ceiling: every run in every file of tests/data/measured, held
against the roofline at its own configuration, reaches at most 100% of possible on every metric
(throughput: measured ÷ roofline ≤ 1; TTFT, TPOT, E2EL: roofline ÷ measured ≤ 1).

Files whose model, hardware or precision the file does not name get them from OPTIONS (what
PROVENANCE.md says of them); runs that cannot be modelled (a model or GPU not yet in the
catalog) are not compared and not counted here. ``_offenders`` also gives the distribution
that benchmarks/research/ceiling_distribution.py prints.
"""

from __future__ import annotations

from pathlib import Path

from perfgraph.measured.adapters import MeasuredFileError, UnknownFormatError, read_runs
from perfgraph.measured.comparison import METRICS, compare_runs
from perfgraph.measured.open_loop import arrival_slack
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
    # DeepSeek-R1-0528: V3's architecture. The rows do not say the KV-cache dtype: SGLang's
    # default (auto) is BF16, but recipes may pass --kv-cache-dtype fp8_e4m3, and a ceiling
    # must hold for either, so it takes the smaller cache (#31, disaggregated SGLang FP4 MTP
    # on B200, reaches 108% of a BF16-KV ceiling on TPOT: it ran with FP8 KV)
    "inferencex_dsr1": ScenarioSpec(model="deepseek-v3", sets=(("kv_bytes", "1"),)),
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
                # a paced run's throughput is held against the λ × OSL it was offered on
                # average: above it by its Poisson draw alone (arrival_slack) is no beat
                slack = arrival_slack(c.setup.arrivals, c.run.completed) \
                    if name == "throughput" else 0.0
                if m is not None and m.possible is not None and m.possible > 1 + slack + 1e-9:
                    offenders.append(f"{path.relative_to(DATA)} #{c.run.index} {c.run.label}: "
                                     f"{name} {m.possible:.0%} of possible")
    return offenders, compared


#: Before the true capacities, group precisions (gpt-oss's MXFP4 experts), MoE bytes per step,
#: EP/DP attention and the disaggregated pools landed (issue 11), four runs beat the ceiling:
#: gpu_conc H100 PCIe gpt-oss-20b at conc 4 and 8 (throughput 110%, 119%), InferenceX #11
#: (TensorRT-LLM MTP on H200, TPOT 114%) and #25 (disaggregated SGLang on H200, TPOT 114%).


def test_no_measured_run_beats_the_ceiling():
    offenders, compared = _offenders()
    assert compared > 50, f"only {compared} runs compared: the walk lost files"
    assert not offenders, f"{len(offenders)} of {compared} runs' metrics beat the ceiling:\n" + \
        "\n".join(offenders)
