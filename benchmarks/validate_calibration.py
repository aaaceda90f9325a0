"""Held-out error of calibration, split by split (issue 12).

    python3 benchmarks/validate_calibration.py            # every split, a Markdown table
    python3 benchmarks/validate_calibration.py --json     # the same as JSON

Each split fits ``perfgraph calibrate`` on some measured files and holds the fit against
others it never saw: fit on one ISL/OSL, test on another of the same GPU and engine; fit on
one GPU, test on another of the same vendor. The error per metric is the median (and the
90th percentile) of |model − measured| / measured over the held-out runs, for the roofline
(the sheet as shipped) and for the calibrated model. The files are the project's own
(tests/data/measured/, provenance in its PROVENANCE.md); the figures go into
benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfgraph.measured.adapters import read_runs  # noqa: E402
from perfgraph.measured.calibrate import Fit, calibrate  # noqa: E402
from perfgraph.measured.setup import Baseline  # noqa: E402
from perfgraph.scenario import ScenarioSpec  # noqa: E402

DATA = ROOT / "tests" / "data" / "measured"
IMAX = DATA / "inferencemax_llama70b_fp8"


@dataclass(frozen=True)
class Split:
    name: str
    kind: str  # "workload" (same GPU and engine) or "gpu" (same vendor)
    fit: tuple[Path, ...]
    held: tuple[Path, ...]
    sets: tuple[tuple[str, str], ...] = ()


#: vLLM's --kv-cache-dtype defaults to "auto": the KV cache stays in the activations' BF16
#: even for FP8 weights (InferenceMAX launches vLLM without --kv-cache-dtype).
VLLM_KV = (("kv_bytes", "2"),)
SPLITS = (
    Split("H100 vLLM: fit 1k/1k, hold 8k/1k", "workload",
          (IMAX / "1k1k" / "H100.json",), (IMAX / "8k1k" / "H100.json",), VLLM_KV),
    Split("H100 vLLM: fit 8k/1k, hold 1k/1k", "workload",
          (IMAX / "8k1k" / "H100.json",), (IMAX / "1k1k" / "H100.json",), VLLM_KV),
    Split("vLLM 1k/1k: fit H100, hold H200", "gpu",
          (IMAX / "1k1k" / "H100.json",), (IMAX / "1k1k" / "H200.json",), VLLM_KV),
    Split("vLLM 1k/1k: fit H200, hold H100", "gpu",
          (IMAX / "1k1k" / "H200.json",), (IMAX / "1k1k" / "H100.json",), VLLM_KV),
)


def run_split(split: Split) -> Fit:
    base = Baseline.from_spec(ScenarioSpec(sets=split.sets))
    fitted = [r for p in split.fit for r in read_runs(p).runs]
    held = [r for p in split.held for r in read_runs(p).runs]
    return calibrate(fitted, base, holdout=held)


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def rows(fits: list[tuple[Split, Fit]]) -> list[dict]:
    out = []
    for split, fit in fits:
        errors = {e.metric: e for e in fit.held_out}
        out.append({"split": split.name, "kind": split.kind, "runs": len(fit.held_out_runs),
                    **{m: {"roofline": e.roofline, "median": e.calibrated,
                           "p90": e.calibrated_p90} for m, e in errors.items()},
                    "notes": list(fit.notes)})
    return out


def markdown(table: list[dict]) -> str:
    lines = ["| split | held-out runs | TTFT | TPOT | throughput |", "|---|---:|---:|---:|---:|"]
    for r in table:
        cells = [f"{_pct(r[m]['median'])} (p90 {_pct(r[m]['p90'])}; roofline "
                 f"{_pct(r[m]['roofline'])})" for m in ("ttft", "tpot", "throughput")]
        lines.append(f"| {r['split']} | {r['runs']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON, not Markdown")
    args = parser.parse_args()
    table = rows([(s, run_split(s)) for s in SPLITS])
    sys.stdout.write(json.dumps(table, indent=2) + "\n" if args.json else markdown(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
