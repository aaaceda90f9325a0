"""``perfgraph simulate``: a request-level serving simulation, every step timed by the sheet.

Open loop (``--rate "8 request/s"``, Poisson, gamma:CV or constant gaps) or closed loop
(``--users N``, each user sending its next request when the last one ends). Everything is
checked before anything runs or is written; ``--out`` (Parquet, one row per request) and
``--trace`` (Chrome/Perfetto JSON) appear whole or not at all. A progress bar goes to stderr
when it is a terminal; Ctrl-C stops the run and prints the summary so far, marked partial
(no file is written), and exits 128 + the signal's number (130 for Ctrl-C).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import replace

from perfgraph.cli.options import (
    add_force_option,
    add_scenario_options,
    distinct_outputs,
    load_scenario,
)
from perfgraph.engine.sheet import Sheet
from perfgraph.errors import InputError, PerfgraphError
from perfgraph.output.simulate_report import (
    as_json,
    step_json,
    step_text,
    table,
    write_requests,
    write_trace,
)
from perfgraph.scenario.loading import DEFAULT_ENGINE, Scenario, load
from perfgraph.whatif.simulate import Run, Setup, check, simulate
from perfgraph.whatif.simulate import arrivals as arr
from perfgraph.whatif.simulate.cluster import simulate_replicas
from perfgraph.whatif.simulate.disagg import Pools, simulate_disagg
from perfgraph.whatif.simulate.router import ROUTERS
from perfgraph.whatif.simulate.scheduler import schedulers
from perfgraph.whatif.simulate.step_sheet import ExplainedStep, explain_step
from perfgraph.whatif.simulate.summary import summarise


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate",
                       description="Simulate a serving engine request by request, each step "
                                   "timed by the scenario's sheet: TTFT, TPOT, ITL and E2E "
                                   "percentiles, throughput, goodput, preemptions.")
    add_scenario_options(p)
    load = p.add_mutually_exclusive_group()
    load.add_argument("--rate", help="open loop: arrival rate with its unit ('8 request/s')")
    load.add_argument("--users", type=int, help="closed loop: N users, one request each at a time")
    p.add_argument("--arrivals", default="poisson",
                   help="gaps between open-loop arrivals: poisson, gamma:CV (CV > 0; 1 is "
                        "Poisson) or constant (default: poisson)")
    p.add_argument("--requests", type=int, help="requests to simulate (default 5000, or "
                                                "the FILE's)")
    p.add_argument("--lengths", default="fixed", help="fixed | workload | FILE (a vLLM "
                   "--save-result JSON, or a CSV arrival_s,isl,osl)")
    p.add_argument("--seed", type=int, default=0,
                   help="random seed of arrivals and drawn lengths; the same seed gives the "
                        "same run (default: 0)")
    p.add_argument("--warmup", type=int, help="first N requests left out of the statistics "
                   "(default: the users of a closed loop, else 0)")
    known = schedulers()
    p.add_argument("--scheduler", choices=known, default=None,
                   help="whose batching policy schedules each step: "
                        f"{', '.join(known)}, each engine's as its engine file says "
                        "(default: the --engine's own)")
    p.add_argument("--token-budget", type=int, metavar="N",
                   help="tokens a step may carry (vLLM max_num_batched_tokens, SGLang "
                        "chunked-prefill-size, TRT-LLM max_num_tokens)")
    p.add_argument("--max-num-seqs", type=int, metavar="N",
                   help="requests in flight at most (default: the users, else concurrency)")
    p.add_argument("--format", "-f", choices=("table", "json"), default="table",
                   help="output format: table or json (default: table)")
    p.add_argument("--out", "-o", metavar="FILE.parquet", help="one row per request")
    p.add_argument("--trace", metavar="FILE.json", help="a Chrome/Perfetto trace of the steps")
    add_force_option(p)
    p.add_argument("--explain-step", type=int, metavar="N",
                   help="show step N of the run (1 = the first) the way explain shows a "
                        "cell: its inputs, each step cell's formula with that step's values, "
                        "the result (in place of the summary)")
    _pool_options(p)
    p.set_defaults(func=run)


def _pool_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("pools of replicas (open loop)")
    g.add_argument("--replicas", type=int, metavar="N",
                   help="N replicas of the scenario behind a router, each its own engine "
                        "(default: one engine)")
    g.add_argument("--router", choices=ROUTERS, default=None,
                   help="which replica a request goes to: round-robin, least-outstanding "
                        "(fewest requests in flight) or prefix (the replica that served the "
                        "request's session, unless overloaded) (default: round-robin; "
                        "least-outstanding for --disagg)")
    g.add_argument("--sessions", type=int, metavar="N",
                   help="the requests are turns of N multi-turn sessions (drawn evenly): a "
                        "turn finds prefix_hit_rate of its prompt cached only on the replica "
                        "that served its session's last turn")
    g.add_argument("--disagg", action="store_true",
                   help="disaggregated serving: a prefill pool and a decode pool (the "
                        "scenario's), the prompt's KV handed over between them")
    g.add_argument("--prefill-hardware", metavar="H",
                   help="the prefill pool's accelerator (default: the scenario's)")
    g.add_argument("--prefill-tp", type=int, metavar="N",
                   help="tensor-parallel GPUs of each prefill replica (default: the "
                        "scenario's tp)")
    g.add_argument("--prefill-replicas", type=int, metavar="N",
                   help="prefill replicas (default 1)")
    g.add_argument("--decode-replicas", type=int, metavar="N",
                   help="decode replicas (default 1)")


def setup_from(args: argparse.Namespace) -> Setup:
    for opt in ("requests", "token_budget", "max_num_seqs", "users", "replicas", "sessions",
                "prefill_tp", "prefill_replicas", "decode_replicas"):
        value = getattr(args, opt)
        if value is not None and value < 1:
            flag = "--" + opt.replace("_", "-")
            raise InputError(f"{value}: must be at least 1", name=flag)
    if args.explain_step is not None and args.explain_step < 1:
        raise InputError(f"{args.explain_step}: steps count from 1", name="--explain-step")
    if args.warmup is not None and args.warmup < 0:
        raise InputError(f"{args.warmup}: must be 0 or more", name="--warmup")
    for opt, value in (("--out", args.out), ("--trace", args.trace)):
        if value is not None and not value.strip():
            raise InputError("needs a file name", name=opt)
    lengths = () if args.lengths in ("fixed", "workload") else (("--lengths", args.lengths),)
    distinct_outputs((("--out", args.out), ("--trace", args.trace)),
                     (*lengths, ("SCENARIO.toml", args.scenario)), force=args.force)
    kind, cv = arr.parse_arrivals(args.arrivals)
    rate = arr.parse_rate(args.rate) if args.rate is not None else None
    setup = Setup(rate=rate, cv=cv, users=args.users, requests=args.requests,
                  lengths=args.lengths, seed=args.seed, warmup=args.warmup,
                  scheduler=args.scheduler or DEFAULT_ENGINE, token_budget=args.token_budget,
                  max_seqs=args.max_num_seqs, sessions=args.sessions,
                  explain_step=None if args.explain_step is None else args.explain_step - 1)
    check(setup)
    _check_pools(args)
    return setup


def _check_pools(args: argparse.Namespace) -> None:
    """Pool options only where they mean something: the prefill pool's with --disagg,
    --replicas without it, a router or sessions with either."""
    prefill = [f for f, v in (("--prefill-hardware", args.prefill_hardware),
                              ("--prefill-tp", args.prefill_tp),
                              ("--prefill-replicas", args.prefill_replicas),
                              ("--decode-replicas", args.decode_replicas)) if v is not None]
    if prefill and not args.disagg:
        raise InputError("sizes a disaggregated deployment's pools: add --disagg",
                         name=prefill[0])
    if args.disagg and args.replicas is not None:
        raise InputError("with --disagg, size the pools with --prefill-replicas and "
                         "--decode-replicas", name="--replicas")
    pooled = args.disagg or args.replicas is not None
    for flag, value in (("--router", args.router), ("--sessions", args.sessions)):
        if value is not None and not pooled:
            raise InputError("routes requests over a pool: add --replicas N or --disagg",
                             name=flag)


def _simulate(args: argparse.Namespace, scenario: Scenario, setup: Setup,
              progress: Callable[[int], None] | None) -> Run:
    """One engine, a pool of replicas, or a disaggregated pair of pools."""
    sheet = scenario.sheet
    if args.disagg:
        pspec = replace(scenario.spec, hardware=args.prefill_hardware or scenario.spec.hardware,
                        sets=scenario.spec.sets + ((("tp", str(args.prefill_tp)),)
                                                   if args.prefill_tp else ()))
        pools = Pools(args.prefill_replicas or 1, args.decode_replicas or 1,
                      args.router or "least-outstanding")
        try:
            prefill = load(pspec).sheet
        except PerfgraphError as exc:  # the prefill pool's hardware or TP: name its option
            flag = "--prefill-hardware" if args.prefill_hardware else "--prefill-tp"
            raise InputError(f"the prefill pool: {exc.message}", name=flag) from None
        return simulate_disagg(sheet, prefill, setup, pools, progress)
    if args.replicas is not None:
        return simulate_replicas(sheet, setup, args.replicas, args.router or "round-robin",
                                 progress)
    return simulate(sheet, setup, progress)


def _pool_title(args: argparse.Namespace, scenario: Scenario) -> str:
    if args.disagg:
        hw = args.prefill_hardware or scenario.hardware.slug
        tp = args.prefill_tp or round(scenario.sheet.magnitude("tp"))
        return (f" · disaggregated: {args.prefill_replicas or 1} prefill ({hw}, tp {tp}) + "
                f"{args.decode_replicas or 1} decode, {args.router or 'least-outstanding'}")
    if args.replicas is not None:
        return f" · {args.replicas} replicas, {args.router or 'round-robin'}"
    return ""


def run(args: argparse.Namespace) -> int:
    setup = setup_from(args)
    scenario = load_scenario(args)
    if args.scheduler is None:  # the engine's own scheduler
        setup = replace(setup, scheduler=scenario.engine)
    sheet = scenario.sheet
    progress = _progress(setup)
    result = _simulate(args, scenario, setup, progress)
    if progress is not None:
        print("\r\033[K", end="", file=sys.stderr, flush=True)  # clear the bar's line
    for note in result.notes:
        print(f"perfgraph: note: {note}", file=sys.stderr)
    if setup.explain_step is not None and result.complete:
        text = explained(result, sheet, args.format)  # refused before any file is written
        if args.out or args.trace:
            _write(args, result)
        sys.stdout.write(text)
        return 0
    summary = summarise(result, sheet)
    if not result.complete:
        print("perfgraph: interrupted: the summary covers the requests done so far"
              + ("; no file written" if args.out or args.trace else ""), file=sys.stderr)
    elif args.out or args.trace:
        _write(args, result)
    loop = (f"closed loop, {setup.users} users" if setup.users else
            f"open loop, {result.rate:.4g} request/s" if result.rate else "open loop")
    title = (f"{scenario.title} · {setup.scheduler} · {loop} · lengths {result.lengths.source}"
             f"{_pool_title(args, scenario)} · {scenario.prediction}")
    sheet_line = _sheet_line(sheet, setup.users)
    if args.format == "json":
        sys.stdout.write(as_json(summary, {"model": scenario.model.slug,
                                           "hardware": scenario.hardware.slug,
                                           "workload": scenario.workload.slug,
                                           "precision": scenario.precision},
                                   scenario.prediction))
    else:
        sys.stdout.write(table(summary, title, sheet_line))
    return 0 if result.complete else 128 + result.engine.signal


def _sheet_line(sheet: Sheet, users: int | None) -> str:
    """The sheet's steady state beside the simulation: a closed loop's at its users (the
    concurrency the simulation ran), an open loop's at the scenario's concurrency."""
    if users is not None:
        sheet = sheet.fork()
        sheet.set("concurrency", users)
    m = sheet.magnitude
    return (f"the sheet: ttft {m('ttft'):.4g} ms, itl {m('itl'):.4g} ms, throughput "
            f"{m('throughput'):.4g} tok/s at concurrency {m('concurrency'):.4g}")


def explained(result: Run, sheet: Sheet, fmt: str) -> str:
    """``--explain-step``: the watched step's cells, as text or JSON."""
    engine, n = result.engine, result.setup.explain_step or 0
    if engine.watched is None:
        raise InputError(f"{n + 1}: the run took {engine.log.count:,} steps",
                         name="--explain-step")
    steps = engine.log.arrays()
    step = ExplainedStep(n + 1, engine.log.count, float(steps["end"][n]),
                         float(steps["dur"][n]), tuple(explain_step(sheet, engine.watched)))
    return step_json(step) if fmt == "json" else step_text(step)


def _write(args: argparse.Namespace, result: Run) -> None:
    if args.out:
        write_requests(args.out, result)
    if args.trace:
        write_trace(args.trace, result)


def _progress(setup: Setup):  # type: ignore[no-untyped-def]
    if not sys.stderr.isatty():
        return None
    last = [0.0]

    def show(done: int) -> None:
        now = time.monotonic()
        if now - last[0] < 0.2:
            return
        last[0] = now
        total = setup.requests or 0
        bar = f"{done} requests" if not total else (
            f"[{'#' * (30 * done // total):<30}] {done}/{total}")
        print(f"\rsimulating {bar}", end="", file=sys.stderr, flush=True)

    return show
