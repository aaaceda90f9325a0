"""``perfgraph plan``: the cheapest deployment that meets the SLOs at a request rate."""

from __future__ import annotations

import argparse
from dataclasses import replace

from perfgraph.cli.commands import plan_deploy
from perfgraph.cli.options import (
    add_force_option,
    add_scenario_options,
    distinct_outputs,
    spec_from_args,
)
from perfgraph.errors import InputError
from perfgraph.output import plan_json, plan_pairs_report, plan_text
from perfgraph.output.parquet import write_plans
from perfgraph.scenario.loading import ScenarioSpec, load
from perfgraph.whatif import launch, plan_pairs, plan_report
from perfgraph.whatif import plan_percentiles as pp
from perfgraph.whatif import plan_search as plan
from perfgraph.whatif.plan_answer import PlanFound
from perfgraph.whatif.plan_pairs_answer import MixedPairs

EPILOG = """\
The default space: the scenario's engine (--engine, default vllm), every catalog accelerator
at every precision its [peak_flops] table has, tp=1,2,4,8,16, pp=1,2,4,8, disaggregated=0,1
and concurrency=1..1024 (the batch; rows past what KV holds are searched and refused).
--search NAME=V1,V2,… (sweep's axis syntax, ranges too) replaces an axis or adds one
(engine=vllm,sglang,trtllm, hardware=, precision=, or any cell: spec_k=0,2,4).
TTFT counts the prefill queue wait at the rate (prefill_queueing on: M/D/1 per server).
With disaggregation and two or more accelerators searched, the answer adds the best mixed
pairs: the prefill pool on one accelerator, the decode pool on another, each priced at its
own GPU, the KV hand-off at the slower NIC (simulated too with percentile SLOs).
Exit 0 with a plan; 1 when no candidate meets the SLOs (the SLO out of reach, then the best
each family reached); 2 on bad input.
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan",
                       description="Search every candidate deployment exactly and answer "
                                   "with the best that meets the SLOs at the request rate.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_scenario_options(p)
    p.add_argument("--slo", action="append", default=[], metavar="NAME=VALUE",
                   help="ttft=1s, itl=50ms, e2e=30s; a percentile (ttft.p99=2s, itl.p99=60ms, "
                        "e2e.p90=40s) is held by simulating the best candidates (repeatable)")
    p.add_argument("--rate", required=True, metavar="RATE", help='"20 request/s"')
    p.add_argument("--search", action="append", default=[], metavar="NAME=VALUES",
                   help="an axis of the space (repeatable)")
    p.add_argument("--objective", choices=tuple(plan.OBJECTIVES), default="gpus",
                   help="what the best plan minimises: gpus, cost ($ per million output "
                        "tokens) or energy (J per token); or maximises: throughput_per_gpu "
                        "(default: gpus)")
    p.add_argument("--top", type=int, default=5, help="runners-up to show (default 5)")
    p.add_argument("--format", "-f", choices=("table", "json", "markdown"), default="table",
                   help="output format: table, json or markdown (default: table)")
    p.add_argument("--out", metavar="FILE.parquet", help="write every feasible plan here")
    add_force_option(p)
    engines = launch.engines()
    p.add_argument("--launch", nargs="?", const="", choices=("", *engines),
                   metavar="ENGINE", help="print the best plan's serving command: "
                                          f"{', '.join(engines)} (default: the best plan's "
                                          "engine)")
    p.add_argument("--prices", metavar="FILE", help="your own $/GPU-hour (prices.toml shape)")
    p.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="threads that evaluate the space (default: the cores); the answer is "
                        "the same with any N")
    p.add_argument("--simulate", type=int, default=pp.DEFAULT_CANDIDATES, metavar="N",
                   help="with percentile SLOs: candidates to simulate, best first (default "
                        f"{pp.DEFAULT_CANDIDATES})")
    p.add_argument("--requests", type=int, default=pp.DEFAULT_REQUESTS, metavar="N",
                   help="with percentile SLOs: requests each simulation runs (default "
                        f"{pp.DEFAULT_REQUESTS})")
    p.add_argument("--ray", metavar="ADDRESS",
                   help="run the simulations on this Ray cluster ('local' starts one here; "
                        "needs pip install 'perfgraph[ray]'); default: a local process pool")
    plan_deploy.add_options(p)
    p.set_defaults(func=run)


def best_spec(result: plan.Result, i: int, prices_file: str | None) -> ScenarioSpec:
    """The scenario of feasible row ``i``: what ``perfgraph eval`` re-checks."""
    return row_spec(result, int(result.rows[i]), prices_file)


def row_spec(result: plan.Result, row: int, prices_file: str | None) -> ScenarioSpec:
    """The scenario of the search's grid row ``row``."""
    choice = result.choices(row)
    price = plan.prices(prices_file).get(str(choice["hardware"]), 0.0)
    pinned = {n for n, _ in result.spec.sets}  # already there, as the user set them
    cells = [(k, _text(v)) for k, v in choice.items()
             if k not in ("engine", "hardware", "precision") and k not in pinned]
    return replace(result.spec, hardware=str(choice["hardware"]),
                   precision=str(choice["precision"]), engine=str(choice["engine"]),
                   sets=(*result.spec.sets, *cells, ("gpu_hour_price", _text(price))))


def _text(x: object) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def eval_line(spec: ScenarioSpec) -> str:
    parts = ["perfgraph eval"] + [f"--{k} {v}" for k, v in (
        ("model", spec.model), ("hardware", spec.hardware), ("workload", spec.workload),
        ("precision", spec.precision), ("engine", spec.engine)) if v]
    parts += [f"--set '{n}={v}'" for n, v in spec.sets]
    return " ".join(parts)


def run(args: argparse.Namespace) -> int:
    if args.top < 0:
        raise InputError("--top must be 0 or more")
    if args.jobs is not None and args.jobs < 1:
        raise InputError(f"--jobs must be 1 or more, got {args.jobs}")
    if not args.slo:
        raise InputError("plan needs at least one --slo (ttft=1s, itl=50ms, e2e=30s)")
    distinct_outputs((("--out", args.out),), (("SCENARIO.toml", args.scenario),
                                              ("--prices", args.prices)), force=args.force)
    plan_deploy.check_options(args)
    spec = spec_from_args(args)
    q, slos = _question(spec, args)
    result = plan.run(spec, q, args.search, args.prices, args.jobs)
    held = _held(result, slos, args) if slos and result.feasible else None
    report = None if held is None else pp.hold_report(held, result)
    if report is not None and report.chosen_rank is None:
        print(plan_json.dumps(plan_json.hold_unmet_json(report)) if args.format == "json"
              else plan_text.hold_none_met(report))
        return 1
    if result.feasible == 0:
        none = plan_report.no_plan(result)
        print(plan_json.dumps(plan_json.no_plan_json(none)) if args.format == "json"
              else plan_text.no_plan(none))
        return 1
    chosen = int(result.order()[0]) if held is None or held.chosen is None else held.chosen
    pairs = _mixed_pairs(result, slos, args)
    best = best_spec(result, chosen, args.prices)
    best_scenario = load(best)
    # the best plan's label: roofline or calibrated
    ans = replace(plan_report.answer(result, args.top, chosen), simulated=report,
                  prediction=best_scenario.prediction, mixed_pairs=pairs)
    if args.out:
        write_plans(args.out, result)
    engine = args.launch or str(best.engine)
    if args.format == "json":
        ans = replace(ans, benchmark=plan_deploy.benchmark(args, ans, best_scenario, engine))
        print(plan_json.dumps(plan_json.found_json(ans)))
    else:
        print(plan_text.table(ans) if args.format == "table" else plan_text.markdown(ans))
        _print_text(ans, best, held, chosen)
        if ans.mixed_pairs is not None:
            print("\n" + plan_pairs_report.lines(ans.mixed_pairs, result.question.objective))
    if args.launch is not None:
        print(launch.command(engine, best_scenario, ans.best.pools))
    plan_deploy.run(args, ans, best_scenario, engine, eval_line(best))
    return 0


def _print_text(ans: PlanFound, best: ScenarioSpec, held: pp.Held | None, chosen: int) -> None:
    """After the plan's table: the label of its numbers, how to re-check it, and what the
    simulations of percentile SLOs said."""
    print(f"\nthe best plan's numbers: {ans.prediction}")
    print(f"re-check the best plan: {eval_line(best)}")
    if held is not None and ans.simulated is not None:
        print("\n" + plan_text.hold_lines(ans.simulated))
        job = next(j for j in held.jobs if j.row == chosen)
        print(f"re-simulate it: {eval_line(best).replace('eval', 'simulate', 1)} "
              f"{pp.simulate_line(job)}")


def _mixed_pairs(result: plan.Result, slos: tuple[pp.PercentileSlo, ...],
                 args: argparse.Namespace) -> MixedPairs | None:
    """The best mixed-GPU prefill/decode pairs, when the question allows them (simulated
    when there are percentile SLOs): the answer's ``mixed_pairs``."""
    pairs = plan_pairs.pairs(result)
    if not pairs:
        return None
    sims = plan_pairs.simulated(result, pairs, slos, lambda r: row_spec(result, r, args.prices),
                                args.requests, args.jobs, args.ray) if slos else None
    return plan_pairs.answer(result, pairs, sims)


def _question(spec: ScenarioSpec, args: argparse.Namespace,
              ) -> tuple[plan.Question, tuple[pp.PercentileSlo, ...]]:
    """The analytic question (each percentile SLO bounding its mean) and the percentile SLOs
    the simulations hold."""
    plain, percentile = pp.split_slos(args.slo)
    if percentile and args.requests < 1:
        raise InputError(f"--requests must be 1 or more, got {args.requests}")
    texts = pp.analytic_texts(plain, percentile)
    if not texts:
        raise InputError("p50 SLOs alone bound no mean for the search: add a p90 or p99 "
                         "SLO, or a plain one (ttft=1s)", name="--slo")
    q = plan.question(spec, texts, args.rate, args.objective)
    return q, pp.percentile_slos(percentile, load(spec).sheet)


def _held(result: plan.Result, slos: tuple[pp.PercentileSlo, ...],
          args: argparse.Namespace) -> pp.Held:
    """The analytic plan's best candidates simulated, the first that meets ``slos`` chosen."""
    return pp.hold_plan(result, slos, lambda i: best_spec(result, i, args.prices),
                        args.requests, args.simulate, args.jobs, args.ray)


