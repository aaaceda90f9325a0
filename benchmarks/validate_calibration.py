"""Held-out error of calibration, split by split (issue 12).

    python3 benchmarks/validate_calibration.py            # every split, a Markdown table
    python3 benchmarks/validate_calibration.py --json     # the same as JSON
    python3 benchmarks/validate_calibration.py --write-profiles   # refit the shipped profiles

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
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfgraph._infra.atomic import write_text_atomic  # noqa: E402
from perfgraph.measured.adapters import read_runs  # noqa: E402
from perfgraph.measured.calibrate import Fit, MetricError, calibrate, overlay_text  # noqa: E402
from perfgraph.measured.setup import Baseline  # noqa: E402
from perfgraph.scenario import ScenarioSpec  # noqa: E402
from perfgraph.scenario.profiles import PROFILES_DIR  # noqa: E402

#: Relative to the checkout (main() runs there), so profiles name their files portably.
DATA = Path("tests") / "data" / "measured"
IMAX = DATA / "inferencemax_llama70b_fp8"


@dataclass(frozen=True)
class Split:
    name: str
    kind: str  # "workload" (same GPU and engine) or "gpu" (same vendor)
    fit: tuple[Path, ...]
    held: tuple[Path, ...]
    sets: tuple[tuple[str, str], ...] = ()


#: The KV cache's dtype is each engine's rule (engines/*.toml kv_cache_dtype), applied per run
#: by perfgraph.measured.setup: vLLM's --kv-cache-dtype auto keeps it in BF16 for FP8 weights.
SPLITS = (
    Split("H100 vLLM: fit 1k/1k, hold 8k/1k", "workload",
          (IMAX / "1k1k" / "H100.json",), (IMAX / "8k1k" / "H100.json",)),
    Split("H100 vLLM: fit 8k/1k, hold 1k/1k", "workload",
          (IMAX / "8k1k" / "H100.json",), (IMAX / "1k1k" / "H100.json",)),
    Split("vLLM 1k/1k: fit H100, hold H200", "gpu",
          (IMAX / "1k1k" / "H100.json",), (IMAX / "1k1k" / "H200.json",)),
    Split("vLLM 1k/1k: fit H200, hold H100", "gpu",
          (IMAX / "1k1k" / "H200.json",), (IMAX / "1k1k" / "H100.json",)),
)


@dataclass(frozen=True)
class Profile:
    """A shipped profile: fitted on every file of one hardware × engine; its stated held-out
    error is, per metric, the worst median of the splits named (each fitted on part of the
    files and held against the rest)."""

    hardware: str
    engine: str
    engine_version: str
    files: tuple[Path, ...]
    splits: tuple[str, ...]
    sets: tuple[tuple[str, str], ...] = ()


PROFILES = (
    Profile("h100-sxm", "vllm", "vLLM as InferenceMAX ran it (dashboard of 21 Oct 2025)",
            (IMAX / "1k1k" / "H100.json", IMAX / "8k1k" / "H100.json"),
            ("H100 vLLM: fit 1k/1k, hold 8k/1k", "H100 vLLM: fit 8k/1k, hold 1k/1k")),
    Profile("h200", "vllm", "vLLM as InferenceMAX ran it (dashboard of 21 Oct 2025)",
            (IMAX / "1k1k" / "H200.json",), ("vLLM 1k/1k: fit H200, hold H100",)),
)


def write_profile(profile: Profile, split_fits: dict[str, Fit]) -> Path:
    base = Baseline.from_spec(ScenarioSpec(hardware=profile.hardware, sets=profile.sets))
    runs = [r for p in profile.files for r in read_runs(p).runs]
    fit = calibrate(runs, base)
    worst = {}
    for name in profile.splits:
        for e in split_fits[name].held_out:
            if e.calibrated is not None:
                worst[e.metric] = max(worst.get(e.metric, 0.0), e.calibrated)
    held = tuple(MetricError(m, 0, None, v) for m, v in worst.items())
    stated = replace(fit, held_out=held, held_out_runs=())
    text = overlay_text(stated, f"perfgraph eval --hardware {profile.hardware} "
                                "--calibration auto", profile.engine, profile.engine_version,
                        "the worst median of the splits " + "; ".join(profile.splits)
                        + " (benchmarks/validate_calibration.py)")
    path = PROFILES_DIR.relative_to(ROOT) / f"{profile.hardware}.{profile.engine}.toml"
    write_text_atomic(path, text)
    return path


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
    parser.add_argument("--write-profiles", action="store_true",
                        help="also refit the shipped profiles (perfgraph/scenario/profiles/)")
    args = parser.parse_args()
    os.chdir(ROOT)
    fits = [(s, run_split(s)) for s in SPLITS]
    if args.write_profiles:
        by_name = {s.name: f for s, f in fits}
        for profile in PROFILES:
            print(f"wrote {write_profile(profile, by_name)}", file=sys.stderr)
    table = rows(fits)
    sys.stdout.write(json.dumps(table, indent=2) + "\n" if args.json else markdown(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
