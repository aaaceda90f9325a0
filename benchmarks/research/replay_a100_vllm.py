"""Replay the A100 vLLM runs (Llama-3.3-70B BF16 on 8 × A100-SXM4-40GB, vLLM 0.8.3; Poisson
1, 4, 16 request/s and a burst of 200) with ``perfgraph calibrate`` fitted on some runs and the
others held out, and hold each run's simulated p50 and p99 TTFT and TPOT (``compare``'s
percentiles: ``perfgraph simulate`` of the run's own requests) against what it measured.

Run: python3 benchmarks/research/replay_a100_vllm.py --data DIR [--fit 01,16] [--roofline]
     [--frontend loop|fit|fit-all|off] [--frontend-times REQ_MS,TOK_MS] [--chunk-steps]
     [--per-engine]
Data: DIR is the a100_vllm_llama33_70b folder of surajssd/llm-k8s (every run, the server
logs and scripts; tests/data/measured/ keeps only two bursts: PROVENANCE.md there). The
runs name their GPU (a100-40gb in the catalog) and, in their .commands files, TP and PP.

What the deployment is, from its logs and manifests (configs_at_58b61c5, lws-run-1.sh):
- TP8: one node, ``--enable-prefix-caching``, vLLM 0.8.3's V1 engine: no
  ``--max-num-batched-tokens`` in the manifest, so V1's usage-context default for the OpenAI
  server on a GPU that is not an H100/H200 (and under 70 GiB, and A100s in any case), 2048
  tokens, max_num_seqs 256 (vllm/engine/arg_utils.py ``_set_default_args_v1``; its test
  ``test_defaults_with_usage_context``). With every prompt but the first run's cached the
  budget does not bind (200 prompts need ~1,800 uncached tokens);
- TP4 × PP2: two nodes, the log says "Falling back to V0" and "Chunked prefill is enabled with
  max_num_batched_tokens=2048"; V0 runs one scheduler per stage (virtual engines), so the
  pipeline is in steady state (``pp_steady_state``, two microbatches); the LWS manifest puts
  each stage on its own node (``pp_across_nodes``: the stage-to-stage sends go over the
  InfiniBand NIC, ``pp_handoff_time``);
- prefix caching on in both, and the client sends the same 200 ShareGPT prompts in every
  run, one run after another on one server (its log: started once, then 01, 04, 16, inf).
  Hits are whole prompts (``prefix_hit_whole``: a cached prompt reuses its full 16-token
  blocks, the rest recomputed), each request cached with probability ``prefix_hit_rate``:
  the first run (01) is cold (V0's log reads 0.00% through it); TP8's V1 engine has one
  cache, so every later prompt hits; V0 under PP2 keeps one cache per virtual engine and a
  prompt hits only where it was served before. V0 logs the first virtual engine's lifetime
  counter alone (lws-run-1.sh), turned into per-run rates (0, 56, 84, 94%); the server's
  rate takes those for that engine's half of the requests and the placement's expectation
  (two even engines: 0, 50, 75, 88%) for the other half: 0, 53, 80, 91%
  (``perfgraph.whatif.simulate.prefix``).
- the API server's one event loop (``perfgraph.whatif.simulate.frontend``: one FIFO queue
  for each request's ingress, ``frontend_request_time``, and each step's streamed tokens,
  ``frontend_token_time``) turns a burst into a stream and, when busy, holds tokens back
  from their clients. ``--frontend loop`` (the default) fits both times per configuration
  on that configuration's fitted runs alone, on a grid within [0, 1/70 s] and
  [0, 1 ms/token], says how well those runs pin each, and gives the held-out cells' spread
  across the grid points within 10% of the best fit. V1 coalesces a lagging stream's
  tokens (``frontend_coalesce``); V0 does not, and under PP it runs its engine on that same
  loop (MQLLMEngineClient.is_unsupported_config: AsyncLLMEngine in the server process),
  which the simulation does not model;
  ``--frontend fit`` fits the request time alone on the repeat deployment's burst
  (04_tp4_pp2_IB, inf: apart from every replayed run) for the V0 runs (``fit-all``: for
  every run); ``off``: no front end.

The fit is ``perfgraph.measured.calibration.calibrate`` on the fitted runs (both
configurations), its overlay written with ``overlay_text`` and loaded as ``--calibration``.
Prints Markdown tables; asserts nothing.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from perfgraph.measured.calibration import calibrate
from perfgraph.measured.comparison import Comparison, compare_runs
from perfgraph.measured.percentiles import Percentiles, Sheets, run_percentiles
from perfgraph.measured.reading import read_measured
from perfgraph.measured.setup import Baseline
from perfgraph.output.profile_overlay import overlay_text
from perfgraph.scenario.loading import ScenarioSpec, parse_set
from perfgraph.whatif.simulate.prefix import run_hit_rates, server_hit_rate, virtual_engine_hit

#: the runs' folder (``--data``), set once before anything is read
ROOT = Path()
CONFIGS = {"01_tp8_pp1": ("tp8_pp1", ["max_num_batched_tokens=2048 token"]),
           "03_tp4_pp2_IB": ("tp4_pp2", ["max_num_batched_tokens=2048 token",
                                         "microbatches=2", "pp_steady_state=true",
                                         "pp_across_nodes=true"])}
#: folders replayed with another's configuration (04 repeats 03's server command)
REPEATS = {"04_tp4_pp2_IB": "03_tp4_pp2_IB"}
RATES = ("01", "04", "16", "inf")
#: each PP folder's server console log (03: started 16:07:56, runs 16:16 to 16:24; 04, the
#: same command repeated: started 17:01:25, runs 17:07 to 17:15)
PP_LOGS = {"03_tp4_pp2_IB": "lws-run-1.sh", "04_tp4_pp2_IB": "lws-run-2.sh"}
#: the run the front end's per-request time is fitted on: the repeat's burst, a deployment
#: apart from every replayed run (bound: ≤ 1/70 s, vLLM PR #12287's V1 front-end rate)
FRONTEND_FIT, FRONTEND_MAX = ("04_tp4_pp2_IB", "inf"), 1 / 70
#: the folders served by V0 (PP falls back to it), whose front end the fit describes
V0 = {"03_tp4_pp2_IB", "04_tp4_pp2_IB"}
CELLS = (("ttft", "p50"), ("ttft", "p99"), ("tpot", "p50"), ("tpot", "p99"))


def path(folder: str, tag: str, qps: str) -> Path:
    name = f"serving_meta-llama-Llama-3.3-70B-Instruct_{tag}_sharegpt_qps_{qps}.json"
    return ROOT / folder / name


#: sets every sheet of the replay takes (``--chunk-steps`` adds prefill_chunk_steps=true)
COMMON: list[str] = []


#: configuration → its own overlay (``--per-engine``), in place of the shared one
PER_ENGINE: dict[str, str] = {}


def base(folder: str, calibration: str | None = None) -> Baseline:
    config = REPEATS.get(folder, folder)
    sets = CONFIGS[config][1] + COMMON
    if calibration is not None:
        calibration = PER_ENGINE.get(config, calibration)
    return Baseline.from_spec(ScenarioSpec(precision="bf16", calibration=calibration,
                                           sets=tuple(parse_set(s) for s in sets)))


def comparisons(folder: str, rates: tuple[str, ...], calibration: str | None = None,
                ) -> list[Comparison]:
    tag = CONFIGS[REPEATS.get(folder, folder)][0]
    measured = read_measured([str(path(folder, tag, q)) for q in rates])
    return [c for c in compare_runs(measured.runs, base(folder, calibration), levers=False)
            if c.error is None]


def fitted_overlay(fit_rates: tuple[str, ...], held_rates: tuple[str, ...],
                   configs: tuple[str, ...] = tuple(CONFIGS), per_engine: bool = False,
                   ) -> tuple[str, str]:
    """calibrate() on the fitted runs of ``configs``; the overlay's path and text. With
    ``per_engine`` (one configuration), only PER_ENGINE_TARGETS are fitted, the others held
    at the shared fit's values (``SHARED``)."""
    fit_runs, held_runs = [], []
    for folder in configs:
        tag = CONFIGS[folder][0]
        fit_runs += [path(folder, tag, q) for q in fit_rates]
        held_runs += [path(folder, tag, q) for q in held_rates]
    # one Baseline for the fit: the deployment-specific sets go in per configuration below
    runs = read_measured([str(p) for p in fit_runs]).runs
    held = read_measured([str(p) for p in held_runs]).runs
    if per_engine:
        fixed = {k: v for k, v in SHARED.items() if k not in PER_ENGINE_TARGETS}
        fit = calibrate(runs, base_for_fit(), holdout=held, targets=PER_ENGINE_TARGETS,
                        fixed=fixed)
    else:
        fit = calibrate(runs, base_for_fit(), holdout=held)
        SHARED.clear()
        SHARED.update(fit.values)
    text = overlay_text(fit, engine="vllm", engine_version="0.8.3",
                        held_out_note="A100 replay, rates " + ", ".join(held_rates))
    out = Path(tempfile.mkdtemp()) / "a100-40gb.vllm.toml"
    out.write_text(text)
    return str(out), text


#: the shared fit's values (set by fitted_overlay), and what --per-engine refits per engine
#: generation: V0 detokenizes and builds every request's output inside the engine step
#: (vllm/engine/llm_engine.py _process_model_outputs), V1 in the API-server process beside
#: the engine core (vllm/v1/engine/output_processor.py in AsyncLLM), so the per-sequence
#: step cost differs between the two
SHARED: dict[str, float] = {}
PER_ENGINE_TARGETS = ("seq_step_overhead",)


def base_for_fit() -> Baseline:
    sets = ["pp_steady_state=true", "microbatches=2"] + COMMON
    return Baseline.from_spec(ScenarioSpec(precision="bf16",
                                           sets=tuple(parse_set(s) for s in sets)))


def pp_lifetime_hits(folder: str = "03_tp4_pp2_IB") -> list[float]:
    """V0's lifetime prefix-cache hit rate at the end of each of a PP folder's runs: the last
    value its server logged before the next run's client started (and the last logged)."""
    log, runs = ROOT / PP_LOGS[folder], ROOT / folder / "benchmark-script-run.sh"
    stamp = re.compile(r"INFO (\d\d-\d\d \d\d:\d\d:\d\d) .*?"
                       r"(?:Prefix cache hit rate: GPU: ([\d.]+)%|(\[__init__))")
    logged = [(m[1], float(m[2]) / 100) for m in stamp.finditer(log.read_text()) if m[2]]
    starts = [m[1] for m in stamp.finditer(runs.read_text()) if m[3]]
    if len(starts) != len(RATES) or not logged:
        raise SystemExit(f"{runs}: expected {len(RATES)} runs, found {len(starts)}")
    ends = [max((h for t, h in logged if t < s), default=0.0) for s in starts[1:]]
    return ends + [logged[-1][1]]  # the lifetime rate only grows: max is the last read


#: the PP deployment's virtual engines (pipeline_parallel_size), each with its own cache
PP_ENGINES = 2


def hit_rates() -> dict[str, list[float]]:
    """Each configuration's per-run prefix_hit_rate (whole prompts), in RATES order. Under
    PP the logged counter is the first virtual engine's: the server's rate takes it for that
    engine's half of the requests and the placement's expectation for the other half."""
    pp = {f: [server_hit_rate(h, k, PP_ENGINES)
              for k, h in enumerate(run_hit_rates(pp_lifetime_hits(f)), start=1)]
          for f in PP_LOGS}
    return {"01_tp8_pp1": [0.0] + [1.0] * (len(RATES) - 1), **pp}


#: one Sheets per folder and what its Baseline reads: it loads each scenario once and forks
#: it per replay (the front-end fit replays each fitted run at every grid point)
_SHEETS: dict[tuple, Sheets] = {}


def sheets_for(folder: str, calibration: str | None) -> Sheets:
    key = (folder, calibration, tuple(COMMON), tuple(sorted(PER_ENGINE.items())))
    if key not in _SHEETS:
        _SHEETS[key] = Sheets(base(folder, calibration))
    return _SHEETS[key]


def runs_of(folder: str, calibration: str | None, rates: tuple[str, ...],
            ) -> list[tuple[Comparison, str, float]]:
    """``folder``'s runs at ``rates`` (in RATES order): each compared, its rate, its hit rate."""
    runs = zip(comparisons(folder, RATES, calibration), RATES, hit_rates()[folder], strict=True)
    return [(c, q, hit) for c, q, hit in runs if q in rates]


def replayed(c: Comparison, folder: str, hit: float, calibration: str | None,
             frontend: float = 0.0, token: float = 0.0) -> Percentiles:
    sheets = sheets_for(folder, calibration)
    sheet, reference = sheets(c.setup)
    sheet.set("prefix_hit_whole", True)
    sheet.set("prefix_hit_rate", hit)
    sheet.set("frontend_request_time", f"{frontend} s")
    sheet.set("frontend_token_time", f"{token} s/token")
    sheet.set("frontend_coalesce", folder not in V0)  # V1 coalesces bunched outputs
    return run_percentiles(c.run, sheet, reference, sheets.engine_of(c.setup))


#: ``--frontend loop``'s grid: per request (s; up to FRONTEND_MAX) and per token (s/token;
#: up to 1 ms, above the 0.24–0.5 ms between tokens the TP8 burst's client received; finer
#: from 0.4 to 0.5 ms, where TP8's loop nears its limit at rate 16 and the cost turns on
#: 25 µs: on the coarser grid the request time looked pinned at 4 ms, where 0.5–4 ms fit
#: within 10%)
LOOP_REQ = (0.0, 0.25e-3, 0.5e-3, 1e-3, 2e-3, 4e-3, 8e-3, FRONTEND_MAX)
LOOP_TOK = (0.0, 0.05e-3, 0.1e-3, 0.15e-3, 0.2e-3, 0.25e-3, 0.3e-3, 0.35e-3, 0.4e-3,
            0.425e-3, 0.45e-3, 0.475e-3, 0.5e-3, 0.6e-3, 0.8e-3, 1e-3)


def fitted_loop(folder: str, fit_rates: tuple[str, ...], calibration: str | None,
                ) -> tuple[tuple[float, float], list[str], list[tuple[float, float]]]:
    """Both front-end times fitted on ``folder``'s fitted runs alone: the grid point with
    the least Σ log(1 + error)² over their p50/p99 TTFT and TPOT; what pins them (the
    values within 10% of the best cost); and those grid points."""
    runs = [(c, hit) for c, _, hit in runs_of(folder, calibration, fit_rates)]
    costs = {}
    for t_req in LOOP_REQ:
        for t_tok in LOOP_TOK:
            costs[(t_req, t_tok)] = sum(
                math.log1p(p.error_of(m, s)) ** 2
                for c, hit in runs
                for p in [replayed(c, folder, hit, calibration, t_req, t_tok)]
                for m, s in CELLS)
    best = min(costs, key=costs.__getitem__)
    near = [k for k, v in costs.items() if v <= 1.1 * costs[best]]
    say = [f"{folder}: frontend_request_time {1e3 * best[0]:.3g} ms, frontend_token_time "
           f"{1e3 * best[1]:.3g} ms/token (cost {costs[best]:.3f}, no front end "
           f"{costs[(0.0, 0.0)]:.3f}); within 10% of the best cost: request "
           f"{1e3 * min(k[0] for k in near):.3g}–{1e3 * max(k[0] for k in near):.3g} ms, "
           f"token {1e3 * min(k[1] for k in near):.3g}–{1e3 * max(k[1] for k in near):.3g}"
           " ms/token"]
    return best, say, near


def fitted_frontend(calibration: str | None) -> tuple[float, Percentiles]:
    """``frontend_request_time`` fitted on FRONTEND_FIT's burst alone (golden section on
    its TTFT p50 and p99, log errors), within [0, FRONTEND_MAX]."""
    folder, qps = FRONTEND_FIT
    c = comparisons(folder, (qps,), calibration)[0]
    hit = hit_rates()[folder][RATES.index(qps)]

    def cost(t: float) -> float:
        p = replayed(c, folder, hit, calibration, t)
        return sum(math.log1p(p.error_of("ttft", s)) ** 2 for s in ("p50", "p99"))

    lo, hi, g = 0.0, FRONTEND_MAX, (math.sqrt(5) - 1) / 2
    for _ in range(14):  # the bracket shrinks to 0.618^14 ≈ 0.1% of the bound
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        lo, hi = (lo, b) if cost(a) <= cost(b) else (a, hi)
    t = (lo + hi) / 2
    return t, replayed(c, folder, hit, calibration, t)


def held_spread(folder: str, calibration: str | None, near: list[tuple[float, float]],
                held_rates: tuple[str, ...]) -> list[str]:
    """The held-out cells' errors across the loop times the fitted runs leave (``near``):
    how far they bound the prediction (a spread, not a result)."""
    runs = runs_of(folder, calibration, held_rates)
    spread = [[p.error_of(m, s) for c, _, hit in runs
               for p in [replayed(c, folder, hit, calibration, *k)] for m, s in CELLS]
              for k in near]
    cells = [f"{q} {m} {s}" for _, q, _ in runs for m, s in CELLS]
    out = [f"{folder}: held-out errors across the {len(near)} grid points within 10%:"]
    for j, name in enumerate(cells):
        lo, hi = min(e[j] for e in spread), max(e[j] for e in spread)
        out.append(f"  {name}: {100 * lo:+.0f}% to {100 * hi:+.0f}%")
    return out


def rows(calibration: str | None, held: set[str], frontend: float = 0.0,
         everywhere: bool = False,
         loops: dict[str, tuple[float, float]] | None = None) -> tuple[list[str], dict]:
    out, errors = [], {}
    for folder in CONFIGS:
        for c, qps, hit in runs_of(folder, calibration, RATES):
            if loops is not None:
                p = replayed(c, folder, hit, calibration, *loops[folder])
            else:
                p = replayed(c, folder, hit, calibration,
                             frontend if folder in V0 or everywhere else 0.0)
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


def loop_times(text: str) -> tuple[float, float]:
    """``--frontend-times``: two nonnegative milliseconds, a request's and a chunk's; in s."""
    parts = text.split(",")
    try:
        req, tok = (float(x) for x in parts)
    except ValueError:
        req = tok = -1.0
    if len(parts) != 2 or not (0 <= req < math.inf and 0 <= tok < math.inf):
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected REQ_MS,TOK_MS, two nonnegative numbers (e.g. 1,0.45)")
    return req / 1e3, tok / 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, metavar="DIR",
                        help="the a100_vllm_llama33_70b folder (every run and server log)")
    parser.add_argument("--fit", default="01,16", help="rates fitted on (the rest held out)")
    parser.add_argument("--roofline", action="store_true", help="also the roofline table")
    parser.add_argument("--frontend", choices=("fit", "fit-all", "loop", "off"),
                        default="loop",
                        help="the API server's per-request time, fitted on the V0 repeat's "
                             "burst, for the V0 runs (fit), every run (fit-all); its "
                             "per-request and per-token times fitted per configuration on "
                             "its fitted runs (loop); or none")
    parser.add_argument("--frontend-times", metavar="REQ_MS,TOK_MS", type=loop_times,
                        help="set both loop times by hand for every run, in place of any "
                             "fit (what-if; not a held-out result)")
    parser.add_argument("--chunk-steps", action="store_true",
                        help="fit and replay with the sheet's prefill_chunk_steps on (the "
                             "steps that carry prompt chunks timed at their size)")
    parser.add_argument("--per-engine", action="store_true",
                        help="refit seq_step_overhead per engine generation (V1: TP8, V0: "
                             "PP) on its own fitted runs, the rest held at the shared fit")
    args = parser.parse_args()
    global ROOT
    ROOT = args.data.resolve()
    missing = [f for f in (*CONFIGS, *PP_LOGS.values()) if not (ROOT / f).exists()]
    if missing:
        parser.error(f"--data {args.data}: no {', '.join(missing)} there (expected the "
                     "a100_vllm_llama33_70b folder)")
    if args.chunk_steps:
        COMMON.append("prefill_chunk_steps=true")
    fit_rates = tuple(args.fit.split(","))
    print("prefix hits per run (" + ", ".join(RATES) + "): " + "; ".join(
        f"{k} " + ", ".join(f"{100 * h:.0f}%" for h in v) for k, v in hit_rates().items())
        + "; two even virtual engines: "
        + ", ".join(f"{100 * virtual_engine_hit(k, PP_ENGINES):.0f}%" for k in range(1, 5)) + "\n")
    held_rates = tuple(q for q in RATES if q not in fit_rates)
    head = ["| run | rate | role | TTFT p50 sim / meas | TTFT p99 | TPOT p50 | TPOT p99 |",
            "|---|---|---|---:|---:|---:|---:|"]
    if args.roofline:
        print("Roofline:\n")
        print("\n".join(head + rows(None, set(RATES))[0]) + "\n")
    overlay, text = fitted_overlay(fit_rates, held_rates)
    print("Fitted overlay (perfgraph calibrate):\n\n```toml")
    print(text.rstrip() + "\n```\n")
    if args.per_engine:
        for folder in CONFIGS:
            PER_ENGINE[folder], mine = fitted_overlay(fit_rates, held_rates, (folder,), True)
            print(f"{folder}'s own " + "; ".join(line.split("#")[0].strip() for line in
                  mine.splitlines() if line.split("=")[0].strip() in PER_ENGINE_TARGETS)
                  + "; " + "; ".join(line.lstrip("# ") for line in mine.splitlines()
                                     if line.startswith("# Note")))
        print()
    frontend, loops = 0.0, None
    if args.frontend_times:
        req, tok = args.frontend_times
        loops = dict.fromkeys(CONFIGS, (req, tok))
        print(f"front-end times set by hand: {1e3 * req:g} ms a request, {1e3 * tok:g} ms a "
              "token (not fitted)\n")
    elif args.frontend == "loop":
        loops = {}
        for folder in CONFIGS:
            loops[folder], say, near = fitted_loop(folder, fit_rates, overlay)
            print("\n".join(say))
            print("\n".join(held_spread(folder, overlay, near, held_rates)))
        print()
    elif args.frontend != "off":
        frontend, p = fitted_frontend(overlay)
        print(f"frontend_request_time fitted on {'/'.join(FRONTEND_FIT)}: "
              f"{1e3 * frontend:.3g} ms (bound {1e3 * FRONTEND_MAX:.3g} ms); that run: TTFT "
              + ", ".join(f"{s} {p.simulated['ttft'][s]:.0f} / {p.measured['ttft'][s]:.0f} ms "
                          f"({100 * p.error_of('ttft', s):+.0f}%)" for s in ("p50", "p99"))
              + "\n")
    table, errors = rows(overlay, set(held_rates), frontend, args.frontend == "fit-all", loops)
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
