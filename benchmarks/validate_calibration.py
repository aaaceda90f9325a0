"""Held-out error of calibration, split by split (issue 12).

    python3 benchmarks/validate_calibration.py            # every split, a Markdown table
    python3 benchmarks/validate_calibration.py --json     # the same as JSON
    python3 benchmarks/validate_calibration.py --write-profiles   # refit the shipped profiles

Each split fits ``perfgraph calibrate`` on some measured files and holds the fit against
others it never saw: fit on one ISL/OSL, test on another of the same GPU and engine; fit on
one GPU, test on another of the same vendor. The InferenceX DeepSeek-R1 rows (``Rows``: one
hardware × engine × precision of the aggregated file) have 2-4 runs an ISL/OSL, so their
workload splits hold one ISL/OSL out and fit the other two; they are modelled with the launch
flags InferenceX's scripts gave them (``HARNESS``), and their precision splits fit the FP8 rows
and hold the FP4 ones. The error per metric is the median (and the
90th percentile) of |model − measured| / measured over the held-out runs, for the roofline
(the sheet as shipped) and for the calibrated model. The files are the project's own
(tests/data/measured/, provenance in its PROVENANCE.md); the figures go into
benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfgraph._infra.atomic import write_text_atomic  # noqa: E402
from perfgraph.measured.adapters import MeasuredRun, read_runs  # noqa: E402
from perfgraph.measured.calibrate import Fit, MetricError, calibrate, overlay_text  # noqa: E402
from perfgraph.measured.compare import Comparison  # noqa: E402
from perfgraph.measured.setup import Baseline  # noqa: E402
from perfgraph.scenario import ScenarioSpec  # noqa: E402
from perfgraph.scenario.profiles import PROFILES_DIR  # noqa: E402

#: Relative to the checkout (main() runs there), so profiles name their files portably.
DATA = Path("tests") / "data" / "measured"
IMAX = DATA / "inferencemax_llama70b_fp8"
#: InferenceX DeepSeek-R1-0528 rows, aggregated and without MTP (PROVENANCE.md)
IX = DATA / "inferencex_dsr1" / "aggregated" / "benchmarks.json"
SHAPES = ((1024, 1024), (8192, 1024), (1024, 8192))

#: InferenceX's launch flags for DeepSeek-R1 FP8, as the cells they set (the runs do not record
#: them; SemiAnalysisAI/InferenceX benchmarks/dsr1_fp8_<gpu>[_trt|_atom].sh at commit
#: 1fc5d73cdd31c7fbdd657f3c7e5ec2180f4b0598; B200 TensorRT-LLM at
#: 0a919c5f81cec20c030d748c813de41c8c415db1).
#: The rows span several dates whose scripts differed; these are the scripts of that commit.
HARNESS: dict[tuple[str, str, str], tuple[tuple[str, str], ...]] = {
    # --kv-cache-dtype fp8_e4m3; --mem-fraction-static 0.82 at TP8, 0.95 at TP4;
    # --chunked-prefill-size 32768 at TP8, 8192 at TP4; --scheduler-recv-interval 30 at TP8
    # from concurrency 16, else 10
    ("b200", "sglang", "fp8"): (("kv_bytes", "1"),
                                ("kv_memory_fraction", "0.95 if tp == 4 else 0.82"),
                                ("max_num_batched_tokens",
                                 "8192 * token if tp == 4 else 32768 * token"),
                                ("scheduler_recv_interval",
                                 "30 if tp == 8 and concurrency >= 16 else 10")),
    # KV dtype auto (BF16, the engine's rule); --mem-fraction-static 0.82;
    # --chunked-prefill-size 32768
    ("h200", "sglang", "fp8"): (("kv_memory_fraction", "0.82"),
                                ("max_num_batched_tokens", "32768 * token")),
    # kv_cache_config dtype fp8 (the engine's rule for an FP8 checkpoint),
    # free_gpu_memory_fraction 0.8 (0.75 at TP4 8k/1k, one row); max_num_tokens 8192 at
    # 1k ISL, ISL + conc + 64 rounded up to 64 at 8k (8.3k: 1.5% more, not modelled)
    ("b200", "trtllm", "fp8"): (("kv_memory_fraction", "0.8"),),
    # kv_cache_config dtype fp8, free_gpu_memory_fraction 0.75
    ("h200", "trtllm", "fp8"): (("kv_memory_fraction", "0.75"),),
    # KV dtype auto (BF16); --mem-fraction-static 0.8; --chunked-prefill-size 196608;
    # --num-continuous-decode-steps 4 (it polls for new requests every 4 decode steps)
    ("mi355x", "sglang", "fp8"): (("kv_memory_fraction", "0.8"),
                                  ("max_num_batched_tokens", "196608 * token"),
                                  ("scheduler_recv_interval", "4")),
    # --kv_cache_dtype fp8; gpu_memory_utilization and the token budget ATOM's defaults
    ("mi355x", "atom", "fp8"): (("kv_bytes", "1"),),
    # FP4 (dsr1_fp4_<gpu>[_trt|_atom].sh, same commit; TensorRT-LLM FP4 at
    # 111f0312c13b4c3cca0dd365f6db4c017048f0d3, ATOM FP4 at
    # c6b96dd0f880da4e11f68d2085e9ababa8d1ba63). B200 SGLang: --kv-cache-dtype fp8_e4m3,
    # --mem-fraction-static 0.85, --chunked-prefill-size 16384,
    # --scheduler-recv-interval 30 from 16 users, else 10
    ("b200", "sglang", "fp4"): (("kv_bytes", "1"), ("kv_memory_fraction", "0.85"),
                                ("max_num_batched_tokens", "16384 * token"),
                                ("scheduler_recv_interval", "30 if concurrency >= 16 else 10")),
    # kv_cache_config dtype fp8, free_gpu_memory_fraction 0.8
    ("b200", "trtllm", "fp4"): (("kv_memory_fraction", "0.8"),),
    # --kv-cache-dtype fp8_e4m3, --mem-fraction-static 0.8, chunks 196608 (32768 at 8k/1k
    # above 32 users), 4 decode steps between polls
    ("mi355x", "sglang", "fp4"): (("kv_bytes", "1"), ("kv_memory_fraction", "0.8"),
                                  ("max_num_batched_tokens", "32768 * token if isl > 4096 * token "
                                   "and concurrency > 32 else 196608 * token"),
                                  ("scheduler_recv_interval", "4")),
    ("mi355x", "atom", "fp4"): (("kv_bytes", "1"),),
}


@dataclass(frozen=True)
class Rows:
    """The InferenceX rows of one hardware × engine × precision (one ISL/OSL, or every one):
    the rule a split or a profile names its runs by. ``sets`` are the launch flags they ran
    with (HARNESS)."""

    hardware: str
    engine: str
    precision: str = "fp8"
    shape: tuple[int, int] | None = None
    path: Path = IX

    @property
    def sets(self) -> tuple[tuple[str, str], ...]:
        return HARNESS.get((self.hardware, self.engine, self.precision), ())

    def runs(self) -> list[MeasuredRun]:
        return [r for r in read_runs(self.path).runs
                if (r.hardware or "").lower() == self.hardware and r.engine == self.engine
                and (r.precision or "").lower() == self.precision
                and (self.shape is None or (r.isl_configured, r.osl_configured) == self.shape)]

    def __str__(self) -> str:
        shape = "every ISL/OSL" if self.shape is None else f"ISL/OSL {_shape(self.shape)}"
        return (f"{self.path}: the {self.hardware} {self.engine} {self.precision} rows, "
                f"{shape}")


Source = Path | Rows


def _runs(sources: tuple[Source, ...]) -> list[MeasuredRun]:
    return [r for s in sources for r in (s.runs() if isinstance(s, Rows) else read_runs(s).runs)]


def _sets(sources: tuple[Source, ...]) -> tuple[tuple[str, str], ...]:
    """The launch flags the sources share (a split's fitted or held-out side is one
    deployment)."""
    flags = {s.sets if isinstance(s, Rows) else () for s in sources}
    if len(flags) != 1:
        raise ValueError(f"sources served with different flags: {sorted(flags)}")
    return flags.pop()


@dataclass(frozen=True)
class Split:
    name: str
    kind: str  # "workload" (same GPU and engine), "gpu" (same vendor) or "precision"
    fit: tuple[Source, ...]
    held: tuple[Source, ...]
    sets: tuple[tuple[str, str], ...] = ()


def _label(rows: Rows) -> str:
    engine = {"sglang": "SGLang", "trtllm": "TensorRT-LLM", "atom": "ATOM"}[rows.engine]
    return f"{rows.hardware.upper()} {engine} {rows.precision.upper()}"


def _shape(shape: tuple[int, int]) -> str:
    return f"{shape[0] // 1024}k/{shape[1] // 1024}k"


def _workload_splits(hardware: str, engine: str) -> tuple[Split, ...]:
    """Hold one ISL/OSL of a hardware × engine out and fit on the other two: the rows have
    2-4 concurrency points per ISL/OSL, and one ISL/OSL's 6-12 values (less the TTFTs of
    runs that queued) do not fix the 9 targets."""
    out = []
    for shape in SHAPES:
        held = Rows(hardware, engine, shape=shape)
        fit = tuple(Rows(hardware, engine, shape=s) for s in SHAPES if s != shape)
        fitted = " + ".join(_shape(s) for s in SHAPES if s != shape)
        out.append(Split(f"{_label(held)}: fit {fitted}, hold {_shape(shape)}", "workload",
                         fit, (held,)))
    return tuple(out)


def _gpu_split(fit: str, held: str, engine: str) -> Split:
    a, b = Rows(fit, engine), Rows(held, engine)
    return Split(f"{_label(a)}: fit {fit.upper()}, hold {held.upper()}", "gpu", (a,), (b,))


#: DeepSeek-R1 FP8 on the InferenceX rows: every hardware × engine with runs at each ISL/OSL
IX_PAIRS = (("b200", "sglang"), ("h200", "sglang"), ("b200", "trtllm"), ("h200", "trtllm"),
            ("mi355x", "sglang"), ("mi355x", "atom"))
IX_GPU_SPLITS = tuple(_gpu_split(f, h, e) for e in ("sglang", "trtllm")
                      for f, h in (("b200", "h200"), ("h200", "b200")))
#: Fit the FP8 rows of a hardware × engine, hold its FP4 rows (each run's precision from the
#: row: FP4 weights and FP4 compute): what the FP8 profile says of FP4, not a profile's split
IX_PRECISION_SPLITS = tuple(
    Split(f"{_label(Rows(h, e)).rsplit(' ', 1)[0]}: fit FP8, hold FP4", "precision", (Rows(h, e),),
          (Rows(h, e, "fp4"),))
    for h, e in (("b200", "sglang"), ("b200", "trtllm"), ("mi355x", "sglang"), ("mi355x", "atom")))


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
    *(s for hardware, engine in IX_PAIRS for s in _workload_splits(hardware, engine)),
    *IX_GPU_SPLITS,
    *IX_PRECISION_SPLITS,
)


@dataclass(frozen=True)
class Profile:
    """A shipped profile: fitted on every file of one hardware × engine; its stated held-out
    error is, per metric, the worst median of the splits named (each fitted on part of the
    files and held against the rest)."""

    hardware: str
    engine: str
    engine_version: str
    files: tuple[Source, ...]
    splits: tuple[str, ...]
    sets: tuple[tuple[str, str], ...] = ()


def _ix_profile(hardware: str, engine: str, version: str) -> Profile:
    """A profile fitted on every FP8 row of one hardware × engine; its held-out error the
    worst of its workload splits and of the GPU split fitted on it."""
    rows = Rows(hardware, engine)
    splits = [s.name for s in _workload_splits(hardware, engine)]
    splits += [s.name for s in IX_GPU_SPLITS if s.fit == (rows,)]
    return Profile(hardware, engine, version, (rows,), tuple(splits))


PROFILES = (
    Profile("h100-sxm", "vllm", "vLLM as InferenceMAX ran it (dashboard of 21 Oct 2025)",
            (IMAX / "1k1k" / "H100.json", IMAX / "8k1k" / "H100.json"),
            ("H100 vLLM: fit 1k/1k, hold 8k/1k", "H100 vLLM: fit 8k/1k, hold 1k/1k")),
    Profile("h200", "vllm", "vLLM as InferenceMAX ran it (dashboard of 21 Oct 2025)",
            (IMAX / "1k1k" / "H200.json",), ("vLLM 1k/1k: fit H200, hold H100",)),
    # engine versions: each row's image (PROVENANCE.md); rows without one say None
    _ix_profile("b200", "sglang", "SGLang v0.5.6-v0.5.12 (lmsysorg/sglang images; InferenceX "
                "rows Nov 2025-May 2026)"),
    _ix_profile("h200", "sglang", "SGLang v0.5.9-v0.5.12 (lmsysorg/sglang cu130 images; "
                "InferenceX rows Mar-May 2026)"),
    _ix_profile("b200", "trtllm", "TensorRT-LLM 1.1.0rc2.post2-1.3.0rc14 (nvcr.io release "
                "images; InferenceX rows Dec 2025-May 2026)"),
    _ix_profile("h200", "trtllm", "TensorRT-LLM 1.1.0rc2.post2-1.3.0rc14 (nvcr.io release "
                "images; InferenceX rows Nov 2025-May 2026)"),
    _ix_profile("mi355x", "sglang", "SGLang v0.5.9-v0.5.12 (lmsysorg/sglang rocm700-mi35x "
                "images; InferenceX rows Mar-May 2026)"),
    _ix_profile("mi355x", "atom", "ATOM 0.1.1 (rocm7.1.1) and the 2026-05-11 build (rocm7.2.3) "
                "(rocm/atom images; InferenceX rows Jan-May 2026)"),
)


def write_profile(profile: Profile, split_fits: dict[str, Fit]) -> Path:
    sets = profile.sets + _sets(profile.files)
    base = Baseline.from_spec(ScenarioSpec(hardware=profile.hardware, sets=sets))
    fit = calibrate(_runs(profile.files), base)
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
    said = [f"# Runs: {s}" for s in profile.files if isinstance(s, Rows)]
    if sets:
        said.append("# Modelled with the launch flags they ran with (benchmarks/"
                    "validate_calibration.py HARNESS): " + ", ".join(f"{c} = {v}" for c, v in sets))
    head, rest = text.split("\n", 2)[:2], text.split("\n", 2)[2]
    text = "\n".join([*head, *said, rest])
    path = PROFILES_DIR.relative_to(ROOT) / f"{profile.hardware}.{profile.engine}.toml"
    write_text_atomic(path, text)
    return path


def run_split(split: Split) -> Fit:
    base = Baseline.from_spec(ScenarioSpec(sets=split.sets + _sets(split.fit)))
    held_base = Baseline.from_spec(ScenarioSpec(sets=split.sets + _sets(split.held)))
    return calibrate(_runs(split.fit), base, holdout=_runs(split.held), held_base=held_base)


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _builds(compared: tuple[Comparison, ...]) -> list[str]:
    """The engine builds of a fit's runs, each its image's tag (``v0.5.12-cu130``; ``?``
    where a row names none), in order of first appearance."""
    tags = [(c.run.engine_build or "?").rsplit(":", 1)[-1] for c in compared]
    return list(dict.fromkeys(tags))


def rows(fits: list[tuple[Split, Fit]]) -> list[dict]:
    out = []
    for split, fit in fits:
        errors = {e.metric: e for e in fit.held_out}
        builds = {"fit": _builds(fit.fitted_runs), "held": _builds(fit.held_out_runs)}
        out.append({"split": split.name, "kind": split.kind, "runs": len(fit.held_out_runs),
                    "builds": builds,
                    **{m: {"roofline": e.roofline, "median": e.calibrated,
                           "p90": e.calibrated_p90} for m, e in errors.items()},
                    "notes": list(fit.notes)})
    return out


def _builds_said(builds: dict[str, list[str]]) -> str:
    """The held-out runs' builds, each the fit did not see marked so (``?``: rows that name
    none): a split across engine versions measures the versions' difference as well as the
    model's."""
    if builds["held"] == ["?"] and builds["fit"] == ["?"]:
        return "—"
    return ", ".join(b if b in builds["fit"] or b == "?" else f"**{b}** (not fitted)"
                     for b in builds["held"])


def markdown(table: list[dict]) -> str:
    lines = ["| split | held-out runs | TTFT | TPOT | throughput | engine builds: held out "
             "(not fitted) |", "|---|---:|---:|---:|---:|---|"]
    for r in table:
        cells = [f"{_pct(r[m]['median'])} (p90 {_pct(r[m]['p90'])}; roofline "
                 f"{_pct(r[m]['roofline'])})" for m in ("ttft", "tpot", "throughput")]
        lines.append(f"| {r['split']} | {r['runs']} | " + " | ".join(cells)
                     + f" | {_builds_said(r['builds'])} |")
    return "\n".join(lines) + "\n"


#: The issue's targets per split kind: the held-out median of |model − measured| / measured
#: (issue 12: ≤ 10% TPOT and throughput and ≤ 25% TTFT across workloads, ≤ 20% across GPUs;
#: it sets none for FP8 → FP4)
ISSUE_TARGETS: dict[str, dict[str, float]] = {
    "workload": {"ttft": 0.25, "tpot": 0.10, "throughput": 0.10},
    "gpu": {"ttft": 0.20, "tpot": 0.20, "throughput": 0.20},
}
KINDS = {"workload": "fit on some ISL/OSL, hold another", "gpu": "fit on one GPU, hold another",
         "precision": "fit FP8, hold FP4"}


DATASETS = ("InferenceMAX Llama-3.3-70B FP8, vLLM", "InferenceX DeepSeek-R1-0528")


def _dataset(split: Split) -> str:
    """The measured set a split's runs come from: InferenceMAX files, or InferenceX rows."""
    return DATASETS[1] if isinstance(split.fit[0], Rows) else DATASETS[0]


def pooled(fits: list[tuple[Split, Fit]]) -> list[dict]:
    """Per split kind, every held-out run's error pooled (each run is held out once in a
    kind): the median and 90th percentile over the runs, against the issue's target, and how
    many splits meet the target on their own median."""
    out = []
    for data, kind in ((d, k) for d in DATASETS for k in KINDS):
        of_kind = [fit for split, fit in fits if split.kind == kind and _dataset(split) == data]
        if not of_kind:
            continue
        row: dict = {"data": data, "kind": kind, "splits": len(of_kind),
                     "runs": sum(len(f.held_out_runs) for f in of_kind)}
        target = ISSUE_TARGETS.get(kind, {})
        for metric in ("ttft", "tpot", "throughput"):
            errors = [x for f in of_kind for e in f.held_out if e.metric == metric
                      for x in e.errors if math.isfinite(x)]
            medians = [e.calibrated for f in of_kind for e in f.held_out
                       if e.metric == metric and e.calibrated is not None]
            row[metric] = {"median": float(np.median(errors)) if errors else None,
                           "p90": float(np.quantile(errors, 0.9)) if errors else None,
                           "target": target.get(metric),
                           "splits_met": (sum(m <= target[metric] for m in medians)
                                          if metric in target else None)}
        out.append(row)
    return out


def pooled_markdown(summary: list[dict]) -> str:
    lines = ["", "Pooled: every held-out run of a kind of split (each run held out once "
             "there); the median (p90) of its error against the issue's target, and the "
             "splits whose own median meets it.", "",
             "| runs | splits | held-out runs | TTFT | TPOT | throughput |",
             "|---|---|---:|---:|---:|---:|"]
    for r in summary:
        cells = []
        for m in ("ttft", "tpot", "throughput"):
            c = r[m]
            said = f"{_pct(c['median'])} (p90 {_pct(c['p90'])})"
            if c["target"] is not None:
                met = "met" if c["median"] is not None and c["median"] <= c["target"] else \
                    "**not met**"
                said += (f", target ≤ {c['target']:.0%}: {met}; {c['splits_met']} of "
                         f"{r['splits']} splits")
            cells.append(said)
        lines.append(f"| {r['data']} | {KINDS[r['kind']]} ({r['splits']}) | {r['runs']} | "
                     + " | ".join(cells) + " |")
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
    table, summary = rows(fits), pooled(fits)
    sys.stdout.write(json.dumps({"splits": table, "pooled": summary}, indent=2) + "\n"
                     if args.json else markdown(table) + pooled_markdown(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
