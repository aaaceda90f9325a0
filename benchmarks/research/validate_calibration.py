"""Held-out error of calibration, split by split; fits and writes the shipped profiles.

    python3 benchmarks/research/validate_calibration.py                   # every split, Markdown
    python3 benchmarks/research/validate_calibration.py --json            # the same as JSON
    python3 benchmarks/research/validate_calibration.py --write-profiles  # refit the profiles
    python3 benchmarks/research/validate_calibration.py --write-domains   # their domains, bands
    python3 benchmarks/research/validate_calibration.py --json > /tmp/v.json   # once, then:
    python3 benchmarks/research/validate_calibration.py --coverage-from /tmp/v.json  # no fits

Each split fits ``perfgraph calibrate`` on some measured files and holds the fit against
others it never saw: fit on one ISL/OSL, test on another of the same GPU and engine; fit on
one GPU, test on another of the same vendor. The InferenceX DeepSeek-R1 rows (``Rows``: one
hardware × engine × precision of the aggregated file) have 2-4 runs an ISL/OSL, so their
workload splits hold one ISL/OSL out and fit the other two; they are modelled with the launch
flags InferenceX's scripts gave them (``HARNESS``), and their precision splits fit the FP8 rows
and hold the FP4 ones. Their MTP rows (``IX_MTP``: the same runs speculating with
DeepSeek's MTP module) stay out of the workload, model and profile fits (fitted jointly they
moved the efficiencies); the "spec" splits fit a hardware × engine × precision without its MTP
rows and hold them (the acceptance at its default), the "acceptance" splits then fit the
acceptance ``spec_alpha`` alone on its MTP rows of two ISL/OSL and hold those of the third,
and the MTP table gives the MTP runs' own error per split. The error per metric is the
median (and the 90th percentile) of |model − measured| / measured over the held-out runs, for
the roofline (the sheet as shipped) and for the calibrated model. The files are the project's own
(tests/data/measured/, provenance in its PROVENANCE.md); the figures go into
benchmarks/README.md. Runs from any folder (it works from the repository root).

Why the method is as it is (each choice measured on these splits):

- Lengths as run: InferenceMAX's client draws each ISL and OSL in [0.8, 1] × nominal
  (``--random-range-ratio 0.8``), so its rows are modelled at 0.9 × nominal (921.6 / 7372.8).
- TTFT is held against a run's median where the file has one: InferenceX's client starts all
  N users at once, so the first tenth of its requests queue behind each other's prefills and
  the mean carries them (the workload splits' TTFT within 25% went from 6 to 11 of 18).
- Leave one model out: a profile is a joint fit over every model of its hardware × engine
  (``Profile.files`` mixing sources, each modelled with its own options: ``_parts``); the
  per-step fixed cost of one model's fit goes on the per-kernel term (targets.SPLIT_OVERHEAD;
  kernels counted per layer kind, kernels.toml, SGLang's shared expert fused: TPOT pooled
  28.6% → 10.9%, throughput 22.5% → 14.5%, TTFT 55.3% → 50.8% against one flat cost
  per layer). The first token's fixed cost is split the same way (targets.SPLIT_TTFT): the
  eager launches of the steps carrying its prompt (TensorRT-LLM, SGLang, ATOM run them
  without a CUDA graph: prefill_eager_kernels × eager_kernel_step_time) before a flat
  ttft_overhead, which fits only where two models' kernel counts tell them apart: TTFT
  pooled 47.5% → 39.9% (TPOT 10.2% → 8.7%, throughput 11.6% → 11.2%); the GPU splits'
  TTFT 26.7% → 26.3%. Letting the flat term take what the launches leave at their 20 µs
  bound gave 47.2%: what a DeepSeek fit leaves over does not carry over to a Llama. The
  launches are charged to the chunk steps in TTFT, not to the decode step's mean (TPOT
  10.1%, throughput 12.8% with them there: fitted on one model they stand in for the
  per-kernel and per-sequence costs of every step).
  Per split, ``--runs`` prints each held-out run's model and measured figures.
- The 80% band is split-conformal over the other splits of a kind: the plain p10–p90 of a
  profile's own splits covered 54% of held-out values, the conformal rank over them 64%;
  widening a workload split's band to every workload split's, and giving the GPU splits a
  band of their own (a profile used on another GPU is an extrapolation), gave 75–85%.
- Each split is one unit of the band (``bands.split_band``), each tail apart: with every run
  one unit, the leave-one-model-out band covered 54% (a split of 36 runs set the band of the
  eight); split by split, at the finite-sample level, 76%, pooled 84% (72% before).
- A fitted value on its bound widens a profile's bands (``bands.widening``, ``[profile.widen]``)
  as far as the held-out runs of splits whose fit hit one of the same bounds need to be covered
  four times in five: pooled 86%, leave-one-model-out 78%. Per cell and the largest, instead
  of splits sharing any bound: 89%, the widening overshoots.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

SELF = Path(__file__).resolve()
ROOT = SELF.parents[2]
sys.path.insert(0, str(ROOT))

from perfgraph._infra import tomlfile  # noqa: E402
from perfgraph._infra.atomic import write_text_atomic  # noqa: E402
from perfgraph.measured import bands  # noqa: E402
from perfgraph.measured.adapters import MeasuredRun, read_runs  # noqa: E402
from perfgraph.measured.calibration import (  # noqa: E402
    Fit,
    MetricError,
    calibrate,
    per_run,
)
from perfgraph.measured.comparison import Comparison, compare_runs  # noqa: E402
from perfgraph.measured.setup import Baseline, model_slug  # noqa: E402
from perfgraph.measured.span import domain_of  # noqa: E402
from perfgraph.measured.targets import FIT_METRICS, SPECULATIVE  # noqa: E402
from perfgraph.measured.targets import TARGETS as FITTED  # noqa: E402
from perfgraph.output.profile_overlay import overlay_text  # noqa: E402
from perfgraph.scenario import ScenarioSpec  # noqa: E402
from perfgraph.scenario.domain import Domain, toml_lines  # noqa: E402
from perfgraph.scenario.profiles import PROFILES_DIR  # noqa: E402

#: Relative to the checkout (main() runs there), so profiles name their files portably.
DATA = Path("tests") / "data" / "measured"
#: this script, as the shipped profiles name it (relative to the repository root)
SCRIPT = SELF.relative_to(ROOT).as_posix()
IMAX = DATA / "inferencemax_llama70b_fp8"
#: InferenceX DeepSeek-R1-0528 rows, aggregated and without MTP (PROVENANCE.md)
IX = DATA / "inferencex_dsr1" / "aggregated" / "benchmarks.json"
#: the aggregated rows that speculated with MTP (spec_method "mtp"; PROVENANCE.md): each
#: modelled with spec_k = mtp_draft_tokens and one MTP layer a draft (perfgraph.measured.setup)
IX_MTP = DATA / "inferencex_dsr1" / "aggregated_mtp" / "benchmarks.json"
SHAPES = ((1024, 1024), (8192, 1024), (1024, 8192))

#: InferenceX's launch flags for DeepSeek-R1 FP8, as the cells they set (the runs do not record
#: them; SemiAnalysisAI/InferenceX benchmarks/dsr1_fp8_<gpu>[_trt|_atom].sh at commit
#: 1fc5d73cdd31c7fbdd657f3c7e5ec2180f4b0598; B200 TensorRT-LLM at
#: 0a919c5f81cec20c030d748c813de41c8c415db1).
#: The rows span several dates whose scripts differed; these are the scripts of that commit.
#: The MTP rows (IX_MTP) run the same hardware × engine × precision with the draft count of
#: their own script, ``mtp_draft_tokens`` below (a run that does not speculate ignores it;
#: setup gives an MTP run spec_k = mtp_draft_tokens), and where their script's other flags
#: differ, a formula on spec_k says so. SGLang drafts --speculative-num-steps tokens a step
#: (--speculative-eagle-topk 1, --speculative-num-draft-tokens = steps + 1); TensorRT-LLM
#: num_nextn_predict_layers (its one MTP module run that many times); ATOM
#: --num-speculative-tokens.
HARNESS: dict[tuple[str, str, str], tuple[tuple[str, str], ...]] = {
    # --kv-cache-dtype fp8_e4m3; --mem-fraction-static 0.82 at TP8, 0.95 at TP4;
    # --chunked-prefill-size 32768 at TP8, 8192 at TP4; --scheduler-recv-interval 30 at TP8
    # from concurrency 16, else 10
    # MTP: benchmarks/dsr1_fp8_b200_mtp.sh at 574bcd355b7a5e75676a11b652ec55dcc4edf5e4:
    # --speculative-algorithm EAGLE --speculative-num-steps 2 --speculative-num-draft-tokens 3
    # --speculative-eagle-topk 1, TP8 only, the TP8 flags above (benchmarks/single_node/
    # dsr1_fp8_b200_mtp.sh at 285b6628b8b141d1eb614cb8c6d8773f882d7d9f: the same 2/3/1, chunks
    # of 16384, not modelled)
    ("b200", "sglang", "fp8"): (("kv_bytes", "1"),
                                ("kv_memory_fraction", "0.95 if tp == 4 else 0.82"),
                                ("max_num_batched_tokens",
                                 "8192 * token if tp == 4 else 32768 * token"),
                                ("scheduler_recv_interval",
                                 "30 if tp == 8 and concurrency >= 16 else 10"),
                                ("mtp_draft_tokens", "2")),
    # KV dtype auto (BF16, the engine's rule); --mem-fraction-static 0.82;
    # --chunked-prefill-size 32768
    # MTP: no H200 SGLang MTP script in SemiAnalysisAI/InferenceX as stored; the fork
    # lishuoshuo-amd/InferenceX benchmarks/single_node/dsr1_fp8_h200_mtp.sh at
    # ae7e2418a6a03d6169cb776e2622f1d882c5af63 ("mirrors dsr1_fp8_h200.sh and adds the
    # speculative-* flags from dsr1_fp8_b200_mtp.sh"): EAGLE, 2 steps, 3 draft tokens, top-k 1,
    # the flags above
    ("h200", "sglang", "fp8"): (("kv_memory_fraction", "0.82"),
                                ("max_num_batched_tokens", "32768 * token"),
                                ("mtp_draft_tokens", "2")),
    # kv_cache_config dtype fp8 (the engine's rule for an FP8 checkpoint),
    # free_gpu_memory_fraction 0.8 (0.75 at TP4 8k/1k, one row); max_num_tokens 8192 at
    # 1k ISL, ISL + conc + 64 rounded up to 64 at 8k (8.3k: 1.5% more, not modelled)
    # MTP: benchmarks/dsr1_fp8_b200_trt_mtp.sh at 111f0312c13b4c3cca0dd365f6db4c017048f0d3:
    # speculative_config decoding_type MTP, num_nextn_predict_layers 1 with DP attention, else
    # 3; free_gpu_memory_fraction 0.8
    ("b200", "trtllm", "fp8"): (("kv_memory_fraction", "0.8"),
                                ("mtp_draft_tokens", "1 if dp_attention else 3")),
    # kv_cache_config dtype fp8, free_gpu_memory_fraction 0.75; MTP:
    # benchmarks/dsr1_fp8_h200_trt_mtp.sh at 1fc5d73cdd31c7fbdd657f3c7e5ec2180f4b0598, the same
    # rule (1 with DP attention, else 3), free_gpu_memory_fraction 0.75
    ("h200", "trtllm", "fp8"): (("kv_memory_fraction", "0.75"),
                                ("mtp_draft_tokens", "1 if dp_attention else 3")),
    # KV dtype auto (BF16); --mem-fraction-static 0.8; --chunked-prefill-size 196608;
    # --num-continuous-decode-steps 4 (it polls for new requests every 4 decode steps)
    # MTP: benchmarks/single_node/dsr1_fp8_mi355x_mtp.sh at
    # ba8d7d02ddf6af63f84c282bfa5444030ca41c31: EAGLE, 3 steps, top-k 1, 4 draft tokens, and
    # unlike the runs without MTP --kv-cache-dtype fp8_e4m3 and --num-continuous-decode-steps
    # 8 (its first version, benchmarks/dsr1_fp8_mi355x_mtp.sh at
    # 7a7868215eb1b70015f90a81a796ad3489066158, gave EAGLE alone: SGLang's DeepSeek default
    # is the same 3 steps)
    ("mi355x", "sglang", "fp8"): (("kv_memory_fraction", "0.8"),
                                  ("max_num_batched_tokens", "196608 * token"),
                                  ("scheduler_recv_interval", "8 if spec_k > 0 else 4"),
                                  ("kv_bytes", "1 * B if spec_k > 0 else activation_bytes"),
                                  ("mtp_draft_tokens", "3")),
    # --kv_cache_dtype fp8; gpu_memory_utilization and the token budget ATOM's defaults. MTP:
    # benchmarks/dsr1_fp8_mi355x_atom_mtp.sh at 6da3382bd8a39d10976c32b3ceb832545325b0c7
    # (and benchmarks/single_node/ at 14b2d763c9a8bc4f506428bb9029ac6d5c4d2ced): --method mtp
    # without --num-speculative-tokens, ATOM's default 1 (engines/atom.toml)
    ("mi355x", "atom", "fp8"): (("kv_bytes", "1"), ("mtp_draft_tokens", "1")),
    # FP4 (dsr1_fp4_<gpu>[_trt|_atom].sh, same commit; TensorRT-LLM FP4 at
    # 111f0312c13b4c3cca0dd365f6db4c017048f0d3, ATOM FP4 at
    # c6b96dd0f880da4e11f68d2085e9ababa8d1ba63). B200 SGLang: --kv-cache-dtype fp8_e4m3,
    # --mem-fraction-static 0.85, --chunked-prefill-size 16384,
    # --scheduler-recv-interval 30 from 16 users, else 10
    # MTP: benchmarks/dsr1_fp4_b200_mtp.sh at 28cc621e90dd7da8139b1acc416ee50d1819c28d: EAGLE,
    # 2 steps, 3 draft tokens, top-k 1, the flags above
    ("b200", "sglang", "fp4"): (("kv_bytes", "1"), ("kv_memory_fraction", "0.85"),
                                ("max_num_batched_tokens", "16384 * token"),
                                ("scheduler_recv_interval", "30 if concurrency >= 16 else 10"),
                                ("mtp_draft_tokens", "2")),
    # kv_cache_config dtype fp8, free_gpu_memory_fraction 0.8; MTP:
    # benchmarks/dsr1_fp4_b200_trt_mtp.sh at 13dd0c2a01b8e11c5c1120f4d2158b2eed32bb1b: 1 with
    # DP attention, else 3
    ("b200", "trtllm", "fp4"): (("kv_memory_fraction", "0.8"),
                                ("mtp_draft_tokens", "1 if dp_attention else 3")),
    # --kv-cache-dtype fp8_e4m3, --mem-fraction-static 0.8, chunks 196608 (32768 at 8k/1k
    # above 32 users), 4 decode steps between polls
    # MTP: no MI355X FP4 SGLang MTP script in SemiAnalysisAI/InferenceX as stored; the fork
    # lishuoshuo-amd/InferenceX benchmarks/single_node/dsr1_fp4_mi355x_mtp.sh at
    # ae7e2418a6a03d6169cb776e2622f1d882c5af63: EAGLE, 3 steps, top-k 1, 4 draft tokens, the
    # flags above
    ("mi355x", "sglang", "fp4"): (("kv_bytes", "1"), ("kv_memory_fraction", "0.8"),
                                  ("max_num_batched_tokens", "32768 * token if isl > 4096 * token "
                                   "and concurrency > 32 else 196608 * token"),
                                  ("scheduler_recv_interval", "4"), ("mtp_draft_tokens", "3")),
    # MTP: benchmarks/dsr1_fp4_mi355x_atom_mtp.sh at bc11f9a406044a3931a51cf2e20732d37b2119b2:
    # --method mtp, ATOM's default 1 draft
    ("mi355x", "atom", "fp4"): (("kv_bytes", "1"), ("mtp_draft_tokens", "1")),
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
    #: only the rows of these engine builds (image tags), or all but those of ``without``
    builds: tuple[str, ...] | None = None
    without: tuple[str, ...] = ()

    @property
    def sets(self) -> tuple[tuple[str, str], ...]:
        return HARNESS.get((self.hardware, self.engine, self.precision), ())

    @property
    def options(self) -> tuple:
        return (None, None, None, None, self.sets)

    def runs(self) -> list[MeasuredRun]:
        return [r for r in read_runs(self.path).runs
                if (r.hardware or "").lower() == self.hardware and r.engine == self.engine
                and (r.precision or "").lower() == self.precision
                and (self.shape is None or (r.isl_configured, r.osl_configured) == self.shape)
                and (self.builds is None or _tag(r) in self.builds) and _tag(r) not in self.without]

    def __str__(self) -> str:
        shape = "every ISL/OSL" if self.shape is None else f"ISL/OSL {_shape(self.shape)}"
        builds = (f", builds {', '.join(self.builds)}" if self.builds else "") + \
            (f", without builds {', '.join(self.without)}" if self.without else "")
        return (f"{self.path}: the {self.hardware} {self.engine} {self.precision} rows, "
                f"{shape}{builds}")


def _tag(run: MeasuredRun) -> str:
    return (run.engine_build or "?").rsplit(":", 1)[-1]


@dataclass(frozen=True)
class File:
    """A measured file whose runs do not say everything (model, GPU, precision, TP): the
    scenario options that say it, from its PROVENANCE.md entry."""

    path: Path
    model: str | None = None
    hardware: str | None = None
    precision: str | None = None
    engine: str | None = None
    sets: tuple[tuple[str, str], ...] = ()
    #: only the runs on a GPU whose printed name starts with this (not GH200 for H200), of
    #: these models (None: all)
    gpu: str | None = None
    models: tuple[str, ...] | None = None

    @property
    def options(self) -> tuple:
        return (self.model, self.hardware, self.precision, self.engine, self.sets)

    def runs(self) -> list[MeasuredRun]:
        return [r for r in read_runs(self.path).runs
                if (self.gpu is None or (r.hardware or "").startswith(self.gpu))
                and (self.models is None or r.model in self.models)]

    def __str__(self) -> str:
        return f"{self.path} ({', '.join(str(o) for o in self.options[:4] if o)})"


Source = Path | Rows | File


def _runs(sources: tuple[Source, ...]) -> list[MeasuredRun]:
    return [r for s in sources for r in (read_runs(s).runs if isinstance(s, Path) else s.runs())]


def _spec(sources: tuple[Source, ...], sets: tuple[tuple[str, str], ...] = ()) -> ScenarioSpec:
    """The scenario options the sources share (a split's fitted or held-out side is one
    deployment): the launch flags, and what a file does not say of its runs."""
    options = {(None, None, None, None, ()) if isinstance(s, Path) else s.options
               for s in sources}
    if len(options) != 1:
        raise ValueError(f"sources served with different options: {sorted(map(str, options))}")
    model, hardware, precision, engine, flags = options.pop()
    return ScenarioSpec(model=model, hardware=hardware, precision=precision, engine=engine,
                        sets=sets + flags)


Part = tuple[list[MeasuredRun], Baseline]


def _parts(sources: tuple[Source, ...], sets: tuple[tuple[str, str], ...] = (),
           hardware: str | None = None) -> list[Part]:
    """The sources' runs, one set per deployment (the sources that share their scenario
    options), each with its baseline: a joint fit's parts (calibrate's ``also``)."""
    by_options: dict[tuple, list[Source]] = {}
    for s in sources:
        by_options.setdefault((None, None, None, None, ()) if isinstance(s, Path) else s.options,
                              []).append(s)
    out = []
    for group in by_options.values():
        spec = _spec(tuple(group), sets)
        out.append((_runs(tuple(group)),
                    Baseline.from_spec(replace(spec, hardware=hardware) if hardware else spec)))
    return out


def _fit(parts: list[Part], **held) -> Fit:
    """calibrate() on the parts jointly (the first the main one, the others ``also``)."""
    (runs, base), *also = parts
    return calibrate(runs, base, also=also, **held)


@dataclass(frozen=True)
class Split:
    name: str
    #: "workload" (same GPU and engine), "gpu" (same vendor), "precision", "model" (leave one
    #: model out, same GPU and engine) or "build" (leave one engine build out)
    kind: str
    fit: tuple[Source, ...]
    held: tuple[Source, ...]
    sets: tuple[tuple[str, str], ...] = ()
    #: the hardware × engine a model or build split is of (a profile's own evidence)
    pair: tuple[str, str] | None = None
    #: runs that speculate (MTP) fitting the acceptance spec_alpha alone, once the
    #: efficiencies are fitted on ``fit`` (a second stage: see run_split)
    accept: tuple[Source, ...] = ()


def _label(rows: Rows) -> str:
    engine = {"sglang": "SGLang", "trtllm": "TensorRT-LLM", "atom": "ATOM"}[rows.engine]
    return f"{rows.hardware.upper()} {engine} {rows.precision.upper()}"


def _shape(shape: tuple[int, int]) -> str:
    return f"{shape[0] // 1024}k/{shape[1] // 1024}k"


def _with_mtp(rows: Rows) -> Rows:
    """The MTP rows (IX_MTP) of the same hardware × engine × precision (× ISL/OSL), served
    with the same launch flags."""
    return replace(rows, path=IX_MTP)


def _workload_splits(hardware: str, engine: str) -> tuple[Split, ...]:
    """Hold one ISL/OSL of a hardware × engine out and fit on the other two: the rows have
    2-4 concurrency points per ISL/OSL, and one ISL/OSL's 6-12 values (less the TTFTs of
    runs that queued) do not fix the 9 targets. The rows without MTP alone: fitted jointly,
    the MTP rows moved the efficiencies (workload TPOT 5.7% → 13.0% held out pooled, the
    acceptance on its lower bound); ACCEPT_SPLITS fit the acceptance on them apart."""
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
#: The hardware × engine pairs with FP4 rows
IX_FP4_PAIRS = (("b200", "sglang"), ("b200", "trtllm"), ("mi355x", "sglang"), ("mi355x", "atom"))
IX_PRECISION_SPLITS = tuple(
    Split(f"{_label(Rows(h, e)).rsplit(' ', 1)[0]}: fit FP8, hold FP4", "precision", (Rows(h, e),),
          (Rows(h, e, "fp4"),))
    for h, e in IX_FP4_PAIRS)
#: Every hardware × engine × precision of the rows
IX_ROWS = tuple((h, e, p) for p, pairs in (("fp8", IX_PAIRS), ("fp4", IX_FP4_PAIRS))
                for h, e in pairs)
#: Fit the rows of a hardware × engine × precision that do not speculate, hold its MTP rows:
#: what a profile fitted without MTP says of MTP, the acceptance held at its documented
#: default (the sheet's spec_alpha; no fitted run speculates, so it is not fitted)
SPEC_SPLITS = tuple(
    Split(f"{_label(Rows(h, e, p))}: fit without MTP, hold MTP", "spec", (Rows(h, e, p),),
          (_with_mtp(Rows(h, e, p)),), pair=(h, e))
    for h, e, p in IX_ROWS)
#: Fit the efficiencies on a hardware × engine × precision's rows without MTP (every ISL/OSL),
#: then the acceptance alone on its MTP rows of two ISL/OSL; hold its MTP rows of the third:
#: what an acceptance fitted from measured MTP runs says of MTP at another workload
ACCEPT_SPLITS = tuple(
    Split(f"{_label(Rows(h, e, p))}: fit without MTP, acceptance on MTP "
          f"{' + '.join(_shape(o) for o in SHAPES if o != shape)}, hold MTP {_shape(shape)}",
          "acceptance", (Rows(h, e, p),), (_with_mtp(Rows(h, e, p, shape)),), pair=(h, e),
          accept=tuple(_with_mtp(Rows(h, e, p, o)) for o in SHAPES if o != shape))
    for h, e, p in IX_ROWS for shape in SHAPES
    if _with_mtp(Rows(h, e, p, shape)).runs()
    and any(_with_mtp(Rows(h, e, p, o)).runs() for o in SHAPES if o != shape))


#: Files of a second model on a hardware × engine the profiles cover (PROVENANCE.md): the
#: Lambda vLLM 0.5.4 run of Llama-3.1-8B FP8 on one H100 SXM, and DataCrunch's SGLang runs of
#: Llama-3.3-70B BF16 at TP4 on H200 (request-rate paced; the file names neither).
LAMBDA = File(DATA / "lambda_vllm054_1xH100-80GB-SXM_prompt_10"
              / "Meta-Llama-3.1-8B-FP8_tp1_len2048.json", hardware="h100-sxm", sets=(("tp", "1"),))
DATACRUNCH = File(DATA / "sglang_h200_datacrunch" / "llama_3_3_70b_online_output.jsonl",
                  model="llama-3.3-70b", hardware="h200", precision="bf16", engine="sglang",
                  sets=(("tp", "4"),))
#: Leave one model out: fit a hardware × engine on one model's runs, hold another model's.
#: (One Lambda run cannot fix the targets: it is held out, never fitted.)
MODEL_SPLITS = (
    Split("H100 vLLM: fit Llama-3.3-70B, hold Llama-3.1-8B", "model",
          (IMAX / "1k1k" / "H100.json", IMAX / "8k1k" / "H100.json"), (LAMBDA,),
          pair=("h100-sxm", "vllm")),
    Split("H200 SGLang: fit DeepSeek-R1, hold Llama-3.3-70B", "model",
          (Rows("h200", "sglang"),), (DATACRUNCH,), pair=("h200", "sglang")),
    Split("H200 SGLang: fit Llama-3.3-70B, hold DeepSeek-R1", "model", (DATACRUNCH,),
          (Rows("h200", "sglang"),), pair=("h200", "sglang")),
)
#: NVIDIA's TensorRT-LLM tables (PROVENANCE.md): the online-serving table (TensorRT-LLM 0.14,
#: BF16, Poisson rates; Llama-3.1 8B TP1 and 70B TP4) beside the InferenceX DeepSeek-R1 rows
#: (TensorRT-LLM 1.1-1.3, FP8) on the same GPU and engine; these splits cross builds and
#: precisions too. The maximum-load table (0.17, FP8) gives Llama-3.1-70B and Mixtral-8x7B on
#: one build: throughput only, at the largest batch each engine holds.
TRT = DATA / "trtllm_perf_overview"
TRT_ONLINE = TRT / "perf-overview_258c7540_online.md"
TRT_MAX = TRT / "perf-overview_258c7540_throughput.md"


def _online(gpu: str, *models: str) -> File:
    """The online table's runs on one GPU (of these models; all when none). Modelled with
    chunked prefill as the other engines are, though the Triton tensorrtllm_backend of 0.14
    defaults ``enable_chunked_context`` to false: the sheet's unchunked structure missed the
    leave-one-model-out runs more (TPOT 26% → 31% held out on H100, 13% → 28% on H200)."""
    return File(TRT_ONLINE, gpu=gpu, models=models or None)


TRT_SPLITS = (
    # two models and a whole build held out at once: every run of build 0.14 against a fit on
    # the 1.1+ builds alone, so a leave-one-build-out (the three splits below that hold one
    # model each are H200 TensorRT-LLM's leave-one-model-out)
    Split("H200 TensorRT-LLM: fit builds 1.1+ (DeepSeek-R1, FP8), hold build 0.14 (Llama-3.1 "
          "8B + 70B, BF16)", "build", (Rows("h200", "trtllm"),), (_online("H200"),),
          pair=("h200", "trtllm")),
    Split("H200 TensorRT-LLM: fit Llama-3.1 8B + 70B (0.14, BF16), hold DeepSeek-R1 (1.1+, FP8)",
          "model", (_online("H200"),), (Rows("h200", "trtllm"),),
          pair=("h200", "trtllm")),
    # the joint profile's own: DeepSeek-R1 and one Llama fitted together, the other held
    *(Split(f"H200 TensorRT-LLM: fit DeepSeek-R1 + Llama-3.1-{fit.upper()}, hold "
            f"Llama-3.1-{held.upper()}", "model",
            (Rows("h200", "trtllm"), _online("H200", f"llama-3.1-{fit}")),
            (_online("H200", f"llama-3.1-{held}"),),
            pair=("h200", "trtllm"))
      for fit, held in (("70b", "8b"), ("8b", "70b"))),
    Split("H100 TensorRT-LLM 0.14: fit Llama-3.1-70B, hold Llama-3.1-8B", "model",
          (_online("H100", "llama-3.1-70b"),),
          (_online("H100", "llama-3.1-8b"),)),
)
#: The maximum-load table's GPUs that perfgraph's catalog holds (its GH200 rows are left
#: out: hardware/ has no GH200), each with the models it ran.
MAX_LOAD_GPUS = ("H200", "H100", "A100", "L40S")


def max_load_splits() -> tuple[Split, ...]:
    """Leave one model out on the maximum-load table (TensorRT-LLM 0.17, one build): per GPU,
    hold each model's runs and fit the other models' (throughput only: the table gives no
    latency). Each run is modelled at the engine trtllm-bench built for it (the adapter's
    ``engine_settings``: its KV share and its build heuristic's max batch size and token
    budget, sheets/bench_sizing.toml), which the setup pins."""
    out = []
    for gpu in MAX_LOAD_GPUS:
        models = sorted({r.model for r in File(TRT_MAX, gpu=gpu).runs() if r.model})
        for held in models if len(models) > 1 else ():
            rest = tuple(m for m in models if m != held)
            fitted = " + ".join(_title(m) for m in rest)
            out.append(Split(f"{gpu} TensorRT-LLM 0.17 max load: fit {fitted}, hold "
                             f"{_title(held)}", "model", (File(TRT_MAX, gpu=gpu, models=rest),),
                             (File(TRT_MAX, gpu=gpu, models=(held,)),)))
    return tuple(out)


def _title(model: str) -> str:
    """'llama-3.1-70b' → 'Llama-3.1-70B', 'mixtral-8x7b' → 'Mixtral-8x7B' (as split names print
    models)."""
    first, *rest = model.split("-")
    return "-".join([first.capitalize(), *(p[:-1] + "B" if p[:1].isdigit() and p.endswith("b")
                                           else p for p in rest)])


#: the fewest runs a build split fits on: 4 runs give 12 values for the 9 targets
MIN_FIT_RUNS = 4


def build_splits() -> tuple[Split, ...]:
    """Leave one engine build out: per hardware × engine, hold the FP8 rows of one named
    build (image tag) and fit the others (rows naming no build stay on the fitted side)."""
    out = []
    for hardware, engine in IX_PAIRS:
        tags = sorted({_tag(r) for r in Rows(hardware, engine).runs()} - {"?"})
        for tag in tags if len(tags) > 1 else ():
            fit = Rows(hardware, engine, without=(tag,))
            if len(fit.runs()) >= MIN_FIT_RUNS:
                out.append(Split(f"{_label(fit)}: fit other builds, hold {tag}", "build",
                                 (fit,), (Rows(hardware, engine, builds=(tag,)),),
                                 pair=(hardware, engine)))
    return tuple(out)


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
    *SPEC_SPLITS,
    *ACCEPT_SPLITS,
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
    """A profile fitted on every FP8 row of one hardware × engine that does not speculate;
    its held-out error the worst of its workload splits and of the
    GPU split fitted on it."""
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
    # joint fits: every model of the hardware × engine (DeepSeek-R1 MoE FP8 and a dense
    # Llama in BF16, on other engine builds: the profile's version says so)
    replace(_ix_profile("h200", "sglang", "SGLang v0.5.9-v0.5.12 (lmsysorg/sglang cu130 images; "
                        "InferenceX rows Mar-May 2026), with DataCrunch's Llama-3.3-70B BF16 "
                        "TP4 runs (SGLang ~v0.3-0.4, another build)"),
            files=(Rows("h200", "sglang"), DATACRUNCH)),
    _ix_profile("b200", "trtllm", "TensorRT-LLM 1.1.0rc2.post2-1.3.0rc14 (nvcr.io release "
                "images; InferenceX rows Dec 2025-May 2026)"),
    replace(_ix_profile("h200", "trtllm", "TensorRT-LLM 1.1.0rc2.post2-1.3.0rc14 (nvcr.io "
                        "release images; InferenceX rows Nov 2025-May 2026), with NVIDIA's "
                        "TensorRT-LLM 0.14.0 online table (Llama-3.1 8B TP1 and 70B TP4, BF16; "
                        "another build)"),
            files=(Rows("h200", "trtllm"), _online("H200"))),
    _ix_profile("mi355x", "sglang", "SGLang v0.5.9-v0.5.12 (lmsysorg/sglang rocm700-mi35x "
                "images; InferenceX rows Mar-May 2026)"),
    _ix_profile("mi355x", "atom", "ATOM 0.1.1 (rocm7.1.1) and the 2026-05-11 build (rocm7.2.3) "
                "(rocm/atom images; InferenceX rows Jan-May 2026)"),
)


#: Terms a profile holds at 0 when its runs are too few to fit every target at two measured
#: values each (the shipped profiles' rule, tests/test_profiles.py): the newest first.
PROFILE_OPTIONAL = ("ttft_wait_steps",)


def profile_fit(profile: Profile) -> Fit:
    """The profile's fit on every file of its hardware × engine, jointly; where its runs give
    fewer than two values (TTFT, TPOT, throughput a run) a fitted target, PROFILE_OPTIONAL
    held at 0 and said so."""
    parts = _parts(profile.files, profile.sets, profile.hardware)
    fit = _fit(parts)
    held = {n.split(":")[0] for n in fit.notes if ": held at" in n}
    free = [c for c in fit.values if c in {t.cell for t in FITTED} and c not in held]
    if 2 * len(free) <= 3 * len(fit.fitted_runs):
        return fit
    fit = _fit(parts, fixed=dict.fromkeys(PROFILE_OPTIONAL, 0.0))
    values = 3 * len(fit.fitted_runs)
    said = tuple(f"{c}: held at 0: {len(fit.fitted_runs)} runs ({values} values) fit at most "
                 f"{values // 2} targets at two values each" for c in PROFILE_OPTIONAL)
    return replace(fit, notes=fit.notes + said)


def write_profile(profile: Profile, split_fits: dict[str, Fit], table: list[dict]) -> Path:
    fit = profile_fit(profile)
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
                        + f" ({SCRIPT})")
    said = [f"# Runs: {s}" for s in profile.files if not isinstance(s, Path)]
    for source in profile.files:
        if not isinstance(source, Path) and (sets := profile.sets + source.sets):
            how = f"{SCRIPT} HARNESS" if isinstance(source, Rows) else "as that file was served"
            said.append(f"# Modelled with the launch flags they ran with ({how}): "
                        + ", ".join(f"{c} = {v}" for c, v in sets))
    head, rest = text.split("\n", 2)[:2], text.split("\n", 2)[2]
    text = "\n".join([*head, *said, rest])
    path = _profile_path(profile)
    write_text_atomic(path, bands.splice(text, _tables(profile, fit.domain, table,
                                                       bands.on_bound(fit.notes))))
    return path


def _profile_path(profile: Profile) -> Path:
    return PROFILES_DIR.relative_to(ROOT) / f"{profile.hardware}.{profile.engine}.toml"


def write_domain(profile: Profile, table: list[dict]) -> Path:
    """The shipped profile with its domain, bands and errors written from its runs and the
    splits, its fitted values untouched (the runs are compared, not refitted)."""
    parts = _parts(profile.files, profile.sets, profile.hardware)
    compared = [c for runs, base in parts for c in compare_runs(runs, base, levers=False)
                if c.error is None]
    path = _profile_path(profile)
    text = path.read_text()
    notes = [line.removeprefix("# Note: ") for line in text.splitlines()
             if line.startswith("# Note: ")]
    text = bands.splice(text, _tables(profile, domain_of(compared, parts[0][1]), table,
                                      bands.on_bound(notes)))
    write_text_atomic(path, text)
    return path


def _tables(profile: Profile, fitted: Domain | None, table: list[dict],
            bound: tuple[str, ...] = ()) -> list[str]:
    """[profile.domain], [profile.bands], [profile.errors], [profile.evidence] and
    [profile.widen] for a profile: the in-domain band from every workload split, the others
    over every split of their kind (a GPU split: the profile used on another GPU), each split
    one unit (:func:`perfgraph.measured.bands.split_band`); the widening for its fitted values
    on a bound (``bound``) from the splits of each kind that hit one of the same bounds. The
    bands are written as measured; a prediction widens them (``[profile.widen]``)."""
    kinds = {"in_domain": "workload", "gpu": "gpu", "model": "model", "build": "build",
             "precision": "precision"}
    banded, errors, said, evidence, widened = {}, {}, {}, {}, {}
    for name, kind in kinds.items():
        pooled = _band_sources(kind, table)
        evidence[name] = _evidence(profile, kind, table)
        banded[name] = {m: b for m in FIT_METRICS if (b := _interval(pooled, m))}
        widened[name] = {m: round(_widening(bound, pooled, m), 3) for m in banded[name]}
        said[name] = f"{len(pooled)} splits: {KINDS[kind]}"
        if name != "in_domain":
            errors[name] = {m: e for m in FIT_METRICS
                            if (e := bands.median_error(_ratios(pooled, m))) is not None}
    return [*(toml_lines(fitted) + [""] if fitted else []),
            *bands.toml_lines(banded, errors, said, evidence, widened, bound)]


def _evidence(profile: Profile, kind: str, table: list[dict]) -> dict[str, int]:
    """The splits of a kind, their held-out runs, and those of the profile's own hardware ×
    engine (its own splits, or a model or build split of its pair)."""
    of_kind = [r for r in table if r["kind"] == kind]
    own = [r for r in of_kind if r["split"] in profile.splits
           or tuple(r.get("pair") or ()) == (profile.hardware, profile.engine)]
    return {"splits": len(of_kind), "runs": sum(r["runs"] for r in of_kind), "own": len(own)}


def _band_sources(kind: str, table: list[dict], leave_out: str | None = None) -> list[dict]:
    """The held-out splits (rows of :func:`rows`) an 80% band of ``kind`` comes from: every
    split of the kind but ``leave_out`` (the split whose coverage the band is held to). Each
    split is one unit of the band, so a profile's own few workload splits no longer need a
    band of their own beside every profile's (with 3 splits the finite-sample rank is their
    farthest run)."""
    return [r for r in table if r["kind"] == kind and r["split"] != leave_out]


def _interval(pooled: list[dict], metric: str, bound: tuple[str, ...] = (),
              of: Callable = bands.split_band) -> tuple[float, float] | None:
    """The band ``of`` gives over the splits ``pooled``, widened for ``bound`` (fitted values
    on their bounds: :func:`_widening`)."""
    interval = of(_groups(pooled, metric))
    return interval if interval is None or not bound else \
        bands.widen(interval, _widening(bound, pooled, metric, of))


def _widening(bound: tuple[str, ...], pooled: list[dict], metric: str,
              of: Callable = bands.split_band) -> float:
    """The factor on a band's log half-width for a fit with ``bound`` on its bounds, from
    the splits ``pooled`` (:func:`perfgraph.measured.bands.widening`)."""
    return bands.widening(bound, [(bands.on_bound(r["notes"]), g)
                                  for r in pooled for g in _groups([r], metric)], of)


def _groups(table: list[dict], metric: str) -> list[list[float]]:
    """Each split's held-out ratios of ``metric`` (measured / model), a list per split."""
    return [[r for r in row[metric]["ratios"] if r is not None]
            for row in table if metric in row]


def _ratios(table: list[dict], metric: str) -> list[float]:
    return [r for g in _groups(table, metric) for r in g]


def models_of(sources: tuple[Source, ...]) -> set[str]:
    """The catalog models of the sources' runs (a file that names none: its PROVENANCE's)."""
    return {model_slug(r.model) or model_slug(s.model if isinstance(s, File) else None)
            or "?" for s in sources for r in _runs((s,))}


def check_kind(split: Split) -> None:
    """A leave-one-model-out split holds one model the fit never saw: one that holds two at
    once (or a model it also fits) is another kind of split, refused here."""
    if split.kind != "model":
        return
    fitted, held = models_of(split.fit), models_of(split.held)
    if len(held) != 1 or held & fitted:
        raise ValueError(f"{split.name}: a model split holds one model out, not fitted; it "
                         f"holds {sorted(held)} and fits {sorted(fitted)}")


def run_split(split: Split) -> Fit:
    """The split's fit held against its held-out runs; with ``accept``, in two stages: the
    efficiencies on ``fit``, then the acceptance alone on ``accept`` with them held."""
    check_kind(split)
    held_base = Baseline.from_spec(_spec(split.held, split.sets))
    if not split.accept:
        return _fit(_parts(split.fit, split.sets), holdout=_runs(split.held),
                    held_base=held_base)
    return _fit(_parts(split.accept, split.sets), holdout=_runs(split.held),
                held_base=held_base, targets=SPECULATIVE,
                fixed=_efficiencies(split.fit, split.sets))


@functools.cache
def _efficiencies(fit: tuple[Source, ...], sets: tuple[tuple[str, str], ...]
                  ) -> dict[str, float]:
    """The values a fit on ``fit`` gives (the acceptance splits' first stage, shared by a
    pair's three)."""
    return dict(_fit(_parts(fit, sets)).values)


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
                    "pair": split.pair, "builds": builds,
                    **{m: {"roofline": e.roofline, "median": e.calibrated,
                           "p90": e.calibrated_p90,
                           "ratios": [r if math.isfinite(r) else None for r in e.ratios]}
                       for m, e in errors.items()},
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


#: The project's targets per split kind: the held-out median of |model − measured| / measured
#: (≤ 10% TPOT and throughput and ≤ 25% TTFT across workloads, ≤ 20% across GPUs, ≤ 15% TPOT
#: and throughput and ≤ 30% TTFT across models; it sets none for FP8 → FP4 or across builds)
TARGETS: dict[str, dict[str, float]] = {
    "workload": {"ttft": 0.25, "tpot": 0.10, "throughput": 0.10},
    "gpu": {"ttft": 0.20, "tpot": 0.20, "throughput": 0.20},
    "model": {"ttft": 0.30, "tpot": 0.15, "throughput": 0.15},
}
KINDS = {"workload": "fit on some ISL/OSL, hold another", "gpu": "fit on one GPU, hold another",
         "precision": "fit FP8, hold FP4", "model": "fit on one model, hold another",
         "build": "fit on other engine builds, hold one",
         "spec": "fit without MTP, hold MTP (acceptance at its default)",
         "acceptance": "fit without MTP, the acceptance on MTP at some ISL/OSL, hold MTP at "
                       "another"}


DATASETS = ("InferenceMAX Llama-3.3-70B FP8, vLLM", "InferenceX DeepSeek-R1-0528",
            "every source")


def _dataset(split: Split) -> str:
    """The measured set a split's runs come from: InferenceMAX files, InferenceX rows, or
    several sources (leave one model out; a fit on one source held against another)."""
    if split.kind == "model" or isinstance(split.fit[0], Rows) != isinstance(split.held[0], Rows):
        return DATASETS[2]
    return DATASETS[1] if isinstance(split.fit[0], Rows) else DATASETS[0]


def pooled(fits: list[tuple[Split, Fit]]) -> list[dict]:
    """Per split kind, every held-out run's error pooled (each run is held out once in a
    kind): the median and 90th percentile over the runs, against the project's target, and how
    many splits meet the target on their own median."""
    out = []
    for data, kind in ((d, k) for d in DATASETS for k in KINDS):
        of_kind = [fit for split, fit in fits if split.kind == kind and _dataset(split) == data]
        if not of_kind:
            continue
        row: dict = {"data": data, "kind": kind, "splits": len(of_kind),
                     "runs": sum(len(f.held_out_runs) for f in of_kind)}
        target = TARGETS.get(kind, {})
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
             "there); the median (p90) of its error against the project's target, and the "
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


#: the bands the coverage table compares, by the column key's suffix: (the band, whether
#: fitted values on a bound widen it): each split one unit, widened (what the profiles
#: ship) and not, every run one unit, and the plain p10–p90 of the runs
BAND_METHODS: dict[str, tuple[Callable, bool]] = {
    "": (bands.split_band, True), "_unwidened": (bands.split_band, False),
    "_runs": (bands.pooled_runs(bands.band), False),
    "_p10p90": (bands.pooled_runs(bands.quantile_band), False)}


def coverage(table: list[dict]) -> list[dict]:
    """Per split and metric: how many held-out runs fall inside the 80% band the other
    splits of its kind give (widened, as a profile widens it, for the fitted values this
    split's fit left on a bound), per band method (BAND_METHODS), with the band; None: no
    band."""
    out = []
    for row in table:
        got: dict = {"split": row["split"], "kind": row["kind"]}
        pooled = _band_sources(row["kind"], table, leave_out=row["split"])
        bound = bands.on_bound(row["notes"])
        for metric in FIT_METRICS:
            for suffix, (of, widens) in BAND_METHODS.items():
                interval = _interval(pooled, metric, bound if widens else (), of)
                got[metric + suffix] = None if interval is None else \
                    bands.inside(_ratios([row], metric), interval)
                got[f"{metric}{suffix}_band"] = interval
        out.append(got)
    return out


def coverage_markdown(per_split: list[dict]) -> str:
    """Coverage pooled per kind of split and over every kind: runs inside the 80% band of
    their peers (target 75–85%), each with the band's width: the median over the held-out
    splits of its low and high ends (measured / model)."""
    def cell(rows: list[dict], metrics: tuple[str, ...], width: bool = True) -> str:
        got = [r[m] for r in rows for m in metrics if r[m] is not None]
        hit, n = sum(g[0] for g in got), sum(g[1] for g in got)
        if not n:
            return "—"
        ends = [r[f"{m}_band"] for r in rows for m in metrics if r[f"{m}_band"]]
        lo, hi = np.median([e[0] for e in ends]), np.median([e[1] for e in ends])
        return f"{hit}/{n} ({100 * hit / n:.0f}%)" + (f", ×{lo:.2f}–{hi:.2f}" if width else "")

    lines = ["", "Coverage of the 80% band (measured / model, split-conformal in log space "
             "with each split one unit, each tail apart: perfgraph.measured.bands.split_band; "
             "widened for the held-out split's fitted values on a bound: bands.widening): "
             "held-out runs inside the band the other splits of the kind give; "
             "target 75–85%. Beside each, the band: the median over the held-out splits of "
             "its ends. Then every metric without the widening, with every run one unit (the "
             "conformal rank over the runs pooled) and with the plain p10–p90 of the runs.",
             "",
             "| held out | TTFT | TPOT | throughput | every metric | not widened | "
             "runs one unit | p10–p90 |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    groups = [(KINDS[k], [r for r in per_split if r["kind"] == k]) for k in KINDS]
    for name, rows in [*groups, ("pooled: every kind", per_split)]:
        if rows:
            lines.append(f"| {name} | " + " | ".join(cell(rows, (m,)) for m in FIT_METRICS)
                         + f" | {cell(rows, FIT_METRICS, False)} | "
                         + " | ".join(cell(rows, tuple(m + s for m in FIT_METRICS), False)
                                      for s in ("_unwidened", "_runs", "_p10p90")) + " |")
    return "\n".join(lines) + "\n"


def bounds_markdown(table: list[dict]) -> str:
    """Each fitted value that ended on its bound, per split and per shipped profile."""
    lines = ["", "Fitted values on a bound (a split's fit; a shipped profile's notes):", ""]
    for row in table:
        on = [n for n in row["notes"] if "bound (" in n]  # "cell: on its lower bound (0.3)"
        if on:
            lines.append(f"- {row['split']}: {'; '.join(on)}")
    for profile in PROFILES:
        path = _profile_path(profile)
        notes = [line.removeprefix("# Note: ") for line in path.read_text().splitlines()
                 if line.startswith("# Note: ") and "bound (" in line]
        widen = tomlfile.read(path).data["profile"].get("widen", {})
        said = ", ".join(f"{kind} ×{max(f.values()):.2f}" for kind, f in widen.items()
                         if isinstance(f, dict) and f and max(f.values()) > 1)
        if notes:
            lines.append(f"- profile {profile.hardware}.{profile.engine}: {'; '.join(notes)}"
                         + (f"; widens its bands' log half-width by up to {said}"
                            if said else "; widens no band"))
    return "\n".join(lines) + "\n"


def runs_markdown(fits: list[tuple[Split, Fit]]) -> str:
    """Per split: its fitted values, then each held-out run's model and measured metrics
    (the split's calibration applied), to see which runs a split misses and by how much."""
    lines = []
    for split, fit in fits:
        values = ", ".join(f"{c} = {v:.4g}" for c, v in fit.values.items())
        lines += ["", f"### {split.name}", "", f"fitted: {values}", "",
                  "| run | load | TTFT model / measured | TPOT model / measured | "
                  "throughput model / measured |", "|---|---|---:|---:|---:|"]
        held_base = Baseline.from_spec(_spec(split.held, split.sets))
        for c, got in per_run(held_base, fit.held_out_runs, fit.values):
            cells = [f"{got[m][0]:.4g} / {got[m][1]:.4g}" if m in got else "—"
                     for m in FIT_METRICS]
            load = c.run.concurrency or f"{c.run.request_rate} req/s"
            lines.append(f"| {c.run.model} {c.run.isl_configured}/{c.run.osl_configured} "
                         f"#{c.run.index} | {load} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def every_split() -> tuple[Split, ...]:
    """Every split the report holds, in its order (SPLITS holds SPEC_SPLITS)."""
    return (*SPLITS, *MODEL_SPLITS, *TRT_SPLITS, *max_load_splits(), *build_splits())


def _is_mtp(c: Comparison) -> bool:
    return (c.run.spec_decoding or "none").lower() == "mtp"


def mtp_rows(fits: list[tuple[Split, Fit]]) -> list[dict]:
    """Per split that holds MTP runs out: the acceptance its fit gave (None: held at the
    sheet's default, no fitted run speculating), the MTP runs it fitted and held, and the
    held-out MTP runs' median |model − measured| / measured alone, roofline and calibrated."""
    out = []
    for split, fit in fits:
        held = [c for c in fit.held_out_runs if _is_mtp(c)]
        if not held:
            continue
        base = Baseline.from_spec(_spec(split.held, split.sets))
        row: dict = {"split": split.name, "kind": split.kind, "pair": split.pair,
                     "spec_alpha": fit.values.get("spec_alpha"),
                     "default_alpha": base.sheet.magnitude("spec_alpha") if base.sheet else None,
                     "fitted_mtp_runs": sum(_is_mtp(c) for c in fit.fitted_runs),
                     "runs": len(held)}
        for key, values in (("roofline", {}), ("median", fit.values)):
            got = [g for _, g in per_run(base, held, values)]
            for m in FIT_METRICS:
                errors = [abs(g[m][0] / g[m][1] - 1) for g in got if m in g
                          and math.isfinite(g[m][0])]
                row.setdefault(m, {})[key] = float(np.median(errors)) if errors else None
        out.append(row)
    return out


def mtp_markdown(table: list[dict]) -> str:
    """The MTP runs alone, split by split: the acceptance used and their held-out error."""
    if not table:
        return ""
    lines = ["", "MTP runs held out (spec_decoding mtp, spec_k = the draft count their launch "
             "script gives): the acceptance spec_alpha the split's fit used (fitted on its MTP "
             "runs, or the sheet's default where it fitted none), and the MTP runs' median "
             "error alone (roofline → calibrated).", "",
             "| split | MTP runs fitted / held | spec_alpha | TTFT | TPOT | throughput |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in table:
        alpha = f"{r['spec_alpha']:.3f} fitted" if r["spec_alpha"] is not None else \
            f"{r['default_alpha']:g} (default)"
        cells = [f"{_pct(r[m]['roofline'])} → {_pct(r[m]['median'])}" for m in FIT_METRICS]
        lines.append(f"| {r['split']} | {r['fitted_mtp_runs']} / {r['runs']} | {alpha} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def saved(path: str) -> dict:
    """The ``--json`` output of an earlier run (``--coverage-from``): its splits' rows, each
    with its hardware × engine pair (an older file may lack it: taken from the splits)."""
    try:
        doc = json.loads(Path(path).read_text())
        table = doc["splits"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"--coverage-from {path}: not this script's --json output "
                         f"({exc})") from None
    every = every_split()
    pairs = {s.name: s.pair for s in every}
    for row in table:
        row.setdefault("pair", pairs.get(row["split"]))
    return doc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON, not Markdown")
    parser.add_argument("--write-profiles", action="store_true",
                        help="also refit the shipped profiles (perfgraph/scenario/profiles/)")
    parser.add_argument("--write-domains", action="store_true",
                        help="write the shipped profiles' domain, bands and errors from their "
                             "runs and the splits, leaving their fitted values as they are")
    parser.add_argument("--only", metavar="SUBSTRING", action="append",
                        help="only the splits whose name or kind (workload, gpu, precision, "
                             "model, build, spec) holds SUBSTRING; repeat for several (while "
                             "iterating: the pooled figures and bands are then of those alone)")
    parser.add_argument("--runs", action="store_true",
                        help="also print, per split, each held-out run: model and measured "
                             "TTFT, TPOT and throughput, and the fitted values")
    parser.add_argument("--coverage-from", metavar="FILE.json",
                        help="fit nothing: take the splits' held-out ratios from an earlier "
                             "--json output and recompute the bands, their coverage (and, "
                             "with --write-domains, the profiles' tables) from them")
    args = parser.parse_args()
    os.chdir(ROOT)
    if args.only is not None and (args.write_profiles or args.write_domains):
        print("--only: the profiles are written from every split; drop --only",
              file=sys.stderr)
        return 2
    if args.coverage_from:
        if args.write_profiles or args.runs or args.only:
            raise SystemExit("--coverage-from fits nothing: it takes neither --write-profiles, "
                             "--runs nor --only")
        doc = saved(args.coverage_from)
        table, summary, fits = doc["splits"], doc["pooled"], None
        mtp = doc.get("mtp", [])
    else:
        chosen = [s for s in every_split()
                  if args.only is None or any(o in s.name or o == s.kind for o in args.only)]
        if not chosen:
            print(f"--only {' '.join(args.only)}: no split's name or kind holds it",
                  file=sys.stderr)
            return 2
        fits = [(s, run_split(s)) for s in chosen]
        table, summary, mtp = rows(fits), pooled(fits), mtp_rows(fits)
    if args.write_profiles or args.write_domains:
        by_name = {s.name: f for s, f in fits or ()}
        for profile in PROFILES:
            path = write_profile(profile, by_name, table) if args.write_profiles else \
                write_domain(profile, table)
            print(f"wrote {path}", file=sys.stderr)
    covered = coverage(table)
    sys.stdout.write(json.dumps({"splits": table, "pooled": summary, "coverage": covered,
                                 "mtp": mtp}, indent=2) + "\n"
                     if args.json else markdown(table) + pooled_markdown(summary)
                     + coverage_markdown(covered) + bounds_markdown(table) + mtp_markdown(mtp))
    if args.runs and fits:
        sys.stdout.write(runs_markdown(fits))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
